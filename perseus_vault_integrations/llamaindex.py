"""The vault in LlamaIndex (docs/llamaindex.md): a retriever for query engines and tools, and a memory block
for ``llama_index.core.memory.Memory``. The property-graph store is in :mod:`.llamaindex_graph`.

- :class:`PerseusVaultRetriever` answers a query with the vault's ``recall`` (every mode, filter
  and knob, fixed when it is made), as ``NodeWithScore(TextNode(id_=entity id, text=content,
  metadata=entity fields), score)``. ``aretrieve`` runs the recall in a worker thread.
- :class:`PerseusVaultMemoryBlock` is long-term memory: each batch of messages ``Memory`` flushes
  out of its short-term queue becomes one vault memory (``type="conversation"``), and before a
  turn the memories that ``recall`` finds for the latest messages are injected.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any, Literal

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.bridge.pydantic import Field, field_validator
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.memory.memory import BaseMemoryBlock
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("the LlamaIndex adapters need llama-index-core: install perseus-vault[llamaindex]") from exc

from perseus_vault_core import InvalidInput, RecallItem, Vault
from perseus_vault_core.params import MAX_KEY_CHARS, MAX_QUERY_CHARS, RecallParams, validate

__all__ = ["PerseusVaultMemoryBlock", "PerseusVaultRetriever"]

# What the LLM reads beside a memory's text; the other fields stay in metadata for code.
LLM_METADATA = ("category", "key", "topic_path", "summary")
_ITEM_FIELDS = set(RecallItem.model_fields)


def _check_params(params: dict[str, Any]) -> dict[str, Any]:
    """Validate recall's parameters now (naming a bad one), so a retriever never fails late on them."""
    for name in ("query", "limit"):
        if name in params:
            raise InvalidInput(name, "is given per call (the query) or as k (the limit), not as a recall parameter")
    validate(RecallParams, {"query": "", **params})
    return params


def to_node(item: RecallItem) -> NodeWithScore:
    """One recall hit as LlamaIndex sees it: the content as text, the entity's fields as metadata
    (the body's own fields under ``body``), the recall score as the score."""
    data = item.model_dump(mode="json", include=_ITEM_FIELDS)
    data.pop("content")
    body = data.pop("body")
    data["body"] = {k: v for k, v in body.items() if k not in ("content", "summary")}
    hidden = [k for k in data if k not in LLM_METADATA]
    node = TextNode(id_=str(item.id), text=item.content, metadata=data, excluded_llm_metadata_keys=hidden,
                    excluded_embed_metadata_keys=list(data))
    return NodeWithScore(node=node, score=item.score)


class PerseusVaultRetriever(BaseRetriever):
    """Retrieve memories from a vault: ``k`` hits of ``recall`` per query.

    ``recall_params`` are recall's by their wire names: ``mode`` (``fts5`` | ``dense`` | ``hybrid``,
    omitted = auto), the filters (``type``, ``category``, ``topic_path``, ``agent_id``,
    ``workspace_hash``, ``include_archived``, ``min_decay``, ``as_of_unix_ms``,
    ``valid_at_unix_ms``, ``query_time_unix_ms``) and the knobs (``offset``, ``expansion``,
    ``preview_cap``, ``trust_weight``, ``content_weight``, ``diversity_halving``,
    ``recency_half_life_secs``, ``startup``, ``profile``, ``validity_annotate``, ``reinforce``,
    ``fusion``). They are checked when the retriever is made.

    >>> retriever = PerseusVaultRetriever(Vault("memory.db"), k=5, mode="hybrid")   # doctest: +SKIP
    >>> RetrieverQueryEngine.from_args(retriever, llm=llm).query("which database?")  # doctest: +SKIP
    """

    def __init__(self, vault: Vault, *, k: int = 10, callback_manager: CallbackManager | None = None,
                 verbose: bool = False, **recall_params: Any) -> None:
        if not isinstance(vault, Vault):
            raise InvalidInput("vault", "must be a perseus_vault_core.Vault")
        validate(RecallParams, {"query": "", "limit": k})  # a bad k is named as limit's bounds
        self.vault = vault
        self.k = k
        # Unrelated memories are left out by default: "auto" is the mode's threshold (docs/recall.md).
        self.recall_params = _check_params({"min_score": "auto", **recall_params})
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _recall(self, query: str) -> list[NodeWithScore]:
        result = self.vault.recall(query, limit=self.k, **self.recall_params)
        return [to_node(item) for item in result.items]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._recall(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._recall, query_bundle.query_str)


