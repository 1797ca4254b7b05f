"""PerseusVaultRetriever: langchain-tests' standard suite in every recall mode, then documents,
VectorStoreRetriever's conventions (search_type, search_kwargs) as a user's LCEL chain meets them,
per-call arguments, filters, async off the event loop, and the bundled model."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from perseus_vault_core import InvalidInput, NotSupported, Vault, date
from perseus_vault_integrations.langchain import PerseusVaultRetriever

from ...conftest import DAY_MS, Clock, FakeEmbedder

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings(
        "ignore:.*is marked with '@pytest.mark.asyncio' but it is not an async function"
    ),
]

NOTES = [
    ("decision", "db-engine", "We chose SQLite in WAL mode for the vault database.", "architecture/storage"),
    ("decision", "db-backup", "The database is backed up nightly with the SQLite backup API.", "operations"),
    (
        "insight",
        "db-size",
        "Our database stays under 2 GB for ten thousand memories.",
        "architecture/storage",
    ),
    ("insight", "db-locks", "Database writers retry when SQLite reports busy.", "architecture/storage"),
    ("note", "lunch", "The team lunch is on Friday at noon.", "social"),
    ("note", "pets", "Ada has two cats called Pixel and Vector.", "social"),
]


# Other memories, as a real store has: with six notes, four of them about databases, "database" would be
# in most of the store and carry no keyword weight at all (BM25's idf), so nothing would clear the
# default relevance threshold.
FILLER = [
    f"Filler note {i} about {topic}."
    for i, topic in enumerate(
        [
            "gardening",
            "the coffee machine",
            "travel plans",
            "a birthday",
            "the office plants",
            "parking",
            "the wiki",
            "printer toner",
            "holiday rota",
            "the newsletter",
            "team photos",
            "badges",
            "the fridge",
            "chairs",
        ]
    )
]


def fill(vault: Vault) -> dict[str, int]:
    ids = {
        key: vault.remember(category=c, key=key, content=text, topic_path=topic).id
        for c, key, text, topic in NOTES
    }
    vault.remember_many(
        [{"category": "misc", "key": f"filler-{i}", "content": text} for i, text in enumerate(FILLER)]
    )
    return ids


@pytest.fixture
def vault(tmp_path: Path, clock: Clock) -> Iterator[Vault]:
    with Vault(tmp_path / "retriever.db", clock=clock, embedder=FakeEmbedder()) as v:
        fill(v)
        yield v


class _Suite(RetrieversIntegrationTests):
    mode: str

    @pytest.fixture(autouse=True)
    def _vault(self, tmp_path: Path) -> Iterator[None]:
        with Vault(tmp_path / "suite.db", embedder=FakeEmbedder()) as v:
            fill(v)
            self.vault = v
            yield

    @property
    def retriever_constructor(self) -> type[PerseusVaultRetriever]:
        return PerseusVaultRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"vault": self.vault, "mode": self.mode}

    @property
    def retriever_query_example(self) -> str:
        return "SQLite database"  # four memories are about it: the suite asks for three


class TestSuiteKeyword(_Suite):
    mode = "fts5"


class TestSuiteDense(_Suite):
    mode = "dense"


class TestSuiteHybrid(_Suite):
    mode = "hybrid"


def test_documents_carry_the_entity(vault: Vault) -> None:
    docs = PerseusVaultRetriever(vault=vault, k=2, mode="hybrid").invoke("SQLite database")
    assert len(docs) == 2 and all(isinstance(d, Document) for d in docs)
    first = docs[0]
    entity = vault.get_entity(int(first.id or "0"))
    assert first.page_content == entity.content
    meta = first.metadata
    assert meta["id"] == entity.id and meta["category"] == entity.category and meta["key"] == entity.key
    assert meta["topic_path"] == entity.topic_path and meta["type"] == entity.type
    assert meta["search_mode"] == "hybrid"
    assert set(meta["ranks"]) <= {"fts5", "dense"} and meta["ranks"]
    assert meta["score"] >= docs[1].metadata["score"]
    assert "content" not in meta and "content" not in meta["body"]  # the text is page_content, once
    assert meta["true_from"] == date(entity.valid_from_ms or entity.updated_at_ms) and "true_to" not in meta


def test_a_document_says_when_its_fact_was_true(vault: Vault, clock: Clock) -> None:
    """Two facts that disagree are told apart by when each was true, not when it was written (issue 45)."""
    start, end = clock.now - 400 * DAY_MS, clock.now + 30 * DAY_MS
    vault.remember(
        "fact", "region-lease", "Production runs in eu-west-1 zanzibar.", valid_from_ms=start, valid_to_ms=end
    )
    [doc] = PerseusVaultRetriever(vault=vault, k=1, mode="fts5").invoke("zanzibar")
    assert (doc.metadata["true_from"], doc.metadata["true_to"]) == (date(start), date(end))


def test_k_and_any_recall_argument_per_call(vault: Vault) -> None:
    retriever = PerseusVaultRetriever(vault=vault, k=5)
    assert len(retriever.invoke("database", k=1)) == 1
    keyword = retriever.invoke("database", mode="fts5", category="insight")
    assert {d.metadata["key"] for d in keyword} == {"db-size", "db-locks"}
    assert all(d.metadata["search_mode"] == "fts5" for d in keyword)
    # The same call straight to the vault gives the same hits in the same order.
    direct = vault.recall("database", mode="fts5", category="insight", limit=5)
    assert [d.id for d in keyword] == [str(i.id) for i in direct.items]


def test_every_recall_field_is_a_retriever_field() -> None:
    from perseus_vault_core import RecallParams

    fields = set(PerseusVaultRetriever.model_fields)
    assert (
        set(RecallParams.model_fields) - {"query", "limit", "where"} <= fields
    )  # where is search_kwargs' filter
    assert {"k", "search_type", "search_kwargs"} <= fields and "where" not in fields


def test_filters_and_knobs_as_fields(vault: Vault, clock: Clock) -> None:
    storage = PerseusVaultRetriever(vault=vault, k=10, mode="fts5", topic_path="architecture")
    assert {d.metadata["key"] for d in storage.invoke("database")} == {"db-engine", "db-size", "db-locks"}
    capped = PerseusVaultRetriever(vault=vault, k=1, mode="fts5", preview_cap=10).invoke("backed up nightly")
    assert capped[0].metadata["key"] == "db-backup" and len(capped[0].page_content) > 10  # footer added
    assert capped[0].page_content.startswith("The databa")
    annotated = PerseusVaultRetriever(vault=vault, k=2, validity_annotate=True).invoke("database")
    assert all("validity" in d.metadata for d in annotated)
    start = clock.now
    clock.advance(1_000)
    vault.remember(category="decision", key="db-engine", content="We moved the vault database to PostgreSQL.")
    then = PerseusVaultRetriever(vault=vault, k=1, mode="fts5", as_of_unix_ms=start).invoke(
        "vault database WAL"
    )
    assert "SQLite" in then[0].page_content  # what the vault believed before the change


def test_reinforce_false_leaves_counters(vault: Vault) -> None:
    docs = PerseusVaultRetriever(vault=vault, k=1, mode="fts5", reinforce=False).invoke("cats Pixel")
    assert vault.get_entity(int(docs[0].id or "0")).retrieval_count == 0
    PerseusVaultRetriever(vault=vault, k=1, mode="fts5").invoke("cats Pixel")
    assert vault.get_entity(int(docs[0].id or "0")).retrieval_count == 1


def test_bad_arguments_are_named(vault: Vault) -> None:
    retriever = PerseusVaultRetriever(vault=vault)
    with pytest.raises(InvalidInput) as err:
        retriever.invoke("database", bogus=1)
    assert err.value.field == "bogus"
    with pytest.raises(InvalidInput) as err:
        retriever.invoke("database", k=0)
    assert err.value.field == "search_kwargs.k"
    with pytest.raises(InvalidInput, match="limit: use k") as err:
        retriever.invoke("database", limit=3)
    with pytest.raises(InvalidInput, match="where: use filter"):
        retriever.invoke("database", where={"project": "x"})
    with pytest.raises(ValueError):
        PerseusVaultRetriever(vault=vault, mode="semantic")  # type: ignore[arg-type]


def test_dense_mode_without_vectors_says_so(tmp_path: Path) -> None:
    with Vault(tmp_path / "keyword.db", embedder=False) as v:
        fill(v)
        retriever = PerseusVaultRetriever(vault=v)
        assert retriever.invoke("database")[0].metadata["search_mode"] == "fts5"  # auto: keyword only
        with pytest.raises(NotSupported):
            retriever.invoke("database", mode="dense")


class _SlowEmbedder(FakeEmbedder):
    """Blocks each call for a while, as a real model does, so a blocked event loop shows."""

    def embed(self, texts: Any) -> Any:
        time.sleep(0.3)
        return super().embed(texts)


async def test_ainvoke_runs_off_the_event_loop(tmp_path: Path) -> None:
    with Vault(tmp_path / "slow.db", embedder=FakeEmbedder()) as v:
        fill(v)
    with Vault(tmp_path / "slow.db", embedder=_SlowEmbedder()) as v:
        retriever = PerseusVaultRetriever(vault=v, k=2, mode="dense")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            for _ in range(20):
                await asyncio.sleep(0.01)
                ticks += 1

        docs, _ = await asyncio.gather(retriever.ainvoke("database"), ticker())
        assert len(docs) == 2
        assert ticks == 20  # the loop kept running while the model worked
        assert threading.current_thread() is threading.main_thread()


def test_the_bundled_model_answers_by_meaning(tmp_path: Path, real_embedder: Any) -> None:
    with Vault(tmp_path / "real.db", embedder=real_embedder) as v:
        fill(v)
        docs = PerseusVaultRetriever(vault=v, k=1, mode="dense").invoke("pets at home")
        assert docs[0].metadata["key"] == "pets"  # no word in common: meaning alone found it


# --- VectorStoreRetriever's conventions --------------------------------------------------------


def test_search_kwargs_k_is_the_number_of_documents(vault: Vault) -> None:
    assert len(PerseusVaultRetriever(vault, search_kwargs={"k": 1}).invoke("SQLite database")) == 1
    assert len(PerseusVaultRetriever(vault, search_kwargs={"k": 2}, mode="fts5").invoke("database")) == 2
    assert (
        len(PerseusVaultRetriever(vault, k=2, search_kwargs={"k": 2}).invoke("database")) == 2
    )  # the same twice
    retriever = PerseusVaultRetriever(vault, search_kwargs={"k": 3})
    assert len(retriever.invoke("database", k=1)) == 1  # a call's own wins, as in VectorStoreRetriever


def test_an_lcel_chain_reads_the_documents_search_kwargs_ask_for(vault: Vault) -> None:
    """A RAG chain as LangChain's docs write it; the parrot model answers with the prompt it was given."""
    from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnablePassthrough

    def chain(retriever: PerseusVaultRetriever) -> Any:
        prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
        return (
            {
                "context": retriever | (lambda docs: "\n".join(f"- {d.page_content}" for d in docs)),
                "question": RunnablePassthrough(),
            }
            | prompt
            | ParrotFakeChatModel()
            | StrOutputParser()
        )

    answer = chain(PerseusVaultRetriever(vault, search_kwargs={"k": 2}, mode="fts5")).invoke("database")
    assert answer.startswith("Context:\n- ") and answer.count("\n- ") == 2  # four memories match: k cut two
    answer = chain(
        PerseusVaultRetriever(vault, search_kwargs={"k": 3}, mode="fts5", category="insight")
    ).invoke("database")
    assert answer.count("\n- ") == 2  # the category field applies too: two insights about databases
    assert "Our database stays under 2 GB" in answer and "Database writers retry" in answer


