"""PerseusVaultVectorStore: langchain-tests' standard suite (sync and async), then what the suite
does not pin: scores, filters, MMR, ids, deletion, the embedder guard, and the bundled model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from perseus_vault_core import Conflict, InvalidInput, Vault
from perseus_vault_integrations.langchain import LangChainEmbedder, PerseusVaultVectorStore

# The suite's async tests carry no marker of their own (it expects asyncio_mode=auto): mark the
# module, and silence pytest-asyncio's note that the suite's sync tests do not need the mark.
pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings(
        "ignore:.*is marked with '@pytest.mark.asyncio' but it is not an async function"
    ),
]


class TestStandardSuite(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[PerseusVaultVectorStore]:  # type: ignore[override]
        store = PerseusVaultVectorStore(tmp_path / "suite.db", self.get_embeddings())
        yield store
        store.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[PerseusVaultVectorStore]:
    s = PerseusVaultVectorStore(tmp_path / "vs.db", DeterministicFakeEmbedding(size=16))
    s.add_texts(
        ["the cat sat on the mat", "dogs chase cats", "stock markets fell today", "a kitten sleeps"],
        [
            {"topic": "pets", "n": 1},
            {"topic": "pets", "n": 2},
            {"topic": "money", "n": 3},
            {"topic": "pets", "n": 4},
        ],
        ids=["cat", "dog", "market", "kitten"],
    )
    yield s
    s.close()


def test_scores_are_cosine_similarities(store: PerseusVaultVectorStore) -> None:
    hits = store.similarity_search_with_score("stock markets fell today", k=4)
    assert hits[0][0].id == "market" and hits[0][1] == pytest.approx(1.0, abs=1e-5)  # the same text
    assert all(-1.0 - 1e-6 <= score <= 1.0 + 1e-6 for _, score in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    relevance = store.similarity_search_with_relevance_scores("stock markets fell today", k=4)
    assert all(0.0 <= r <= 1.0 for _, r in relevance) and relevance[0][1] == pytest.approx(1.0, abs=1e-5)


def test_search_by_vector_uses_the_callers_vector(store: PerseusVaultVectorStore) -> None:
    vector = DeterministicFakeEmbedding(size=16).embed_query("dogs chase cats")
    assert store.similarity_search_by_vector(vector, k=1)[0].id == "dog"
    scored = store.similarity_search_with_score_by_vector(vector, k=2)
    assert scored[0][0].id == "dog" and scored[0][1] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(InvalidInput):
        store.similarity_search_by_vector([0.1, 0.2], k=1)  # wrong dimension


def test_metadata_filters(store: PerseusVaultVectorStore) -> None:
    pets = store.similarity_search("stock markets fell today", k=4, filter={"topic": "pets"})
    assert {d.id for d in pets} == {"cat", "dog", "kitten"}
    late = store.similarity_search("anything", k=4, filter=lambda doc: doc.metadata["n"] >= 3)
    assert {d.id for d in late} == {"market", "kitten"}
    with pytest.raises(InvalidInput):
        store.similarity_search("x", filter="topic = pets")  # type: ignore[arg-type]


def test_metadata_filters_take_chromas_operators_inside_the_search(tmp_path: Path) -> None:
    """{"prio": {"$gt": 1}}, $and and $in returned [] before they went into the vault's where."""
    s = PerseusVaultVectorStore(tmp_path / "ops.db", DeterministicFakeEmbedding(size=16))
    s.add_texts(
        [f"note number {i}" for i in range(60)],
        [
            {
                "prio": i % 4,
                "team": ["ops", "web", "data"][i % 3],
                "tags": ["a", "b"] if i % 5 == 0 else ["c"],
            }
            for i in range(60)
        ],
        ids=[f"n{i}" for i in range(60)],
    )
    cases: list[tuple[dict[str, Any], Callable[[int], bool]]] = [
        ({"prio": {"$gt": 1}}, lambda i: i % 4 > 1),
        ({"$and": [{"prio": {"$gte": 1}}, {"team": "ops"}]}, lambda i: i % 4 >= 1 and i % 3 == 0),
        ({"team": {"$in": ["web", "data"]}}, lambda i: i % 3 != 0),
        ({"$or": [{"prio": 0}, {"team": {"$nin": ["ops", "web"]}}]}, lambda i: i % 4 == 0 or i % 3 == 2),
        ({"$not": {"prio": {"$lt": 3}}}, lambda i: i % 4 == 3),
        ({"tags": "a"}, lambda i: i % 5 == 0),  # a list holds a value when one element is it
        (
            {"prio": 3, "team": "web", "tags": {"$ne": "a"}},
            lambda i: i % 4 == 3 and i % 3 == 1 and i % 5 != 0,
        ),
        ({"prio": {"$exists": False}}, lambda i: False),
    ]
    for where, keeps in cases:
        want = {f"n{i}" for i in range(60) if keeps(i)}
        got = {d.id for d in s.similarity_search("note number 7", k=60, filter=where)}
        assert got == want, where
        top = s.similarity_search("note number 7", k=3, filter=where)
        assert len(top) == min(3, len(want)) and {d.id for d in top} <= want, where  # k found, never fewer
    with pytest.raises(InvalidInput) as refused:
        s.similarity_search("x", filter={"prio": {"$regex": "1"}})
    assert refused.value.field == "filter.prio.$regex" and "not an operator" in refused.value.message
    with pytest.raises(InvalidInput) as refused:
        s.similarity_search("x", filter={"$and": [{"team": ["ops", "web"]}]})
    assert refused.value.field == "filter.$and.0.team" and "$in" in refused.value.message
    s.close()


