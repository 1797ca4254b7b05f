"""``PerseusVaultRetriever``: the vault's ``recall`` as a LangChain retriever (docs/langchain.md).

Every recall mode, filter and knob is a field (``None`` keeps the vault's default), and any of them,
``k`` included, can be given per call: ``retriever.invoke("query", k=3, mode="dense")``. Each hit is a
``Document`` whose ``id`` is the entity id, ``page_content`` its content, and ``metadata`` the entity's
other fields with ``score``, ``ranks`` (its rank in each arm that ran) and ``search_mode``.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr

from perseus_vault_core import MAX_LIMIT, Expansion, Fusion, InvalidInput, RecallItem, RecallParams, RecallResult, Vault

from ..arguments import OwnsItsVault, VaultLike, init_model

# The recall parameters the retriever carries as fields; ``k`` stands for ``limit``.
RECALL_FIELDS = tuple(name for name in RecallParams.model_fields if name not in ("query", "limit"))


def to_document(item: RecallItem, search_mode: str) -> Document:
    """One hit as a Document: the content as text, every other entity field as metadata."""
    metadata = item.model_dump(mode="json", exclude={"content"})
    metadata["body"] = {k: v for k, v in metadata["body"].items() if k != "content"}  # page_content has it
    metadata["search_mode"] = search_mode
    return Document(id=str(item.id), page_content=item.content, metadata=metadata)


class PerseusVaultRetriever(OwnsItsVault, BaseRetriever):
    """Recall memories from a :class:`~perseus_vault_core.Vault` as LangChain documents.

    ``vault``: a Vault, or a path (the retriever then opens the vault, and closes it in :meth:`close`).
    Every other argument is a field, by name; an unknown one is refused.

    >>> retriever = PerseusVaultRetriever(vault, k=5, mode="hybrid", topic_path="architecture")  # doctest: +SKIP
    >>> retriever.invoke("which database did we pick", k=3)                                    # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    vault: Vault
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
    _owned_vault: Vault | None = PrivateAttr(default=None)

    def __init__(self, vault: VaultLike, **fields: Any) -> None:
        self._owned_vault = init_model(super().__init__, type(self), vault, fields)

    def recall_arguments(self, overrides: dict[str, Any]) -> dict[str, Any]:
        """``recall``'s keyword arguments: the fields set here, then the call's own (the vault
        validates them all and names any bad one)."""
        call = dict(overrides)
        if "limit" in call:
            raise InvalidInput("limit", "use k for the number of documents")
        k = call.pop("k", self.k)
        data: dict[str, Any] = {name: getattr(self, name) for name in RECALL_FIELDS if getattr(self, name) is not None}
        data.update(call)
        data["limit"] = k
        return data

    def search(self, query: str, **overrides: Any) -> RecallResult:
        """The vault's typed result for ``query`` (what ``invoke`` turns into documents)."""
        return self.vault.recall(query, **self.recall_arguments(overrides))

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
