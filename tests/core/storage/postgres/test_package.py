"""The PostgreSQL backend (storage/postgres/__init__.py).

- URLs: every way libpq takes a credential is masked wherever the vault shows the URL (``stats``,
  messages, the inspector: tests/integrations/inspector), and a libpq URL without a host, which names a
  socket in its query, reaches the server as written.
- The in-memory indexes of a PostgreSQL vault, saved in the host's cache folder and opened by the next
  process (``mirror_file``, ``cache_folder``).
- A vault opened on a database that takes no writes (a streaming replica; here a session with
  ``default_transaction_read_only``, which refuses writes as a replica does): it reads, recall does not
  try to count retrievals, and a write is refused with a message that says where to write instead."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from perseus_vault_core import NotFound, NotSupported, SetupError, StorageError, Vault
from perseus_vault_core.storage.postgres import redact, scrub
from perseus_vault_core.storage.postgres.pool import split_url

from ....conftest import Clock, FakeEmbedder
from ...indexes.test_snapshot import answers, built, fill


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:s3cret@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u@h/db?password=s3cret", "postgresql://u@h/db?password=***"),
    ("postgresql://u@h/db?sslmode=require&password=s3cret&application_name=a",
     "postgresql://u@h/db?sslmode=require&password=***&application_name=a"),
    ("postgresql://u@h/db?PASSWORD=s3cret", "postgresql://u@h/db?PASSWORD=***"),
    ("postgresql://u@h/db?pass%77ord=s3cret", "postgresql://u@h/db?pass%77ord=***"),  # libpq decodes the name
    ("postgresql://u@h/db?sslpassword=s3cret&sslkey=/k", "postgresql://u@h/db?sslpassword=***&sslkey=/k"),
    ("postgresql://u:s3cret@h/db?password=s3cret", "postgresql://u:***@h/db?password=***"),
    ("postgresql:///db?host=/run/postgresql&user=u&password=s3cret",
     "postgresql:///db?host=/run/postgresql&user=u&password=***"),
    ("postgresql://u:a/b?c@s3cret@h1:5432,h2/db", "postgresql://u:***@h1:5432,h2/db"),  # unencoded / ? @ in it
    ("postgres://u:s3cret@h/db?passfile=/home/u/.pgpass", "postgres://u:***@h/db?passfile=/home/u/.pgpass"),
    ("postgresql://h:5432/db", "postgresql://h:5432/db"),  # a port, no password
    ("postgresql://u@h/db?application_name=me@corp", "postgresql://u@h/db?application_name=me@corp"),
    ("postgresql://h:5432/db@x", "postgresql://h:***@x"),  # as well a password holding a /: masked
])
def test_every_credential_form_is_masked(url: str, shown: str) -> None:
    assert redact(url) == shown
    assert "s3cret" not in scrub(f"a driver's error quoting {url}", url)


def test_a_credential_is_taken_out_of_a_drivers_message_in_either_spelling() -> None:
    url = "postgresql://u:p%40ss@h/db?sslpassword=k%26ey"  # libpq decodes both: either spelling may come back
    assert scrub("no: p@ss, p%40ss; k&ey, k%26ey", url) == "no: ***, ***; ***, ***"


def test_a_url_without_a_host_keeps_its_slashes() -> None:
    url = "postgresql:///memory?host=/run/postgresql&user=agent&pool_size=4"
    assert split_url(url) == ("postgresql:///memory?host=/run/postgresql&user=agent",
                              {"pool_size": 4.0, "pool_timeout": 30.0})
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


def test_a_vault_opens_by_a_url_without_a_host_and_never_shows_its_password(pg_url: str, clock: Clock) -> None:
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


def test_a_password_in_the_query_never_reaches_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url in ("postgresql://user@127.0.0.1:9/db?password=s3cret-9",  # nothing listens on port 9
                "postgresql:///db?host=127.0.0.1&port=9&user=u&sslpassword=s3cret-9&password=s3cret-9"):
        with pytest.raises(StorageError, match=r"cannot connect to postgresql:") as error:
            Vault(url, embedder=False)
        assert "s3cret-9" not in str(error.value) and "password=***" in str(error.value)
    assert list(tmp_path.iterdir()) == []


def _saved(folder: Path) -> list[str]:
    return sorted(p.name.split("-", 1)[1] for p in folder.glob("*.pvidx"))


def test_a_new_process_answers_its_first_recall_from_the_cached_snapshot(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    embedder = FakeEmbedder()
    with Vault(pg_url, embedder=embedder, clock=clock) as vault:
        fill(vault, 300)
    built(pg_url, embedder)  # type: ignore[arg-type]
    assert _saved(tmp_path / "cache") == ["keyword-index.pvidx", "vector-index.pvidx"]
    assert oct((tmp_path / "cache").stat().st_mode & 0o777) == "0o700"
    with Vault(pg_url, embedder=embedder, clock=clock, keyword_index=False, vector_index=False) as writer:
        fill(writer, 40, start=300)  # written after the snapshot: replayed from the change log
        writer.forget(1)
        expected = {mode: answers(writer, mode) for mode in ("fts5", "dense", "hybrid")}
    with Vault(pg_url, embedder=embedder, clock=clock, keyword_index="saved", vector_index="saved") as one_shot:
        assert answers(one_shot, "fts5") == expected["fts5"]
        assert one_shot.stats().keyword_index.endswith("from a snapshot)")
        assert answers(one_shot, "dense") == expected["dense"] and answers(one_shot, "hybrid") == expected["hybrid"]


def test_another_database_never_takes_its_snapshot(pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    clock: Clock) -> None:
    from ....conftest import new_database

    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    with new_database(pg_server) as first, new_database(pg_server) as second:
        for url in (first, second):  # the same memories, so the same change log positions
            with Vault(url, embedder=False, clock=clock) as vault:
                fill(vault, 50)
                vault.recall("billing")
                assert vault.wait_for_keyword_index(30)
        assert len(list((tmp_path / "cache").glob("*-keyword-index.pvidx"))) == 2  # one per database


def test_an_empty_cache_variable_keeps_the_indexes_in_memory(pg_url: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", "")
    with Vault(pg_url, embedder=False) as vault:
        fill(vault, 20)
        assert vault.recall("billing").items and vault.wait_for_keyword_index(30)
        assert "snapshot" not in vault.stats().keyword_index


def _read_only(url: str) -> str:
    return url + ("&" if "?" in url else "?") + "options=-c%20default_transaction_read_only%3Don"


def test_a_replica_reads_and_refuses_writes_by_name(pg_url: str) -> None:
    with Vault(pg_url, embedder=False) as primary:
        kept = primary.remember("note", "a", "replicas serve reads")
    with Vault(_read_only(pg_url), embedder=False) as replica:
        result = replica.recall("replicas")  # reinforce defaults to true: nothing to count on a replica
        assert [i.id for i in result.items] == [kept.id]
        assert replica.scan().items[0].id == kept.id and replica.history("note", "a").total == 1
        for write in (lambda: replica.remember("note", "b", "no"), lambda: replica.forget(kept.id),
                      lambda: replica.link(kept.id, kept.id, "self")):
            with pytest.raises(NotSupported, match="is read-only .*write through the primary"):
                write()
        assert replica.prepare("replicas").related == [kept.id]  # proactive recall's caches are skipped, not failed
    with Vault(pg_url, embedder=False) as primary:
        assert primary.get_entity(kept.id).retrieval_count == 0  # the replica counted nothing


def test_a_replica_behind_the_package_schema_is_refused_at_open(pg_url: str) -> None:
    import psycopg

    with Vault(pg_url, embedder=False):
        pass
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as if the primary had not been upgraded yet
        conn.execute("DELETE FROM _migrations WHERE version = (SELECT max(version) FROM _migrations)")
    with pytest.raises(SetupError, match="read-only .*open it once through the primary"):
        Vault(_read_only(pg_url), embedder=False)
