"""Forget, restore and verify from the pages: only with --allow-edits, only as a POST from this
inspector's own page (its Origin and CSRF token), and each one a version the history shows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from perseus_vault_core import Vault

from ...conftest import Clock, FakeEmbedder
from .conftest import Server, served


@pytest.fixture
def vault(tmp_path: Path, clock: Clock) -> Iterator[Vault]:
    with Vault(tmp_path / "edits.db", clock=clock, embedder=FakeEmbedder()) as v:
        v.remember("decision", "db", "We chose SQLite", agent_id="ops", source="design review")
        v.remember("fact", "other", "Another scope's fact", agent_id="sales")
        yield v


def csrf_of(server: Server, client: httpx.Client, path: str) -> str:
    page = client.get(server.url + path).text
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found is not None, "the page offers no form"
    return found.group(1)


def post(
    server: Server, client: httpx.Client, path: str, csrf: str, origin: str | None = "own"
) -> httpx.Response:
    headers = {} if origin is None else {"Origin": server.url if origin == "own" else origin}
    return client.post(server.url + path, data={"csrf": csrf}, headers=headers)


def test_forget_restore_and_verify_are_versions_in_the_history(vault: Vault, clock: Clock) -> None:
    with served(vault, allow_edits=True) as server, httpx.Client() as client:
        page = client.get(f"{server.url}/memory/1").text
        assert "Forget (archive)" in page and "Mark verified" in page
        csrf = csrf_of(server, client, "/memory/1")
        clock.advance(1000)
        r = post(server, client, "/memory/1/forget", csrf)
        assert r.status_code == 303 and r.headers["location"] == "/memory/1"
        assert vault.get_entity(1).status == "archived"
        assert "Restore" in client.get(f"{server.url}/memory/1").text
        clock.advance(1000)
        assert post(server, client, "/memory/1/restore", csrf).status_code == 303
        clock.advance(1000)
        assert post(server, client, "/memory/1/verify", csrf).status_code == 303
        e = vault.get_entity(1)
        assert (e.status, e.verified, e.content, e.source, e.version) == (
            "active",
            True,
            "We chose SQLite",
            "design review",
            4,
        )
        changes = [v.change for v in vault.history("decision", "db", agent_id="ops").items]
        assert changes == ["update", "restore", "archive", "create"]
        assert "Mark verified" not in client.get(f"{server.url}/memory/1").text


def test_a_read_only_inspector_offers_no_change_and_refuses_one(vault: Vault) -> None:
    with served(vault) as server, httpx.Client() as client:
        page = client.get(f"{server.url}/memory/1").text
        assert "Forget" not in page and 'method="post"' not in page
        r = post(server, client, "/memory/1/forget", "anything")
        assert r.status_code == 403 and "read-only" in r.text
        assert vault.get_entity(1).status == "active"


@pytest.mark.parametrize("origin", [None, "http://evil.example", "null"])
def test_a_change_from_another_site_is_refused_and_changes_nothing(vault: Vault, origin: str | None) -> None:
    with served(vault, allow_edits=True) as server, httpx.Client() as client:
        csrf = csrf_of(server, client, "/memory/1")
        r = post(server, client, "/memory/1/forget", csrf, origin=origin)
        assert r.status_code == 403, r.text[-500:]
        assert vault.get_entity(1).status == "active" and vault.get_entity(1).version == 1


def test_a_change_without_this_page_s_csrf_token_is_refused(vault: Vault) -> None:
    with served(vault, allow_edits=True) as server, httpx.Client() as client:
        for token in ("", "0" * 64):
            r = post(server, client, "/memory/1/forget", token)
            assert r.status_code == 403 and "CSRF" in r.text
        with served(vault, allow_edits=True) as other:  # another server's (or a restarted one's) token
            stale = csrf_of(other, client, "/memory/1")
        assert post(server, client, "/memory/1/forget", stale).status_code == 403
        assert vault.get_entity(1).version == 1


def test_unknown_changes_and_other_scopes_are_refused(vault: Vault) -> None:
    with served(vault, allow_edits=True, agent_id="ops") as server, httpx.Client() as client:
        csrf = csrf_of(server, client, "/memory/1")
        assert post(server, client, "/memory/1/purge", csrf).status_code == 404
        assert post(server, client, "/memory/2/forget", csrf).status_code == 404  # another scope's: not here
        assert client.get(f"{server.url}/memory/1/forget").status_code == 405
        assert vault.get_entity(1).version == 1 and vault.get_entity(2).version == 1
