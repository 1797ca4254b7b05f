"""Embeddings across the LangChain boundary, both ways.

- :class:`LangChainEmbedder` lets a vault embed with a LangChain ``Embeddings`` object (a hosted
  model, or langchain-core's fakes in tests). The vault records its identity and dimension and, as
  with any embedder, refuses to mix its vectors with another model's.
- :class:`PerseusVaultEmbeddings` shows a vault's own embedder (the bundled MiniLM by default) to
  LangChain code that wants an ``Embeddings`` (``VectorStore.embeddings``, semantic chunkers, ...).
  Given back to a vault (``embedding=PerseusVaultEmbeddings()``, or wrapped in a
  ``LangChainEmbedder``), it is that model itself, under that model's identity: a vault filled
  through LangChain is then read by ``Vault(path)``, the CLI and MCP alike, where the wrapper's own
  name would have been a second identity for the same vectors, and refused beside the model's.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings

from perseus_vault_core import Embedder, InvalidInput

from ..arguments import OwnsItsVault, VaultLike, embedder_of, strict

PROBE = "perseus vault dimension probe"


class LangChainEmbedder:
    """A vault embedder (``identity``, ``dimension``, ``embed``) over a LangChain ``Embeddings``.

    ``identity`` defaults to ``langchain:<class name>:<dimension>``; pass your own when two
    configurations of one class (two model names) must not share vectors. ``dimension`` comes from
    one probe call, made the first time it is needed (or give it, to skip the call).
    """

    @strict
    def __init__(
        self, embeddings: Embeddings, *, identity: str | None = None, dimension: int | None = None
    ) -> None:
        if not isinstance(embeddings, Embeddings):
            raise InvalidInput(
                "embedding", f"must be a LangChain Embeddings object, not {type(embeddings).__name__}"
            )
        if identity is not None and (not isinstance(identity, str) or not identity.strip()):
            raise InvalidInput("identity", "must be a non-empty string")
        if dimension is not None and (
            not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1
        ):
            raise InvalidInput("dimension", "must be a positive whole number")
        self.embeddings = embeddings
        self._identity = identity
        self._dimension = dimension
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        if isinstance(self.embeddings, PerseusVaultEmbeddings):
            return self.embeddings.embedder.dimension
        with self._lock:
            if self._dimension is None:
                self._dimension = len(self.embeddings.embed_query(PROBE))
                if self._dimension < 1:
                    raise InvalidInput("embedding", "returned an empty vector for a probe text")
            return self._dimension

    @property
    def identity(self) -> str:
        if self._identity is None and isinstance(self.embeddings, PerseusVaultEmbeddings):
            return self.embeddings.embedder.identity  # the model itself, whichever surface carries it
        return self._identity or f"langchain:{type(self.embeddings).__name__}:{self.dimension}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return _unit_rows(self.embeddings.embed_documents(list(texts)))

    def embed_query(self, text: str) -> np.ndarray:
        """The query side: LangChain models may embed a query unlike a document (an instruction prefix)."""
        row: np.ndarray = _unit_rows([self.embeddings.embed_query(text)])[0]
        return row

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The query side as the vault asks for it (what its recall searches with)."""
        return _unit_rows([self.embeddings.embed_query(text) for text in texts])


class PerseusVaultEmbeddings(OwnsItsVault, Embeddings):
    """A vault's embedder seen as a LangChain ``Embeddings`` (a query on the model's query side when it has
    one, as multilingual-e5-small's ``query:``; else documents and queries embed alike).

    ``vault``: the Vault (or the path of one, opened here until :meth:`close`) whose model embeds,
    so that vectors made here match the ones it stores; without one, ``embedder`` (any vault
    embedder), or else the bundled model, loaded on first use.
    """

    @strict
    def __init__(self, vault: VaultLike | None = None, *, embedder: Embedder | None = None) -> None:
        self.embedder, self._owned_vault = embedder_of(vault, embedder)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        rows = self.embedder.embed(list(texts))
        return [[float(x) for x in row] for row in np.asarray(rows, dtype=np.float32)]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in query_vector(self.embedder, text)]


def vault_embedder(embeddings: Embeddings) -> Embedder:
    """What a vault embeds with for a LangChain ``embeddings``: a vault's own model when it is one
    (:class:`PerseusVaultEmbeddings`), so that its vectors carry that model's identity; else the
    ``Embeddings`` bridged by a :class:`LangChainEmbedder`."""
    if isinstance(embeddings, PerseusVaultEmbeddings):
        return embeddings.embedder
    return LangChainEmbedder(embeddings)


def _unit_rows(rows: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    out = np.asarray(rows, dtype=np.float32)
    if out.ndim != 2:
        raise InvalidInput("embedding", f"returned an array of shape {out.shape}, expected one row per text")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    unit: np.ndarray = out / np.where(norms == 0, 1, norms)
    return unit  # a zero row stays zero: the vault's own check refuses it


def query_vector(embedder: Embedder, text: str) -> np.ndarray:
    """Embed a query with ``embedder``, on its query side when it has one."""
    if isinstance(embedder, LangChainEmbedder):
        return embedder.embed_query(text)
    side = getattr(embedder, "embed_queries", None)
    row: np.ndarray = _unit_rows((side if callable(side) else embedder.embed)([text]))[0]
    return row


def document_vectors(embedder: Embedder, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return _unit_rows(embedder.embed(texts))