def test_mmr_prefers_diversity(tmp_path: Path) -> None:
    s = PerseusVaultVectorStore(tmp_path / "mmr.db", DeterministicFakeEmbedding(size=16))
    s.add_texts(["alpha", "alpha", "beta"], ids=["a1", "a2", "b"])  # a1 and a2 are the same vector
    plain = s.similarity_search("alpha", k=2)
    assert {d.id for d in plain} == {"a1", "a2"}
    diverse = s.max_marginal_relevance_search("alpha", k=2, fetch_k=3, lambda_mult=0.3)
    assert diverse[0].id in {"a1", "a2"} and diverse[1].id == "b"
    s.close()


def test_ids_map_to_entity_keys_and_delete_purges(store: PerseusVaultVectorStore) -> None:
    vault = store.vault
    entity = vault.history("langchain", "cat", limit=1).items[0]
    assert entity.content == "the cat sat on the mat" and entity.body["metadata"] == {"topic": "pets", "n": 1}
    store.add_texts(["the cat sat on the sofa"], ids=["cat"])  # same id: a new version of the entity
    assert vault.history("langchain", "cat").total == 2
    store.delete(["cat", "never-there"])
    assert store.get_by_ids(["cat"]) == []
    assert "cat" not in {d.id for d in store.similarity_search("the cat sat on the sofa", k=4)}
    assert not [
        i for i in vault.recall("cat sofa", include_archived=True, mode="fts5").items if i.key == "cat"
    ]
    with pytest.raises(InvalidInput):
        store.delete()


def test_bad_input_is_named_and_nothing_is_written(store: PerseusVaultVectorStore) -> None:
    before = store.vault.stats().entities
    with pytest.raises(InvalidInput) as err:
        store.add_texts(["a", "b"], [{"ok": 1}, {"bad": object()}])
    assert err.value.field == "metadatas[1]"
    with pytest.raises(InvalidInput) as err:
        store.add_texts(["a"], ids=["  "])
    assert err.value.field == "ids[0]"
    with pytest.raises(InvalidInput):
        store.add_texts(["a", "b"], ids=["only-one"])
    assert store.vault.stats().entities == before


def test_the_embedder_guard_holds(tmp_path: Path) -> None:
    path = tmp_path / "guard.db"
    first = PerseusVaultVectorStore(path, DeterministicFakeEmbedding(size=16))
    first.add_texts(["hello"])
    first.close()
    other = PerseusVaultVectorStore(path, DeterministicFakeEmbedding(size=8))
    with pytest.raises(Conflict):
        other.add_texts(["mixing models"])  # 8 dimensions into a 16-dimension vault
    with pytest.raises(Conflict):
        other.similarity_search("hello")
    other.close()
    with Vault(tmp_path / "v.db", embedder=False) as vault:
        with pytest.raises(InvalidInput) as err:
            PerseusVaultVectorStore(vault, DeterministicFakeEmbedding(size=8))
        assert err.value.field == "embedding"
    with Vault(
        tmp_path / "w.db", embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=8), identity="fake-8")
    ) as v:
        s = PerseusVaultVectorStore(v)
        s.add_texts(["hello"], ids=["h"])
        assert v.stats().embedding_model == "fake-8" and s.similarity_search("hello", k=1)[0].id == "h"


def test_collections_and_scopes_are_separate(tmp_path: Path) -> None:
    with Vault(tmp_path / "c.db", embedder=LangChainEmbedder(DeterministicFakeEmbedding(size=8))) as vault:
        a = PerseusVaultVectorStore(vault, collection="a")
        b = PerseusVaultVectorStore(vault, collection="b", agent_id="bob")
        a.add_texts(["same text"], ids=["1"])
        b.add_texts(["same text"], ids=["1"])
        assert [d.id for d in a.similarity_search("same text", k=5)] == ["1"]
        assert b.get_by_ids(["1"])[0].page_content == "same text"
        a.delete(["1"])
        assert b.get_by_ids(["1"]) and not a.get_by_ids(["1"])


