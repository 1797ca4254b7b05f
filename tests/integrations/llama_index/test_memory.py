"""PerseusVaultMemoryBlock: long-term memory inside LlamaIndex's own ``Memory``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.llama_index import PerseusVaultMemoryBlock


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
    return Memory.from_defaults(
        session_id=session,
        token_limit=60,
        chat_history_token_ratio=0.5,
        token_flush_size=20,
        memory_blocks=[block],
    )


def test_memory_flushes_into_the_vault_and_injects_recalled_memories(vault: Vault) -> None:
    block = PerseusVaultMemoryBlock(
        vault=vault, limit=2, recall_params={"min_score": None}
    )  # a tiny store, see above
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
    block = PerseusVaultMemoryBlock(
        vault=vault, agent_id="me", recall_params={"min_score": None}
    )  # a tiny store
    msgs = conversation()[:2]
    asyncio.run(block.aput(msgs, session_id="s1"))
    asyncio.run(block.aput(msgs, session_id="s1"))  # the same flush again writes nothing new
    assert len(vault.recall("", category="conversation", agent_id="me").items) == 1
    assert vault.recall("", category="conversation", agent_id="me").items[0].agent_id == "me"
    text = asyncio.run(
        block.aget([ChatMessage(role="user", content="tell me about Juniper")], session_id="s2")
    )
    assert "Juniper" in text
    only_mine = PerseusVaultMemoryBlock(
        vault=vault, agent_id="me", session_only=True, recall_params={"min_score": None}
    )
    assert asyncio.run(only_mine.aget([ChatMessage(role="user", content="Juniper")], session_id="s2")) == ""
    assert "Juniper" in asyncio.run(
        only_mine.aget([ChatMessage(role="user", content="Juniper")], session_id="s1")
    )
    other_agent = PerseusVaultMemoryBlock(vault=vault, agent_id="them", recall_params={"min_score": None})
    assert asyncio.run(other_agent.aget([ChatMessage(role="user", content="Juniper")])) == ""
    assert asyncio.run(block.aget([])) == ""
    assert asyncio.run(block.aget([ChatMessage(role="user", content="   ")])) == ""


def test_block_recalls_by_meaning_with_the_bundled_model(db_path: Path, real_embedder: Any) -> None:
    with Vault(db_path, embedder=real_embedder) as vault:
        block = PerseusVaultMemoryBlock(vault=vault, limit=1, mode="dense")
        asyncio.run(block.aput(conversation()[:2], session_id="s1"))
        asyncio.run(block.aput(conversation()[2:4], session_id="s1"))
        text = asyncio.run(
            block.aget([ChatMessage(role="user", content="Does my pet like household appliances?")])
        )
        assert "Juniper" in text and "Lisbon" not in text


def test_block_refuses_bad_settings(vault: Vault) -> None:
    with pytest.raises(ValueError, match="category"):
        PerseusVaultMemoryBlock(vault=vault, recall_params={"category": "x"})
    with pytest.raises(ValueError, match="trust_weight"):
        PerseusVaultMemoryBlock(vault=vault, recall_params={"trust_weight": -1})
    with pytest.raises(InvalidInput, match="vault"):
        PerseusVaultMemoryBlock(vault=42)  # type: ignore[arg-type]
