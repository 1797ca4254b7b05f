"""Tenancy: no scope sees another's entities through any read or write path.

Two agents x two workspaces hold the same facts (same category, key and content) with the
same links among them, plus one unscoped copy. Every read addressed to one scope must
return that scope's entities only; every write addressed with a scope that does not own
the entity must fail and change nothing.
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, NotFound, Vault
from perseus_vault_core.storage.sqlite import keyword

from ..conftest import DAY_MS, T0, Clock

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)

Scope = tuple[str, str]
SCOPES: list[Scope] = [("agent-a", "ws-1"), ("agent-a", "ws-2"), ("agent-b", "ws-1"), ("agent-b", "ws-2")]

FACTS = {
    "db": ("decision", "We chose SQLite in WAL mode for the vault storage."),
    "cache": ("decision", "Redis caches the hot storage lookups in front of SQLite."),
    "meeting": ("note", "Storage review meeting: SQLite stays, Redis is optional."),
}
DB_V2 = "We chose SQLite in WAL mode for the vault storage, with synchronous FULL."
LINKS = [("db", "cache", "depends_on"), ("cache", "meeting", "discussed_in"), ("meeting", "db", "mentions")]
BEFORE_UPDATE = T0 + DAY_MS // 2  # every fact existed, db still at version 1


@dataclass
class World:
    ids: dict[Scope, dict[str, int]] = field(default_factory=dict)
    unscoped: dict[str, int] = field(default_factory=dict)

    def scope_ids(self, scope: Scope) -> set[int]:
        return set(self.ids[scope].values())


def _kw(scope: Scope) -> dict[str, str]:
    return {"agent_id": scope[0], "workspace_hash": scope[1]}


@pytest.fixture
def world(vault: Vault, clock: Clock) -> World:
    w = World()
    for scope in SCOPES:
        w.ids[scope] = {
            key: vault.remember(category, key, content, topic_path="architecture/storage", **_kw(scope)).id
            for key, (category, content) in FACTS.items()
        }
        for a, b, relation in LINKS:
            vault.link(w.ids[scope][a], w.ids[scope][b], relation, **_kw(scope))
    w.unscoped = {
        key: vault.remember(category, key, content, topic_path="architecture/storage").id
        for key, (category, content) in FACTS.items()
    }
    clock.advance(DAY_MS)
    for scope in SCOPES:
        vault.remember("decision", "db", DB_V2, **_kw(scope))
    vault.remember("decision", "db", DB_V2)
    clock.advance(DAY_MS)
    return w


def _snapshot(vault: Vault) -> str:
    out = io.StringIO()
    vault.export_jsonl(out)
    return out.getvalue()


def _others(scope: Scope) -> list[Scope]:
    return [s for s in SCOPES if s != scope]


scoped = pytest.mark.parametrize("scope", SCOPES, ids=lambda s: f"{s[0]}@{s[1]}")


# --- recall ------------------------------------------------------------------------------------


@pytest.fixture(params=["fts5", "keyword-index"])
def search_path(request: pytest.FixtureRequest, vault: Vault, world: World) -> str:
    """Run each recall check both on FTS5 and on the in-memory keyword index."""
    if request.param == "keyword-index":
        assert vault.wait_for_keyword_index(timeout=60)
    return str(request.param)


@scoped
@pytest.mark.parametrize("query", ["sqlite storage", "redis", "meeting review wal"])
def test_recall_words_stay_in_scope(
    vault: Vault, world: World, search_path: str, scope: Scope, query: str
) -> None:
    result = vault.recall(query, limit=100, **_kw(scope))
    got = {item.id for item in result.items}
    assert got, "the scope's own entities must be found"
    assert got <= world.scope_ids(scope)
    assert all((i.agent_id, i.workspace_hash) == scope for i in result.items)


@scoped
def test_recall_enumeration_is_exactly_the_scope(
    vault: Vault, world: World, search_path: str, scope: Scope
) -> None:
    result = vault.recall("", limit=1000, **_kw(scope))
    assert {item.id for item in result.items} == world.scope_ids(scope)
    assert result.total == len(FACTS)


@scoped
def test_recall_as_of_stays_in_scope(vault: Vault, world: World, search_path: str, scope: Scope) -> None:
    result = vault.recall("sqlite wal", limit=100, as_of_unix_ms=BEFORE_UPDATE, **_kw(scope))
    assert {i.id for i in result.items} == world.scope_ids(scope)
    db = next(i for i in result.items if i.id == world.ids[scope]["db"])
    assert db.content == FACTS["db"][1]
    listed = vault.recall("", limit=1000, as_of_unix_ms=BEFORE_UPDATE, **_kw(scope))
    assert {i.id for i in listed.items} == world.scope_ids(scope)


@scoped
def test_recall_valid_at_stays_in_scope(vault: Vault, world: World, search_path: str, scope: Scope) -> None:
    result = vault.recall("sqlite", limit=100, valid_at_unix_ms=BEFORE_UPDATE, **_kw(scope))
    assert {i.id for i in result.items} == world.scope_ids(scope)
    both = vault.recall(
        "", limit=1000, valid_at_unix_ms=BEFORE_UPDATE, as_of_unix_ms=BEFORE_UPDATE, **_kw(scope)
    )
    assert {i.id for i in both.items} == world.scope_ids(scope)


@scoped
def test_partial_scope_filters_only_that_field(vault: Vault, world: World, scope: Scope) -> None:
    agent, workspace = scope
    by_agent = {i.id for i in vault.recall("", limit=1000, agent_id=agent).items}
    assert by_agent == set().union(*(world.scope_ids(s) for s in SCOPES if s[0] == agent))
    by_workspace = {i.id for i in vault.recall("sqlite", limit=1000, workspace_hash=workspace).items}
    assert by_workspace == set().union(*(world.scope_ids(s) for s in SCOPES if s[1] == workspace))


def test_unknown_scope_sees_nothing(vault: Vault, world: World) -> None:
    assert vault.recall("sqlite", agent_id="agent-c").items == []
    assert vault.recall("", workspace_hash="ws-9", limit=1000).items == []
    assert vault.recall("", agent_id="agent-a", workspace_hash="ws-9").items == []
    assert vault.scan(agent_id="agent-b", workspace_hash="ws-3").items == []


def test_omitted_scope_filters_mean_no_filter(vault: Vault, world: World) -> None:
    everything = set(world.unscoped.values()).union(*(world.scope_ids(s) for s in SCOPES))
    assert {i.id for i in vault.recall("", limit=1000).items} == everything
    assert {i.id for i in vault.recall("sqlite storage", limit=1000).items} == everything
    assert {e.id for e in vault.scan(limit=1000).items} == everything


# --- keyword statistics ----------------------------------------------------------------------

ALICE_WORDS = (
    "billing ledger postgres replica backup restore cache latency deploy rollback queue worker".split()
)
KEYWORD_QUERIES = ["billing ledger", "postgres replica backup", "cache latency deploy rollback", "queue"]


@pytest.mark.parametrize(
    "scope_kw",
    [{"agent_id": "alice"}, {"workspace_hash": "ws-a"}, {"agent_id": "alice", "workspace_hash": "ws-a"}],
    ids=["agent", "workspace", "both"],
)
@pytest.mark.parametrize("mode", ["fts5", "hybrid"])
@pytest.mark.parametrize("path", ["sql", "in-memory"])
def test_other_tenants_writes_never_move_a_tenants_keyword_scores(
    dense_vault: Vault,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    mode: str,
    scope_kw: dict[str, str],
) -> None:
    """BM25's statistics are the scope's own: bob writing 100 memories, with and without alice's
    words, changes neither the scores nor the order of alice's answers, now or at a past instant.
    Unscoped answers do move (their statistics are the whole store's), so the writes had bite."""
    vault, rng = dense_vault, random.Random(7)
    alice = {"agent_id": "alice", "workspace_hash": "ws-a"}
    bob = {"agent_id": "bob", "workspace_hash": "ws-b"}
    vault.remember_many(
        {
            "category": "note",
            "key": f"n{i}",
            "content": " ".join(rng.choices(ALICE_WORDS, k=rng.randint(3, 15))),
            **alice,
        }
        for i in range(40)
    )
    for i in range(0, 40, 8):  # alice's own history, for the point in time
        vault.remember("note", f"n{i}", " ".join(rng.choices(ALICE_WORDS, k=6)), **alice)
    vault.remember_many(
        {"category": "note", "key": f"b{i}", "content": "zebra quokka ledger", **bob} for i in range(5)
    )
    clock.advance(1000)
    checkpoint = clock.now
    clock.advance(1000)
    if path == "sql":
        vault.engine.keyword_index = vault.engine.vector_index = None
    else:
        assert vault.wait_for_keyword_index() and vault.wait_for_vector_index()
    calls = {"n": 0}
    # The SQL path's scoring with the scope's own statistics: FTS5's data on SQLite, the postings on Postgres.
    store = vault.engine.backend.keyword
    name = "scoped_search" if store is keyword else "_ranked"
    scored = getattr(store, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        return scored(*args, **kwargs)

    monkeypatch.setattr(store, name, counting)

    def answers(**filters: Any) -> list[list[tuple[int, float, dict[str, int]]]]:
        return [
            [
                (i.id, i.score, i.ranks)
                for i in vault.recall(q, mode=mode, limit=20, reinforce=False, **filters).items
            ]
            for q in KEYWORD_QUERIES
        ]

    before = answers(**scope_kw)
    assert calls["n"] == (len(KEYWORD_QUERIES) if path == "sql" else 0)  # the in-memory index answered
    before_then = answers(as_of_unix_ms=checkpoint, **scope_kw)
    unscoped = answers()
    assert all(before) and all(before_then)
    vault.remember_many(
        {
            "category": "note",
            "key": f"bob{i}",
            "content": " ".join(
                rng.choices(
                    ALICE_WORDS[:4] if i % 2 else ["zebra", "quokka", "narwhal", "ocelot"],
                    k=rng.randint(2, 12),
                )
            ),
            **bob,
        }
        for i in range(100)
    )
    for i in range(0, 100, 10):
        vault.remember("note", f"bob{i}", "ledger ledger billing postgres", **bob)
    vault.forget(vault.recall("ledger", limit=1, reinforce=False, **bob).items[0].id, **bob)
    assert answers(**scope_kw) == before
    assert answers(as_of_unix_ms=checkpoint, **scope_kw) == before_then
    assert answers() != unscoped


# --- scan --------------------------------------------------------------------------------------


@scoped
def test_scan_pages_stay_in_scope(vault: Vault, world: World, scope: Scope) -> None:
    ids: list[int] = []
    cursor = None
    while True:
        page = vault.scan(cursor=cursor, limit=1, **_kw(scope))
        ids.extend(e.id for e in page.items)
        assert all((e.agent_id, e.workspace_hash) == scope for e in page.items)
        if not page.has_more:
            break
        cursor = page.next_cursor
    assert sorted(ids) == ids
    assert set(ids) == world.scope_ids(scope)
    assert len(ids) == len(FACTS)


@scoped
def test_scan_cursor_cannot_cross_into_another_scope(vault: Vault, world: World, scope: Scope) -> None:
    cursor = vault.scan(limit=1, **_kw(scope)).next_cursor
    for other in _others(scope):
        with pytest.raises(InvalidInput) as info:
            vault.scan(cursor=cursor, limit=1, **_kw(other))
        assert info.value.field == "cursor"


# --- traverse ----------------------------------------------------------------------------------


@scoped
@pytest.mark.parametrize("with_filters", [True, False], ids=["scoped-call", "unscoped-call"])
def test_traverse_stays_in_scope(vault: Vault, world: World, scope: Scope, with_filters: bool) -> None:
    filters = _kw(scope) if with_filters else {}
    mine = world.scope_ids(scope)
    for start in mine:
        result = vault.traverse(start, depth=5, **filters)
        assert {n.entity.id for n in result.nodes} == mine
        assert all(set(n.path) <= mine for n in result.nodes)
        assert len([e for e in result.edges if e.source != "inferred"]) == len(LINKS)  # and those inferred
        assert all(e.from_id in mine and e.to_id in mine for e in result.edges)


@scoped
def test_traverse_as_of_stays_in_scope(vault: Vault, world: World, scope: Scope) -> None:
    result = vault.traverse(world.ids[scope]["db"], depth=5, as_of_unix_ms=BEFORE_UPDATE, **_kw(scope))
    assert {n.entity.id for n in result.nodes} == world.scope_ids(scope)


@scoped
def test_traverse_from_another_scopes_entity_is_not_found(vault: Vault, world: World, scope: Scope) -> None:
    for other in _others(scope):
        with pytest.raises(NotFound):
            vault.traverse(world.ids[other]["db"], depth=3, **_kw(scope))


# --- history, as_of, valid_at ------------------------------------------------------------------


@scoped
def test_history_is_the_scopes_own(vault: Vault, world: World, scope: Scope) -> None:
    page = vault.history("decision", "db", **_kw(scope))
    assert page.total == 2
    assert {e.id for e in page.items} == {world.ids[scope]["db"]}
    assert [e.content for e in page.items] == [DB_V2, FACTS["db"][1]]
    assert all((e.agent_id, e.workspace_hash) == scope for e in page.items)


@scoped
def test_as_of_and_valid_at_are_the_scopes_own(
    vault: Vault, world: World, scope: Scope, clock: Clock
) -> None:
    then = vault.as_of("decision", "db", BEFORE_UPDATE, **_kw(scope))
    assert then is not None
    assert (then.id, then.content) == (world.ids[scope]["db"], FACTS["db"][1])
    valid = vault.valid_at("decision", "db", BEFORE_UPDATE, **_kw(scope))
    assert valid is not None and valid.id == world.ids[scope]["db"]
    cell = vault.bitemporal("decision", "db", BEFORE_UPDATE, BEFORE_UPDATE, **_kw(scope))
    assert cell is not None and (cell.id, cell.content) == (world.ids[scope]["db"], FACTS["db"][1])


@pytest.mark.parametrize(
    "scope_kw",
    [
        {"agent_id": "agent-a", "workspace_hash": "ws-9"},
        {"agent_id": "agent-c", "workspace_hash": "ws-1"},
        {"agent_id": "agent-a"},  # omitted workspace = the unscoped workspace, where agent-a has nothing
        {"workspace_hash": "ws-1"},
    ],
)
def test_fact_lookups_in_a_scope_without_the_fact_are_not_found(
    vault: Vault, world: World, scope_kw: dict[str, str]
) -> None:
    with pytest.raises(NotFound):
        vault.history("decision", "db", **scope_kw)
    with pytest.raises(NotFound):
        vault.as_of("decision", "db", BEFORE_UPDATE, **scope_kw)
    with pytest.raises(NotFound):
        vault.valid_at("decision", "db", BEFORE_UPDATE, **scope_kw)
    with pytest.raises(NotFound):
        vault.bitemporal("decision", "db", BEFORE_UPDATE, BEFORE_UPDATE, **scope_kw)


def test_unscoped_lookups_address_the_unscoped_fact_only(vault: Vault, world: World) -> None:
    page = vault.history("decision", "db")
    assert {e.id for e in page.items} == {world.unscoped["db"]}
    assert page.total == 2
    assert all(e.agent_id is None and e.workspace_hash is None for e in page.items)
    then = vault.as_of("decision", "db", BEFORE_UPDATE)
    assert then is not None and then.id == world.unscoped["db"]
    valid = vault.valid_at("decision", "db", BEFORE_UPDATE)
    assert valid is not None and valid.id == world.unscoped["db"]


def test_unscoped_lookup_without_an_unscoped_fact_is_not_found(vault: Vault, world: World) -> None:
    for scope in SCOPES:
        vault.remember("decision", "scoped-only", "only in scopes", **_kw(scope))
    with pytest.raises(NotFound):
        vault.history("decision", "scoped-only")
    with pytest.raises(NotFound):
        vault.as_of("decision", "scoped-only", T0 + 3 * DAY_MS)


# --- addressing by id with the wrong scope -----------------------------------------------------


def _wrong_scopes(scope: Scope) -> list[dict[str, str]]:
    agent, workspace = scope
    other_agent = "agent-b" if agent == "agent-a" else "agent-a"
    other_ws = "ws-2" if workspace == "ws-1" else "ws-1"
    return [
        _kw((other_agent, workspace)),
        _kw((agent, other_ws)),
        _kw((other_agent, other_ws)),
        {"agent_id": other_agent},
        {"workspace_hash": other_ws},
        {"agent_id": "agent-c", "workspace_hash": "ws-9"},
    ]


@scoped
def test_get_entity_with_a_wrong_scope_is_not_found(vault: Vault, world: World, scope: Scope) -> None:
    for entity_id in world.ids[scope].values():
        assert vault.get_entity(entity_id, **_kw(scope)).id == entity_id
        assert vault.get_entity(entity_id, agent_id=scope[0]).id == entity_id
        for wrong in _wrong_scopes(scope):
            with pytest.raises(NotFound):
                vault.get_entity(entity_id, **wrong)


@scoped
def test_forget_with_a_wrong_scope_changes_nothing(vault: Vault, world: World, scope: Scope) -> None:
    target = world.ids[scope]["cache"]
    before = _snapshot(vault)
    for wrong in _wrong_scopes(scope):
        with pytest.raises(NotFound):
            vault.forget(target, **wrong)
    assert _snapshot(vault) == before
    assert vault.get_entity(target).status == "active"


@scoped
def test_purge_with_a_wrong_scope_changes_nothing(vault: Vault, world: World, scope: Scope) -> None:
    target = world.ids[scope]["meeting"]
    vault.forget(target, **_kw(scope))
    before = _snapshot(vault)
    for wrong in _wrong_scopes(scope):
        with pytest.raises(NotFound):
            vault.purge(target, **wrong)
    assert _snapshot(vault) == before
    assert vault.get_entity(target).status == "archived"
    assert vault.purge(target, **_kw(scope)).id == target  # the owner can


@scoped
def test_link_with_a_wrong_scope_changes_nothing(vault: Vault, world: World, scope: Scope) -> None:
    a, b = world.ids[scope]["meeting"], world.ids[scope]["cache"]
    before = _snapshot(vault)
    for wrong in _wrong_scopes(scope):
        with pytest.raises(NotFound):
            vault.link(a, b, "new_relation", **wrong)
        with pytest.raises(NotFound):
            vault.unlink(world.ids[scope]["db"], world.ids[scope]["cache"], **wrong)
        with pytest.raises(NotFound):
            vault.supersede(a, b, **wrong)
    assert _snapshot(vault) == before


@scoped
def test_links_across_scopes_are_refused(vault: Vault, world: World, scope: Scope) -> None:
    mine = world.ids[scope]["db"]
    before = _snapshot(vault)
    for other in _others(scope):
        theirs = world.ids[other]["db"]
        with pytest.raises(InvalidInput) as info:
            vault.link(mine, theirs, "leak")
        assert info.value.field == "to_id"
        with pytest.raises(NotFound):
            vault.link(mine, theirs, "leak", **_kw(scope))
        with pytest.raises(InvalidInput):
            vault.supersede(mine, theirs)
    with pytest.raises(InvalidInput):
        vault.link(mine, world.unscoped["db"], "leak")
    assert _snapshot(vault) == before


# --- export ------------------------------------------------------------------------------------


@scoped
def test_scoped_export_holds_only_the_scope(vault: Vault, world: World, scope: Scope) -> None:
    out = io.StringIO()
    vault.export_jsonl(out, **_kw(scope))
    records: list[dict[str, Any]] = [json.loads(line) for line in out.getvalue().splitlines()]
    entities = [r for r in records if r["record"] == "entity"]
    links = [r for r in records if r["record"] == "link"]
    assert {r["id"] for r in entities} == world.scope_ids(scope)
    assert all((r["agent_id"], r["workspace_hash"]) == scope for r in entities)
    assert len([r for r in links if r["source"] != "inferred"]) == len(LINKS)
    assert all(r["from_id"] in world.scope_ids(scope) and r["to_id"] in world.scope_ids(scope) for r in links)
