"""Filters on a node's text: ``where_document`` as LlamaIndex's Chroma store takes it (the query's and a
retriever's ``vector_store_kwargs``, ``delete_nodes``), and ``text_match`` on a memory's content."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.llama_index import (
    PerseusVaultEmbedding,
    PerseusVaultRetriever,
    PerseusVaultVectorStore,
)

from ...conftest import FakeEmbedder

TEXTS = {
    "a": "We chose SQLite in WAL mode.",
    "b": "Postgres serves the shared vault.",
    "c": "Tea at four, with sqlite jokes.",
}


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[VectorStoreIndex, PerseusVaultVectorStore]]:
    with Vault(tmp_path / "v.db", embedder=FakeEmbedder()) as vault:
        store = PerseusVaultVectorStore(vault)
        built = VectorStoreIndex.from_documents(
            [Document(text=t, id_=k) for k, t in TEXTS.items()],
            embed_model=PerseusVaultEmbedding(vault),
            storage_context=StorageContext.from_defaults(vector_store=store),
        )
        yield built, store


def _texts(index: VectorStoreIndex, **kwargs: object) -> list[str]:
    retriever = index.as_retriever(similarity_top_k=5, **kwargs)
    return sorted(n.node.get_content() for n in retriever.retrieve("which database"))


def test_where_document_filters_the_query_by_text(
    index: tuple[VectorStoreIndex, PerseusVaultVectorStore],
) -> None:
    built, store = index
    assert _texts(built, vector_store_kwargs={"where_document": {"$contains": "SQLite"}}) == [TEXTS["a"]]
    assert _texts(built, vector_store_kwargs={"where_document": {"$not_contains": "SQLite"}}) == [
        TEXTS["b"],
        TEXTS["c"],
    ]
    with pytest.raises(InvalidInput, match="where_document.\\$regex"):
        _texts(built, vector_store_kwargs={"where_document": {"$regex": "SQL.*"}})
    with pytest.raises(InvalidInput, match="where_doc: is not an argument of query"):
        _texts(built, vector_store_kwargs={"where_doc": {"$contains": "SQLite"}})
    store.delete_nodes(where_document={"$contains": "sqlite"})
    assert _texts(built) == sorted([TEXTS["a"], TEXTS["b"]])


def test_text_match_on_a_memorys_content(tmp_path: Path) -> None:
    with Vault(tmp_path / "r.db", embedder=False) as vault:
        for key, text in TEXTS.items():
            vault.remember("note", key, text)
        for op, keys in (
            (FilterOperator.TEXT_MATCH, ["a"]),
            (FilterOperator.TEXT_MATCH_INSENSITIVE, ["a", "c"]),
        ):
            filters = MetadataFilters(filters=[MetadataFilter(key="content", value="SQLite", operator=op)])
            found = PerseusVaultRetriever(vault, filters=filters, min_score=None).retrieve(
                "vault mode tea sqlite"
            )
            assert sorted(n.node.metadata["key"] for n in found) == keys


def test_a_misspelled_argument_is_named_with_the_nearest(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        PerseusVaultRetriever(tmp_path / "x.db", similarity_topk=5)
    assert str(caught.value) == "similarity_topk: unknown argument (did you mean similarity_top_k?)"