def test_similarity_score_threshold_keeps_what_scores_at_least_the_threshold(vault: Vault) -> None:
    everything = PerseusVaultRetriever(vault, k=10, mode="fts5", min_score=None).invoke("SQLite database WAL")
    scores = sorted(d.metadata["score"] for d in everything)
    cut = (scores[-1] + scores[-2]) / 2  # between the best and the second best
    kept = PerseusVaultRetriever(
        vault,
        mode="fts5",
        search_type="similarity_score_threshold",
        search_kwargs={"score_threshold": cut, "k": 10},
    ).invoke("SQLite database WAL")
    assert [d.metadata["score"] for d in kept] == [scores[-1]] and scores[-1] >= cut > scores[-2]


def test_mmr_trades_relevance_for_diversity(tmp_path: Path, real_embedder: Any) -> None:
    """With the bundled model: three near-copies of one fact and one other fact about the same question;
    plain similarity returns the copies, MMR at lambda_mult=0.2 brings the other fact in."""
    with Vault(tmp_path / "mmr.db", embedder=real_embedder) as v:
        for i, text in enumerate(
            [
                "The vault stores its data in SQLite.",
                "The vault keeps its data in SQLite.",
                "Vault data lives in an SQLite file.",
                "Backups of the vault data run nightly.",
            ]
        ):
            v.remember(category="note", key=f"n{i}", content=text)
        similar = PerseusVaultRetriever(v, search_kwargs={"k": 2}, mode="dense", curate=False).invoke(
            "where is the vault data"
        )
        assert {d.metadata["key"] for d in similar} <= {"n0", "n1", "n2"}
        curated = PerseusVaultRetriever(v, search_kwargs={"k": 2}, mode="dense").invoke(
            "where is the vault data"
        )
        assert "n3" in {d.metadata["key"] for d in curated}  # the copies take one place (docs/curation.md)
        diverse = PerseusVaultRetriever(
            v,
            search_type="mmr",
            mode="dense",
            curate=False,
            search_kwargs={"k": 2, "fetch_k": 4, "lambda_mult": 0.2},
        ).invoke("where is the vault data")
        assert len(diverse) == 2 and "n3" in {d.metadata["key"] for d in diverse}
        assert diverse[0].id == similar[0].id  # MMR starts from the most relevant


