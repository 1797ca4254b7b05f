"""``PerseusVaultMemoryBlock``: long-term memory for ``llama_index.core.memory.Memory``, kept in the vault
(docs/llamaindex.md).

Each batch of messages ``Memory`` flushes out of its short-term queue becomes one vault memory
(``type="conversation"``), and before a turn the memories that ``recall`` finds for the latest
messages are injected.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any, Literal

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from perseus_vault_core import MAX_KEY_CHARS, MAX_QUERY_CHARS, Vault

from ..arguments import OwnsItsVault, VaultLike, check_recall_params, init_model

# Recall parameters the block sets from its own fields (or the query, from the messages).
SET_HERE = ("category", "agent_id", "workspace_hash", "mode", "limit", "query", "topic_path")


def _text(message: ChatMessage) -> str:
    return message.content or ""


class PerseusVaultMemoryBlock(OwnsItsVault, BaseMemoryBlock[str]):
    """Long-term memory for ``llama_index.core.memory.Memory``, kept in a vault.

    On a flush, the messages ``Memory`` ejects from its short-term queue are remembered as one
    memory: ``content`` is the transcript (``role: text`` lines), ``body`` keeps the session and
    each message's role and text, ``topic_path`` is ``<topic>/<session id>``. The key is a hash of
    session and transcript, so flushing the same messages twice writes once.

    Before a turn, the text of the last ``retrieval_context_window`` messages is the query of a
    ``recall`` (``limit``, ``mode`` and any other ``recall_params``) over this block's category and
    scope (and, with ``session_only``, over the current session alone); the hits' contents, joined
    by blank lines, are the block's content.

    ``vault``: a Vault, or a path (the block then opens the vault, and closes it in :meth:`close`).
    Every other argument is a field, by name; an unknown one is refused.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="PerseusVault", description="The name of the memory block.")
    vault: Vault = Field(description="The vault the memories live in.")
    category: str = Field(
        default="conversation", min_length=1, description="Category of the memories written."
    )
    topic: str = Field(
        default="llamaindex/sessions", min_length=1, description="Topic path under which sessions go."
    )
    agent_id: str | None = Field(default=None, description="Scope: the agent the memories belong to.")
    workspace_hash: str | None = Field(
        default=None, description="Scope: the workspace the memories belong to."
    )
    limit: int = Field(default=5, ge=1, le=1_000, description="Most memories injected per turn.")
    mode: Literal["fts5", "dense", "hybrid"] | None = Field(
        default=None, description="Recall mode (None: auto)."
    )
    retrieval_context_window: int = Field(default=5, ge=1, description="Latest messages that form the query.")
    session_only: bool = Field(default=False, description="Recall only the current session's memories.")
    recall_params: dict[str, Any] = Field(default_factory=dict, description="Other recall filters and knobs.")
    _owned_vault: Vault | None = PrivateAttr(default=None)

    def __init__(self, vault: VaultLike, **fields: Any) -> None:
        self._owned_vault = init_model(super().__init__, type(self), vault, fields)

    @field_validator("recall_params")
    @classmethod
    def _valid_recall_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_recall_params(value, SET_HERE, "is a field of the block, not a recall parameter")

    def _session_topic(self, session_id: str) -> str:
        # a session id is one path segment (a '/' in it would make one session a prefix of another)
        return f"{self.topic.strip('/')}/{session_id.replace('/', '_')}"

    def _remember(self, messages: list[ChatMessage]) -> None:
        turns = [(m.role.value, _text(m)) for m in messages if _text(m).strip()]
        if not turns:
            return
        session = next(
            (str(m.additional_kwargs["session_id"]) for m in messages if "session_id" in m.additional_kwargs),
            "",
        )
        transcript = "\n".join(f"{role}: {text}" for role, text in turns)
        digest = hashlib.sha256(f"{session}\n{transcript}".encode("utf-8", "surrogatepass")).hexdigest()
        key = f"{session[: MAX_KEY_CHARS - 26]}/{digest[:24]}" if session else digest[:24]
        self.vault.remember(
            category=self.category,
            key=key,
            content=transcript,
            type="conversation",
            topic_path=self._session_topic(session) if session else self.topic,
            body={"session_id": session or None, "messages": [{"role": r, "text": t} for r, t in turns]},
            source="llamaindex Memory",
            agent_id=self.agent_id,
            workspace_hash=self.workspace_hash,
            keep_duplicate=True,  # a transcript, kept as said
        )

    def _recall(self, query: str, session_id: str | None) -> str:
        params = {"min_score": "auto", **self.recall_params}  # no unrelated memory injected by default
        if self.session_only and session_id:
            params["topic_path"] = self._session_topic(session_id)
        result = self.vault.recall(
            query,
            limit=self.limit,
            mode=self.mode,
            category=self.category,
            agent_id=self.agent_id,
            workspace_hash=self.workspace_hash,
            **params,
        )
        return "\n\n".join(item.content for item in result.items)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self._remember, list(messages))

    async def _aget(
        self, messages: list[ChatMessage] | None = None, session_id: str | None = None, **block_kwargs: Any
    ) -> str:
        if not messages:
            return ""
        query = " ".join(_text(m) for m in messages[-self.retrieval_context_window :] if _text(m).strip())
        query = query[-MAX_QUERY_CHARS:]  # the end of a long context is the most recent part
        if not query.strip():
            return ""
        return await asyncio.to_thread(self._recall, query, session_id)
