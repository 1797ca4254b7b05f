"""PerseusVaultRetriever, inside LlamaIndex's own query engine and tool: similarity_top_k and MetadataFilters as
LlamaIndex's retrievers take them, and what the model reads."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.tools import RetrieverTool
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.llama_index import PerseusVaultRetriever
from tests.conftest import DAY_MS, Clock


def seed(vault: Vault) -> dict[str, int]:
    ids = {}
    ids["db"] = vault.remember(
        category="decision",
        key="db-engine",
        content="We chose SQLite in WAL mode for the vault.",
        topic_path="architecture/storage",
        summary="Database engine",
    ).id
    ids["queue"] = vault.remember(
        category="decision",
        key="queue",
        content="We chose Redis streams for the job queue.",
        topic_path="architecture/jobs",
    ).id
    ids["note"] = vault.remember(
        category="note", key="lunch", content="SQLite stickers were handed out at lunch."
    ).id
    ids["other"] = vault.remember(
        category="decision", key="db-engine", content="Agent two chose Postgres.", agent_id="two"
    ).id
    return ids


# --- the retriever ----------------------------------------------------------------------------------


def test_retrieve_returns_entities_as_scored_text_nodes(vault: Vault) -> None:
    ids = seed(vault)
    found = PerseusVaultRetriever(vault, k=5).retrieve("sqlite")
    assert {n.node.node_id for n in found} == {str(ids["db"]), str(ids["note"])}
    top = next(n for n in found if n.node.node_id == str(ids["db"]))
    assert top.node.get_content() == "We chose SQLite in WAL mode for the vault."
    meta = top.node.metadata
    assert (meta["id"], meta["category"], meta["key"], meta["topic_path"]) == (
        ids["db"],
        "decision",
        "db-engine",
        "architecture/storage",
    )
    assert meta["summary"] == "Database engine" and meta["ranks"] == {"fts5": meta["ranks"]["fts5"]}
    assert top.score is not None and top.score == meta["score"] and top.score > 0
    # the LLM sees the text with a few telling fields, not the bookkeeping
    llm_view = top.node.get_content(metadata_mode="llm")  # type: ignore[arg-type]
    assert "category: decision" in llm_view and "retrieval_count" not in llm_view


def test_filters_apply(vault: Vault) -> None:
    ids = seed(vault)

    def by(**filters: Any) -> list[int]:
        # A four-memory keyword-only store: "sqlite" is in half of it and carries no BM25 weight, so the
        # default relevance cut would leave its memories out; this test is about the filters.
        return [
            int(n.node.node_id)
            for n in PerseusVaultRetriever(vault, min_score=None, **filters).retrieve("sqlite postgres")
        ]

    assert set(by(category="decision")) == {ids["db"], ids["other"]}
    assert by(category="decision", agent_id="two") == [ids["other"]]
    assert by(topic_path="architecture") == [ids["db"]]
    assert by(type="note", category="note") == [ids["note"]]


def test_async_retrieve_matches_sync_and_leaves_the_event_loop(vault: Vault) -> None:
    seed(vault)
    retriever = PerseusVaultRetriever(vault, k=3, reinforce=False)
    threads: list[int] = []
    recall = vault.recall

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return recall(*args, **kwargs)

    vault.recall = spy  # type: ignore[method-assign]
    sync = retriever.retrieve("chose")
    loop_thread: list[int] = []

    async def run() -> Any:
        loop_thread.append(threading.get_ident())
        return await retriever.aretrieve("chose")

    assert asyncio.run(run()) == sync
    assert threads[-1] != loop_thread[0]


def test_every_mode(dense_vault: Vault) -> None:
    seed(dense_vault)
    for mode in ("fts5", "dense", "hybrid"):
        found = PerseusVaultRetriever(dense_vault, k=2, mode=mode).retrieve("job queue streams")
        assert found[0].node.metadata["key"] == "queue", mode
        assert set(found[0].node.metadata["ranks"]) == ({"fts5", "dense"} if mode == "hybrid" else {mode})


def test_knobs_reach_recall(vault: Vault, clock: Clock) -> None:
    ids = seed(vault)
    then = clock.now
    clock.advance(DAY_MS)
    vault.remember(category="decision", key="db-engine", content="We moved to DuckDB.")
    old = PerseusVaultRetriever(vault, as_of_unix_ms=then, category="decision").retrieve("sqlite")
    assert [n.node.get_content() for n in old] == ["We chose SQLite in WAL mode for the vault."]
    cut = PerseusVaultRetriever(vault, preview_cap=12).retrieve("stickers")[0].node.get_content()
    assert (
        cut.startswith("SQLite stick") and len(cut) < len("SQLite stickers were handed out at lunch.") + 200
    )
    startup = PerseusVaultRetriever(vault, startup=True).retrieve("chose")
    assert all(0 <= n.node.metadata["actionability"] <= 1 for n in startup)
    before = vault.get_entity(ids["queue"]).retrieval_count
    PerseusVaultRetriever(vault, reinforce=False).retrieve("redis")
    assert vault.get_entity(ids["queue"]).retrieval_count == before
    PerseusVaultRetriever(vault).retrieve("redis")
    assert vault.get_entity(ids["queue"]).retrieval_count == before + 1


def test_bad_parameters_are_refused_when_made(vault: Vault) -> None:
    with pytest.raises(InvalidInput, match="mode"):
        PerseusVaultRetriever(vault, mode="semantic")
    with pytest.raises(InvalidInput, match="colour"):
        PerseusVaultRetriever(vault, colour="blue")
    with pytest.raises(InvalidInput, match="similarity_top_k: must be a whole number"):
        PerseusVaultRetriever(vault, k=0)
    with pytest.raises(InvalidInput, match="similarity_top_k: must be a whole number"):
        PerseusVaultRetriever(vault, similarity_top_k=True)
    with pytest.raises(InvalidInput, match="k: is similarity_top_k's older name"):
        PerseusVaultRetriever(vault, k=2, similarity_top_k=3)
    with pytest.raises(InvalidInput, match="limit"):
        PerseusVaultRetriever(vault, limit=3)
    with pytest.raises(InvalidInput, match="vault"):
        PerseusVaultRetriever(42)  # type: ignore[arg-type]


def test_in_a_query_engine(vault: Vault) -> None:
    seed(vault)
    engine = RetrieverQueryEngine.from_args(
        PerseusVaultRetriever(vault, k=2, category="decision"), llm=MockLLM()
    )
    response = engine.query("Which database engine did we choose?")
    # MockLLM answers with its prompt: the memories reached the LLM's context
    assert "We chose SQLite in WAL mode for the vault." in str(response)
    assert [n.node.metadata["key"] for n in response.source_nodes][0] == "db-engine"
    aresponse = asyncio.run(engine.aquery("Which database engine did we choose?"))
    assert "We chose SQLite in WAL mode for the vault." in str(aresponse)


def test_as_a_tool(vault: Vault) -> None:
    seed(vault)
    tool = RetrieverTool.from_defaults(
        PerseusVaultRetriever(vault, k=1), name="memory", description="Search long-term memory."
    )
    output = tool.call("redis queue")
    assert "We chose Redis streams for the job queue." in output.content
    assert "We chose Redis streams" in asyncio.run(tool.acall("redis queue")).content


def test_dense_retrieval_with_the_bundled_model(db_path: Path, real_embedder: Any) -> None:
    with Vault(db_path, embedder=real_embedder) as vault:
        seed(vault)
        found = PerseusVaultRetriever(vault, k=1, mode="dense").retrieve("message broker for background work")
        assert found[0].node.metadata["key"] == "queue"


# --- LlamaIndex's conventions ------------------------------------------------------------------------


def test_similarity_top_k_and_metadata_filters_as_llamaindex_retrievers_take_them(vault: Vault) -> None:
    from llama_index.core.vector_stores.types import (
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
    )

    for i, (project, prio) in enumerate([("apollo", 1), ("apollo", 3), ("gemini", 5), ("apollo", 4)]):
        vault.remember(
            category="task",
            key=f"t{i}",
            content=f"Ship the release checklist item {i}.",
            body={"project": project, "prio": prio},
            type="todo" if i % 2 else "note",
        )
    retriever = PerseusVaultRetriever(vault, similarity_top_k=2, min_score=None)
    assert len(retriever.retrieve("release checklist")) == 2
    filters = MetadataFilters(
        condition=FilterCondition.AND,
        filters=[
            MetadataFilter(key="project", value="apollo"),  # a body field
            MetadataFilters(
                condition=FilterCondition.OR,
                filters=[
                    MetadataFilter(key="prio", value=3, operator=FilterOperator.GT),
                    MetadataFilter(key="type", value="note"),  # a memory's own field
                ],
            ),
        ],
    )
    found = PerseusVaultRetriever(vault, similarity_top_k=10, filters=filters, min_score=None).retrieve(
        "release"
    )
    assert sorted(n.node.metadata["key"] for n in found) == ["t0", "t3"]
    with pytest.raises(InvalidInput, match="where: is what filters becomes"):
        PerseusVaultRetriever(vault, filters=filters, where={"project": "apollo"})


def test_the_model_reads_no_empty_field(vault: Vault) -> None:
    vault.remember(category="decision", key="db", content="We chose SQLite.")  # no summary, no topic path
    node = PerseusVaultRetriever(vault).retrieve("sqlite")[0].node
    seen = node.get_content(metadata_mode="llm")  # type: ignore[arg-type]
    assert seen == "category: decision\nkey: db\ntrue_from: 2026-01-01\n\nWe chose SQLite."  # T0; no true_to
    assert "None" not in seen and node.metadata["summary"] is None  # still there for code


# --- text_match on a memory's content ---

SQLITE_NOTES = {
    "a": "We chose SQLite in WAL mode.",
    "b": "Postgres serves the shared vault.",
    "c": "Tea at four, with sqlite jokes.",
}


def test_text_match_on_a_memorys_content(tmp_path: Path) -> None:
    with Vault(tmp_path / "r.db", embedder=False) as vault:
        for key, text in SQLITE_NOTES.items():
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
