"""The app over HTTP, from a real server, across its views: how a bad request, an unknown memory or page
and a bound scope are answered, the static files, every view on PostgreSQL and the pages while the link
graph is clustered. What each view shows is tested in ``views/test_<view>.py``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from perseus_vault_core import Vault

from ...conftest import Clock, FakeEmbedder, vault_location
from .conftest import Sample, Server, fill, get, import_files, served, text


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/memory/999999", 404, "no entity with id 999999"),
        ("/browse?limit=7", 400, "limit: must be one of"),
        ("/graph?id=abc", 400, "id: must be a whole number"),
        ("/recall?q=x&mode=nope", 400, "mode: must be one of"),
        ("/time?at=yesterday", 400, "as_of_unix_ms"),
        ("/browse?cursor=forged", 400, "cursor"),
        ("/files?file=Nope&agent_id=ops", 404, "no memory file"),
        ("/no-such-page", 404, "No such page"),
    ],
)
def test_bad_requests_are_answered_with_the_reason_and_nothing_else(
    server: Server, path: str, status: int, says: str
) -> None:
    page = get(server, path, status)
    assert says in text(page)
    assert not re.search(r"Traceback|File \"|\.py\b|site-packages", page)


def test_the_static_files_ship_in_the_package(server: Server) -> None:
    for name, kind in (("app.css", "text/css"), ("app.js", "text/javascript"), ("icon.svg", "image/svg+xml")):
        r = httpx.get(f"{server.url}/static/{name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind) and r.content
    assert httpx.get(f"{server.url}/static/../app.py").status_code == 404
    assert httpx.get(f"{server.url}/favicon.ico").headers["content-type"] == "image/svg+xml"
    page = get(server, "/")
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing from the network


def test_a_bound_inspector_shows_its_scope_only_and_refuses_another(store: tuple[Vault, Sample]) -> None:
    vault, sample = store
    with served(vault, agent_id="sales", workspace_hash="crm") as bound:
        page = get(bound, "/")
        assert (
            "bound to agent sales / workspace crm" in page and "The store" not in page
        )  # stats reach past it
        assert "1 active memories" in text(page).replace("1  active", "1 active") or ">1<" in page
        assert f'/memory/{sample.ids["other"]}"' in get(bound, "/browse")
        get(
            bound, f"/memory/{sample.themes['storage'][0]}", 404
        )  # another scope's memory does not exist here
        refused = get(bound, "/browse?agent_id=ops", 400)
        assert "bound to agent_id='sales'" in text(refused)


@pytest.mark.parametrize("backend", ["postgres"])
def test_every_view_works_on_postgresql(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    with vault_location(backend, request, tmp_path) as location:
        clock = Clock()
        # A password given as a query parameter (the test server trusts its clients: any will do) shows nowhere.
        secret = "pv-Secret-77e1"
        url = f"{location}{'&' if '?' in str(location) else '?'}password={secret}"
        if urlsplit(str(location)).password:
            url, secret = str(location), str(urlsplit(str(location)).password)
        with Vault(url, clock=clock, embedder=FakeEmbedder()) as vault:
            sample = fill(vault, clock)
            import_files(vault, tmp_path)
            with served(vault) as server:
                assert "postgres" in get(server, "/")
                paths: list[Any] = [
                    "/",
                    "/browse?agent_id=ops",
                    "/browse?q=invoices",
                    f"/memory/{sample.ids['city']}",
                    "/recall?q=storage&mode=hybrid",
                    f"/graph?id={sample.themes['storage'][0]}",
                    "/time?at=2026-01-02",
                    "/files?agent_id=ops&file=Opinions",
                    "/graph",
                ]
                for path in paths:
                    page = get(server, path)
                    assert "message error" not in page, path
                    assert secret not in page, path
                assert "Alice lives in Paris" in get(server, f"/memory/{sample.ids['city']}")


def test_while_the_link_graph_is_clustered_the_pages_answer_without_it(
    store: tuple[Vault, Sample], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clustering 100,000 linked memories takes seconds: a page does not wait for it (docs/ui.md)."""
    from perseus_vault_integrations.inspector.query import Context

    vault, sample = store
    monkeypatch.setattr(Context, "clustered", lambda self, scope: (False, 4.0))
    with served(vault) as server:
        start = sample.themes["storage"][0]
        graph = get(server, f"/graph?id={start}&agent_id=ops&inferred=no")
        assert "being clustered (4 s so far)" in graph and 'http-equiv="refresh"' in graph
        assert (
            len(re.findall(r'data-node="\d+"', graph)) == 7 and 'fill="#9aa0a6"' in graph
        )  # drawn, all grey
        memory = get(server, f"/memory/{start}")
        assert "being clustered" in memory and "SQLite in WAL mode" in memory and "Out of it" in memory
        assert "being clustered" in get(server, "/graph")
