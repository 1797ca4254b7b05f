"""PerseusVaultChatMessageHistory: persisted per session, recallable, separate under concurrency."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.langchain import PerseusVaultChatMessageHistory

from ...conftest import FakeEmbedder


def test_the_transcript_survives_closing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    sent = [
        SystemMessage("You are terse."),
        HumanMessage("Which database do we use?"),
        AIMessage("SQLite, in WAL mode.", id="ai-1"),
        ToolMessage("42 rows", tool_call_id="call-1"),
    ]
    with Vault(path, embedder=False) as vault:
        history = PerseusVaultChatMessageHistory(vault, "session/1")
        history.add_messages(sent[:2])
        history.add_message(sent[2])
        history.add_messages(sent[3:])
    with Vault(path, embedder=False) as vault:
        assert PerseusVaultChatMessageHistory(vault, "session/1").messages == sent
        assert PerseusVaultChatMessageHistory(vault, "session").messages == []  # no prefix leak


def test_messages_are_recallable_memories(tmp_path: Path) -> None:
    with Vault(tmp_path / "chat.db", embedder=FakeEmbedder()) as vault:
        a = PerseusVaultChatMessageHistory(vault, "a")
        b = PerseusVaultChatMessageHistory(vault, "b")
        a.add_user_message("We picked PostgreSQL for billing.")
        b.add_user_message("Lunch is on Friday.")
        hits = vault.recall("which database for billing", category="chat", limit=5).items
        assert hits[0].content == "We picked PostgreSQL for billing." and hits[0].body["session_id"] == "a"
        assert hits[0].body["role"] == "human"
        only_b = vault.recall("billing lunch", category="chat", topic_path=b.topic_path, mode="fts5").items
        assert [i.content for i in only_b] == ["Lunch is on Friday."]


def test_clear_archives_one_session(tmp_path: Path) -> None:
    with Vault(tmp_path / "chat.db", embedder=False) as vault:
        a = PerseusVaultChatMessageHistory(vault, "a")
        b = PerseusVaultChatMessageHistory(vault, "b")
        a.add_user_message("first")
        b.add_user_message("other session")
        a.clear()
        assert a.messages == [] and [m.content for m in b.messages] == ["other session"]
        kept = vault.recall("first", category="chat", include_archived=True, mode="fts5").items
        assert kept and kept[0].status == "archived"  # kept in the vault's history, as forget does
        a.add_ai_message("after clear")
        assert [m.content for m in a.messages] == ["after clear"]


def test_concurrent_sessions_do_not_mix(tmp_path: Path) -> None:
    with Vault(tmp_path / "chat.db", embedder=False) as vault:

        def talk(session: str) -> None:
            history = PerseusVaultChatMessageHistory(vault, session)
            for n in range(15):
                history.add_messages(
                    [HumanMessage(f"{session} asks {n}"), AIMessage(f"{session} answers {n}")]
                )

        threads = [threading.Thread(target=talk, args=(f"s{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(4):
            got = [m.content for m in PerseusVaultChatMessageHistory(vault, f"s{i}").messages]
            assert got == [text for n in range(15) for text in (f"s{i} asks {n}", f"s{i} answers {n}")]


def test_scopes_keep_transcripts_apart(tmp_path: Path) -> None:
    with Vault(tmp_path / "chat.db", embedder=False) as vault:
        PerseusVaultChatMessageHistory(vault, "s", agent_id="alice").add_user_message("alice's")
        PerseusVaultChatMessageHistory(vault, "s").add_user_message("unscoped")
        assert [m.content for m in PerseusVaultChatMessageHistory(vault, "s", agent_id="alice").messages] == [
            "alice's"
        ]
        assert [m.content for m in PerseusVaultChatMessageHistory(vault, "s").messages] == ["unscoped"]


def test_async_methods(tmp_path: Path) -> None:
    async def main(history: PerseusVaultChatMessageHistory) -> list[str]:
        await history.aadd_messages([HumanMessage("hi"), AIMessage("hello")])
        got = [str(m.content) for m in await history.aget_messages()]
        await history.aclear()
        assert await history.aget_messages() == []
        return got

    with Vault(tmp_path / "chat.db", embedder=False) as vault:
        assert asyncio.run(main(PerseusVaultChatMessageHistory(vault, "x"))) == ["hi", "hello"]


def test_bad_input(tmp_path: Path) -> None:
    with Vault(tmp_path / "chat.db", embedder=False) as vault:
        with pytest.raises(InvalidInput) as err:
            PerseusVaultChatMessageHistory(vault, "  ")
        assert err.value.field == "session_id"
        history = PerseusVaultChatMessageHistory(vault, "s")
        with pytest.raises(InvalidInput) as err:
            history.add_messages([HumanMessage("ok"), "not a message"])  # type: ignore[list-item]
        assert err.value.field == "messages[1]"
        assert history.messages == []  # all or nothing


def test_a_recalled_message_brings_the_one_said_beside_it_in_its_session(tmp_path: Path) -> None:
    """Messages are turns by their body (session_id and role; recall/turns.py): the answer to a question is
    found beside it, though it shares no word with the query; another session's message is not."""
    with Vault(tmp_path / "chat.db", embedder=False) as vault:
        first, other = (
            PerseusVaultChatMessageHistory(vault, "s1"),
            PerseusVaultChatMessageHistory(vault, "s2"),
        )
        first.add_messages(
            [HumanMessage("Did you paint anything this summer?"), AIMessage("Yes, a lake at sunrise.")]
        )
        other.add_messages([AIMessage("A lake at sunrise, lovely.")])
        hits = vault.recall("paint summer", category="chat", reinforce=False).items
        assert [h.content for h in hits] == ["Did you paint anything this summer?", "Yes, a lake at sunrise."]


def test_a_named_message_is_embedded_after_its_speaker(tmp_path: Path) -> None:
    """A message's ``name`` (the speaker) is its summary, so the model embeds ``Speaker: text`` as for a turn written
    by ``remember_conversation`` (docs/langchain.md); a message without a name is embedded as its text."""

    class Recording(FakeEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def embed(self, texts: Any) -> Any:
            self.seen.extend(texts)
            return super().embed(texts)

    model = Recording()
    with Vault(tmp_path / "chat.db", embedder=model) as vault:
        history = PerseusVaultChatMessageHistory(vault, "s1")
        history.add_messages(
            [HumanMessage("I want to study counseling", name="Caroline"), AIMessage("Good luck!", name="")]
        )
        assert "Caroline: I want to study counseling" in model.seen and "Good luck!" in model.seen
        said = {e.content: e.summary for e in vault.scan(category="chat", limit=10).items}
        assert said == {"I want to study counseling": "Caroline", "Good luck!": None}
        assert [m.name for m in history.messages] == ["Caroline", ""]  # read back as written
