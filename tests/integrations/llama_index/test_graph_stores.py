"""PerseusVaultPropertyGraphStore: LlamaIndex's own SimplePropertyGraphStore cases (adapted from
llama-index-core's tests/graph_stores/test_simple_lpg.py), then what only a vault can show:
persistence, history, scope, time, depth and ignore_rels, vectors, and PropertyGraphIndex on top."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.graph_stores.types import ChunkNode, EntityNode, Relation
from llama_index.core.indices.property_graph import LLMSynonymRetriever, VectorContextRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery

from perseus_vault_core import InvalidInput, NotSupported, Vault
from perseus_vault_integrations.llama_index import (
    LlamaIndexEmbedder,
    PerseusVaultEmbedding,
    PerseusVaultPropertyGraphStore,
)
from perseus_vault_integrations.llama_index.graph_stores import node_key
from tests.conftest import Clock, FakeEmbedder


@pytest.fixture
def g(vault: Vault) -> PerseusVaultPropertyGraphStore:
    return PerseusVaultPropertyGraphStore(vault)


def triple(g: PerseusVaultPropertyGraphStore) -> tuple[EntityNode, Relation, EntityNode]:
    e1 = EntityNode(name="e1")
    e2 = EntityNode(name="e2", properties={"key": "value"})
    r = Relation(label="r", source_id=e1.id, target_id=e2.id)
    g.upsert_nodes([e1, e2])
    g.upsert_relations([r])
    return e1, r, e2


def all_triplets(g: PerseusVaultPropertyGraphStore) -> list[Any]:
    return g.get_triplets(ids=[n.id for n in g.get()])


# --- the cases of llama-index-core's test_simple_lpg.py -------------------------------------------


def test_add(g: PerseusVaultPropertyGraphStore) -> None:
    triple(g)
    assert len(all_triplets(g)) == 1


def test_delete(g: PerseusVaultPropertyGraphStore) -> None:
    e1, _, _ = triple(g)
    g.delete(ids=[e1.id])
    assert all_triplets(g) == []


def test_get(g: PerseusVaultPropertyGraphStore) -> None:
    e1, r, e2 = triple(g)
    assert g.get_triplets() == []
    assert g.get_triplets(entity_names=["e1"]) == [(e1, r, e2)]
    assert g.get_triplets(entity_names=["e2"]) == [(e1, r, e2)]
    assert g.get_triplets(relation_names=["r"]) == [(e1, r, e2)]
    assert g.get_triplets(properties={"key": "value"}) == [(e1, r, e2)]


def test_add_node(g: PerseusVaultPropertyGraphStore) -> None:
    g.upsert_llama_nodes([TextNode(id_="n1", text="n1"), TextNode(id_="n2", text="n2")])
    assert len(g.get()) == 2


def test_delete_node_by_node_ids(g: PerseusVaultPropertyGraphStore) -> None:
    g.upsert_llama_nodes([TextNode(id_="n1", text="n1"), TextNode(id_="n2", text="n2")])
    g.delete_llama_nodes(node_ids=["n1"])
    assert [n.id for n in g.get()] == ["n2"]


def test_delete_node_by_ref_doc_ids(vault: Vault) -> None:
    g = PerseusVaultPropertyGraphStore(vault, namespace="first")
    n1 = TextNode(id_="n1", text="n1", relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="n2")})
    g.upsert_llama_nodes([n1, TextNode(id_="n2", text="n2")])
    g.delete_llama_nodes(ref_doc_ids=["n2"])
    assert g.get() == []

    g = PerseusVaultPropertyGraphStore(vault, namespace="second")
    n1 = TextNode(id_="n1", text="n1", relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="n3")})
    g.upsert_llama_nodes([n1, TextNode(id_="n2", text="n2")])
    g.delete_llama_nodes(ref_doc_ids=["n3"])
    assert [n.id for n in g.get()] == ["n2"]


def test_get_nodes(g: PerseusVaultPropertyGraphStore) -> None:
    n1, n2 = TextNode(id_="n1", text="n1"), TextNode(id_="n2", text="n2")
    g.upsert_llama_nodes([n1, n2])
    assert g.get_llama_nodes(["n1", "n2"]) == [n1, n2]


# --- the same behaviours, async ------------------------------------------------------------------


def test_async_methods_match_sync(g: PerseusVaultPropertyGraphStore) -> None:
    async def run() -> None:
        e1, e2 = EntityNode(name="e1"), EntityNode(name="e2")
        r = Relation(label="r", source_id="e1", target_id="e2")
        await g.aupsert_nodes([e1, e2])
        await g.aupsert_relations([r])
        assert await g.aget(ids=["e2"]) == [e2]
        assert await g.aget_triplets(entity_names=["e1"]) == [(e1, r, e2)]
        assert await g.aget_rel_map([e1], depth=1) == [(e1, r, e2)]
        await g.adelete(relation_names=["r"])
        assert await g.aget_triplets(relation_names=["r"]) == []
        with pytest.raises(NotSupported):
            await g.astructured_query("MATCH (n) RETURN n")

    asyncio.run(run())


# --- lossless storage and persistence --------------------------------------------------------------


def test_nodes_and_relations_survive_reopening_losslessly(db_path: Path, clock: Clock) -> None:
    props = {"nested": {"list": [1, 2.5, None, "x"], "flag": True}, "unicode": "café ✓"}
    e1 = EntityNode(name='Ada "the first" Lovelace', label="PERSON", properties=props)
    e2 = EntityNode(name="Analytical Engine", label="MACHINE")
    chunk = ChunkNode(text="Ada wrote the first program.", id_="chunk-1", properties={"page": 3})
    rel = Relation(
        label="WROTE_FOR", source_id=e1.id, target_id=e2.id, properties={"year": 1843, "notes": ["G"]}
    )
    with Vault(db_path, clock=clock, embedder=False) as vault:
        PerseusVaultPropertyGraphStore(vault).upsert_nodes([e1, e2, chunk])
        PerseusVaultPropertyGraphStore(vault).upsert_relations([rel])
    with Vault(db_path, clock=clock, embedder=False) as vault:
        g = PerseusVaultPropertyGraphStore(vault)
        assert g.get(ids=[e1.id]) == [e1]
        assert g.get(ids=["chunk-1"]) == [chunk]
        assert g.get_triplets(entity_names=[e1.id]) == [(e1, rel, e2)]
        # the vault's own view: entities and a typed link
        node = vault.recall("Lovelace", category="llamaindex:node").items[0]
        assert node.type == "kg_entity" and node.content == e1.name
        walk = vault.traverse(
            node.id, depth=1, inferred=False
        )  # the links written (not those the vault inferred)
        assert [(e.relation, e.from_id) for e in walk.edges] == [("WROTE_FOR", node.id)]


def test_upsert_replaces_a_node_and_keeps_its_history(
    g: PerseusVaultPropertyGraphStore, vault: Vault
) -> None:
    g.upsert_nodes([EntityNode(name="x", properties={"v": 1})])
    g.upsert_nodes([EntityNode(name="x", properties={"v": 2})])
    assert g.get(ids=["x"]) == [EntityNode(name="x", properties={"v": 2})]
    versions = vault.history("llamaindex:node", "x").items
    assert [v.body["llamaindex"]["properties"] for v in versions] == [{"v": 2}, {"v": 1}]


def test_relation_properties_are_replaced_on_upsert(g: PerseusVaultPropertyGraphStore) -> None:
    g.upsert_relations([Relation(label="r", source_id="a", target_id="b", properties={"w": 1})])
    g.upsert_relations([Relation(label="r", source_id="a", target_id="b", properties={"w": 2})])
    [(_, rel, _)] = g.get_triplets(ids=["a"])
    assert rel.properties == {"w": 2}


def test_a_relation_creates_missing_ends_as_entity_nodes(g: PerseusVaultPropertyGraphStore) -> None:
    g.upsert_relations([Relation(label="SOURCE", source_id="chunk", target_id="doc")])
    assert g.get(ids=["chunk", "doc"]) == [EntityNode(name="chunk"), EntityNode(name="doc")]


def test_self_loops_are_kept(g: PerseusVaultPropertyGraphStore) -> None:
    a = EntityNode(name="a")
    loop = Relation(label="KNOWS", source_id="a", target_id="a", properties={"why": "itself"})
    g.upsert_nodes([a])
    g.upsert_relations([loop])
    assert g.get_triplets(ids=["a"]) == [(a, loop, a)]
    assert g.get_rel_map([a], depth=2) == [(a, loop, a)]
    g.delete(relation_names=["KNOWS"])
    assert g.get_triplets(ids=["a"]) == []


def test_long_ids_are_keyed_by_hash(g: PerseusVaultPropertyGraphStore) -> None:
    long = "n" * 600
    g.upsert_nodes([EntityNode(name=long)])
    assert node_key(long).startswith("sha256:")
    assert [n.id for n in g.get(ids=[long])] == [long]


# --- get_triplets filters, get_rel_map depth and ignore_rels -------------------------------------


def chain(g: PerseusVaultPropertyGraphStore) -> dict[str, Relation]:
    """a -r1-> b -r2-> c -r3-> d, and a -skip-> e -r4-> f."""
    rels = {
        "r1": Relation(label="r1", source_id="a", target_id="b"),
        "r2": Relation(label="r2", source_id="b", target_id="c", properties={"tag": "mid"}),
        "r3": Relation(label="r3", source_id="c", target_id="d"),
        "skip": Relation(label="skip", source_id="a", target_id="e"),
        "r4": Relation(label="r4", source_id="e", target_id="f"),
    }
    g.upsert_nodes([EntityNode(name=n) for n in "abcdef"])
    g.upsert_relations(list(rels.values()))
    return rels


def labels(triplets: list[Any]) -> list[str]:
    return [t[1].label for t in triplets]


def test_get_triplets_filters_combine(g: PerseusVaultPropertyGraphStore) -> None:
    chain(g)
    assert sorted(labels(g.get_triplets(entity_names=["b"]))) == ["r1", "r2"]
    assert labels(g.get_triplets(entity_names=["b"], relation_names=["r2"])) == ["r2"]
    assert labels(g.get_triplets(ids=["c"], properties={"tag": "mid"})) == ["r2"]
    assert labels(g.get_triplets(properties={"tag": "mid"})) == ["r2"]
    assert labels(g.get_triplets(entity_names=["b"], ids=["a"])) == ["r1"]
    assert g.get_triplets(entity_names=["nobody"]) == []


def test_get_rel_map_depth(g: PerseusVaultPropertyGraphStore) -> None:
    chain(g)
    a = g.get(ids=["a"])
    assert sorted(labels(g.get_rel_map(a, depth=1))) == ["r1", "skip"]
    assert sorted(labels(g.get_rel_map(a, depth=2))) == ["r1", "r2", "r4", "skip"]
    assert sorted(labels(g.get_rel_map(a, depth=3))) == ["r1", "r2", "r3", "r4", "skip"]
    assert g.get_rel_map(a, depth=0) == []
    # breadth first, each relation once, whichever end it is reached from
    assert labels(g.get_rel_map(a, depth=3))[:2] == ["r1", "skip"]
    assert len(g.get_rel_map(g.get(ids=["a", "b"]), depth=3)) == 5


def test_get_rel_map_limit(g: PerseusVaultPropertyGraphStore) -> None:
    chain(g)
    assert labels(g.get_rel_map(g.get(ids=["a"]), depth=3, limit=2)) == ["r1", "skip"]
    assert g.get_rel_map(g.get(ids=["a"]), depth=3, limit=0) == []


def test_get_rel_map_ignore_rels_neither_returns_nor_walks(g: PerseusVaultPropertyGraphStore) -> None:
    chain(g)
    a = g.get(ids=["a"])
    assert sorted(labels(g.get_rel_map(a, depth=3, ignore_rels=["skip"]))) == ["r1", "r2", "r3"]
    assert labels(g.get_rel_map(a, depth=3, ignore_rels=["r1", "skip"])) == []


def test_get_rel_map_refuses_bad_depth(g: PerseusVaultPropertyGraphStore) -> None:
    with pytest.raises(InvalidInput, match="depth"):
        g.get_rel_map([], depth=-1)


# --- delete -----------------------------------------------------------------------------------------


def test_delete_by_entity_name_archives_the_node_and_its_relations(
    g: PerseusVaultPropertyGraphStore, vault: Vault
) -> None:
    chain(g)
    g.delete(entity_names=["b"])
    assert [n.id for n in g.get()] == ["a", "c", "d", "e", "f"]
    assert sorted(labels(g.get_triplets(ids=["a", "c", "d", "e", "f"]))) == ["r3", "r4", "skip"]
    archived = vault.history("llamaindex:node", "b").items[0]
    assert archived.status == "archived"  # kept in history
    # restoring the node does not bring its closed links back
    g.upsert_nodes([EntityNode(name="b")])
    assert g.get_triplets(ids=["b"]) == []


def test_delete_by_relation_name_keeps_the_nodes(g: PerseusVaultPropertyGraphStore) -> None:
    chain(g)
    g.delete(relation_names=["r2", "r3"])
    assert len(g.get()) == 6
    assert sorted(labels(g.get_triplets(ids=list("abcdef")))) == ["r1", "r4", "skip"]


def test_delete_by_properties_matches_nodes_and_relations(g: PerseusVaultPropertyGraphStore) -> None:
    chain(g)
    g.upsert_nodes([EntityNode(name="f", properties={"tag": "mid"})])
    g.delete(properties={"tag": "mid"})
    assert [n.id for n in g.get()] == list("abcde")
    assert sorted(labels(g.get_triplets(ids=list("abcde")))) == ["r1", "r3", "skip"]


# --- scope, time, bad input ------------------------------------------------------------------------


def test_scopes_do_not_see_each_other(vault: Vault) -> None:
    mine = PerseusVaultPropertyGraphStore(vault, agent_id="me")
    theirs = PerseusVaultPropertyGraphStore(vault, agent_id="them")
    unscoped = PerseusVaultPropertyGraphStore(vault)
    mine.upsert_relations([Relation(label="r", source_id="a", target_id="b")])
    assert theirs.get() == [] and unscoped.get() == []
    assert theirs.get_triplets(ids=["a"]) == []
    theirs.delete(ids=["a"])
    assert len(mine.get_triplets(ids=["a"])) == 1


def test_as_of_shows_the_graph_as_it_was_and_is_read_only(vault: Vault, clock: Clock) -> None:
    g = PerseusVaultPropertyGraphStore(vault)
    chain(g)
    before = clock.now
    clock.advance(1_000)
    g.delete(entity_names=["b"])
    g.upsert_nodes([EntityNode(name="a", properties={"changed": True})])
    clock.advance(1_000)
    then = PerseusVaultPropertyGraphStore(vault, as_of_unix_ms=before)
    assert then.get(ids=["a"]) == [EntityNode(name="a")]
    assert sorted(labels(then.get_triplets(entity_names=["b"]))) == ["r1", "r2"]
    assert sorted(labels(then.get_rel_map(then.get(ids=["a"]), depth=2))) == ["r1", "r2", "r4", "skip"]
    with pytest.raises(NotSupported, match="read-only"):
        then.upsert_nodes([EntityNode(name="z")])


def test_bad_input_names_the_problem_and_writes_nothing(
    g: PerseusVaultPropertyGraphStore, vault: Vault
) -> None:
    with pytest.raises(InvalidInput, match="relations.1.label"):
        g.upsert_relations(
            [
                Relation(label="ok", source_id="a", target_id="b"),
                Relation(label="", source_id="a", target_id="b"),
            ]
        )
    with pytest.raises(InvalidInput, match="nodes.1"):
        g.upsert_nodes([EntityNode(name="a"), "not a node"])  # type: ignore[list-item]
    with pytest.raises(InvalidInput, match="body"):
        g.upsert_nodes([EntityNode(name="a"), EntityNode(name="b", properties={"x": object()})])
    assert vault.stats().entities == 0
    with pytest.raises(InvalidInput, match="namespace"):
        PerseusVaultPropertyGraphStore(vault, namespace="a:b")
    with pytest.raises(InvalidInput, match="vault"):
        PerseusVaultPropertyGraphStore(42)  # type: ignore[arg-type]


def test_structured_query_is_not_supported(g: PerseusVaultPropertyGraphStore) -> None:
    assert g.supports_structured_queries is False
    with pytest.raises(NotSupported, match="no graph query language"):
        g.structured_query("MATCH (n) RETURN n")
    with pytest.raises(NotImplementedError):  # NotSupported is also Python's NotImplementedError
        g.structured_query("MATCH (n) RETURN n")


# --- vectors ---------------------------------------------------------------------------------------


def test_vector_query_finds_the_nearest_entity_nodes(dense_vault: Vault, fake_embedder: FakeEmbedder) -> None:
    g = PerseusVaultPropertyGraphStore(dense_vault)
    assert g.supports_vector_queries is True
    assert g.vector_query(VectorStoreQuery(query_embedding=[1.0] * 64)) == ([], [])  # empty graph
    g.upsert_nodes(
        [
            EntityNode(name="solar panels"),
            EntityNode(name="wind turbines"),
            EntityNode(name="coffee beans"),
            ChunkNode(text="solar panels on the roof", id_="c1"),
        ]
    )
    embed = PerseusVaultEmbedding(embedder=fake_embedder)
    query = VectorStoreQuery(query_embedding=embed.get_query_embedding("solar panels"), similarity_top_k=2)
    nodes, scores = g.vector_query(query)
    assert [n.id for n in nodes][0] == "solar panels"
    assert all(isinstance(n, EntityNode) for n in nodes)  # chunks are not vector-searched
    assert len(nodes) == 2 and scores[0] >= scores[1]
    assert asyncio.run(g.avector_query(query)) == (nodes, scores)


def test_vector_query_refuses_what_it_cannot_do(dense_vault: Vault) -> None:
    g = PerseusVaultPropertyGraphStore(dense_vault)
    g.upsert_nodes([EntityNode(name="solar")])
    with pytest.raises(InvalidInput, match="query_embedding"):
        g.vector_query(VectorStoreQuery(query_str="solar"))
    with pytest.raises(InvalidInput, match="vector"):  # MockEmbedding's 8 dimensions against the vault's 64
        g.vector_query(VectorStoreQuery(query_embedding=[0.5] * 8))
    with pytest.raises(NotSupported, match="doc_ids"):
        g.vector_query(VectorStoreQuery(query_embedding=[1.0] * 64, doc_ids=["d1"]))


def test_vector_query_filters_inside_the_search(dense_vault: Vault, fake_embedder: FakeEmbedder) -> None:
    """MetadataFilters over the nodes' properties and node_ids become the vault's where: the k nearest of the
    nodes that match, not the k nearest filtered afterwards."""
    from llama_index.core.vector_stores.types import FilterOperator

    g = PerseusVaultPropertyGraphStore(dense_vault)
    g.upsert_nodes(
        [
            EntityNode(name=f"solar panel model {i}", properties={"year": 2000 + i, "kind": "pv"})
            for i in range(12)
        ]
        + [EntityNode(name="solar farm", properties={"kind": "site"})]
    )
    query = PerseusVaultEmbedding(embedder=fake_embedder).get_query_embedding("solar panel")
    recent = MetadataFilters(filters=[MetadataFilter(key="year", value=2009, operator=FilterOperator.GTE)])
    nodes, _ = g.vector_query(VectorStoreQuery(query_embedding=query, similarity_top_k=5, filters=recent))
    assert len(nodes) == 3 and {n.properties["year"] for n in nodes} == {
        2009,
        2010,
        2011,
    }  # all three, of five asked
    sites = MetadataFilters(filters=[MetadataFilter(key="kind", value="site")])
    assert [n.id for n in g.vector_query(VectorStoreQuery(query_embedding=query, filters=sites))[0]] == [
        "solar farm"
    ]
    chosen = g.vector_query(
        VectorStoreQuery(
            query_embedding=query, similarity_top_k=5, node_ids=["solar farm", "solar panel model 3"]
        )
    )[0]
    assert {n.id for n in chosen} == {"solar farm", "solar panel model 3"}


def test_vector_query_on_a_keyword_only_vault_says_why(g: PerseusVaultPropertyGraphStore) -> None:
    g.upsert_nodes([EntityNode(name="solar")])
    with pytest.raises(NotSupported, match="vectors"):
        g.vector_query(VectorStoreQuery(query_embedding=[1.0] * 8))


def test_llamaindex_embedder_records_the_model_identity(db_path: Path) -> None:
    embedder = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    assert embedder.dimension == 8 and embedder.identity.startswith("llamaindex:MockEmbedding")
    with Vault(db_path, embedder=embedder) as vault:
        PerseusVaultPropertyGraphStore(vault).upsert_nodes([EntityNode(name="x")])
        assert vault.stats().embedding_model == embedder.identity
        assert vault.stats().embedding_dimension == 8
    with pytest.raises(InvalidInput, match="embed_model"):
        LlamaIndexEmbedder("not a model")  # type: ignore[arg-type]


# --- PropertyGraphIndex and its retrievers on the store --------------------------------------------

DOCS = [Document(text="Alice works at Acme. Acme builds rockets in Berkeley.", id_="doc-1")]


def test_property_graph_index_builds_and_retrieves(dense_vault: Vault, fake_embedder: FakeEmbedder) -> None:
    g = PerseusVaultPropertyGraphStore(dense_vault)
    # MockLLM echoes its prompt, so the default extractor finds the prompt's own example triplets.
    embed = PerseusVaultEmbedding(embedder=fake_embedder)
    index = PropertyGraphIndex.from_documents(
        DOCS, property_graph_store=g, llm=MockLLM(), embed_model=embed, use_async=False
    )
    names = {n.id for n in g.get()}
    assert {"Alice", "Philz", "Berkeley"} <= names
    chunk = [n for n in g.get() if isinstance(n, ChunkNode)]
    assert [c.text for c in chunk] == [DOCS[0].text]
    assert g.get_triplets(entity_names=["Philz"])
    # the vector-context retriever, through vector_query and get_rel_map
    vector = VectorContextRetriever(g, embed_model=embed, include_text=False, similarity_top_k=2)
    found = vector.retrieve("Philz coffee shop")
    assert any("Philz" in n.text for n in found)
    # the synonym retriever, through get and get_rel_map (MockLLM's echo carries the query words)
    synonym = LLMSynonymRetriever(
        g, llm=MockLLM(), include_text=False, output_parsing_fn=lambda text: ["Philz"]
    )
    assert any("Philz -> " in n.text for n in synonym.retrieve("Philz"))
    # the index's own retriever, with the source text from the chunk nodes
    nodes = index.as_retriever(include_text=True).retrieve("Philz")
    assert any(DOCS[0].text in n.text for n in nodes)
    # reopened from the same store: nothing rebuilt, same answers
    again = PropertyGraphIndex.from_existing(g, llm=MockLLM(), embed_model=embed)
    assert any(DOCS[0].text in n.text for n in again.as_retriever(include_text=True).retrieve("Philz"))


def test_property_graph_index_with_the_bundled_model(db_path: Path, real_embedder: Any) -> None:
    with Vault(db_path, embedder=real_embedder) as vault:
        g = PerseusVaultPropertyGraphStore(vault)
        g.upsert_nodes([EntityNode(name=n) for n in ("automobile", "banana", "violin")])
        g.upsert_relations([Relation(label="PARKED_AT", source_id="automobile", target_id="garage")])
        embed = PerseusVaultEmbedding(embedder=real_embedder)
        retriever = VectorContextRetriever(g, embed_model=embed, include_text=False, similarity_top_k=1)
        found = retriever.retrieve("a car")  # by meaning: no shared word
        assert [n.text for n in found] == ["automobile -> PARKED_AT -> garage"]


def test_vault_embedding_defaults_to_the_bundled_model() -> None:
    embed = PerseusVaultEmbedding()
    assert embed.model_name.startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert embed.class_name() == "PerseusVaultEmbedding"


# --- PerseusVaultGraphStore: the older triplet store, in the vault's key-value collections ------------


def test_the_triplet_store_answers_as_simple_graph_store_does_and_survives(
    db_path: Path, tmp_path: Path
) -> None:
    from llama_index.core.graph_stores import SimpleGraphStore

    from perseus_vault_integrations.llama_index import PerseusVaultGraphStore

    def script(store: Any) -> list[Any]:
        for s, r, o in [
            ("ada", "likes", "tea"),
            ("ada", "works_on", "billing"),
            ("bob", "likes", "tea"),
            ("ada", "likes", "tea"),
            ("tea", "is", "drink"),
        ]:
            store.upsert_triplet(s, r, o)
        return [store.get("ada"), store.get("bob"), store.get_rel_map(["ada"], depth=2), store.get_rel_map()]

    with Vault(db_path, embedder=False) as vault:
        assert script(PerseusVaultGraphStore(vault)) == script(SimpleGraphStore())
        store = PerseusVaultGraphStore(vault)
        store.delete("bob", "likes", "tea")  # SimpleGraphStore's delete never deletes (a tuple is no list)
        store.delete("ada", "likes", "tea")
        store.persist(str(tmp_path / "graph_store.json"))
    assert not (tmp_path / "graph_store.json").exists()  # nothing to write: it is in the vault
    reopened = PerseusVaultGraphStore(db_path)
    assert reopened.get("ada") == [["works_on", "billing"]] and reopened.get("bob") == []
    reopened.close()