def test_mmr_needs_an_embedder(tmp_path: Path) -> None:
    with Vault(tmp_path / "keyword.db", embedder=False) as v:
        fill(v)
        with pytest.raises(NotSupported, match="search_type='mmr'.*without an embedder"):
            PerseusVaultRetriever(v, search_type="mmr").invoke("database")


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"search_kwargs": {"kk": 1}}, "kk", "did you mean 'k'"),
        ({"search_kwargs": {"topic_path": "x"}}, "search_kwargs.topic_path", "is a recall parameter"),
        ({"search_kwargs": {"k": 0}}, "search_kwargs.k", "whole number"),
        ({"search_kwargs": {"filter": "project = x"}}, "search_kwargs.filter", "must be a where filter"),
        ({"search_type": "similarity_score_threshold"}, "search_kwargs.score_threshold", "is required"),
        ({"search_kwargs": {"score_threshold": 0.5}}, "search_kwargs.score_threshold", "applies only with"),
        ({"search_kwargs": {"fetch_k": 10}}, "search_kwargs.fetch_k", "applies only with search_type='mmr'"),
        ({"search_type": "mmr", "search_kwargs": {"lambda_mult": 2}}, "search_kwargs.lambda_mult", "from 0"),
        ({"search_type": "semantic"}, "search_type", "must be one of"),
        ({"k": 3, "search_kwargs": {"k": 2}}, "k", "is given twice"),
        (
            {
                "min_score": 0.2,
                "search_type": "similarity_score_threshold",
                "search_kwargs": {"score_threshold": 0.3},
            },
            "min_score",
            "give one of them",
        ),
    ],
)
def test_conventions_are_checked_when_the_retriever_is_made(
    tmp_path: Path, fields: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message) as refused:
        PerseusVaultRetriever(tmp_path / "never.db", **fields)
    assert refused.value.field == field
    assert not (tmp_path / "never.db").exists()


