"""The embeddings package's face (embeddings/__init__.py): the bundled model loaded only when a vector is
first asked for."""

from __future__ import annotations

import numpy as np
import pytest

from perseus_vault_core import embeddings as E


def test_lazy_embedder_loads_only_when_used(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str | None] = []
    monkeypatch.setattr(E, "load", lambda spec=None, threads=None: loaded.append(spec) or _Fixed())
    lazy = E.LazyEmbedder()
    assert lazy.identity == E.BUNDLED_IDENTITY and lazy.dimension == 384 and loaded == []
    lazy.embed(["now"])
    assert loaded == [None]


class _Fixed:
    identity = E.BUNDLED_IDENTITY
    dimension = 384

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)
