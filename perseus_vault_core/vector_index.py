"""An in-memory mirror of the current heads' vectors, for fast dense recall.

The file (``version_vectors``) is the source of truth; this is a float32 matrix of the heads'
unit vectors, following the same change log as the keyword index (see :mod:`mirror`). A query
is one matrix-vector product over every head, exact (brute force: recall 1.0 against exact
search by construction), then the scope mask; status and time filters stay in SQL.

Why brute force: at 100k memories the product reads 150 MB and takes about 10 ms on two
cores, inside the dense-recall budget; an approximate index would trade recall for speed
that is not needed at this scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import vectors
from .mirror import HeadMirror, Ranking, grow


class VectorIndex(HeadMirror):
    COLUMNS = f"(SELECT x.embedding FROM {vectors.TABLE} x WHERE x.vid = v.vid)"
    NAME = "vector-index"

    def __init__(self) -> None:
        super().__init__()
        self._clear()

    def _clear(self) -> None:
        self.dimension = 0
        self.identity = ""
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._has = np.zeros(0, dtype=bool)

    def _prepare(self, conn: Any) -> None:
        recorded = vectors.model(conn)
        if recorded is None:
            raise LookupError("this vault has no vectors yet")
        self.identity, self.dimension = recorded
        self._matrix = np.zeros((1024, self.dimension), dtype=np.float32)
        self._has = np.zeros(1024, dtype=bool)

    def _store(self, slot: int, value: Any) -> None:
        self._matrix = grow(self._matrix, slot + 1)
        self._has = grow(self._has, slot + 1)
        if value is None:
            self._has[slot] = False
            return
        self._matrix[slot] = np.frombuffer(value, dtype=np.float32)
        self._has[slot] = True

    def _index(self, slot: int, values: Sequence[Any]) -> None:
        self._store(slot, values[0])

    def _vector_written(self, slot: int, values: Sequence[Any]) -> None:
        self._store(slot, values[0])

    def _forget(self, slot: int) -> None:
        self._has[slot] = False

    def search(
        self, conn: Any, query: np.ndarray, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> Ranking | None:
        """Cosine similarity of every live head in scope to ``query``, or ``None`` if the mirror
        cannot answer for the snapshot ``conn`` reads."""

        def compute() -> Ranking:
            n = self.rows.n
            scores = self._matrix[:n] @ np.asarray(query, dtype=np.float32)
            hits = np.flatnonzero(self._has[:n] & self.in_scope(agent_id, workspace_hash))
            return Ranking(self.rows.vids[hits], self.rows.entities[hits], scores[hits].astype(np.float64))

        result: Ranking | None = self.answer(conn, compute)
        return result

    def vectors(self, vids: list[int]) -> dict[int, np.ndarray]:
        """Copies of the stored vectors of these current versions (the ones this mirror holds)."""
        with self._lock:
            return {vid: self._matrix[self._slot_of[vid]].copy() for vid in vids if vid in self._slot_of}

    def memory_bytes(self) -> int:
        return int(self._matrix.nbytes)
