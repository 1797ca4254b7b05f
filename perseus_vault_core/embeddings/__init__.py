"""Embeddings: the contract (:mod:`.base`), the bundled model (:mod:`.minilm`), the optional
multilingual-e5-small (:mod:`.e5`, the ``e5`` extra), operator-configured remote providers
(:mod:`.providers`), and the choice between them.

``PERSEUS_VAULT_EMBEDDER`` picks the runtime (``onnx``, ``torch``), the optional model (``e5``), a remote
provider (``ollama:<model>``, ``openai:<model>@<url>``), or ``none`` (keyword-only); tool arguments never can.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence

import numpy as np

from ..contract.errors import SetupError
from . import providers
from .base import (
    BUNDLED_DIMENSION,
    BUNDLED_IDENTITY,
    BUNDLED_NAME,
    E5_SPEC,
    Embedder,
    checked,
    embedding_text,
    normalize,
    query_side,
)
from .minilm import MiniLMOnnx, MiniLMTorch

__all__ = [
    "BUNDLED_DIMENSION",
    "BUNDLED_IDENTITY",
    "BUNDLED_NAME",
    "Embedder",
    "LazyEmbedder",
    "checked",
    "embedding_text",
    "load",
    "normalize",
    "query_side",
]


def load(spec: str | None = None, threads: int | None = None) -> Embedder:
    """The embedder the operator configured (``PERSEUS_VAULT_EMBEDDER``), by default the bundled
    model on ONNX Runtime. ``spec``: ``onnx`` | ``torch`` | ``e5`` (multilingual-e5-small, the ``e5`` extra) |
    ``ollama:MODEL[@URL]`` | ``openai:MODEL[@URL]`` (key from ``PERSEUS_VAULT_OPENAI_API_KEY``)."""
    spec = spec or os.environ.get("PERSEUS_VAULT_EMBEDDER") or "onnx"
    if spec == "onnx":
        try:
            import onnxruntime  # noqa: F401
        except ImportError:  # a core dependency: only a broken install lacks it
            raise SetupError(
                "the bundled model runs on ONNX Runtime, which is missing: pip install onnxruntime "
                "(or PERSEUS_VAULT_EMBEDDER=torch with pip install 'perseus-vault[torch]')"
            ) from None
        return MiniLMOnnx(threads)
    if spec == "torch":
        return MiniLMTorch(threads)
    if spec == E5_SPEC:
        from .e5 import (
            MultilingualE5,
        )  # imported when chosen: a process on the bundled model never pays for it

        return MultilingualE5(threads)
    return providers.from_spec(spec)


class LazyEmbedder:
    """Loads the configured embedder on first use (a vault that never embeds never pays for a model).

    A load that failed fails again the same way, without retrying (an export or a remote probe can
    take seconds)."""

    def __init__(self, spec: str | None = None, threads: int | None = None) -> None:
        self._spec, self._threads = spec, threads
        self._inner: Embedder | None = None
        self._failure: Exception | None = None
        self._lock = threading.Lock()
        self.load_seconds = 0.0

    def get(self) -> Embedder:
        if self._inner is None:
            with self._lock:
                if self._failure is not None:
                    raise self._failure
                if self._inner is None:
                    started = time.perf_counter()
                    try:
                        self._inner = load(self._spec, self._threads)
                    except Exception as exc:
                        self._failure = exc
                        raise
                    self.load_seconds = time.perf_counter() - started
        return self._inner

    @property
    def identity(self) -> str:
        spec = self._spec or os.environ.get("PERSEUS_VAULT_EMBEDDER") or "onnx"
        if spec in ("onnx", "torch"):
            return BUNDLED_IDENTITY
        if spec == E5_SPEC:
            from .e5 import IDENTITY

            return IDENTITY
        return self.get().identity

    @property
    def dimension(self) -> int:
        spec = self._spec or os.environ.get("PERSEUS_VAULT_EMBEDDER") or "onnx"
        if spec == E5_SPEC:
            from .e5 import DIMENSION

            return DIMENSION
        return BUNDLED_DIMENSION if self.identity == BUNDLED_IDENTITY else self.get().dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.get().embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return query_side(self.get())(texts)
