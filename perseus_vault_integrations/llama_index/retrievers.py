"""``PerseusVaultRetriever``: the vault's ``recall`` as a LlamaIndex retriever (docs/llamaindex.md), for
query engines and tools.

It takes what LlamaIndex's own retrievers take: ``similarity_top_k`` (the number of hits) and ``filters``
(``MetadataFilters``, on the memories' fields and body fields, applied inside the query as recall's
``where``), and every recall mode, filter and knob besides, fixed when it is made. Each hit is
``NodeWithScore(TextNode(id_=entity id, text=content, metadata=entity fields), score)``; what a model
reads is the text with the category, key, topic path and summary that are set (an empty one is left
out). ``aretrieve`` runs the recall in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import MetadataFilters

from perseus_vault_core import MAX_LIMIT, InvalidInput, RecallItem, date, true_from

from ..arguments import OwnsItsVault, VaultLike, check_recall_params, open_vault
from .vector_stores import to_where

# What the LLM reads beside a memory's text, when set; the other fields stay in metadata for code.
LLM_METADATA = ("category", "key", "true_from", "true_to", "topic_path", "summary")
_ITEM_FIELDS = set(RecallItem.model_fields)
DEFAULT_TOP_K = 10


def to_node(item: RecallItem) -> NodeWithScore:
    """One recall hit as LlamaIndex sees it: the content as text, the entity's fields as metadata
    (the body's own fields under ``body``), the recall score as the score. An empty field (``None``,
    ``""``) is hidden from the model, which would otherwise read ``summary: None``."""
    data = item.model_dump(mode="json", include=_ITEM_FIELDS)
    data.pop("content")
    body = data.pop("body")
    data["body"] = {k: v for k, v in body.items() if k not in ("content", "summary")}
    data["true_from"] = date(
        true_from(item)
    )  # when it became true (valid_from, else written): dates to compare
    data["true_to"] = date(item.valid_to_ms) if item.valid_to_ms is not None else None
    hidden = [k for k, v in data.items() if k not in LLM_METADATA or v is None or v == ""]
    node = TextNode(
        id_=str(item.id),
        text=item.content,
        metadata=data,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=list(data),
    )
    return NodeWithScore(node=node, score=item.score)


class PerseusVaultRetriever(OwnsItsVault, BaseRetriever):
    """Retrieve memories from a vault: the ``similarity_top_k`` best hits of ``recall`` per query.

    ``filters``: LlamaIndex ``MetadataFilters`` whose keys are the memories' fields (``category``,
    ``type``, ``topic_path``, ...) or their body fields (``project``, ``meta.author``), as recall's
    ``where`` reads them (docs/filters.md). ``recall_params`` are recall's by their wire names: ``mode``
    (``fts5`` | ``dense`` | ``hybrid``, omitted = auto), the filters (``type``, ``category``,
    ``topic_path``, ``agent_id``, ``workspace_hash``, ``include_archived``, ``min_decay``,
    ``as_of_unix_ms``, ``valid_at_unix_ms``, ``query_time_unix_ms``) and the knobs (``offset``,
    ``expansion``, ``preview_cap``, ``trust_weight``, ``content_weight``, ``diversity_halving``,
    ``recency_half_life_secs``, ``startup``, ``profile``, ``validity_annotate``, ``reinforce``,
    ``fusion``). All are checked when the retriever is made: an unknown one is refused. ``k`` is the
    older name of ``similarity_top_k``. ``vault``: a Vault, or a path or ``postgresql://`` URL (the
    retriever then opens the vault, and closes it in :meth:`close`).

    >>> retriever = PerseusVaultRetriever("memory.db", similarity_top_k=5, mode="hybrid")   # doctest: +SKIP
    >>> RetrieverQueryEngine.from_args(retriever, llm=llm).query("which database?")       # doctest: +SKIP
    """

    def __init__(
        self,
        vault: VaultLike,
        *,
        similarity_top_k: int | None = None,
        filters: MetadataFilters | None = None,
        k: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **recall_params: Any,
    ) -> None:
        if k is not None and similarity_top_k is not None and k != similarity_top_k:
            raise InvalidInput(
                "k",
                f"is similarity_top_k's older name: give one (k={k}, similarity_top_k={similarity_top_k})",
            )
        top_k = similarity_top_k if similarity_top_k is not None else k if k is not None else DEFAULT_TOP_K
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_LIMIT:
            raise InvalidInput("similarity_top_k", f"must be a whole number from 1 to {MAX_LIMIT}")
        where = to_where(filters, lambda key: key)
        if where is not None and "where" in recall_params:
            raise InvalidInput("where", "is what filters becomes: give filters or where, not both")
        # Unrelated memories are left out by default: "auto" is the mode's threshold (docs/recall.md).
        params = {"min_score": "auto", **recall_params, **({"where": where} if where is not None else {})}
        why = "is given per call (the query) or as similarity_top_k (the limit), not as a recall parameter"
        self.recall_params = check_recall_params(
            params,
            ("query", "limit"),
            why,
            own=("similarity_top_k", "filters", "callback_manager", "verbose"),
        )
        self.similarity_top_k = self.k = top_k
        self.filters = filters
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.vault, self._owned_vault = open_vault(vault)

    def _recall(self, query: str) -> list[NodeWithScore]:
        result = self.vault.recall(query, limit=self.similarity_top_k, **self.recall_params)
        return [to_node(item) for item in result.items]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._recall(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return await asyncio.to_thread(self._recall, query_bundle.query_str)
