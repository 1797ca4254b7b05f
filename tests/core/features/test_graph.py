"""Links and walks: link, unlink and traverse (docs/graph.md)."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Link, NotFound, TraverseResult, Vault

from ...conftest import Clock

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def words_of(key: str) -> str:
    """Four made-up words of ``key``'s own, so that two notes share none: these tests walk the links written
    here, and notes alike would be linked by the vault as well (test_relations.py)."""
    letters = "".join(chr(ord("a") + int(c, 16)) for c in hashlib.sha256(key.encode()).hexdigest())
    return " ".join(letters[k : k + 8] for k in range(0, 32, 8))


def note(vault: Vault, key: str, **scope: Any) -> int:
    return vault.remember("node", key, words_of(key), **scope).id


def link_rows(vault: Vault) -> list[dict[str, Any]]:
    """Every link row (open and closed), as the export writes it."""
    buf = io.StringIO()
    vault.export_jsonl(buf)
    return [r for r in map(json.loads, buf.getvalue().splitlines()) if r["record"] == "link"]


def shape(result: TraverseResult) -> list[tuple[int, int, list[int]]]:
    return [(n.entity.id, n.depth, n.path) for n in result.nodes]


def edge_set(result: TraverseResult) -> list[tuple[int, int, str]]:
    return [(e.from_id, e.to_id, e.relation) for e in result.edges]


@pytest.fixture
def graph(vault: Vault, clock: Clock) -> dict[str, int]:
    """a -> b (related), a -> c (cites), b -> d (related), c -> d (cites), e -> a (depends_on)."""
    ids = {k: note(vault, k) for k in "abcde"}
    clock.advance(1000)
    vault.link(ids["a"], ids["b"], "related")
    vault.link(ids["a"], ids["c"], "cites", 0.5)
    vault.link(ids["b"], ids["d"], "related")
    vault.link(ids["c"], ids["d"], "cites")
    vault.link(ids["e"], ids["a"], "depends_on", 2.0)
    clock.advance(1000)
    return ids


# --- link ----------------------------------------------------------------------------------------


def test_link_is_typed_weighted_and_directed(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    clock.advance(1000)
    link = vault.link(a, b, "cites", 0.25, source="reviewer")
    assert isinstance(link, Link)
    assert (link.from_id, link.to_id, link.relation, link.weight, link.source) == (
        a,
        b,
        "cites",
        0.25,
        "reviewer",
    )
    assert (link.created_at_ms, link.recorded_from_ms, link.recorded_to_ms) == (clock.now, clock.now, None)
    out = vault.traverse(a, 1, direction="out")
    assert [n.entity.id for n in out.nodes] == [a, b]
    assert vault.traverse(b, 1, direction="out").nodes[1:] == []  # directed: nothing leaves b
    assert [n.entity.id for n in vault.traverse(b, 1, direction="in").nodes] == [b, a]


def test_link_defaults(vault: Vault) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    link = vault.link(a, b)
    assert (link.relation, link.weight, link.source) == ("related", 1.0, None)


def test_relinking_with_the_same_weight_is_a_no_op(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    first = vault.link(a, b, "cites", 0.5)
    clock.advance(1000)
    again = vault.link(a, b, "cites", 0.5)
    assert again == first
    assert len(link_rows(vault)) == 1
    assert vault.stats().links == 1


def test_relinking_with_a_new_weight_closes_the_old_row(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    first = vault.link(a, b, "cites", 0.5)
    reweighted_at = clock.advance(1000)
    second = vault.link(a, b, "cites", 0.9)
    assert second.id != first.id
    assert second.weight == 0.9
    assert second.created_at_ms == first.created_at_ms  # the link is as old as it was
    assert (second.recorded_from_ms, second.recorded_to_ms) == (reweighted_at, None)
    rows = {r["id"]: r for r in link_rows(vault)}
    assert rows[first.id]["recorded_to_ms"] == reweighted_at and rows[first.id]["weight"] == 0.5
    assert rows[second.id]["recorded_to_ms"] is None
    assert vault.stats().links == 1  # one open link
    assert [e.weight for e in vault.traverse(a, 1).edges] == [0.9]
    assert [e.weight for e in vault.traverse(a, 1, as_of_unix_ms=reweighted_at - 1).edges] == [0.5]


def test_two_relations_between_the_same_pair_are_two_links(vault: Vault) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    one = vault.link(a, b, "cites")
    two = vault.link(a, b, "related")
    assert one.id != two.id
    assert sorted(e.relation for e in vault.traverse(a, 1).edges) == ["cites", "related"]
    assert [n.entity.id for n in vault.traverse(a, 1).nodes] == [a, b]  # b only once


def test_self_link_is_refused(vault: Vault) -> None:
    a = note(vault, "a")
    with pytest.raises(InvalidInput) as err:
        vault.link(a, a)
    assert err.value.field == "to_id"
    assert link_rows(vault) == []


@pytest.mark.parametrize(
    ("scope_a", "scope_b"),
    [
        ({"agent_id": "a"}, {"agent_id": "b"}),
        ({"agent_id": "a"}, {}),
        ({"workspace_hash": "w1"}, {"workspace_hash": "w2"}),
        ({"agent_id": "a", "workspace_hash": "w1"}, {"agent_id": "a"}),
    ],
)
def test_link_across_scopes_is_refused(
    vault: Vault, scope_a: dict[str, Any], scope_b: dict[str, Any]
) -> None:
    x = note(vault, "x", **scope_a)
    y = note(vault, "y", **scope_b)
    for frm, to in ((x, y), (y, x)):
        with pytest.raises(InvalidInput) as err:
            vault.link(frm, to)
        assert err.value.field == "to_id"
    assert link_rows(vault) == []


def test_link_within_a_scope_names_it(vault: Vault) -> None:
    x = note(vault, "x", agent_id="a")
    y = note(vault, "y", agent_id="a")
    z = note(vault, "z", agent_id="b")
    link = vault.link(x, y, agent_id="a")
    assert (link.from_id, link.to_id) == (x, y)
    with pytest.raises(NotFound):  # z does not exist in agent a's scope
        vault.link(x, z, agent_id="a")
    with pytest.raises(NotFound):  # nor x in agent b's
        vault.link(x, y, "other", agent_id="b")
    assert len(link_rows(vault)) == 1


def test_link_to_an_unknown_entity_is_not_found(vault: Vault) -> None:
    a = note(vault, "a")
    with pytest.raises(NotFound):
        vault.link(a, 999)
    with pytest.raises(NotFound):
        vault.link(999, a)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"relation": ""}, "relation"),
        ({"relation": "   "}, "relation"),
        ({"relation": "x" * 129}, "relation"),
        ({"relation": 5}, "relation"),
        ({"weight": float("nan")}, "weight"),
        ({"weight": float("inf")}, "weight"),
        ({"weight": "1"}, "weight"),
        ({"weight": True}, "weight"),
    ],
)
def test_link_refuses_bad_arguments(vault: Vault, kwargs: dict[str, Any], field: str) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    with pytest.raises(InvalidInput) as err:
        vault.link(a, b, **kwargs)
    assert err.value.field == field
    with pytest.raises(InvalidInput) as err:
        vault.link("1", b)  # type: ignore[arg-type]
    assert err.value.field == "from_id"
    assert link_rows(vault) == []


# --- unlink --------------------------------------------------------------------------------------


def test_unlink_one_relation(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    vault.link(a, b, "cites")
    vault.link(a, b, "related")
    clock.advance(1000)
    assert vault.unlink(a, b, "cites") == 1
    assert [e.relation for e in vault.traverse(a, 1).edges] == ["related"]
    assert vault.unlink(a, b, "cites") == 0  # already closed
    assert vault.unlink(a, b, "never-linked") == 0


def test_unlink_all_relations(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    vault.link(a, b, "cites")
    vault.link(a, b, "related")
    vault.link(b, a, "answers")
    clock.advance(1000)
    assert vault.unlink(a, b) == 2
    assert vault.unlink(a, b) == 0
    assert edge_set(vault.traverse(a, 1)) == [(b, a, "answers")]  # the reverse link is another link
    assert vault.stats().links == 1


def test_unlink_keeps_the_closed_rows_as_history(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    link = vault.link(a, b)
    unlinked_at = clock.advance(1000)
    assert vault.unlink(a, b) == 1
    rows = link_rows(vault)
    assert [(r["id"], r["recorded_to_ms"]) for r in rows] == [(link.id, unlinked_at)]


def test_relinking_after_unlink_opens_a_new_row(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    first = vault.link(a, b)
    clock.advance(1000)
    vault.unlink(a, b)
    clock.advance(1000)
    again = vault.link(a, b)
    assert again.id != first.id and again.recorded_to_ms is None
    assert [e.id for e in vault.traverse(a, 1).edges] == [again.id]


def test_unlink_is_scoped(vault: Vault) -> None:
    x = note(vault, "x", agent_id="a")
    y = note(vault, "y", agent_id="a")
    vault.link(x, y)
    with pytest.raises(NotFound):
        vault.unlink(x, y, agent_id="b")
    assert vault.unlink(x, y, agent_id="a") == 1


# --- traverse ------------------------------------------------------------------------------------


def test_a_walk_shows_the_links_the_vault_inferred_and_can_leave_them_out(vault: Vault, clock: Clock) -> None:
    old = vault.remember("fact", "prod-region", "Production runs in eu-west-1 on EKS.").id
    clock.advance(1000)
    new = vault.remember("fact", "prod-move", "Production runs in us-east-2 on EKS.").id
    other = note(vault, "x")
    vault.link(new, other, "cites")
    walk = vault.traverse(new, 1)
    assert {(e.to_id, e.relation, e.source) for e in walk.edges} == {
        (old, "updates", "inferred"),
        (other, "cites", None),
    }
    plain = vault.traverse(new, 1, inferred=False)
    assert [n.entity.id for n in plain.nodes] == [new, other] and {e.source for e in plain.edges} == {None}
    with pytest.raises(InvalidInput, match="inferred"):
        vault.traverse(new, 1, inferred="no")  # type: ignore[arg-type]


def test_traverse_depth_zero_is_the_start_alone(vault: Vault, graph: dict[str, int]) -> None:
    result = vault.traverse(graph["a"], 0)
    assert result.start == graph["a"]
    assert shape(result) == [(graph["a"], 0, [graph["a"]])]
    assert result.edges == []
    assert result.nodes[0].entity.content == words_of("a")


def test_traverse_depth_one_both_directions(vault: Vault, graph: dict[str, int]) -> None:
    a, b, c, e = graph["a"], graph["b"], graph["c"], graph["e"]
    result = vault.traverse(a, 1)  # direction defaults to both
    # Neighbours in (relation, id) order: cites -> c, depends_on <- e, related -> b.
    assert shape(result) == [(a, 0, [a]), (c, 1, [a, c]), (e, 1, [a, e]), (b, 1, [a, b])]
    assert edge_set(result) == [(a, c, "cites"), (e, a, "depends_on"), (a, b, "related")]
    assert [x.weight for x in result.edges] == [0.5, 2.0, 1.0]


def test_traverse_out_and_in(vault: Vault, graph: dict[str, int]) -> None:
    a, b, c, d, e = (graph[k] for k in "abcde")
    out = vault.traverse(a, 1, direction="out")
    assert shape(out) == [(a, 0, [a]), (c, 1, [a, c]), (b, 1, [a, b])]
    inward = vault.traverse(a, 1, direction="in")
    assert shape(inward) == [(a, 0, [a]), (e, 1, [a, e])]
    into_d = vault.traverse(d, 2, direction="in")
    assert shape(into_d) == [(d, 0, [d]), (c, 1, [d, c]), (b, 1, [d, b]), (a, 2, [d, c, a])]
    assert edge_set(into_d) == [(c, d, "cites"), (b, d, "related"), (a, c, "cites"), (a, b, "related")]


def test_traverse_depth_two_visits_each_node_once_at_its_shortest_depth(
    vault: Vault, graph: dict[str, int]
) -> None:
    a, b, c, d = (graph[k] for k in "abcd")
    result = vault.traverse(a, 2, direction="out")
    # d is reachable through c and through b; c comes first in (relation, id) order.
    assert shape(result) == [(a, 0, [a]), (c, 1, [a, c]), (b, 1, [a, b]), (d, 2, [a, c, d])]
    # Both edges into d are reported, though d appears once.
    assert edge_set(result) == [(a, c, "cites"), (a, b, "related"), (c, d, "cites"), (b, d, "related")]


def test_traverse_prefers_the_shorter_path(vault: Vault, clock: Clock) -> None:
    a, b, c = note(vault, "a"), note(vault, "b"), note(vault, "c")
    vault.link(a, b)
    vault.link(b, c)
    vault.link(a, c)
    result = vault.traverse(a, 3, direction="out")
    assert shape(result) == [(a, 0, [a]), (b, 1, [a, b]), (c, 1, [a, c])]
    assert len(result.edges) == 3


def test_traverse_survives_cycles(vault: Vault) -> None:
    a, b, c = note(vault, "a"), note(vault, "b"), note(vault, "c")
    vault.link(a, b)
    vault.link(b, c)
    vault.link(c, a)
    result = vault.traverse(a, 10, direction="out")
    assert shape(result) == [(a, 0, [a]), (b, 1, [a, b]), (c, 2, [a, b, c])]
    assert edge_set(result) == [(a, b, "related"), (b, c, "related"), (c, a, "related")]
    both = vault.traverse(a, 10)
    assert sorted(n.entity.id for n in both.nodes) == [a, b, c]
    assert len({x.id for x in both.edges}) == len(both.edges) == 3


def test_traverse_relations_filter(vault: Vault, graph: dict[str, int]) -> None:
    a, b, c, d, e = (graph[k] for k in "abcde")
    related = vault.traverse(a, 2, relations=["related"])
    assert shape(related) == [(a, 0, [a]), (b, 1, [a, b]), (d, 2, [a, b, d])]
    assert {x.relation for x in related.edges} == {"related"}
    two = vault.traverse(a, 1, relations=["cites", "depends_on"])
    assert shape(two) == [(a, 0, [a]), (c, 1, [a, c]), (e, 1, [a, e])]
    assert shape(vault.traverse(a, 2, relations=["no-such-relation"])) == [(a, 0, [a])]


def test_traverse_depth_limits_the_walk(vault: Vault) -> None:
    chain = [note(vault, f"n{i}") for i in range(6)]
    for x, y in zip(chain, chain[1:]):
        vault.link(x, y, "next")
    for depth in range(6):
        result = vault.traverse(chain[0], depth, direction="out")
        assert [n.entity.id for n in result.nodes] == chain[: depth + 1]
        assert [n.depth for n in result.nodes] == list(range(depth + 1))
        assert result.nodes[-1].path == chain[: depth + 1]
        assert len(result.edges) == depth


def test_traverse_is_deterministic_whatever_the_insertion_order(
    vault: Vault, clock: Clock, tmp_path: Path, graph: dict[str, int]
) -> None:
    with Vault(tmp_path / "other.db", clock=clock, embedder=False) as other:
        ids = {k: note(other, k) for k in "abcde"}
        assert ids == graph
        # Same links, inserted in reverse order (so link ids differ).
        other.link(ids["e"], ids["a"], "depends_on", 2.0)
        other.link(ids["c"], ids["d"], "cites")
        other.link(ids["b"], ids["d"], "related")
        other.link(ids["a"], ids["c"], "cites", 0.5)
        other.link(ids["a"], ids["b"], "related")
        for start in graph.values():
            for direction in ("out", "in", "both"):
                mine = vault.traverse(start, 3, direction=direction)  # type: ignore[arg-type]
                theirs = other.traverse(start, 3, direction=direction)  # type: ignore[arg-type]
                assert shape(mine) == shape(theirs)
                assert edge_set(mine) == edge_set(theirs)
    first = vault.traverse(graph["a"], 3)
    assert vault.traverse(graph["a"], 3).model_dump_json() == first.model_dump_json()


def test_traverse_returns_current_entities(vault: Vault, clock: Clock, graph: dict[str, int]) -> None:
    vault.remember("node", "b", "b was rewritten")
    node_b = next(n for n in vault.traverse(graph["a"], 1).nodes if n.entity.id == graph["b"])
    assert node_b.entity.content == "b was rewritten" and node_b.entity.version == 2


@pytest.mark.parametrize("depth", [-1, 11, 1000])
def test_traverse_depth_out_of_range(vault: Vault, graph: dict[str, int], depth: int) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.traverse(graph["a"], depth)
    assert err.value.field == "depth"


def test_traverse_refuses_bad_arguments(vault: Vault, graph: dict[str, int]) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.traverse(graph["a"], 1, direction="sideways")  # type: ignore[arg-type]
    assert err.value.field == "direction"
    with pytest.raises(InvalidInput) as err:
        vault.traverse(graph["a"], 1, relations="related")  # type: ignore[arg-type]
    assert err.value.field == "relations"
    with pytest.raises(InvalidInput) as err:
        vault.traverse(graph["a"], 1, colour="red")
    assert err.value.field == "colour"


def test_traverse_from_an_invisible_start_is_not_found(
    vault: Vault, clock: Clock, graph: dict[str, int]
) -> None:
    with pytest.raises(NotFound):
        vault.traverse(999, 1)
    clock.advance(1000)
    vault.forget(graph["a"])
    with pytest.raises(NotFound):
        vault.traverse(graph["a"], 1)
    shown = vault.traverse(graph["a"], 1, include_archived=True)
    assert shown.nodes[0].entity.status == "archived"


def test_an_archived_middle_node_blocks_the_walk(vault: Vault, clock: Clock) -> None:
    a, b, c = note(vault, "a"), note(vault, "b"), note(vault, "c")
    vault.link(a, b)
    vault.link(b, c)
    clock.advance(1000)
    vault.forget(b)
    result = vault.traverse(a, 3)
    assert shape(result) == [(a, 0, [a])]
    assert result.edges == []  # an edge to a node the caller cannot see is not shown either
    assert shape(vault.traverse(c, 3)) == [(c, 0, [c])]
    archived = vault.traverse(a, 3, include_archived=True)
    assert shape(archived) == [(a, 0, [a]), (b, 1, [a, b]), (c, 2, [a, b, c])]


def test_an_expired_or_superseded_node_blocks_the_walk(vault: Vault, clock: Clock) -> None:
    a, c = note(vault, "a"), note(vault, "c")
    b = vault.remember("node", "b", "expires soon", expires_at_ms=clock.now + 500).id
    d = note(vault, "d")
    d2 = note(vault, "d2")
    vault.link(a, b)
    vault.link(b, c)
    vault.link(a, d)
    clock.advance(1000)
    vault.supersede(d, d2)
    assert shape(vault.traverse(a, 3)) == [(a, 0, [a])]
    assert sorted(n.entity.id for n in vault.traverse(a, 3, include_archived=True).nodes) == sorted(
        [a, b, c, d]
    )


def test_a_node_not_valid_now_blocks_the_walk(vault: Vault, clock: Clock) -> None:
    a = vault.remember("node", "a", words_of("a"), valid_from_ms=1000).id  # always held
    c = vault.remember("node", "c", words_of("c"), valid_from_ms=1000).id  # always held too
    b = vault.remember(
        "node", "b", words_of("b"), valid_from_ms=1000, valid_to_ms=clock.now - 1
    ).id  # until last year
    vault.link(a, b)
    vault.link(b, c)
    assert shape(vault.traverse(a, 2)) == [(a, 0, [a])]
    assert [n.entity.id for n in vault.traverse(a, 2, valid_at_unix_ms=clock.now - 2).nodes] == [a, b, c]


def test_traverse_is_scoped(vault: Vault) -> None:
    x = note(vault, "x", agent_id="a")
    y = note(vault, "y", agent_id="a")
    z = note(vault, "z", agent_id="b")
    w = note(vault, "w", agent_id="b")
    vault.link(x, y)
    vault.link(z, w)
    assert [n.entity.id for n in vault.traverse(x, 2, agent_id="a").nodes] == [x, y]
    with pytest.raises(NotFound):
        vault.traverse(x, 2, agent_id="b")
    with pytest.raises(NotFound):
        vault.traverse(x, 2, workspace_hash="w1")
    assert [n.entity.id for n in vault.traverse(z, 2, agent_id="b").nodes] == [z, w]


def test_another_agents_entity_never_appears_in_a_walk(vault: Vault, backend: str) -> None:
    x = note(vault, "x", agent_id="a")
    y = note(vault, "y", agent_id="a")
    z = note(vault, "z", agent_id="b")
    beyond = note(vault, "beyond", agent_id="a")
    vault.link(x, y)
    # A link across scopes cannot be made through the API; simulate a tampered file. (On Postgres the
    # database refuses it too: both ends' foreign keys include the link's scope key.)
    conn = vault.engine.conn()
    for frm, to in ((y, z), (z, beyond)):
        tamper = (
            "INSERT INTO links (id, from_id, to_id, relation, weight, created_at_ms, recorded_from_ms, scope) "
            "SELECT (SELECT max(id) + 1 FROM links), ?, ?, 'related', 1.0, 0, 0, scope FROM entities WHERE id = ?",
            (frm, to, frm),
        )
        if backend == "postgres":
            with pytest.raises(Exception, match="foreign key"):
                conn.execute(*tamper)
        else:
            conn.execute(*tamper)
    result = vault.traverse(x, 5, agent_id="a")
    assert [n.entity.id for n in result.nodes] == [x, y]
    assert all(z not in (e.from_id, e.to_id) for e in result.edges)
    assert all(n.entity.agent_id == "a" for n in result.nodes)


def test_traverse_as_of_follows_the_links_open_then(vault: Vault, clock: Clock) -> None:
    a, b, c = note(vault, "a"), note(vault, "b"), note(vault, "c")
    linked_at = clock.advance(1000)
    vault.link(a, b)
    vault.link(b, c)
    unlinked_at = clock.advance(1000)
    assert vault.unlink(a, b) == 1
    clock.advance(1000)
    assert shape(vault.traverse(a, 2)) == [(a, 0, [a])]
    then = vault.traverse(a, 2, as_of_unix_ms=unlinked_at - 1)
    assert shape(then) == [(a, 0, [a]), (b, 1, [a, b]), (c, 2, [a, b, c])]
    assert [e.recorded_to_ms for e in then.edges] == [unlinked_at, None]
    assert shape(vault.traverse(a, 2, as_of_unix_ms=unlinked_at)) == [(a, 0, [a])]  # closed at that instant
    assert shape(vault.traverse(a, 2, as_of_unix_ms=linked_at - 1)) == [(a, 0, [a])]  # not linked yet


def test_traverse_as_of_shows_entities_as_they_were(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    vault.link(a, b)
    changed_at = clock.advance(1000)
    vault.remember("node", "b", "b, rewritten later")
    then = vault.traverse(a, 1, as_of_unix_ms=changed_at - 1)
    assert [n.entity.content for n in then.nodes] == [words_of("a"), words_of("b")]
    now = vault.traverse(a, 1)
    assert [n.entity.content for n in now.nodes] == [words_of("a"), "b, rewritten later"]


def test_traverse_as_of_before_the_start_existed_is_not_found(vault: Vault, clock: Clock) -> None:
    clock.advance(1000)
    a = note(vault, "a")
    with pytest.raises(NotFound):
        vault.traverse(a, 1, as_of_unix_ms=clock.now - 1)


def test_traverse_as_of_sees_a_node_archived_since(vault: Vault, clock: Clock) -> None:
    a, b = note(vault, "a"), note(vault, "b")
    vault.link(a, b)
    archived_at = clock.advance(1000)
    vault.forget(b)
    assert shape(vault.traverse(a, 1)) == [(a, 0, [a])]
    assert [n.entity.id for n in vault.traverse(a, 1, as_of_unix_ms=archived_at - 1).nodes] == [a, b]


def test_a_link_weight_is_bounded_so_every_sum_over_it_stays_finite(vault: Vault) -> None:
    a = vault.remember("n", "a", "a").id
    b = vault.remember("n", "b", "b").id
    for weight in (1.7e308, -1e7):
        with pytest.raises(InvalidInput) as err:
            vault.link(a, b, weight=weight)
        assert err.value.field == "weight"
    assert vault.link(a, b, weight=1_000_000.0).weight == 1_000_000.0
