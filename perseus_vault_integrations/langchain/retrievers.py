"""``PerseusVaultRetriever``: the vault's ``recall`` as a LangChain retriever (docs/langchain.md).

It takes LangChain's ``VectorStoreRetriever`` conventions, so code written for ``as_retriever()`` reads
the same: ``search_type`` (``"similarity"``, ``"similarity_score_threshold"``, ``"mmr"``) and
``search_kwargs`` (``k``, ``filter``, ``where_document``, ``score_threshold``, ``fetch_k``,
``lambda_mult``); anything else in ``search_kwargs`` is refused by name. The vault's own recall
parameters (``mode``, ``category``, ``topic_path``, ``trust_weight``, ...) are fields beside them, as
before, and apply to every search type; ``filter`` is recall's ``where`` (docs/filters.md), and
``where_document`` Chroma's filter on the text (``{"$contains": "SQLite"}``), recall's ``where`` on the
memory's content. Any of them, the search kwargs included, can be given
per call: ``retriever.invoke("query", k=3, mode="dense")``.

Each hit is a ``Document`` whose ``id`` is the entity id, ``page_content`` its content, and ``metadata``
the entity's other fields with ``score``, ``ranks`` (its rank in each arm that ran) and ``search_mode``.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores.utils import maximal_marginal_relevance
from pydantic import ConfigDict, Field, PrivateAttr

from perseus_vault_core import (
    MAX_LIMIT,
    Expansion,
    Fusion,
    InvalidInput,
    NotSupported,
    RecallItem,
    RecallParams,
    RecallResult,
    Vault,
    date,
    true_from,
    validate,
)

from ..arguments import OwnsItsVault, VaultLike, document_where, init_model, refuse_unknown
from .embeddings import document_vectors, query_vector

# The recall parameters the retriever carries as fields; ``k`` stands for ``limit``, ``search_kwargs``'s
# ``filter`` for ``where``.
RECALL_FIELDS = tuple(name for name in RecallParams.model_fields if name not in ("query", "limit", "where"))
SearchType = Literal["similarity", "similarity_score_threshold", "mmr"]
SEARCH_TYPES = ("similarity", "similarity_score_threshold", "mmr")
SEARCH_KWARGS = ("k", "filter", "where_document", "score_threshold", "fetch_k", "lambda_mult")
FETCH_K, LAMBDA_MULT = 20, 0.5  # VectorStore.max_marginal_relevance_search's defaults


def to_document(item: RecallItem, search_mode: str) -> Document:
    """One hit as a Document: the content as text, every other entity field as metadata."""
    metadata = item.model_dump(mode="json", exclude={"content"})
    metadata["body"] = {k: v for k, v in metadata["body"].items() if k != "content"}  # page_content has it
    metadata["search_mode"] = search_mode
    metadata.update(true_dates(item))
    return Document(id=str(item.id), page_content=item.content, metadata=metadata)


def true_dates(item: RecallItem) -> dict[str, str]:
    """When what a memory says became true and, once it stopped, until when (``2026-07-01``), as a model
    reading the metadata compares two facts by: ``true_from`` (its valid_from, else when it was written)
    and ``true_to``. The millisecond fields stay beside them for code."""
    dates = {"true_from": date(true_from(item))}
    if item.valid_to_ms is not None:
        dates["true_to"] = date(item.valid_to_ms)
    return dates


def _whole(name: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_LIMIT:
        raise InvalidInput(name, f"must be a whole number from {low} to {MAX_LIMIT}")
    return value


def check_search(search_type: Any, search_kwargs: Any) -> dict[str, Any]:
    """``search_kwargs`` when they are what ``search_type`` takes (each bad one named), the way
    ``VectorStoreRetriever`` reads them: ``score_threshold`` only (and always) with
    ``similarity_score_threshold``, ``fetch_k`` and ``lambda_mult`` only with ``mmr``."""
    if search_type not in SEARCH_TYPES:
        raise InvalidInput("search_type", f"must be one of {', '.join(SEARCH_TYPES)}, not {search_type!r}")
    if not isinstance(search_kwargs, dict):
        raise InvalidInput("search_kwargs", "must be a dict")
    for name in search_kwargs:
        if name not in SEARCH_KWARGS and name in RECALL_FIELDS:
            raise InvalidInput(
                f"search_kwargs.{name}",
                f"is a recall parameter: give it as the retriever's own "
                f"field (PerseusVaultRetriever(vault, {name}=...)) or per call",
            )
    refuse_unknown(search_kwargs, SEARCH_KWARGS, "search_kwargs")
    kwargs = dict(search_kwargs)
    if "k" in kwargs:
        _whole("search_kwargs.k", kwargs["k"], 1)
    if kwargs.get("filter") is not None:
        if not isinstance(kwargs["filter"], dict):
            raise InvalidInput(
                "search_kwargs.filter", "must be a where filter: a dict such as {'project': 'apollo'}"
            )
        try:
            validate(RecallParams, {"query": "", "where": kwargs["filter"]})
        except InvalidInput as bad:  # named as the retriever takes it: search_kwargs.filter.<place>
            raise InvalidInput(
                "search_kwargs.filter" + bad.field.removeprefix("where"), bad.message
            ) from None
    if kwargs.get("where_document") is not None:
        document_where(kwargs["where_document"], "search_kwargs.where_document")
    threshold = kwargs.get("score_threshold")
    if search_type == "similarity_score_threshold":
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not -1 <= threshold <= 2:
            raise InvalidInput(
                "search_kwargs.score_threshold",
                "is required with search_type="
                "'similarity_score_threshold': a number, the lowest recall score kept (docs/recall.md)",
            )
    elif "score_threshold" in kwargs:
        raise InvalidInput(
            "search_kwargs.score_threshold", "applies only with search_type='similarity_score_threshold'"
        )
    for name in ("fetch_k", "lambda_mult"):
        if name in kwargs and search_type != "mmr":
            raise InvalidInput(f"search_kwargs.{name}", "applies only with search_type='mmr'")
    if "fetch_k" in kwargs:
        _whole("search_kwargs.fetch_k", kwargs["fetch_k"], 1)
    lam = kwargs.get("lambda_mult", LAMBDA_MULT)
    if (
        isinstance(lam, bool)
        or not isinstance(lam, (int, float))
        or not (math.isfinite(lam) and 0 <= lam <= 1)
    ):
        raise InvalidInput("search_kwargs.lambda_mult", "must be a number from 0 (diverse) to 1 (relevant)")
    return kwargs


class PerseusVaultRetriever(OwnsItsVault, BaseRetriever):
    """Recall memories from a :class:`~perseus_vault_core.Vault` as LangChain documents.

    ``vault``: a Vault, or a path or ``postgresql://`` URL (the retriever then opens the vault, and closes
    it in :meth:`close`). ``search_type`` / ``search_kwargs``: ``VectorStoreRetriever``'s (see the module
    docstring). Every other argument is a recall parameter, by name; an unknown one is refused.

    >>> retriever = PerseusVaultRetriever(vault, search_kwargs={"k": 5, "filter": {"project": "apollo"}},
    ...                                   mode="hybrid", topic_path="architecture")             # doctest: +SKIP
    >>> retriever.invoke("which database did we pick", k=3)                                    # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    vault: Vault
    search_type: SearchType = Field(
        default="similarity",
        description=(
            "similarity: recall's ranking; similarity_score_threshold: only hits scoring at least "
            "search_kwargs['score_threshold']; mmr: maximal marginal relevance over fetch_k hits"
        ),
    )
    search_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description=("k, filter (recall's where), score_threshold, fetch_k, lambda_mult"),
    )
    k: int = Field(default=4, ge=1, le=MAX_LIMIT, description="Documents to return (recall's limit)")
    mode: Literal["fts5", "dense", "hybrid"] | None = None
    # Unrelated memories are left out by default: "auto" is the mode's threshold (docs/recall.md).
    min_score: float | Literal["auto"] | None = "auto"
    offset: int | None = None
    type: str | None = None
    category: str | None = None
    topic_path: str | None = None
    agent_id: str | None = None
    workspace_hash: str | None = None
    include_archived: bool | None = None
    min_decay: float | None = None
    as_of_unix_ms: int | None = None
    valid_at_unix_ms: int | None = None
    query_time_unix_ms: int | None = None
    expansion: bool | Expansion | None = None
    preview_cap: int | None = None
    trust_weight: float | None = None
    content_weight: float | None = None
    diversity_halving: float | None = None
    recency_half_life_secs: float | None = None
    startup: bool | None = None
    profile: Literal["validity"] | None = None
    validity_annotate: bool | None = None
    reinforce: bool | None = None
    fusion: Fusion | None = None
    curate: bool | None = None
    include_outdated: bool | None = None
    follow_links: bool | None = None
    _owned_vault: Vault | None = PrivateAttr(default=None)

    def __init__(self, vault: VaultLike, **fields: Any) -> None:
        search = check_search(fields.get("search_type", "similarity"), fields.get("search_kwargs", {}))
        if "k" in fields and "k" in search and fields["k"] != search["k"]:
            raise InvalidInput("k", f"is given twice: k={fields['k']} and search_kwargs['k']={search['k']}")
        if "score_threshold" in search and "min_score" in fields:
            raise InvalidInput("min_score", "is search_kwargs['score_threshold'] here: give one of them")
        self._owned_vault = init_model(super().__init__, type(self), vault, fields)

    def recall_arguments(self, overrides: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``recall``'s keyword arguments (the fields set here, then the call's own recall parameters) and
        the search kwargs (the retriever's, then the call's), each checked; the vault names any bad one."""
        call = dict(overrides)
        for name in ("limit", "where"):
            if name in call:
                raise InvalidInput(
                    name, f"use {'k' if name == 'limit' else 'filter'}, as search_kwargs names it"
                )
        search = check_search(
            self.search_type, {**self.search_kwargs, **{n: call.pop(n) for n in SEARCH_KWARGS if n in call}}
        )
        data: dict[str, Any] = {
            name: getattr(self, name)
            for name in RECALL_FIELDS
            if getattr(self, name) is not None or name == "min_score"
        }  # None: no cut
        data.update(call)
        data["limit"] = search.get("k", self.k)
        wheres = ([search["filter"]] if search.get("filter") is not None else []) + (
            [document_where(search["where_document"])] if search.get("where_document") is not None else []
        )
        if wheres:
            data["where"] = wheres[0] if len(wheres) == 1 else {"$and": wheres}
        if self.search_type == "similarity_score_threshold":
            data["min_score"] = search["score_threshold"]
        return data, search

    def search(self, query: str, **overrides: Any) -> RecallResult:
        """The vault's typed result for ``query`` (what ``invoke`` turns into documents): recall's hits, or
        with ``search_type="mmr"`` the ``k`` of ``fetch_k`` hits chosen for relevance and diversity."""
        args, search = self.recall_arguments(overrides)
        if self.search_type != "mmr":
            return self.vault.recall(query, **args)
        k = args["limit"]
        args["limit"] = max(k, search.get("fetch_k", FETCH_K))
        embedder = self.vault.embedder
        if embedder is None:
            raise NotSupported(
                "search_type='mmr' compares what the memories mean, and this vault was opened "
                "without an embedder (embedder=False); use search_type='similarity'"
            )
        result = self.vault.recall(query, **args)
        if not result.items:
            return result
        rows = document_vectors(embedder, [item.content for item in result.items])
        chosen = maximal_marginal_relevance(
            query_vector(embedder, query),
            rows.tolist(),
            lambda_mult=float(search.get("lambda_mult", LAMBDA_MULT)),
            k=k,
        )
        return result.model_copy(update={"items": [result.items[i] for i in chosen]})

    def _documents(self, query: str, overrides: dict[str, Any]) -> list[Document]:
        result = self.search(query, **overrides)
        return [to_document(item, result.search_mode) for item in result.items]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._documents(query, kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # SQLite and the model are blocking: a worker thread keeps the event loop free.
        return await asyncio.to_thread(self._documents, query, kwargs)
