"""Embeddings across the LlamaIndex boundary, both ways, so that an index's query vectors and the
vault's stored vectors come from one model (docs/llamaindex.md).

- :class:`PerseusVaultEmbedding`: a LlamaIndex embedding model that embeds with a vault's model.
- :class:`LlamaIndexEmbedder`: a vault embedder backed by a LlamaIndex embedding model; over a
  ``PerseusVaultEmbedding`` it is the vault's model itself, under that model's identity, so a vault
  filled through LlamaIndex is read by every other surface as it was written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import ConfigDict, PrivateAttr

from perseus_vault_core import Embedder, InvalidInput, Vault

from ..arguments import OwnsItsVault, VaultLike, embedder_of, refuse_unknown, strict


class PerseusVaultEmbedding(OwnsItsVault, BaseEmbedding):
    """A LlamaIndex embedding model that embeds with a vault's model, so LlamaIndex's query vectors
    match the vault's stored ones.

    ``vault``: the Vault (or the path of one, opened here until :meth:`close`) whose model embeds;
    without one, ``embedder`` (any object the vault accepts as its embedder), or else the bundled
    model, loaded on first use. Other arguments are ``BaseEmbedding``'s fields (``embed_batch_size``,
    ``callback_manager``, ...); an unknown one is refused.
    """

    model_config = ConfigDict(extra="forbid")

    _embedder: Embedder = PrivateAttr()
    _owned_vault: Vault | None = PrivateAttr(default=None)

    def __init__(
        self, vault: VaultLike | None = None, *, embedder: Embedder | None = None, **fields: Any
    ) -> None:
        refuse_unknown(fields, set(type(self).model_fields) - {"model_name"}, type(self).__name__)
        model, owned = embedder_of(vault, embedder)
        try:
            super().__init__(model_name=str(model.identity), **fields)
        except BaseException:
            if owned is not None:
                owned.close()
            raise
        self._embedder, self._owned_vault = model, owned

    @classmethod
    def class_name(cls) -> str:
        return "PerseusVaultEmbedding"

    @property
    def embedder(self) -> Embedder:
        """The vault embedder it embeds with."""
        return self._embedder

    def _rows(self, texts: list[str], query: bool = False) -> list[list[float]]:
        side = (
            getattr(self._embedder, "embed_queries", None) if query else None
        )  # the model's query side, if any
        rows = np.asarray((side if callable(side) else self._embedder.embed)(texts), dtype=np.float32)
        return [[float(x) for x in row] for row in rows]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._rows([query], query=True)[0]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._rows([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._rows(texts)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return (await asyncio.to_thread(self._rows, [query], True))[0]

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return (await asyncio.to_thread(self._rows, [text]))[0]

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._rows, texts)


class LlamaIndexEmbedder:
    """A vault embedder backed by a LlamaIndex embedding model: ``Vault(path,
    embedder=LlamaIndexEmbedder(embed_model))`` stores vectors of the model the index queries with.

    The identity recorded in the vault is the model's class, name and dimension (the vault refuses
    to mix it with another); the dimension is read from one probe embedding."""

    @strict
    def __init__(self, embed_model: BaseEmbedding) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise InvalidInput("embed_model", "must be a llama_index BaseEmbedding")
        self.embed_model = embed_model
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if isinstance(self.embed_model, PerseusVaultEmbedding):
            return self.embed_model.embedder.dimension
        if self._dimension is None:
            self._dimension = len(self.embed_model.get_text_embedding("dimension probe"))
        return self._dimension

    @property
    def identity(self) -> str:
        if isinstance(self.embed_model, PerseusVaultEmbedding):
            return self.embed_model.embedder.identity  # the model itself, whichever surface carries it
        return f"llamaindex:{self.embed_model.class_name()}:{self.embed_model.model_name}:{self.dimension}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _unit(self.embed_model.get_text_embedding_batch(list(texts)))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The model's query side (an instruction prefix, e5's ``query:``), for what the vault searches with."""
        return _unit([self.embed_model.get_query_embedding(text) for text in texts])


def _unit(given: Any) -> np.ndarray:
    rows = np.asarray(given, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True) if rows.size else np.ones((0, 1), dtype=np.float32)
    result: np.ndarray = rows / np.where(norms == 0, 1, norms)  # a zero row stays zero: the vault refuses it
    return result
