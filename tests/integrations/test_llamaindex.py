"""PerseusVaultRetriever and PerseusVaultMemoryBlock, inside LlamaIndex's own query engine, tool and
Memory; and the import boundary (the core never loads LlamaIndex)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.tools import RetrieverTool

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.llamaindex import PerseusVaultMemoryBlock, PerseusVaultRetriever
from tests.conftest import DAY_MS, Clock

ROOT = Path(__file__).resolve().parents[2]


def seed(vault: Vault) -> dict[str, int]:
    ids = {}
    ids["db"] = vault.remember(category="decision", key="db-engine", content="We chose SQLite in WAL mode for the vault.",
                               topic_path="architecture/storage", summary="Database engine").id
    ids["queue"] = vault.remember(category="decision", key="queue", content="We chose Redis streams for the job queue.",
                                  topic_path="architecture/jobs").id
    ids["note"] = vault.remember(category="note", key="lunch", content="SQLite stickers were handed out at lunch.").id
    ids["other"] = vault.remember(category="decision", key="db-engine", content="Agent two chose Postgres.",
                                  agent_id="two").id
    return ids


# --- the retriever ----------------------------------------------------------------------------------


def test_retrieve_returns_entities_as_scored_text_nodes(vault: Vault) -> None:
    ids = seed(vault)
    found = PerseusVaultRetriever(vault, k=5).retrieve("sqlite")
    assert {n.node.node_id for n in found} == {str(ids["db"]), str(ids["note"])}
    top = next(n for n in found if n.node.node_id == str(ids["db"]))
    assert top.node.get_content() == "We chose SQLite in WAL mode for the vault."
    meta = top.node.metadata
    assert (meta["id"], meta["category"], meta["key"], meta["topic_path"]) == (ids["db"], "decision", "db-engine",
                                                                              "architecture/storage")
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
        return [int(n.node.node_id) for n in PerseusVaultRetriever(vault, min_score=None, **filters).retrieve(
            "sqlite postgres")]

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
    assert cut.startswith("SQLite stick") and len(cut) < len("SQLite stickers were handed out at lunch.") + 200
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
    with pytest.raises(InvalidInput, match="limit"):
        PerseusVaultRetriever(vault, k=0)
    with pytest.raises(InvalidInput, match="limit"):
        PerseusVaultRetriever(vault, limit=3)
    with pytest.raises(InvalidInput, match="vault"):
        PerseusVaultRetriever("memory.db")  # type: ignore[arg-type]


def test_in_a_query_engine(vault: Vault) -> None:
    seed(vault)
    engine = RetrieverQueryEngine.from_args(PerseusVaultRetriever(vault, k=2, category="decision"), llm=MockLLM())
    response = engine.query("Which database engine did we choose?")
    # MockLLM answers with its prompt: the memories reached the LLM's context
    assert "We chose SQLite in WAL mode for the vault." in str(response)
    assert [n.node.metadata["key"] for n in response.source_nodes][0] == "db-engine"
    aresponse = asyncio.run(engine.aquery("Which database engine did we choose?"))
    assert "We chose SQLite in WAL mode for the vault." in str(aresponse)


def test_as_a_tool(vault: Vault) -> None:
    seed(vault)
    tool = RetrieverTool.from_defaults(PerseusVaultRetriever(vault, k=1), name="memory",
                                       description="Search long-term memory.")
    output = tool.call("redis queue")
    assert "We chose Redis streams for the job queue." in output.content
    assert "We chose Redis streams" in asyncio.run(tool.acall("redis queue")).content


def test_dense_retrieval_with_the_bundled_model(db_path: Path, real_embedder: Any) -> None:
    with Vault(db_path, embedder=real_embedder) as vault:
        seed(vault)
        found = PerseusVaultRetriever(vault, k=1, mode="dense").retrieve("message broker for background work")
        assert found[0].node.metadata["key"] == "queue"


# --- the memory block -------------------------------------------------------------------------------


def conversation() -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content="My cat is called Juniper and she hates the vacuum cleaner."),
        ChatMessage(role="assistant", content="Noted: Juniper the cat dislikes vacuums."),
        ChatMessage(role="user", content="I am planning a trip to Lisbon in May."),
        ChatMessage(role="assistant", content="Lisbon in May sounds lovely."),
        ChatMessage(role="user", content="Also, I prefer window seats on flights."),
        ChatMessage(role="assistant", content="Window seats, got it."),
    ]


def small_memory(block: PerseusVaultMemoryBlock, session: str) -> Memory:
    # a short queue, so the first messages are flushed into the block
    return Memory.from_defaults(session_id=session, token_limit=60, chat_history_token_ratio=0.5,
                                token_flush_size=20, memory_blocks=[block])


def test_memory_flushes_into_the_vault_and_injects_recalled_memories(vault: Vault) -> None:
    block = PerseusVaultMemoryBlock(vault=vault, limit=2, recall_params={"min_score": None})  # a tiny store, see above
    memory = small_memory(block, "s1")
    memory.put_messages(conversation())
    written = vault.recall("", category="conversation").items
    assert written, "the flush wrote nothing"
    stored = " ".join(item.content for item in written)
    assert "user: My cat is called Juniper" in stored
    first = written[-1]
    assert first.type == "conversation" and first.topic_path == "llamaindex/sessions/s1"
    assert first.body["session_id"] == "s1" and first.body["messages"][0]["role"] in ("user", "assistant")
    # a later turn about the cat: the block injects the flushed memory
    messages = memory.get(input="What is my cat's name again?")
    system = [m for m in messages if m.role.value == "system"]
    assert system and "Juniper" in (system[0].content or "")
    assert "<PerseusVault>" in (system[0].content or "")


def test_block_get_and_put_directly(vault: Vault) -> None:
    block = PerseusVaultMemoryBlock(vault=vault, agent_id="me", recall_params={"min_score": None})  # a tiny store
    msgs = conversation()[:2]
    asyncio.run(block.aput(msgs, session_id="s1"))
    asyncio.run(block.aput(msgs, session_id="s1"))  # the same flush again writes nothing new
    assert len(vault.recall("", category="conversation", agent_id="me").items) == 1
    assert vault.recall("", category="conversation", agent_id="me").items[0].agent_id == "me"
    text = asyncio.run(block.aget([ChatMessage(role="user", content="tell me about Juniper")], session_id="s2"))
    assert "Juniper" in text
    only_mine = PerseusVaultMemoryBlock(vault=vault, agent_id="me", session_only=True, recall_params={"min_score": None})
    assert asyncio.run(only_mine.aget([ChatMessage(role="user", content="Juniper")], session_id="s2")) == ""
    assert "Juniper" in asyncio.run(only_mine.aget([ChatMessage(role="user", content="Juniper")], session_id="s1"))
    other_agent = PerseusVaultMemoryBlock(vault=vault, agent_id="them", recall_params={"min_score": None})
    assert asyncio.run(other_agent.aget([ChatMessage(role="user", content="Juniper")])) == ""
    assert asyncio.run(block.aget([])) == ""
    assert asyncio.run(block.aget([ChatMessage(role="user", content="   ")])) == ""


def test_block_recalls_by_meaning_with_the_bundled_model(db_path: Path, real_embedder: Any) -> None:
    with Vault(db_path, embedder=real_embedder) as vault:
        block = PerseusVaultMemoryBlock(vault=vault, limit=1, mode="dense")
        asyncio.run(block.aput(conversation()[:2], session_id="s1"))
        asyncio.run(block.aput(conversation()[2:4], session_id="s1"))
        text = asyncio.run(block.aget([ChatMessage(role="user", content="Does my pet like household appliances?")]))
        assert "Juniper" in text and "Lisbon" not in text


def test_block_refuses_bad_settings(vault: Vault) -> None:
    with pytest.raises(ValueError, match="category"):
        PerseusVaultMemoryBlock(vault=vault, recall_params={"category": "x"})
    with pytest.raises(ValueError, match="trust_weight"):
        PerseusVaultMemoryBlock(vault=vault, recall_params={"trust_weight": -1})
    with pytest.raises(ValueError, match="vault"):
        PerseusVaultMemoryBlock(vault="memory.db")  # type: ignore[arg-type]


# --- the import boundary ----------------------------------------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_importing_the_core_does_not_import_llamaindex() -> None:
    result = run_python(
        "import sys, perseus_vault_core\n"
        "from perseus_vault_core import Vault\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('llama_index', 'perseus_vault_integrations')]\n"
        "assert not loaded, loaded\n"
        "print('clean')"
    )
    assert result.returncode == 0 and "clean" in result.stdout, result.stderr


@pytest.mark.parametrize("module", ["llamaindex", "llamaindex_graph"])
def test_without_llamaindex_the_adapter_says_what_to_install(module: str) -> None:
    result = run_python(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'llama_index':\n"
        "            raise ImportError('no llama_index here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        f"    import perseus_vault_integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert "install perseus-vault[llamaindex]" in result.stdout, result.stderr
