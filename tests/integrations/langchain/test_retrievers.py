"""PerseusVaultRetriever: langchain-tests' standard suite in every recall mode, then documents,
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

from perseus_vault_core import InvalidInput, NotSupported, Vault
from perseus_vault_integrations.langchain import PerseusVaultRetriever

from ...conftest import Clock, FakeEmbedder

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings("ignore:.*is marked with '@pytest.mark.asyncio' but it is not an async function"),
]

NOTES = [
    ("decision", "db-engine", "We chose SQLite in WAL mode for the vault database.", "architecture/storage"),
    ("decision", "db-backup", "The database is backed up nightly with the SQLite backup API.", "operations"),
    ("insight", "db-size", "Our database stays under 2 GB for ten thousand memories.", "architecture/storage"),
    ("insight", "db-locks", "Database writers retry when SQLite reports busy.", "architecture/storage"),
    ("note", "lunch", "The team lunch is on Friday at noon.", "social"),
    ("note", "pets", "Ada has two cats called Pixel and Vector.", "social"),
]


# Other memories, as a real store has: with six notes, four of them about databases, "database" would be
# in most of the store and carry no keyword weight at all (BM25's idf), so nothing would clear the
# default relevance threshold.
FILLER = [f"Filler note {i} about {topic}." for i, topic in enumerate(
    ["gardening", "the coffee machine", "travel plans", "a birthday", "the office plants", "parking", "the wiki",
     "printer toner", "holiday rota", "the newsletter", "team photos", "badges", "the fridge", "chairs"])]


def fill(vault: Vault) -> dict[str, int]:
    ids = {key: vault.remember(category=c, key=key, content=text, topic_path=topic).id for c, key, text, topic in NOTES}
    vault.remember_many([{"category": "misc", "key": f"filler-{i}", "content": text} for i, text in enumerate(FILLER)])
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
    assert set(RecallParams.model_fields) - {"query", "limit"} <= fields
    assert "k" in fields


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
    then = PerseusVaultRetriever(vault=vault, k=1, mode="fts5", as_of_unix_ms=start).invoke("vault database WAL")
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
    assert err.value.field == "limit"
    with pytest.raises(InvalidInput) as err:
        retriever.invoke("database", limit=3)
    assert err.value.field == "limit"
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