def _text(message: ChatMessage) -> str:
    return message.content or ""


class PerseusVaultMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory for ``llama_index.core.memory.Memory``, kept in a vault.

    On a flush, the messages ``Memory`` ejects from its short-term queue are remembered as one
    memory: ``content`` is the transcript (``role: text`` lines), ``body`` keeps the session and
    each message's role and text, ``topic_path`` is ``<topic>/<session id>``. The key is a hash of
    session and transcript, so flushing the same messages twice writes once.

    Before a turn, the text of the last ``retrieval_context_window`` messages is the query of a
    ``recall`` (``limit``, ``mode`` and any other ``recall_params``) over this block's category and
    scope (and, with ``session_only``, over the current session alone); the hits' contents, joined
    by blank lines, are the block's content.
    """

    name: str = Field(default="PerseusVault", description="The name of the memory block.")
    vault: Vault = Field(description="The vault the memories live in.")
    category: str = Field(default="conversation", min_length=1, description="Category of the memories written.")
    topic: str = Field(default="llamaindex/sessions", min_length=1, description="Topic path under which sessions go.")
    agent_id: str | None = Field(default=None, description="Scope: the agent the memories belong to.")
    workspace_hash: str | None = Field(default=None, description="Scope: the workspace the memories belong to.")
    limit: int = Field(default=5, ge=1, le=1_000, description="Most memories injected per turn.")
    mode: Literal["fts5", "dense", "hybrid"] | None = Field(default=None, description="Recall mode (None: auto).")
    retrieval_context_window: int = Field(default=5, ge=1, description="Latest messages that form the query.")
    session_only: bool = Field(default=False, description="Recall only the current session's memories.")
    recall_params: dict[str, Any] = Field(default_factory=dict, description="Other recall filters and knobs.")

    @field_validator("recall_params")
    @classmethod
    def _valid_recall_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in ("category", "agent_id", "workspace_hash", "mode", "limit", "query", "topic_path"):
            if name in value:
                raise ValueError(f"{name} is a field of the block, not a recall parameter")
        return _check_params(value)

    def _session_topic(self, session_id: str) -> str:
        # a session id is one path segment (a '/' in it would make one session a prefix of another)
        return f"{self.topic.strip('/')}/{session_id.replace('/', '_')}"

    def _remember(self, messages: list[ChatMessage]) -> None:
        turns = [(m.role.value, _text(m)) for m in messages if _text(m).strip()]
        if not turns:
            return
        session = next((str(m.additional_kwargs["session_id"]) for m in messages
                        if "session_id" in m.additional_kwargs), "")
        transcript = "\n".join(f"{role}: {text}" for role, text in turns)
        digest = hashlib.sha256(f"{session}\n{transcript}".encode("utf-8", "surrogatepass")).hexdigest()
        key = f"{session[: MAX_KEY_CHARS - 26]}/{digest[:24]}" if session else digest[:24]
        self.vault.remember(
            category=self.category, key=key, content=transcript, type="conversation",
            topic_path=self._session_topic(session) if session else self.topic,
            body={"session_id": session or None, "messages": [{"role": r, "text": t} for r, t in turns]},
            source="llamaindex Memory",
            agent_id=self.agent_id, workspace_hash=self.workspace_hash,
        )

    def _recall(self, query: str, session_id: str | None) -> str:
        params = {"min_score": "auto", **self.recall_params}  # no unrelated memory injected by default
        if self.session_only and session_id:
            params["topic_path"] = self._session_topic(session_id)
        result = self.vault.recall(query, limit=self.limit, mode=self.mode, category=self.category,
                                   agent_id=self.agent_id, workspace_hash=self.workspace_hash, **params)
        return "\n\n".join(item.content for item in result.items)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        await asyncio.to_thread(self._remember, list(messages))

    async def _aget(self, messages: list[ChatMessage] | None = None, session_id: str | None = None,
                    **block_kwargs: Any) -> str:
        if not messages:
            return ""
        query = " ".join(_text(m) for m in messages[-self.retrieval_context_window :] if _text(m).strip())
        query = query[-MAX_QUERY_CHARS:]  # the end of a long context is the most recent part
        if not query.strip():
            return ""
        return await asyncio.to_thread(self._recall, query, session_id)