def test_filter_is_recall_s_where_applied_inside_the_query(vault: Vault) -> None:
    """search_kwargs' filter takes where's operators over the memories' fields and body fields; the one
    matching memory is found even when better-ranked ones fail it (applied in the query, not after)."""
    for i, (project, prio) in enumerate([("apollo", 1), ("apollo", 3), ("gemini", 5)]):
        vault.remember(
            category="task",
            key=f"t{i}",
            content=f"Release checklist, step {i}: run the database backup.",
            body={"project": project, "prio": prio},
        )

    def keys(**search_kwargs: Any) -> list[str]:  # noqa: E306
        retriever = PerseusVaultRetriever(
            vault, search_kwargs={"k": 10, **search_kwargs}, mode="fts5", min_score=None
        )
        return sorted(d.metadata["key"] for d in retriever.invoke("database backup"))

    assert keys(filter={"project": "apollo"}) == ["t0", "t1"]
    assert keys(filter={"$and": [{"category": "task"}, {"prio": {"$gt": 1}}]}) == ["t1", "t2"]
    assert keys(filter={"$or": [{"prio": {"$in": [5]}}, {"key": "db-backup"}]}) == ["db-backup", "t2"]
    one = PerseusVaultRetriever(
        vault, search_kwargs={"k": 1, "filter": {"project": "gemini"}}, mode="fts5", min_score=None
    ).invoke("SQLite database backup nightly")
    assert [d.metadata["key"] for d in one] == ["t2"]
    per_call = PerseusVaultRetriever(vault, mode="fts5", min_score=None).invoke(
        "database backup", k=5, filter={"prio": {"$gte": 3}}
    )
    assert sorted(d.metadata["key"] for d in per_call) == ["t1", "t2"]
    with pytest.raises(
        InvalidInput, match=r"search_kwargs.filter.prio.\$gtx: "
    ) as refused:  # when it is made
        PerseusVaultRetriever(vault, search_kwargs={"filter": {"prio": {"$gtx": 1}}})
    assert refused.value.field == "search_kwargs.filter.prio.$gtx"


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
