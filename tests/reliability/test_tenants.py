"""Tenants: one matrix over every read path, with two agents and two workspaces holding
near-identical content, proves zero cross-scope results, through the engine, every adapter and an
MCP server bound to a scope (whose callers may pass another scope).

Every scope holds the same memories, word for word, except one marker word (``ownerALICEWS1``...),
so that a leak shows both in ids and in any text a path returns. An unscoped copy sits beside them.
``tests/reliability/test_tenancy.py`` covers the fts5 paths, partial scopes, scan cursors and the writes;
this file adds the dense and hybrid modes, the in-memory indexes, the graph, proactive and global
paths, memory files, and the adapters.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import pytest

from perseus_vault_core import NotFound, Vault, VaultError

from ..conftest import BACKENDS, DAY_MS, Clock, FakeEmbedder, vault_location

Scope = tuple[str, str]
SCOPES: list[Scope] = [("alice", "ws1"), ("alice", "ws2"), ("bob", "ws1"), ("bob", "ws2")]
NOTES = {
    "db": "We chose SQLite for durable storage of the agent memory",
    "cache": "The cache keeps hot memory rows near the storage engine",
    "queue": "The write queue feeds the storage engine in batches",
    "meeting": "Weekly review of the storage roadmap with the whole team",
}
TRIGGER = "choosing a database"
QUERY = "sqlite storage memory"


def marker(scope: Scope | None) -> str:
    return "owner" + ("".join(scope) if scope else "nobody")


@dataclass
class World:
    vault: Vault
    clock: Clock
    db_ids: dict[Scope | None, int] = field(default_factory=dict)
    times: dict[str, int] = field(default_factory=dict)

    def own(self, scope: Scope | None) -> set[int]:
        """Every entity of the scope (memory files and community summaries included), read from the
        rows themselves, not through a read path."""
        rows = (
            self.vault.engine.conn()
            .execute("SELECT id FROM entities WHERE agent_id = ? AND workspace_hash = ?", scope or ("", ""))
            .fetchall()
        )
        return {r[0] for r in rows}

    def others(self, scope: Scope) -> set[int]:
        return {r[0] for r in self.vault.engine.conn().execute("SELECT id FROM entities")} - self.own(scope)

    def foreign_markers(self, scope: Scope) -> list[str]:
        return [marker(s) for s in [*SCOPES, None] if s != scope]


def _kw(scope: Scope | None) -> dict[str, Any]:
    return {"agent_id": scope[0], "workspace_hash": scope[1]} if scope else {}


def _fill(vault: Vault, clock: Clock, world: World, scope: Scope | None) -> None:
    kw = _kw(scope)
    ids: dict[str, int] = {}
    for key, text in NOTES.items():
        recall_when = [TRIGGER] if key == "db" else []
        ids[key] = vault.remember("note", key, f"{text} {marker(scope)}", recall_when=recall_when, **kw).id
    for a, b in (("db", "cache"), ("cache", "queue"), ("queue", "meeting")):
        vault.link(ids[a], ids[b], "related", **kw)
    vault.add_memory("Notes", "Work", f"We prefer sqlite for storage {marker(scope)}", "2026-01-01", **kw)
    assert set(ids.values()) < world.own(scope)
    world.db_ids[scope] = ids["db"]


@pytest.fixture(scope="module", params=BACKENDS)
def world(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[World]:
    clock = Clock()
    with (
        vault_location(request.param, request, tmp_path_factory.mktemp("tenants")) as where,
        Vault(where, clock=clock, embedder=FakeEmbedder()) as vault,
    ):
        w = World(vault, clock)
        for scope in [*SCOPES, None]:
            _fill(vault, clock, w, scope)
        w.times["first"] = clock.now
        clock.advance(DAY_MS)
        for scope in [*SCOPES, None]:  # a second version of every db note, valid from tomorrow
            vault.remember(
                "note", "db", f"{NOTES['db']}, revised {marker(scope)}", valid_from_ms=clock.now, **_kw(scope)
            )
        w.times["second"] = clock.now
        clock.advance(DAY_MS)
        yield w


def _only(world: World, scope: Scope, ids: Any, *, nonempty: bool = True) -> None:
    ids = set(ids)
    assert not ids & world.others(scope), f"{scope} saw another scope's entities"
    assert ids <= world.own(scope)
    if nonempty:
        assert ids, f"{scope}: the path found nothing, so it proves nothing"


def _clean(world: World, scope: Scope, text: str, *, own: bool = True) -> None:
    if own:
        assert marker(scope) in text
    leaked = [m for m in world.foreign_markers(scope) if m in text]
    assert not leaked, f"{scope} read text of {leaked}"


scoped = pytest.mark.parametrize("scope", SCOPES, ids=["-".join(s) for s in SCOPES])


# --- the engine --------------------------------------------------------------------------------


@scoped
@pytest.mark.parametrize("mode", ["fts5", "dense", "hybrid"])
def test_recall_each_mode(world: World, scope: Scope, mode: str) -> None:
    for query in (QUERY, "", marker(scope)):
        got = world.vault.recall(query, mode=mode, limit=50, reinforce=False, **_kw(scope))
        _only(world, scope, [i.id for i in got.items])
    for other in world.foreign_markers(
        scope
    ):  # another scope's own word finds nothing here (except by meaning)
        got = world.vault.recall(other, mode="fts5", limit=50, reinforce=False, **_kw(scope))
        assert got.items == []


@scoped
def test_recall_through_the_in_memory_indexes(world: World, scope: Scope) -> None:
    assert world.vault.wait_for_keyword_index(60) and world.vault.wait_for_vector_index(60)
    for mode in ("fts5", "dense", "hybrid"):
        got = world.vault.recall(QUERY, mode=mode, limit=50, reinforce=False, **_kw(scope))
        _only(world, scope, [i.id for i in got.items])
    vector = FakeEmbedder().embed([QUERY])[0]
    by_vector = world.vault.recall_by_vector(vector, limit=50, reinforce=False, **_kw(scope))
    _only(world, scope, [i.id for i in by_vector.items])
    notes = world.vault.search(
        QUERY, limit=50, reinforce=False, **_kw(scope)
    )  # imported notes only: none here
    _only(world, scope, [i.id for i in notes.items], nonempty=False)


@scoped
def test_recall_at_points_in_time(world: World, scope: Scope) -> None:
    for point in (
        {"as_of_unix_ms": world.times["first"]},
        {"valid_at_unix_ms": world.times["first"]},
        {"query_time_unix_ms": world.times["second"]},
    ):
        for mode in ("fts5", "dense", "hybrid"):
            got = world.vault.recall(QUERY, mode=mode, limit=50, reinforce=False, **point, **_kw(scope))
            _only(world, scope, [i.id for i in got.items])


@scoped
def test_scan_and_get_entity(world: World, scope: Scope) -> None:
    page = world.vault.scan(limit=1000, **_kw(scope))
    assert {e.id for e in page.items} == world.own(scope)
    for other in world.others(scope):
        with pytest.raises(NotFound):
            world.vault.get_entity(other, **_kw(scope))
    assert world.vault.get_entity(world.db_ids[scope], **_kw(scope)).id == world.db_ids[scope]


@scoped
def test_history_as_of_valid_at_bitemporal(world: World, scope: Scope) -> None:
    v, kw, own = world.vault, _kw(scope), world.db_ids[scope]
    history = v.history("note", "db", **kw)
    assert {e.id for e in history.items} == {own} and history.total == 2
    for version in history.items:
        _clean(world, scope, version.content)
    found = [
        v.as_of("note", "db", world.times["first"], **kw),
        v.valid_at("note", "db", world.times["first"], **kw),
        v.valid_at("note", "db", world.times["second"], **kw),
        v.bitemporal("note", "db", world.times["second"], world.times["second"], **kw),
    ]
    for entity in found:
        assert entity is not None and entity.id == own
        _clean(world, scope, entity.content)


@scoped
def test_traverse_and_communities(world: World, scope: Scope) -> None:
    v, kw = world.vault, _kw(scope)
    written = v.traverse(world.db_ids[scope], depth=5, inferred=False, **kw)
    _only(world, scope, [n.entity.id for n in written.nodes])
    assert len(written.nodes) == len(NOTES)  # the chain of links written
    # The links inferred on write (db's revision to the memory file's sqlite entry, say) reach further, in scope.
    walk = v.traverse(world.db_ids[scope], depth=5, **kw)
    _only(world, scope, [n.entity.id for n in walk.nodes])
    _only(world, scope, [end for e in walk.edges for end in (e.from_id, e.to_id)])
    assert {n.entity.id for n in written.nodes} < {n.entity.id for n in walk.nodes}
    assert any(e.source == "inferred" for e in walk.edges)
    for other_scope, start in world.db_ids.items():
        if other_scope != scope:
            for inferred in (True, False):
                with pytest.raises(NotFound):
                    v.traverse(start, depth=5, inferred=inferred, **kw)
    for method in ("label_propagation", "modularity"):
        found = v.communities(method=method, **kw)
        assert found.communities
        for community in found.communities:
            _only(world, scope, community.members)
            _only(world, scope, [m.id for m in community.central])


@scoped
def test_global_recall(world: World, scope: Scope) -> None:
    for mode in ("fts5", "dense", "hybrid"):
        answer = world.vault.global_recall(QUERY, mode=mode, reinforce=False, **_kw(scope))
        assert answer.communities
        for found in answer.communities:
            _only(world, scope, found.community.members)
            _only(world, scope, [e.id for e in found.evidence])
        _clean(world, scope, answer.context)


@scoped
def test_recall_when_and_prepare(world: World, scope: Scope) -> None:
    context = f"we are {TRIGGER} for sqlite storage"
    for semantic in (False, True):
        got = world.vault.recall_when(context, semantic=semantic, **_kw(scope))
        assert [i.id for i in got.items] == [world.db_ids[scope]]
    for mode in ("fts5", "dense", "hybrid"):  # every related memory, however weak: tenancy is the question
        block = world.vault.prepare(context, mode=mode, min_score=None, **_kw(scope))
        _only(world, scope, block.triggered)
        _only(world, scope, block.related)
        _clean(world, scope, block.markdown)


@scoped
def test_memory_files_and_hygiene(world: World, scope: Scope) -> None:
    v, kw = world.vault, _kw(scope)
    found = v.memory_recall("sqlite storage", **kw)
    assert found.entries
    for entry in found.entries:
        _clean(world, scope, entry.text)
    _clean(world, scope, v.get_memory("Notes", **kw).text)
    assert [f.file for f in v.list_memory_files(**kw).files] == ["Notes"]
    report = v.hygiene(min_age_days=0, **kw)
    _only(world, scope, [i.id for i in report.items], nonempty=False)
    assert 0 < report.scanned <= len(world.own(scope))


# --- the adapters ------------------------------------------------------------------------------


@scoped
@pytest.mark.parametrize("mode", ["fts5", "dense", "hybrid"])
def test_langchain_retriever(world: World, scope: Scope, mode: Literal["fts5", "dense", "hybrid"]) -> None:
    from perseus_vault_integrations.langchain import PerseusVaultRetriever

    retriever = PerseusVaultRetriever(vault=world.vault, k=50, mode=mode, reinforce=False, **_kw(scope))
    docs = retriever.invoke(QUERY)
    _only(world, scope, [int(d.id) for d in docs if d.id is not None])
    for doc in docs:
        _clean(world, scope, doc.page_content, own=False)  # a memory file's own entity has no marker
    adocs = asyncio.run(retriever.ainvoke(QUERY))
    assert [d.id for d in adocs] == [d.id for d in docs]


@scoped
@pytest.mark.parametrize("mode", ["fts5", "dense", "hybrid"])
def test_llamaindex_retriever(world: World, scope: Scope, mode: str) -> None:
    from perseus_vault_integrations.llama_index import PerseusVaultRetriever

    nodes = PerseusVaultRetriever(world.vault, k=50, mode=mode, reinforce=False, **_kw(scope)).retrieve(QUERY)
    _only(world, scope, [int(n.node.node_id) for n in nodes])
    for n in nodes:
        _clean(world, scope, n.node.get_content(), own=False)


TEXTS = [
    "Ada drinks green tea every morning",
    "Ada works on the storage engine",
    "The storage engine is SQLite",
]


@pytest.fixture(scope="module")
def adapter_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    with Vault(tmp_path_factory.mktemp("adapters") / "a.db", embedder=FakeEmbedder()) as vault:
        yield vault


def test_langchain_vector_store(adapter_vault: Vault) -> None:
    from perseus_vault_integrations.langchain import PerseusVaultVectorStore

    stores = {s: PerseusVaultVectorStore(adapter_vault, collection="lc", **_kw(s)) for s in [*SCOPES, None]}
    ids = {
        s: set(store.add_texts([f"{t} {marker(s)}" for t in TEXTS], ids=["a", "b", "c"]))
        for s, store in stores.items()
    }  # the same document ids in every scope
    assert all(i == {"a", "b", "c"} for i in ids.values())
    vector = FakeEmbedder().embed(["storage engine"])[0].tolist()
    for scope, store in stores.items():
        found = [
            *store.similarity_search("storage engine", k=20),
            *store.similarity_search_by_vector(vector, k=20),
            *store.max_marginal_relevance_search("storage engine", k=5, fetch_k=20),
            *store.get_by_ids(["a", "b", "c"]),
        ]
        assert found
        for doc in found:
            assert marker(scope) in doc.page_content
            assert not [
                m for m in (marker(s) for s in [*SCOPES, None] if s != scope) if m in doc.page_content
            ]
    stores[SCOPES[0]].delete(["a"])  # deleting in one scope leaves the others' "a"
    assert stores[SCOPES[0]].get_by_ids(["a"]) == []
    assert all(len(stores[s].get_by_ids(["a"])) == 1 for s in [*SCOPES[1:], None])


def test_langgraph_store(adapter_vault: Vault) -> None:
    from perseus_vault_integrations.langchain import PerseusVaultStore

    stores = {s: PerseusVaultStore(adapter_vault, category="lg", **_kw(s)) for s in [*SCOPES, None]}
    for s, store in stores.items():
        for n, text in enumerate(TEXTS):
            store.put(("mem", "ada"), str(n), {"text": f"{text} {marker(s)}"})
    for scope, store in stores.items():
        by_query = [i.value["text"] for i in store.search(("mem",), query="storage engine", limit=20)]
        listed = [i.value["text"] for i in store.search(("mem",), limit=20)]
        got = store.get(("mem", "ada"), "1")
        assert got is not None and by_query and len(listed) == len(TEXTS)  # its own three, no one else's
        texts = [*by_query, *listed, got.value["text"]]
        for text in texts:
            assert marker(scope) in text
            assert not [m for m in (marker(s) for s in [*SCOPES, None] if s != scope) if m in text]
        assert store.list_namespaces() == [("mem", "ada")]


def test_llamaindex_property_graph_store(adapter_vault: Vault) -> None:
    from llama_index.core.graph_stores.types import EntityNode, Relation
    from llama_index.core.vector_stores.types import VectorStoreQuery

    from perseus_vault_integrations.llama_index import PerseusVaultPropertyGraphStore

    stores = {s: PerseusVaultPropertyGraphStore(adapter_vault, **_kw(s)) for s in [*SCOPES, None]}
    vector = FakeEmbedder().embed(["storage engine"])[0].tolist()
    for s, g in stores.items():
        ada = EntityNode(
            name="Ada", properties={"owner": marker(s)}, embedding=FakeEmbedder().embed(["Ada"])[0].tolist()
        )
        engine = EntityNode(name="storage engine", properties={"owner": marker(s)}, embedding=vector)
        g.upsert_nodes([ada, engine])
        g.upsert_relations(
            [
                Relation(
                    label="works_on", source_id=ada.id, target_id=engine.id, properties={"owner": marker(s)}
                )
            ]
        )
    for scope, g in stores.items():
        nodes = g.get()
        triplets = g.get_triplets(entity_names=["Ada"])
        near, _ = g.vector_query(VectorStoreQuery(query_embedding=vector, similarity_top_k=10))
        rel_map = g.get_rel_map(nodes, depth=2)
        assert nodes and triplets and near and rel_map
        owners = [n.properties.get("owner") for n in [*nodes, *near]]
        owners += [part.properties.get("owner") for t in [*triplets, *rel_map] for part in t]
        assert set(owners) == {marker(scope)}


# --- an MCP server bound to a scope ------------------------------------------------------------


READ_CALLS: list[tuple[str, dict[str, Any]]] = [
    *[
        ("recall", {"query": QUERY, "mode": m, "limit": 50, "reinforce": False})
        for m in ("fts5", "dense", "hybrid")
    ],
    ("search", {"query": QUERY, "limit": 50}),
    ("scan", {"limit": 1000}),
    ("communities", {}),
    ("global_recall", {"query": QUERY, "reinforce": False}),
    ("recall_when", {"context": f"we are {TRIGGER}"}),
    ("context", {"context": f"we are {TRIGGER} for sqlite storage"}),
    ("memory_recall", {"query": "sqlite storage"}),
    ("hygiene", {"min_age_days": 0}),
    ("history", {"category": "note", "key": "db"}),
    ("as_of", {"category": "note", "key": "db", "as_of_unix_ms": 1}),
    ("valid_at", {"category": "note", "key": "db", "valid_at_unix_ms": 1}),
]


def _ids_in(value: Any) -> set[int]:
    """Every entity id a tool result mentions (``id`` fields, members, triggered/related lists)."""
    found: set[int] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("id", "entity_id", "start") and isinstance(v, int):
                found.add(v)
            elif k in ("members", "triggered", "related") and isinstance(v, list):
                found.update(x for x in v if isinstance(x, int))
            else:
                found |= _ids_in(v)
    elif isinstance(value, list):
        for v in value:
            found |= _ids_in(v)
    return found


@scoped
def test_a_server_bound_to_a_scope(world: World, scope: Scope) -> None:
    from perseus_vault_integrations.mcp import VaultClient, build_server

    others = [s for s in [*SCOPES] if s != scope]

    async def main() -> None:
        server = build_server(vault=world.vault, agent_id=scope[0], workspace_hash=scope[1], tools="all")
        async with VaultClient(server) as c:
            for verb, args in READ_CALLS:
                result = await c.call(verb, **args)
                text = repr(result)
                assert not [m for m in world.foreign_markers(scope) if m in text], verb
                mentioned = _ids_in(result) - {world.db_ids[scope]}
                # Link ids and community ids are not entity ids; entity ids are all ours.
                entity_ids = {i for i in mentioned if i in world.own(scope) | world.others(scope)}
                assert not entity_ids & world.others(scope), verb
                for other in others:  # a caller naming another scope is refused, whatever the verb
                    with pytest.raises(VaultError, match="bound"):
                        await c.call(verb, **args, agent_id=other[0], workspace_hash=other[1])
            for other_id in world.others(scope):
                with pytest.raises(VaultError, match="no entity"):
                    await c.get_entity(other_id)
                with pytest.raises(VaultError, match="no entity"):
                    await c.call("traverse", start=other_id, depth=3)
            got = await c.call("scan", limit=1000)
            assert {e["id"] for e in got["items"]} == world.own(scope)

    anyio.run(main)
