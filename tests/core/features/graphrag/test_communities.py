"""Communities of the link graph (docs/graphrag.md): deterministic, stable ids, scoped, incremental."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.features.graphrag.communities import Communities, community_id

from ....conftest import DAY_MS, Clock

THEMES = {
    "storage": [
        "SQLite in WAL mode keeps writes durable",
        "We chose SQLite for the storage engine",
        "Nightly backups copy the SQLite file",
        "The storage layer indexes text with FTS5",
        "Vacuum runs after large purges of storage",
    ],
    "billing": [
        "Stripe sends the invoices every month",
        "Billing retries failed card payments three times",
        "Refunds need approval from finance",
        "The billing service owns invoice numbering",
        "Tax rates for invoices come from the billing config",
    ],
    "oncall": [
        "The pager rotation changes every Monday",
        "Escalate sev1 incidents to the on-call lead",
        "Runbooks for incidents live in the ops wiki",
        "Incident reviews happen within two days",
        "The on-call lead owns the incident timeline",
    ],
}


def build(vault: Vault, order: list[tuple[str, int]] | None = None, **scope: Any) -> dict[str, list[int]]:
    """Three themed clusters of five (a ring plus one chord each), plus one weak bridge between two
    clusters. ``order``: the order in which the (theme, index) memories are written."""
    order = order or [(t, i) for t in THEMES for i in range(5)]
    ids: dict[str, list[int]] = {t: [0] * 5 for t in THEMES}
    for theme, i in order:
        ids[theme][i] = vault.remember(theme, f"{theme}-{i}", THEMES[theme][i], **scope).id
    pairs = [(t, a, b) for t in THEMES for a, b in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2))]
    for theme, a, b in pairs:
        vault.link(ids[theme][a], ids[theme][b], **scope)
    vault.link(ids["storage"][4], ids["billing"][4], relation="mentions", weight=0.5, **scope)
    return ids


def by_members(vault: Vault, **params: Any) -> dict[tuple[int, ...], str]:
    return {tuple(c.members): c.id for c in vault.communities(**params).communities}


def test_themed_clusters_are_found_with_ids_from_their_members(vault: Vault) -> None:
    ids = build(vault)
    result = vault.communities()
    assert result.method == "label_propagation"
    assert (result.nodes, result.edges, result.total) == (15, 19, 3)
    groups = {tuple(c.members) for c in result.communities}
    assert groups == {tuple(sorted(v)) for v in ids.values()}
    for c in result.communities:
        assert c.id == community_id(c.members) and c.size == 5
        assert c.summary_id is None
        assert [m.centrality for m in c.central] == sorted((m.centrality for m in c.central), reverse=True)
    storage = next(c for c in result.communities if c.members == sorted(ids["storage"]))
    # the chord 0-2 and the ring make members 0 and 2 the most central (degree 3), ties by id
    assert [m.id for m in storage.central[:2]] == [ids["storage"][0], ids["storage"][2]]
    assert storage.central[0].title == THEMES["storage"][0]


def test_same_graph_written_in_another_order_gives_the_same_communities(tmp_path: Path, clock: Clock) -> None:
    order = [(t, i) for t in THEMES for i in range(5)]
    shuffled = order[:]
    random.Random(7).shuffle(shuffled)
    seen = []
    for name, sequence in (("a", order), ("b", shuffled)):
        with Vault(tmp_path / f"{name}.db", clock=clock, embedder=False) as v:
            ids = build(v, sequence)
            # ids differ between the files; compare communities by their members' keys
            key_of = {e: f"{t}-{i}" for t, es in ids.items() for i, e in enumerate(es)}
            seen.append(
                sorted(tuple(sorted(key_of[m] for m in c.members)) for c in v.communities().communities)
            )
    assert seen[0] == seen[1]


def test_ids_are_identical_in_another_process(vault: Vault) -> None:
    build(vault)
    here = vault.communities(method="modularity").model_dump() | {"x": vault.communities().model_dump()}
    script = (
        "import json, sys\n"
        "from perseus_vault_core import Vault\n"
        "with Vault(sys.argv[1], embedder=False) as v:\n"
        "    out = v.communities(method='modularity').model_dump() | {'x': v.communities().model_dump()}\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, vault.path], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == json.loads(json.dumps(here))


def test_modularity_method_finds_the_same_planted_clusters(vault: Vault) -> None:
    ids = build(vault)
    result = vault.communities(method="modularity")
    assert result.method == "modularity"
    assert {tuple(c.members) for c in result.communities} == {tuple(sorted(v)) for v in ids.values()}


def test_a_membership_change_changes_exactly_the_affected_ids(vault: Vault) -> None:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])  # three separate components now
    before = by_members(vault)
    new = vault.remember("oncall", "oncall-5", "Pager alerts page the on-call lead").id
    vault.link(new, ids["oncall"][1])
    vault.link(new, ids["oncall"][3])
    after = by_members(vault)
    oncall_before = tuple(sorted(ids["oncall"]))
    assert oncall_before in before and oncall_before not in after
    assert tuple(sorted(ids["oncall"] + [new])) in after
    unchanged = {k: v for k, v in before.items() if k != oncall_before}
    assert {k: after[k] for k in unchanged} == unchanged  # the other communities keep their ids


def test_only_the_changed_component_is_clustered_again(db_path: Path, clock: Clock) -> None:
    from perseus_vault_core.contract.params import Filters
    from perseus_vault_core.primitives.filters import view

    with Vault(db_path, clock=clock, embedder=False) as v:
        ids = build(v)
        v.unlink(ids["storage"][4], ids["billing"][4])
        clusters = Communities(v.engine.backend.changes)
        conn = v.engine.conn()
        clusters.partition(conn, view(Filters(), clock()), "label_propagation")
        assert clusters.clustered == 3
        clusters.partition(conn, view(Filters(), clock()), "label_propagation")
        assert clusters.clustered == 3  # nothing changed: the partition is kept
        v.link(ids["billing"][1], ids["billing"][3])
        clusters.partition(conn, view(Filters(), clock()), "label_propagation")
        assert clusters.clustered == 4  # billing alone was clustered again


def test_communities_never_span_tenants(vault: Vault) -> None:
    a = build(vault, agent_id="alice")
    b = build(vault, agent_id="bob")
    mine = vault.communities(agent_id="alice")
    assert mine.nodes == 15
    assert {tuple(c.members) for c in mine.communities} == {tuple(sorted(v)) for v in a.values()}
    assert all(c.agent_id == "alice" for c in mine.communities)
    everyone = vault.communities()
    for c in everyone.communities:
        owners = {"alice" if m in sum(a.values(), []) else "bob" for m in c.members}
        assert len(owners) == 1 and c.agent_id in owners
    assert sum(b.values(), []) and everyone.total == 6


def test_time_and_status_rules_apply(vault: Vault, clock: Clock) -> None:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])
    then = clock()
    clock.advance(DAY_MS)
    for e in ids["billing"]:
        vault.forget(e)
    now = vault.communities()
    assert tuple(sorted(ids["billing"])) not in {tuple(c.members) for c in now.communities}
    assert now.total == 2
    past = vault.communities(as_of_unix_ms=then)
    assert tuple(sorted(ids["billing"])) in {tuple(c.members) for c in past.communities}
    archived = vault.communities(include_archived=True)
    assert archived.total == 3


def test_expiry_changes_the_partition_without_any_write(vault: Vault, clock: Clock) -> None:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])
    vault.remember("billing", "billing-0", THEMES["billing"][0], expires_at_ms=clock() + 1000)
    assert vault.communities().nodes == 15
    clock.advance(2000)  # billing-0 expires: the kept partition must not be served
    result = vault.communities()
    assert result.nodes == 14
    assert all(ids["billing"][0] not in c.members for c in result.communities)


def test_parameters_are_checked(vault: Vault) -> None:
    build(vault)
    for bad, field in (
        ({"method": "random"}, "method"),
        ({"min_size": 0}, "min_size"),
        ({"limit": 0}, "limit"),
        ({"min_decay": 0.5}, "min_decay"),
        ({"central": "3"}, "central"),
        ({"bogus": 1}, "bogus"),
    ):
        with pytest.raises(InvalidInput) as err:
            vault.communities(**bad)
        assert err.value.field == field
    page = vault.communities(limit=1, central=0, min_size=5)
    assert page.total == 3 and len(page.communities) == 1 and page.communities[0].central == []
    assert vault.communities(min_size=6).total == 0


def test_links_with_no_positive_weight_do_not_join(vault: Vault) -> None:
    a, b, c = (vault.remember("n", k, f"note {k}").id for k in "abc")
    vault.link(a, b)
    vault.link(b, c, weight=-1.0)
    assert [c_.members for c_ in vault.communities().communities] == [[a, b]]


def test_summary_entities_are_not_part_of_the_graph(vault: Vault) -> None:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])
    before = vault.communities()
    for c in before.communities:
        vault.community_summary(c.id)
    after = vault.communities()
    assert [(c.id, c.members) for c in after.communities] == [(c.id, c.members) for c in before.communities]
    assert all(c.summary_id is not None for c in after.communities)


def test_an_earlier_query_time_is_not_served_a_later_partition(vault: Vault, clock: Clock) -> None:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])
    before_extra = clock()
    clock.advance(DAY_MS)
    extra = vault.remember("oncall", "oncall-5", "Pager alerts go to the on-call lead").id
    vault.link(extra, ids["oncall"][0])
    assert any(extra in c.members for c in vault.communities().communities)
    earlier = vault.communities(query_time_unix_ms=before_extra)
    assert all(extra not in c.members for c in earlier.communities)
    assert tuple(sorted(ids["oncall"])) in {tuple(c.members) for c in earlier.communities}


def test_weights_that_cancel_out_are_no_edge_whatever_their_order(vault: Vault) -> None:
    a, b, c = (vault.remember("n", k, f"note {k}").id for k in "abc")
    vault.link(a, b)
    for relation, weight in (("r1", 0.1), ("r2", 0.2), ("r3", -0.3)):
        vault.link(b, c, relation=relation, weight=weight)
    result = vault.communities()
    assert result.edges == 1 and [c_.members for c_ in result.communities] == [[a, b]]


def test_the_relations_the_vault_inferred_make_communities_of_memories_nobody_linked(
    vault: Vault, clock: Clock
) -> None:
    """Memories alike are linked by the vault when written (source 'inferred'); those links place the memories
    nobody linked, at half their score (docs/graphrag.md)."""
    ids = [
        vault.remember("fact", f"region-{i}", f"Production runs in eu-west-{i} on EKS.").id
        for i in range(1, 4)
    ]
    inferred = vault.traverse(ids[-1], 1).edges
    assert inferred and {e.source for e in inferred} == {"inferred"}
    [found] = vault.communities().communities
    assert found.members == ids


def test_written_links_decide_the_communities_of_the_memories_they_join(vault: Vault, clock: Clock) -> None:
    """An inferred link that touches a memory someone linked is no edge: a store with written links keeps exactly
    the communities they make; the memories nobody linked cluster among themselves."""
    a = vault.remember("fact", "db-billing", "The billing service stores invoices in PostgreSQL 16.").id
    b = vault.remember("fact", "billing-owner", "Alice Moreau owns the billing service rollout.").id
    c = vault.remember(
        "fact", "db-search", "The billing service stores its search index in PostgreSQL 16 too."
    ).id
    d = vault.remember("fact", "search-owner", "Bruno Keller owns the search cluster upgrade.").id
    pairs = {frozenset((e.from_id, e.to_id)) for e in vault.traverse(c, 1).edges if e.source == "inferred"}
    assert frozenset((a, c)) in pairs  # the vault judged c alike a
    vault.link(a, b, "owned_by")
    vault.link(c, d, "owned_by")
    assert sorted(g.members for g in vault.communities().communities) == [[a, b], [c, d]]
    e = vault.remember(
        "note", "invoice-retention", "Invoices in the billing PostgreSQL 16 database are kept for ten years."
    ).id
    f = vault.remember(
        "note",
        "invoice-retention-eu",
        "Invoices in the billing PostgreSQL 16 database of EU customers are kept for ten years.",
    ).id
    assert any({x.from_id, x.to_id} == {e, f} for x in vault.traverse(f, 1).edges if x.source == "inferred")
    assert sorted(g.members for g in vault.communities().communities) == [[a, b], [c, d], [e, f]]