def test_as_retriever_and_from_texts(tmp_path: Path) -> None:
    s = PerseusVaultVectorStore.from_texts(
        ["red apples", "green pears"],
        DeterministicFakeEmbedding(size=8),
        [{"c": "red"}, {"c": "green"}],
        ids=["r", "g"],
        vault=tmp_path / "ft.db",
    )
    docs = s.as_retriever(search_kwargs={"k": 1}).invoke("green pears")
    assert docs == [Document(id="g", page_content="green pears", metadata={"c": "green"})]
    keyword = PerseusVaultVectorStore(s.vault, mode="fts5")
    assert [d.id for d in keyword.similarity_search("apples", k=2)] == ["r"]
    s.close()
    with pytest.raises(InvalidInput):
        PerseusVaultVectorStore.from_texts(["x"], DeterministicFakeEmbedding(size=8))


def test_the_bundled_model_is_the_default(tmp_path: Path, real_embedder: Any) -> None:
    with Vault(tmp_path / "real.db", embedder=real_embedder) as vault:
        s = PerseusVaultVectorStore(vault)
        s.add_texts(
            [
                "Ada has two cats called Pixel and Vector",
                "Ada maintains the billing service",
                "Ada is vegetarian",
            ],
            ids=["pets", "job", "food"],
        )
        assert s.similarity_search("pets at home", k=1)[0].id == "pets"
        scored = s.similarity_search_with_score("which payments system does she look after", k=3)
        assert scored[0][0].id == "job" and 0.0 < scored[0][1] <= 1.0
        assert [d.id for d in s.max_marginal_relevance_search("pets at home", k=2, fetch_k=3)][0] == "pets"
        assert s.embeddings is not None and len(s.embeddings.embed_query("x")) == 384


# --- filters on a document's text, as Chroma spells them (where_document), in searches and in delete ---

FILTERED_TEXTS = {
    "cat": ("the cat sat on the mat", "pets"),
    "dog": ("dogs chase cats", "pets"),
    "market": ("stock markets fell today", "money"),
    "kitten": ("a kitten sleeps", "pets"),
}


@pytest.fixture(params=["dense", "fts5"])
def filtered_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PerseusVaultVectorStore]:
    s = PerseusVaultVectorStore(tmp_path / "vs.db", DeterministicFakeEmbedding(size=16), mode=request.param)
    s.add_texts(
        [t for t, _ in FILTERED_TEXTS.values()],
        [{"topic": topic} for _, topic in FILTERED_TEXTS.values()],
        ids=list(FILTERED_TEXTS),
    )
    yield s
    s.close()


def _filtered_ids(
    filtered_store: PerseusVaultVectorStore, query: str = "cat mat kitten dogs stock", **kwargs: object
) -> list[str]:
    return sorted(d.id or "" for d in filtered_store.similarity_search(query, k=10, **kwargs))  # type: ignore[arg-type]


def test_where_document_filters_every_search_by_the_text(filtered_store: PerseusVaultVectorStore) -> None:
    assert _filtered_ids(filtered_store, where_document={"$contains": "cat"}) == ["cat", "dog"]
    assert _filtered_ids(
        filtered_store, where_document={"$not_contains": "cat"}, filter={"topic": "pets"}
    ) == ["kitten"]
    assert _filtered_ids(
        filtered_store, where_document={"$or": [{"$contains": "mat"}, {"$contains": "stock"}]}
    ) == ["cat", "market"]
    assert _filtered_ids(
        filtered_store, where_document={"$and": [{"$contains": "cat"}, {"$not_contains": "dogs"}]}
    ) == ["cat"]
    scored = filtered_store.similarity_search_with_score(
        "kitten sleeps", k=4, where_document={"$contains": "kitten"}
    )
    assert [d.id for d, _ in scored] == ["kitten"]
    retriever = filtered_store.as_retriever(search_kwargs={"k": 4, "where_document": {"$contains": "fell"}})
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
    filtered_store: PerseusVaultVectorStore, where_document: dict[str, object], says: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        filtered_store.similarity_search("cat", where_document=where_document)
    assert str(caught.value).startswith(says)


def test_delete_by_filter_by_text_and_by_both(filtered_store: PerseusVaultVectorStore) -> None:
    with pytest.raises(InvalidInput, match="give a filter or where_document"):
        filtered_store.delete()
    with pytest.raises(InvalidInput, match="where_doc"):
        filtered_store.delete(where_doc={"$contains": "cat"})
    filtered_store.delete(filter={"topic": "money"})
    assert _filtered_ids(filtered_store) == ["cat", "dog", "kitten"]
    filtered_store.delete(where_document={"$contains": "kitten"})
    assert _filtered_ids(filtered_store) == ["cat", "dog"]
    filtered_store.delete(
        ["cat", "dog", "nothere"], where={"topic": "pets"}, where_document={"$contains": "dogs"}
    )
    assert _filtered_ids(filtered_store) == ["cat"]
    assert filtered_store.get_by_ids(["dog", "kitten", "market"]) == []
