"""Filters on a document's text, as Chroma spells them (``where_document``), in searches and in ``delete``,
which also deletes by a metadata filter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.langchain import PerseusVaultRetriever, PerseusVaultVectorStore

TEXTS = {
    "cat": ("the cat sat on the mat", "pets"),
    "dog": ("dogs chase cats", "pets"),
    "market": ("stock markets fell today", "money"),
    "kitten": ("a kitten sleeps", "pets"),
}


@pytest.fixture(params=["dense", "fts5"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PerseusVaultVectorStore]:
    s = PerseusVaultVectorStore(tmp_path / "vs.db", DeterministicFakeEmbedding(size=16), mode=request.param)
    s.add_texts(
        [t for t, _ in TEXTS.values()], [{"topic": topic} for _, topic in TEXTS.values()], ids=list(TEXTS)
    )
    yield s
    s.close()


def _ids(
    store: PerseusVaultVectorStore, query: str = "cat mat kitten dogs stock", **kwargs: object
) -> list[str]:
    return sorted(d.id or "" for d in store.similarity_search(query, k=10, **kwargs))  # type: ignore[arg-type]


def test_where_document_filters_every_search_by_the_text(store: PerseusVaultVectorStore) -> None:
    assert _ids(store, where_document={"$contains": "cat"}) == ["cat", "dog"]
    assert _ids(store, where_document={"$not_contains": "cat"}, filter={"topic": "pets"}) == ["kitten"]
    assert _ids(store, where_document={"$or": [{"$contains": "mat"}, {"$contains": "stock"}]}) == [
        "cat",
        "market",
    ]
    assert _ids(store, where_document={"$and": [{"$contains": "cat"}, {"$not_contains": "dogs"}]}) == ["cat"]
    scored = store.similarity_search_with_score("kitten sleeps", k=4, where_document={"$contains": "kitten"})
    assert [d.id for d, _ in scored] == ["kitten"]
    retriever = store.as_retriever(search_kwargs={"k": 4, "where_document": {"$contains": "fell"}})
    assert [d.id for d in retriever.invoke("stock markets today")] == ["market"]


@pytest.mark.parametrize(
    "where_document, says",
    [
        ({"$regex": "c.t"}, "where_document.$regex: is not a document filter"),
        ({"$contains": ""}, "where_document.$contains: must be a non-empty string"),
        ({"$contains": "a", "$not_contains": "b"}, "where_document: must be one of"),
        ({"$or": []}, "where_document.$or: must be a non-empty list"),
    ],
)
def test_a_document_filter_the_vault_does_not_take_is_refused(
    store: PerseusVaultVectorStore, where_document: dict[str, object], says: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        store.similarity_search("cat", where_document=where_document)
    assert str(caught.value).startswith(says)


def test_delete_by_filter_by_text_and_by_both(store: PerseusVaultVectorStore) -> None:
    with pytest.raises(InvalidInput, match="give a filter or where_document"):
        store.delete()
    with pytest.raises(InvalidInput, match="where_doc"):
        store.delete(where_doc={"$contains": "cat"})
    store.delete(filter={"topic": "money"})
    assert _ids(store) == ["cat", "dog", "kitten"]
    store.delete(where_document={"$contains": "kitten"})
    assert _ids(store) == ["cat", "dog"]
    store.delete(["cat", "dog", "nothere"], where={"topic": "pets"}, where_document={"$contains": "dogs"})
    assert _ids(store) == ["cat"]
    assert store.get_by_ids(["dog", "kitten", "market"]) == []


def test_the_retriever_filters_a_memorys_text_through_where(tmp_path: Path) -> None:
    with Vault(tmp_path / "r.db", embedder=False) as vault:
        vault.remember("decision", "db", "We chose SQLite in WAL mode.")
        vault.remember("decision", "pg", "Postgres was rejected for the vault.")
        for search in (
            {"filter": {"content": {"$contains": "SQLite"}}},
            {"where_document": {"$contains": "SQLite"}},
        ):
            retriever = PerseusVaultRetriever(vault, search_kwargs=search, min_score=None)
            assert [d.metadata["key"] for d in retriever.invoke("vault database mode")] == ["db"]
        retriever = PerseusVaultRetriever(
            vault, search_kwargs={"where_document": {"$not_contains": "SQLite"}}, min_score=None
        )
        assert [d.metadata["key"] for d in retriever.invoke("vault database mode")] == ["pg"]
