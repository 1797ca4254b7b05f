"""``PerseusVaultChatMessageHistory``: a chat transcript per session, kept in the vault (docs/langchain.md).

Each message is an entity of the history's category (``chat`` by default) whose topic path is the
session id (percent-encoded, so any id is one path segment and sessions never overlap), content the
message's text and body the whole message as LangChain serializes it. So a transcript survives
restarts, and its messages are ordinary memories: ``vault.recall("...", category="chat")`` finds them
across sessions, ``topic_path=<session>`` within one.

Order is the vault's: entity ids ascend in commit order, so messages read back in the order they were
written, also when several processes append to one session. ``clear`` archives the session's messages
(the vault keeps them in its history, as ``forget`` does everywhere); they no longer read back.

For new code, LangChain 1.x keeps conversations with LangGraph persistence rather than chat histories:
use :class:`~.checkpoint.PerseusVaultSaver` (the recommended way); this class stays for code built on
``BaseChatMessageHistory`` and for transcripts meant to be recalled as memories.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from urllib.parse import quote

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from perseus_vault_core import MAX_LIMIT, Entity, InvalidInput

from ..arguments import OwnsItsVault, VaultLike, open_vault, strict

MESSAGE_TYPE = "chat_message"
MAX_SESSION_CHARS = 256


class PerseusVaultChatMessageHistory(OwnsItsVault, BaseChatMessageHistory):
    """The messages of one ``session_id``, persisted in ``vault`` (in its scope, when given).

    ``vault``: a Vault, or a path (the history then opens the vault, and closes it in :meth:`close`).
    """

    @strict
    def __init__(
        self,
        vault: VaultLike,
        session_id: str,
        *,
        category: str = "chat",
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > MAX_SESSION_CHARS:
            raise InvalidInput(
                "session_id", f"must be a non-blank string of at most {MAX_SESSION_CHARS} characters"
            )
        if not isinstance(category, str) or not category.strip():
            raise InvalidInput("category", "must be a non-empty string")
        self.vault, self._owned_vault = open_vault(vault)
        self.session_id = session_id
        self.category = category
        self.agent_id = agent_id
        self.workspace_hash = workspace_hash
        self.topic_path = quote(session_id, safe="")

    def _entities(self) -> list[Entity]:
        """This session's live messages, oldest first (every page of a scan in id order)."""
        out: list[Entity] = []
        cursor = None
        while True:
            # '' is the unscoped scope itself: without it an unscoped history would read every scope.
            page = self.vault.scan(
                cursor=cursor,
                limit=MAX_LIMIT,
                category=self.category,
                topic_path=self.topic_path,
                agent_id=self.agent_id or "",
                workspace_hash=self.workspace_hash or "",
            )
            out.extend(e for e in page.items if e.type == MESSAGE_TYPE)
            if not page.has_more:
                return out
            cursor = page.next_cursor

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return messages_from_dict([e.body["message"] for e in self._entities()])

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append ``messages`` in one transaction (all of them, or none on an error)."""
        items = []
        for i, message in enumerate(messages):
            if not isinstance(message, BaseMessage):
                raise InvalidInput(f"messages[{i}]", "must be a LangChain message")
            items.append(
                {
                    "category": self.category,
                    "key": f"{self.session_id}/{uuid.uuid4().hex}",
                    "type": MESSAGE_TYPE,
                    "content": message.text,
                    "summary": message.name or None,
                    "topic_path": self.topic_path,
                    "agent_id": self.agent_id,
                    "workspace_hash": self.workspace_hash,
                    "body": {
                        "message": message_to_dict(message),
                        "session_id": self.session_id,
                        "role": message.type,
                    },
                }
            )
        if items:
            self.vault.remember_many(items)

    def clear(self) -> None:
        for entity in self._entities():
            self.vault.forget(entity.id)

    # Real async: the vault's calls block, so they run in a worker thread, off the event loop.
    async def aget_messages(self) -> list[BaseMessage]:
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)
