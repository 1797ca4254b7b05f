"""PerseusVaultVectorStore as a LlamaIndex user meets it, on both backends: VectorStoreIndex over it (retrieval,
a query engine, inserts and deletes by document), MetadataFilters with every
operator and condition checked against LlamaIndex's SimpleVectorStore, the query modes, the embedding model
checked when the index is built, and the bundled model."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from perseus_vault_core import Conflict, InvalidInput, NotSupported, Vault
from perseus_vault_integrations.llama_index import (
    LlamaIndexEmbedder,
    PerseusVaultEmbedding,
    PerseusVaultVectorStore,
    vault_storage_context,
)

from ...conftest import FakeEmbedder

pytestmark = pytest.mark.both_backends

DOCS = [
    (
        "d1",
        "The vault keeps its memories in SQLite with WAL.",
        {"team": "core", "prio": 2, "tags": ["db", "storage"], "owner": "ada"},
    ),
    (
        "d2",
        "Deploys go out on Tuesdays after the release review.",
        {"team": "ops", "prio": 5, "tags": ["release"], "owner": ""},
    ),
    ("d3", "Backups of the SQLite file run nightly.", {"team": "ops", "prio": 1, "tags": ["db", "ops"]}),
    (
        "d4",
        "The billing service retries failed payments twice.",
        {"team": "billing", "prio": 3, "tags": [], "owner": "bob"},
    ),
    (
        "d5",
        "Postgres is the second backend, with pgvector.",
        {"team": "core", "prio": 4, "tags": ["db"], "owner": "ada"},
    ),
]


def documents() -> list[Document]:
    return [Document(text=text, id_=doc_id, metadata=meta) for doc_id, text, meta in DOCS]


def build(vault: Vault, **kwargs: Any) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        documents(),
        storage_context=vault_storage_context(vault, **kwargs),
        embed_model=PerseusVaultEmbedding(vault),
    )


def texts(found: Any) -> list[str]:
    return [n.node.get_content() for n in found]


# --- VectorStoreIndex over the vault ------------------------------------------------------------


def test_an_index_keeps_its_nodes_in_the_vault_and_answers_from_them(dense_vault: Vault) -> None:
    index = build(dense_vault)
    found = index.as_retriever(similarity_top_k=2).retrieve("SQLite file backups")
    assert len(found) == 2 and texts(found)[0] == "Backups of the SQLite file run nightly."
    assert found[0].score is not None and found[0].score >= found[1].score  # type: ignore[operator]
    assert found[0].node.metadata == DOCS[2][2] and found[0].node.ref_doc_id == "d3"
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("SQLite file backups")
    assert "Backups of the SQLite file run nightly." in str(response)  # MockLLM answers with its prompt
    # The nodes are memories: the vault's own recall finds them too, in the store's category.
    hits = dense_vault.recall("backups nightly", category="llamaindex", mode="fts5").items
    assert [h.content for h in hits][:1] == ["Backups of the SQLite file run nightly."]


def test_documents_are_inserted_refreshed_and_deleted_by_ref_doc_id(dense_vault: Vault) -> None:
    index = build(dense_vault)
    store = index.vector_store
    index.delete_ref_doc("d3", delete_from_docstore=True)
    assert "Backups of the SQLite file run nightly." not in texts(
        index.as_retriever(similarity_top_k=5).retrieve("x")
    )
    assert {n.ref_doc_id for n in store.get_nodes()} == {"d1", "d2", "d4", "d5"}  # type: ignore[attr-defined]
    index.insert(Document(text="Backups moved to hourly snapshots.", id_="d3", metadata={"team": "ops"}))
    assert texts(index.as_retriever(similarity_top_k=1).retrieve("hourly snapshots")) == [
        "Backups moved to hourly snapshots."
    ]
    changed = Document(text="Deploys go out on Thursdays now.", id_="d2", metadata={"team": "ops"})
    assert index.refresh_ref_docs([changed, *documents()[3:]]) == [True, False, False]
    assert "Deploys go out on Thursdays now." in texts(
        index.as_retriever(similarity_top_k=6).retrieve("deploys")
    )
    assert (
        dense_vault.recall("Tuesdays release review", category="llamaindex", mode="fts5").items == []
    )  # purged


def test_nodes_are_read_deleted_and_cleared_by_id_and_filter(dense_vault: Vault) -> None:
    store = build(dense_vault).vector_store
    assert isinstance(store, PerseusVaultVectorStore)
    ops = MetadataFilters(filters=[MetadataFilter(key="team", value="ops")])
    by_id = {n.ref_doc_id: n.node_id for n in store.get_nodes()}
    assert [n.ref_doc_id for n in store.get_nodes(filters=ops)] == ["d2", "d3"]
    assert [n.ref_doc_id for n in store.get_nodes(node_ids=[by_id["d1"], "missing"])] == ["d1"]
    assert store.get_nodes(node_ids=[]) == []
    store.delete_nodes(filters=ops)
    assert {n.ref_doc_id for n in store.get_nodes()} == {"d1", "d4", "d5"}
    store.delete_nodes(node_ids=[by_id["d4"]])
    with pytest.raises(InvalidInput, match="node_ids: name the nodes"):
        store.delete_nodes()
    store.clear()
    assert store.get_nodes() == [] and dense_vault.stats().entities == 0


# --- MetadataFilters -------------------------------------------------------------------------------

SCALAR = [("team", "ops"), ("team", "core"), ("prio", 3), ("prio", 1), ("owner", "ada")]
FLAT = [
    MetadataFilter(key=k, value=v, operator=op)
    for (k, v), op in itertools.product(
        SCALAR,
        [
            FilterOperator.EQ,
            FilterOperator.NE,
            FilterOperator.GT,
            FilterOperator.GTE,
            FilterOperator.LT,
            FilterOperator.LTE,
        ],
    )
    if not (isinstance(v, str) and op not in (FilterOperator.EQ, FilterOperator.NE))
] + [
    MetadataFilter(key="team", value=["ops", "billing"], operator=FilterOperator.IN),
    MetadataFilter(key="team", value=["ops", "billing"], operator=FilterOperator.NIN),
    MetadataFilter(key="prio", value=[1, 4], operator=FilterOperator.IN),
    MetadataFilter(key="owner", value=["bob"], operator=FilterOperator.NIN),
    MetadataFilter(key="tags", value=["ops", "release"], operator=FilterOperator.ANY),
    MetadataFilter(key="tags", value=["db", "storage"], operator=FilterOperator.ALL),
    MetadataFilter(key="tags", value="db", operator=FilterOperator.CONTAINS),
    MetadataFilter(key="owner", value=None, operator=FilterOperator.IS_EMPTY),
    MetadataFilter(key="tags", value=None, operator=FilterOperator.IS_EMPTY),
    MetadataFilter(key="prio", value=None, operator=FilterOperator.IS_EMPTY),
    MetadataFilter(key="missing", value=1, operator=FilterOperator.NE),
    MetadataFilter(key="team", value="o", operator=FilterOperator.TEXT_MATCH),  # every document has a team
    MetadataFilter(key="team", value="OP", operator=FilterOperator.TEXT_MATCH),
    MetadataFilter(key="team", value="OP", operator=FilterOperator.TEXT_MATCH_INSENSITIVE),
    MetadataFilter(key="team", value="iLL", operator=FilterOperator.TEXT_MATCH_INSENSITIVE),
]


def simple_store(fake_embedder: Any) -> SimpleVectorStore:
    store = SimpleVectorStore()
    VectorStoreIndex.from_documents(
        documents(),
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=_embedding(fake_embedder),
    )
    return store


def _embedding(embedder: Any) -> Any:
    return PerseusVaultEmbedding(embedder=embedder)


def matched(store: Any, filters: MetadataFilters, embedder: Any) -> set[str]:
    """The documents whose nodes a query with ``filters`` returns (all of them pass: top 10 of 5)."""
    query = VectorStoreQuery(
        query_embedding=_embedding(embedder).get_query_embedding("x"),
        similarity_top_k=10,
        filters=filters,
        query_str="x",
    )
    result = store.query(query)
    if result.nodes is not None:
        return {node.ref_doc_id for node in result.nodes}
    return {store.data.text_id_to_ref_doc_id[i] for i in result.ids}  # SimpleVectorStore answers with ids


@pytest.mark.parametrize("flat", FLAT, ids=lambda f: f"{f.key}-{f.operator.value}-{f.value}")
def test_every_operator_selects_what_simple_vector_store_selects(
    dense_vault: Vault, fake_embedder: Any, flat: MetadataFilter
) -> None:
    store = build(dense_vault).vector_store
    filters = MetadataFilters(filters=[flat])
    expected = matched(simple_store(fake_embedder), filters, fake_embedder)
    assert matched(store, filters, fake_embedder) == expected


def test_conditions_combine_and_nest(dense_vault: Vault, fake_embedder: Any) -> None:
    """and / or / not, and filters inside filters (which SimpleVectorStore does not take: checked against
    the sets its flat filters select)."""
    store, simple = build(dense_vault).vector_store, simple_store(fake_embedder)
    flat = lambda f: matched(simple, MetadataFilters(filters=[f]), fake_embedder)  # noqa: E731
    everything = {d for d, _, _ in DOCS}
    ops, high = FLAT[0], MetadataFilter(key="prio", value=3, operator=FilterOperator.GTE)
    core = MetadataFilter(key="team", value="core")
    cases = {
        FilterCondition.AND: flat(ops) & flat(high),
        FilterCondition.OR: flat(ops) | flat(high),
        FilterCondition.NOT: everything - (flat(ops) | flat(high)),
    }
    for condition, expected in cases.items():
        assert (
            matched(store, MetadataFilters(filters=[ops, high], condition=condition), fake_embedder)
            == expected
        )
    nested = MetadataFilters(
        condition=FilterCondition.OR,
        filters=[
            core,
            MetadataFilters(
                condition=FilterCondition.AND,
                filters=[
                    ops,
                    MetadataFilters(
                        condition=FilterCondition.NOT,
                        filters=[MetadataFilter(key="tags", value="db", operator=FilterOperator.CONTAINS)],
                    ),
                ],
            ),
        ],
    )
    assert matched(store, nested, fake_embedder) == flat(core) | (flat(ops) - {"d3"}) == {"d1", "d2", "d5"}


def test_filters_apply_inside_the_query_not_after_the_page(dense_vault: Vault) -> None:
    """The one matching node is found even when every better-ranked node fails the filter."""
    index = build(dense_vault)
    only = MetadataFilters(filters=[MetadataFilter(key="team", value="billing")])
    found = index.as_retriever(similarity_top_k=1, filters=only).retrieve("SQLite database storage")
    assert texts(found) == ["The billing service retries failed payments twice."]


def test_filters_the_vault_cannot_apply_are_refused_by_name(dense_vault: Vault) -> None:
    store = build(dense_vault).vector_store
    for op in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE):
        with pytest.raises(
            InvalidInput,
            match=rf"filters.filters\[0\].value: must be a non-empty string for the operator '{op.value}'",
        ):
            store.get_nodes(
                filters=MetadataFilters(filters=[MetadataFilter(key="team", value="", operator=op)])
            )
    with pytest.raises(InvalidInput, match=r"filters.filters\[0\].value: must be a list"):
        store.get_nodes(
            filters=MetadataFilters(
                filters=[MetadataFilter(key="team", value="ops", operator=FilterOperator.IN)]
            )
        )
    with pytest.raises(InvalidInput, match="filters: must be LlamaIndex MetadataFilters"):
        store.get_nodes(filters={"team": "ops"})  # type: ignore[arg-type]


# --- query modes and top k -------------------------------------------------------------------------


def test_text_search_and_hybrid_modes(dense_vault: Vault) -> None:
    index = build(dense_vault)
    keyword = index.as_retriever(similarity_top_k=2, vector_store_query_mode="text_search").retrieve(
        "pgvector"
    )
    assert texts(keyword) == ["Postgres is the second backend, with pgvector."]
    hybrid = index.as_retriever(similarity_top_k=3, vector_store_query_mode="hybrid").retrieve(
        "nightly SQLite backups"
    )
    assert texts(hybrid)[0] == "Backups of the SQLite file run nightly." and len(hybrid) == 3
    by_keyword = index.as_retriever(similarity_top_k=5, vector_store_query_mode="hybrid", alpha=0.0).retrieve(
        "pgvector"
    )
    assert texts(by_keyword)[0] == "Postgres is the second backend, with pgvector."
    assert by_keyword[0].score == pytest.approx(keyword[0].score)  # alpha 0: the keyword arm alone scores


@pytest.mark.parametrize(
    "mode", [m for m in VectorStoreQueryMode if m.value not in ("default", "text_search", "hybrid")]
)
def test_other_modes_are_refused(dense_vault: Vault, mode: VectorStoreQueryMode) -> None:
    store = build(dense_vault).vector_store
    with pytest.raises(NotSupported, match=f"query mode '{mode.value}' is not offered"):
        store.query(VectorStoreQuery(query_str="x", query_embedding=[0.1] * 64, mode=mode))


def test_similarity_top_k_is_the_number_of_nodes(dense_vault: Vault) -> None:
    index = build(dense_vault)
    for k in (1, 3, 5):
        assert len(index.as_retriever(similarity_top_k=k).retrieve("anything at all")) == k
    with pytest.raises(InvalidInput, match="similarity_top_k"):
        index.vector_store.query(VectorStoreQuery(query_embedding=[0.1] * 64, similarity_top_k=0))


# --- the embedding model -----------------------------------------------------------------------------


def test_an_embedding_model_other_than_the_vault_s_is_refused_when_the_index_is_built(
    dense_vault: Vault,
) -> None:
    with pytest.raises(Conflict, match="embed_model is not this vault's model .*PerseusVaultEmbedding"):
        VectorStoreIndex.from_documents(
            documents(),
            storage_context=vault_storage_context(dense_vault),
            embed_model=MockEmbedding(embed_dim=64),
        )
    with pytest.raises(Conflict, match="makes 8-dimension vectors but this vault's model"):
        VectorStoreIndex.from_documents(
            documents(),
            storage_context=vault_storage_context(dense_vault),
            embed_model=MockEmbedding(embed_dim=8),
        )
    assert dense_vault.stats().entities == 0  # refused before anything was written


def test_a_vault_opened_with_the_index_s_model_takes_it(tmp_path: Path) -> None:
    model = MockEmbedding(embed_dim=16)
    with Vault(tmp_path / "mock.db", embedder=LlamaIndexEmbedder(model)) as vault:
        index = VectorStoreIndex.from_documents(
            documents(), storage_context=vault_storage_context(vault), embed_model=model
        )
        assert len(index.as_retriever(similarity_top_k=2).retrieve("x")) == 2


def test_the_bundled_model_finds_nodes_by_meaning(tmp_path: Path, real_embedder: Any) -> None:
    with Vault(tmp_path / "real.db", embedder=real_embedder) as vault:
        index = build(vault)
        found = index.as_retriever(similarity_top_k=1).retrieve("how often are copies of the database made?")
        assert texts(found) == ["Backups of the SQLite file run nightly."]  # no word in common but 'the'


def test_made_with_the_framework_s_forms_and_nothing_unknown(tmp_path: Path) -> None:
    store = PerseusVaultVectorStore.from_params(str(tmp_path / "v.db"), collection="docs")
    assert store.collection == "docs" and isinstance(store.client, Vault)
    store.close()
    with pytest.raises(InvalidInput, match="did you mean 'collection'"):
        PerseusVaultVectorStore(tmp_path / "never.db", colection="docs")  # type: ignore[call-arg]
    with pytest.raises(InvalidInput, match="collection: must be a non-empty string"):
        PerseusVaultVectorStore(tmp_path / "never.db", collection=" ")
    assert not (tmp_path / "never.db").exists()


# --- where_document on a node's text, as LlamaIndex's Chroma store takes it (the query's and a retriever's vector_store_kwargs, delete_nodes) ---

TEXT_DOCS = {
    "a": "We chose SQLite in WAL mode.",
    "b": "Postgres serves the shared vault.",
    "c": "Tea at four, with sqlite jokes.",
}


@pytest.fixture
def text_index(tmp_path: Path) -> Iterator[tuple[VectorStoreIndex, PerseusVaultVectorStore]]:
    with Vault(tmp_path / "v.db", embedder=FakeEmbedder()) as vault:
        store = PerseusVaultVectorStore(vault)
        built = VectorStoreIndex.from_documents(
            [Document(text=t, id_=k) for k, t in TEXT_DOCS.items()],
            embed_model=PerseusVaultEmbedding(vault),
            storage_context=StorageContext.from_defaults(vector_store=store),
        )
        yield built, store


def _retrieved_texts(text_index: VectorStoreIndex, **kwargs: object) -> list[str]:
    retriever = text_index.as_retriever(similarity_top_k=5, **kwargs)
    return sorted(n.node.get_content() for n in retriever.retrieve("which database"))


def test_where_document_filters_the_query_by_text(
    text_index: tuple[VectorStoreIndex, PerseusVaultVectorStore],
) -> None:
    built, store = text_index
    assert _retrieved_texts(built, vector_store_kwargs={"where_document": {"$contains": "SQLite"}}) == [
        TEXT_DOCS["a"]
    ]
    assert _retrieved_texts(built, vector_store_kwargs={"where_document": {"$not_contains": "SQLite"}}) == [
        TEXT_DOCS["b"],
        TEXT_DOCS["c"],
    ]
    with pytest.raises(InvalidInput, match="where_document.\\$regex"):
        _retrieved_texts(built, vector_store_kwargs={"where_document": {"$regex": "SQL.*"}})
    with pytest.raises(InvalidInput, match="where_doc: is not an argument of query"):
        _retrieved_texts(built, vector_store_kwargs={"where_doc": {"$contains": "SQLite"}})
    store.delete_nodes(where_document={"$contains": "sqlite"})
    assert _retrieved_texts(built) == sorted([TEXT_DOCS["a"], TEXT_DOCS["b"]])
