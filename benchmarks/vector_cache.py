"""A disk cache of embeddings keyed by model identity and text hash, so benchmark reruns take seconds.

It wraps a real embedder and keeps its identity: vectors it serves are that model's vectors.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

CACHE = Path(__file__).resolve().parent / ".cache" / "vectors.sqlite"


class CachingEmbedder:
    def __init__(self, inner: Any, path: Path = CACHE) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.dimension = inner.dimension
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), check_same_thread=False)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS v (model TEXT, hash BLOB, vector BLOB, PRIMARY KEY (model, hash))"
        )
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(self.identity, self.inner.embed, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """The model's query side (multilingual-e5-small's ``query:``), cached apart from its stored side;
        a model without one embeds queries as it embeds anything."""
        side = getattr(self.inner, "embed_queries", None)
        if not callable(side):
            return self.embed(texts)
        return self._cached(f"{self.identity} query", side, texts)

    def _cached(self, model: str, embed: Any, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest() for t in texts]
        found: dict[bytes, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                self.db.execute(
                    f"SELECT hash, vector FROM v WHERE model = ? AND hash IN ({marks})", (model, *chunk)
                ).fetchall()
            )
        todo = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(keys) - len(todo)
        self.misses += len(todo)
        if todo:
            fresh = embed([texts[i] for i in todo])
            rows = [(model, keys[i], fresh[j].astype(np.float32).tobytes()) for j, i in enumerate(todo)]
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?, ?)", rows)
            self.db.commit()
            for j, i in enumerate(todo):
                found[keys[i]] = rows[j][2]
        return (
            np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys])
            if keys
            else np.zeros((0, self.dimension), dtype=np.float32)
        )


def cached_model() -> CachingEmbedder:
    """The bundled model, its vectors served from the cache."""
    from perseus_vault_core.embeddings import load

    return CachingEmbedder(load())
