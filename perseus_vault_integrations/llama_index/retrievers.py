"""``PerseusVaultRetriever``: the vault's ``recall`` as a LlamaIndex retriever (docs/llamaindex.md), for
query engines and tools.

It answers a query with ``recall`` (every mode, filter and knob, fixed when it is made), as
``NodeWithScore(TextNode(id_=entity id, text=content, metadata=entity fields), score)``.
``aretrieve`` runs the recall in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from perseus_vault_core import RecallItem, RecallParams, validate

from ..arguments import OwnsItsVault, VaultLike, check_recall_params, open_vault

# What the LLM reads beside a memory's text; the other fields stay in metadata for code.
LLM_METADATA = ("category", "key", "topic_path", "summary")
_ITEM_FIELDS = set(RecallItem.model_fields)


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


class PerseusVaultRetriever(OwnsItsVault, BaseRetriever):
    """Retrieve memories from a vault: ``k`` hits of ``recall`` per query.

    ``recall_params`` are recall's by their wire names: ``mode`` (``fts5`` | ``dense`` | ``hybrid``,
    omitted = auto), the filters (``type``, ``category``, ``topic_path``, ``agent_id``,
    ``workspace_hash``, ``include_archived``, ``min_decay``, ``as_of_unix_ms``,
    ``valid_at_unix_ms``, ``query_time_unix_ms``) and the knobs (``offset``, ``expansion``,
    ``preview_cap``, ``trust_weight``, ``content_weight``, ``diversity_halving``,
    ``recency_half_life_secs``, ``startup``, ``profile``, ``validity_annotate``, ``reinforce``,
    ``fusion``). They are checked when the retriever is made: an unknown one is refused.
    ``vault``: a Vault, or a path (the retriever then opens the vault, and closes it in :meth:`close`).

    >>> retriever = PerseusVaultRetriever("memory.db", k=5, mode="hybrid")           # doctest: +SKIP
    >>> RetrieverQueryEngine.from_args(retriever, llm=llm).query("which database?")  # doctest: +SKIP
    """

    def __init__(self, vault: VaultLike, *, k: int = 10, callback_manager: CallbackManager | None = None,
                 verbose: bool = False, **recall_params: Any) -> None:
        validate(RecallParams, {"query": "", "limit": k})  # a bad k is named as limit's bounds
        # Unrelated memories are left out by default: "auto" is the mode's threshold (docs/recall.md).
        params = {"min_score": "auto", **recall_params}
        why = "is given per call (the query) or as k (the limit), not as a recall parameter"
        self.recall_params = check_recall_params(params, ("query", "limit"), why)
        self.k = k
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.vault, self._owned_vault = open_vault(vault)

    def _recall(self, query: str) -> list[NodeWithScore]:
        result = self.vault.recall(query, limit=self.k, **self.recall_params)
        return [to_node(item) for item in result.items]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._recall(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._recall, query_bundle.query_str)
