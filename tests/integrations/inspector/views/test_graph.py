"""``/graph`` (views/graph.py): a memory's neighbourhood drawn, coloured by community, and the largest communities."""

from __future__ import annotations

import re

from perseus_vault_core import Vault

from ..conftest import Sample, Server, get


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
