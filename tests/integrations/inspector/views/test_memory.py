"""``/memory/<id>`` (views/memory.py): one memory whole, with its versions, links, communities and provenance."""

from __future__ import annotations

import re
from pathlib import Path

from perseus_vault_core import Vault

from ....conftest import Clock
from ..conftest import Sample, Server, get, served, text


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
