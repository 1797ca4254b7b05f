"""Every view over HTTP, from a real server: what each shows, that each is a URL that can be shared and
reloaded, and how a bad request, an unknown memory or a bound scope is answered. The same on PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from perseus_vault_core import Vault

from ...conftest import Clock, FakeEmbedder, vault_location
from .conftest import Sample, Server, fill, import_files, sample_store, served


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Vault, Sample]]:
    with sample_store(tmp_path_factory.mktemp("inspector-app"), FakeEmbedder()) as store:
        yield store


@pytest.fixture(scope="module")
def server(store: tuple[Vault, Sample]) -> Iterator[Server]:
    with served(store[0]) as s:
        yield s


def get(server: Server, path: str, status: int = 200) -> str:
    r = httpx.get(server.url + path, timeout=30)
    assert r.status_code == status, (path, r.status_code, r.text[-2000:])
    assert r.headers["content-type"].startswith("text/html")
    return r.text


def text(html: str) -> str:
    """What a reader sees: the page without its tags, entities decoded."""
    import html as h

    return h.unescape(re.sub(r"<[^>]+>", " ", html))


def test_the_overview_counts_by_scope_type_and_category_and_lists_the_latest_writes(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    page = get(server, "/")
    counts = store[0].counts()
    assert (
        f"{counts.total:,}" in page and "By scope (2)" in page and "By type" in page and "By category" in page
    )
    assert 'href="/browse?agent_id=sales&amp;workspace_hash=crm"' in page  # a scope's link opens it
    assert "Latest writes" in page and "Opinions" in page  # the memory files were written last
    assert "keyword index" in page and "sqlite" in page


def test_browse_filters_and_pages_by_cursor(server: Server, store: tuple[Vault, Sample]) -> None:
    vault, sample = store
    page = get(server, "/browse?agent_id=ops&type=decision&limit=25")
    shown = {int(i) for i in re.findall(r'href="/memory/(\d+)\?agent_id=ops"', page)}
    decisions = {e.id for e in vault.scan(agent_id="ops", type="decision", limit=1000).items}
    assert shown == decisions
    first = get(server, "/browse?limit=25")
    next_link = re.search(r'href="(/browse\?[^"]*cursor=[^"]+)" rel="next"', first)
    assert next_link is not None
    second = get(server, next_link.group(1).replace("&amp;", "&"))
    firsts = set(re.findall(r'href="/memory/(\d+)"', first))
    assert firsts and not firsts & set(
        re.findall(r'href="/memory/(\d+)"', second)
    )  # the next page, not the same
    assert "<th>true from</th>" in page and page.count("<time datetime=") >= len(decisions)  # each row dated
    archived = get(server, "/browse?status=archived")
    assert f'/memory/{sample.ids["gone"]}"' in archived and f'/memory/{sample.ids["queue2"]}"' not in archived
    superseded = get(server, "/browse?status=superseded")
    assert f'/memory/{sample.ids["queue"]}"' in superseded


def test_browse_by_text_is_keyword_recall_and_reinforces_nothing(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    vault, sample = store
    before = vault.get_entity(sample.themes["billing"][0]).retrieval_count
    page = get(server, "/browse?q=invoices")
    assert f'/memory/{sample.themes["billing"][0]}"' in page and "keyword recall" in page
    assert vault.get_entity(sample.themes["billing"][0]).retrieval_count == before


def test_a_memory_shows_its_versions_links_communities_and_provenance(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    vault, sample = store
    member = sample.themes["storage"][0]
    page = get(server, f"/memory/{member}")
    seen = text(page)
    assert "SQLite in WAL mode keeps writes durable" in seen
    assert "History (1 version)" in seen and 'class="timeline"' in page
    assert (
        "Out of it" in seen
        and "supports" in seen
        and f'/memory/{sample.themes["storage"][1]}?agent_id=ops"' in page
    )
    assert "Communities" in seen and "5 memories" in seen and "5 linked memories about storage" in seen
    city = get(server, f"/memory/{sample.ids['city']}")
    assert (
        "History (2 versions)" in text(city)
        and "Alice lives in Paris" in city
        and "Alice lives in Berlin" in city
    )
    assert "chat 2026-01-02" in city and "certainty" in city and "verified" in city
    believed = re.search(r'href="(/memory/\d+\?[^"]*as_of=\d+)">Alice lives in Paris', city)
    assert believed is not None  # each version opens the memory as it was believed then
    then = get(server, believed.group(1).replace("&amp;", "&"))
    assert "As believed at" in then and "version 1" in then and "Alice lives in Paris" in then


def test_the_playground_shows_each_arm_the_fused_score_and_the_knobs_effect(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    vault, sample = store
    page = get(server, "/recall?q=storage+sqlite&mode=hybrid&startup=1&validity=1&agent_id=ops")
    assert "by hybrid" in page and "fts5 #" in page and "dense #" in page
    assert "without knobs" in page and "validity valid" in page and "actionability" in page
    assert re.search(r"<td>[↑↓]\d+</td>", page), "the knobs moved something in this store"
    plain = get(server, "/recall?q=storage+sqlite&mode=fts5")
    assert "dense #" not in plain and "by fts5" in plain
    assert (
        vault.get_entity(sample.themes["storage"][0]).retrieval_count == 0
    )  # the playground reinforces nothing
    as_of = get(server, "/recall?q=invoices&mode=fts5&as_of=2026-01-01T12:00:00Z")
    assert "no memory matches" in as_of  # the billing memories were written the next day
    assert "Type a query" in get(server, "/recall")


def test_the_graph_draws_the_neighbourhood_coloured_by_community(
    server: Server, store: tuple[Vault, Sample]
) -> None:
    vault, sample = store
    start = sample.themes["storage"][0]
    everything = get(
        server, f"/graph?id={start}&depth=2&agent_id=ops"
    )  # the links the vault inferred too, dashed
    walk = vault.traverse(start, depth=2, agent_id="ops")
    assert sorted(int(n) for n in re.findall(r'data-node="(\d+)"', everything)) == sorted(
        n.entity.id for n in walk.nodes
    )
    inferred = sum(e.source == "inferred" for e in walk.edges)
    assert inferred and everything.count('class="edge inferred"') == inferred
    assert everything.count('class="edge"') == len(walk.edges) - inferred
    page = get(server, f"/graph?id={start}&depth=2&agent_id=ops&inferred=no")  # the links written
    walk = vault.traverse(start, depth=2, agent_id="ops", inferred=False)
    assert sorted(int(n) for n in re.findall(r'data-node="(\d+)"', page)) == sorted(
        n.entity.id for n in walk.nodes
    )
    assert page.count('class="edge"') == len(walk.edges) and "edge inferred" not in page
    assert "Communities here (2)" in page and "5 linked memories about storage" in page
    assert "no summary written yet" in page  # billing has none
    index = get(server, "/graph?agent_id=ops")
    assert (
        "communities among" in index and f"/graph?agent_id=ops&amp;id={sample.themes['storage'][0]}" in index
    )


def test_time_travel_shows_the_store_as_believed_then(server: Server, store: tuple[Vault, Sample]) -> None:
    vault, sample = store
    page = get(server, "/time?at=2026-01-01T12:00:00Z")
    assert "5 active memories then" in text(page)  # only the storage theme had been written
    assert f"/memory/{sample.themes['storage'][0]}?as_of=2026-01-01T12" in page
    assert f"/memory/{sample.themes['billing'][0]}" not in page
    writes = get(server, "/time")
    assert "Writes, newest first" in writes and "/time?at=" in writes


def test_hygiene_reports_its_reasons(server: Server) -> None:
    page = get(server, "/hygiene?agent_id=ops&min_age_days=0")
    for _ in range(100):  # computed in the background: the page reloads until it is ready
        if "Computing the report" not in page:
            break
        page = get(server, "/hygiene?agent_id=ops&min_age_days=0")
    assert "active memories flagged" in page and "never retrieved" in page


def test_memory_files_list_their_entries_by_date(server: Server) -> None:
    listing = get(server, "/files?agent_id=ops")
    assert "Opinions" in listing and "Preferences" in listing
    page = get(server, "/files?agent_id=ops&file=Opinions")
    dates = re.findall(r"<td>(\d{4}-\d{2}(?:-\d{2})?)</td>", page)
    assert dates and dates == sorted(dates, reverse=True) and "2026-01-05" == dates[0]
    section = get(server, "/files?agent_id=ops&file=Opinions&section=Work+pace")
    assert "2018-11-20" in section and "2026-01-05" not in section


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


def test_a_memory_not_valid_now_still_shows_whole(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "later.db", clock=clock, embedder=False) as vault:
        later = vault.remember(
            "fact", "launch", "The launch happens in spring", valid_from_ms=clock.now + 10**9
        ).id
        with served(vault) as server:
            page = text(get(server, f"/memory/{later}"))
            assert (
                "The launch happens in spring" in page
                and "not valid now" in page
                and "History (1 version)" in page
            )


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
