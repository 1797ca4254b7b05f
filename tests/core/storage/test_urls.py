"""URLs (storage/urls.py), PostgreSQL's: every way libpq takes a credential is masked wherever the vault shows
the URL (``stats``, messages, the inspector: tests/integrations/inspector), and a libpq URL without a host, which
names a socket in its query, reaches the server as written."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from perseus_vault_core import NotFound, StorageError, Vault
from perseus_vault_core.storage.postgres.pool import split_url
from perseus_vault_core.storage.urls import redact, scrub

from ...conftest import Clock, FakeEmbedder


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:s3cret@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db?password=s3cret", "postgresql://u@h/db?password=***"),
        (
            "postgresql://u@h/db?sslmode=require&password=s3cret&application_name=a",
            "postgresql://u@h/db?sslmode=require&password=***&application_name=a",
        ),
        ("postgresql://u@h/db?PASSWORD=s3cret", "postgresql://u@h/db?PASSWORD=***"),
        (
            "postgresql://u@h/db?pass%77ord=s3cret",
            "postgresql://u@h/db?pass%77ord=***",
        ),  # libpq decodes the name
        ("postgresql://u@h/db?sslpassword=s3cret&sslkey=/k", "postgresql://u@h/db?sslpassword=***&sslkey=/k"),
        ("postgresql://u:s3cret@h/db?password=s3cret", "postgresql://u:***@h/db?password=***"),
        (
            "postgresql:///db?host=/run/postgresql&user=u&password=s3cret",
            "postgresql:///db?host=/run/postgresql&user=u&password=***",
        ),
        (
            "postgresql://u:a/b?c@s3cret@h1:5432,h2/db",
            "postgresql://u:***@h1:5432,h2/db",
        ),  # unencoded / ? @ in it
        (
            "postgres://u:s3cret@h/db?passfile=/home/u/.pgpass",
            "postgres://u:***@h/db?passfile=/home/u/.pgpass",
        ),
        ("postgresql://h:5432/db", "postgresql://h:5432/db"),  # a port, no password
        ("postgresql://u@h/db?application_name=me@corp", "postgresql://u@h/db?application_name=me@corp"),
        ("postgresql://h:5432/db@x", "postgresql://h:***@x"),  # as well a password holding a /: masked
    ],
)
def test_every_credential_form_is_masked(url: str, shown: str) -> None:
    assert redact(url) == shown
    assert "s3cret" not in scrub(f"a driver's error quoting {url}", url)


def test_a_credential_is_taken_out_of_a_drivers_message_in_either_spelling() -> None:
    url = "postgresql://u:p%40ss@h/db?sslpassword=k%26ey"  # libpq decodes both: either spelling may come back
    assert scrub("no: p@ss, p%40ss; k&ey, k%26ey", url) == "no: ***, ***; ***, ***"


def test_a_url_without_a_host_keeps_its_slashes() -> None:
    url = "postgresql:///memory?host=/run/postgresql&user=agent&pool_size=4"
    assert split_url(url) == (
        "postgresql:///memory?host=/run/postgresql&user=agent",
        {"pool_size": 4.0, "pool_timeout": 30.0},
    )
    # The query begins after the user part, where libpq reads it (a password may hold a ?).
    assert split_url("postgresql://u:a?b@h/db?pool_size=2")[0] == "postgresql://u:a?b@h/db"


def _without_host(url: str, secret: str) -> str:
    """``url`` as libpq's hostless form: the database in the path, everything else (socket or host, port, user,
    and ``secret`` as the password) in the query."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    if parts.hostname:
        query["host"] = parts.hostname
    if parts.port:
        query["port"] = str(parts.port)
    query.update(user=parts.username or "postgres", password=secret)
    return f"postgresql://{parts.path}?{urlencode(query, safe='/')}"


def test_a_vault_opens_by_a_url_without_a_host_and_never_shows_its_password(
    pg_url: str, clock: Clock
) -> None:
    secret = urlsplit(pg_url).password or "pv-Secret-4f9c"  # the test server trusts its socket: any will do
    url = _without_host(pg_url, secret)
    assert url.startswith("postgresql:///pv_test_")
    with pytest.raises(NotFound, match="no vault at postgresql:///pv_test_") as missing:
        Vault(url, create=False, embedder=False)  # an empty database
    assert secret not in str(missing.value)
    with Vault(url, clock=clock, embedder=FakeEmbedder()) as vault:
        first = vault.remember("fact", "socket", "opened through the server's socket")
        assert [i.id for i in vault.recall("opened through the socket", mode="hybrid").items] == [first.id]
        stats = vault.stats()
        assert secret not in stats.path and stats.path.endswith("password=***") and stats.entities == 1
    with Vault(pg_url, embedder=False) as same:  # the same database, by the test server's own URL
        assert same.get_entity(first.id).content == "opened through the server's socket"


def test_a_password_in_the_query_never_reaches_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for url in (
        "postgresql://user@127.0.0.1:9/db?password=s3cret-9",  # nothing listens on port 9
        "postgresql:///db?host=127.0.0.1&port=9&user=u&sslpassword=s3cret-9&password=s3cret-9",
    ):
        with pytest.raises(StorageError, match=r"cannot connect to postgresql:") as error:
            Vault(url, embedder=False)
        assert "s3cret-9" not in str(error.value) and "password=***" in str(error.value)
    assert list(tmp_path.iterdir()) == []
