"""An in-memory mirror of the current heads' vectors, for fast dense recall.

The file (``version_vectors``) is the source of truth; this mirror keeps the heads' unit vectors
as a float32 matrix plus their sign bits (one bit per dimension), following the same change log
as the keyword index (see :mod:`.mirror`).

A query is answered in two steps, the same two steps the SQL path takes (:mod:`storage.sqlite.vectors`), so
both give the same answer:

1. candidates: the ``depth`` live heads in the caller's scope nearest to the query by Hamming
   distance between sign bits (ties by entity id): about 0.4 ms at 100k heads, against 10 to 16 ms
   for a float32 scan of every vector (150 MB of memory traffic);
2. a shortlist of the ``keep`` best of those by the query's own components summed over each
   candidate's set bits (:func:`dense.shortlist`: it reads the same bits again, not the floats);
3. exact cosine for the shortlist; status and time filters then apply, best first.

At the default depth (1,500 cut to 400, or 15 and 4 x the pool) recall@10 against an exact scan is
0.997 on the 100k benchmark store (measured in docs/benchmarks.md); when filters reject many
candidates, the search repeats deeper (see recall/pipeline.py's ``_dense_arm``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..primitives.dbapi import Connection
from ..primitives.dense import cosine, hamming, nearest, shortlist, sign_words, words
from ..primitives.hits import Ranking
from ..storage.base import OP_REBUILT, OP_VECTORS_RESET, Backend
from .mirror import HeadMirror, NotYet, fit, grow
from .snapshot import Padded, Saved


class VectorIndex(HeadMirror):
    FEED = "vector"
    NAME = "vector-index"
    HANDLES_VECTORS = True
    REBUILD_ON = (OP_REBUILT, OP_VECTORS_RESET)

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend)
        self._clear()

    def _clear(self) -> None:
        self.dimension = 0
        self.identity = ""
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._has = np.zeros(0, dtype=bool)
        self._bits: list[np.ndarray] = []  # sign bits, one uint64 column per 64 dimensions
        self._changed = 0  # bumped by every change to which rows hold a live vector
        self._live: tuple[tuple[int, int], np.ndarray, int] | None = None  # (when, mask, rows set) unscoped

    def _prepare(self, conn: Connection) -> None:
        recorded = self.backend.vectors.model(conn)
        if recorded is None:
            raise NotYet("this vault has no vectors yet")
        self.identity, self.dimension = recorded
        self._matrix = np.zeros((1024, self.dimension), dtype=np.float32)
        self._has = np.zeros(1024, dtype=bool)
        self._bits = [np.zeros(1024, dtype=np.uint64) for _ in range(words(self.dimension))]

    def _reserve(self, rows: int) -> None:
        super()._reserve(rows)
        self._matrix = grow(self._matrix, rows + 1024)
        self._has = grow(self._has, rows + 1024)
        self._bits = [grow(column, rows + 1024) for column in self._bits]

    def _store(self, slot: int, value: Any) -> None:
        self._changed += 1
        self._matrix = grow(self._matrix, slot + 1)
        self._has = grow(self._has, slot + 1)
        self._bits = [grow(column, slot + 1) for column in self._bits]
        if value is None:
            self._has[slot] = False
            return
        vector = np.frombuffer(value, dtype=np.float32)
        self._matrix[slot] = vector
        for column, word in zip(self._bits, sign_words(vector)):
            column[slot] = word
        self._has[slot] = True

    def _index(self, slot: int, values: Sequence[Any]) -> None:
        self._store(slot, values[0])

    def _vector_written(self, slot: int, values: Sequence[Any]) -> None:
        self._store(slot, values[0])

    def _forget(self, slot: int) -> None:
        self._changed += 1
        self._has[slot] = False

    def _live_mask(self, agent_id: str | None, workspace_hash: str | None) -> tuple[np.ndarray, int]:
        """Rows with a live vector in scope, and how many; unscoped, kept until a row changes (a query
        then costs no pass over every row to make it)."""
        n = self.rows.n
        if agent_id is not None or workspace_hash is not None:
            mask = self._has[:n] & self.in_scope(agent_id, workspace_hash)
            return mask, int(np.count_nonzero(mask))
        when = (self._changed, n)
        if self._live is None or self._live[0] != when:
            mask = self._has[:n] & self.rows.alive[:n]
            self._live = (when, mask, int(np.count_nonzero(mask)))
        return self._live[1], self._live[2]

    def cosines(self, conn: Connection, vids: Sequence[int], query: np.ndarray) -> dict[int, float] | None:
        """The cosine of ``query`` to each of these heads' vectors, scored the canonical way, as
        ``vectors.cosines`` scores them from the file (a version without a vector is absent); ``None``
        if the mirror cannot answer for the snapshot ``conn`` reads."""

        def compute() -> dict[int, float]:
            slots = self._slot_map().many(vids)
            held = slots >= 0
            held[held] = self._has[slots[held]]
            if not held.any():
                return {}
            scores = cosine(self._matrix[slots[held]], np.asarray(query, dtype=np.float32))
            return dict(zip(np.asarray(vids, dtype=np.int64)[held].tolist(), scores.tolist()))

        result: dict[int, float] | None = self.answer(conn, compute)
        return result

    def vectors(self, conn: Connection, vids: Sequence[int]) -> dict[int, np.ndarray] | None:
        """The stored vector of each of these heads, from memory (a version without one is absent); ``None``
        if the mirror cannot answer for the snapshot ``conn`` reads."""

        def compute() -> dict[int, np.ndarray]:
            slots = self._slot_map().many(vids)
            held = slots >= 0
            held[held] = self._has[slots[held]]
            rows = np.array(self._matrix[slots[held]], dtype=np.float32)  # a copy: the mirror writes in place
            return dict(zip(np.asarray(vids, dtype=np.int64)[held].tolist(), rows))

        result: dict[int, np.ndarray] | None = self.answer(conn, compute)
        return result

    def live(self, conn: Connection) -> tuple[np.ndarray, np.ndarray] | None:
        """(vids, entity ids) of every current head with a vector, for the snapshot ``conn`` reads; ``None``
        if the mirror cannot answer for it."""

        def compute() -> tuple[np.ndarray, np.ndarray]:
            slots = np.flatnonzero(self._live_mask(None, None)[0])
            return self.rows.vids[slots], self.rows.entities[slots]

        result: tuple[np.ndarray, np.ndarray] | None = self.answer(conn, compute)
        return result

    def search(
        self,
        conn: Connection,
        query: np.ndarray,
        depth: int,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        keep: int | None = None,
    ) -> tuple[Ranking, bool] | None:
        """The ``depth`` nearest live heads in scope by sign-bit Hamming distance (ties by entity id),
        cut to the ``keep`` best by :func:`dense.shortlist` when that was not every candidate, scored by
        exact cosine; and whether that was every candidate there is. ``None`` if the mirror cannot
        answer for the snapshot ``conn`` reads."""

        def compute() -> tuple[Ranking, bool]:
            n = self.rows.n
            mask, kept = self._live_mask(agent_id, workspace_hash)
            q = np.asarray(query, dtype=np.float32)
            if kept > depth and kept * 2 > n:  # most rows count (dead versions aside): scan all, no gather
                distance = hamming(self._bits, sign_words(q), n)
                if kept < n:
                    distance[~mask] = np.iinfo(
                        np.uint16
                    ).max  # farther than any row's (at most the dimension)
                slots = np.sort(
                    nearest(distance, self.rows.entities[:n], depth)
                )  # in file order: a gentler gather
                complete = False
            else:
                candidates = np.flatnonzero(mask)
                distance = np.zeros(len(candidates), dtype=np.uint16)
                for column, word in zip(self._bits, sign_words(q)):
                    distance += np.bitwise_count(column[candidates] ^ word)
                slots = candidates[nearest(distance, self.rows.entities[candidates], depth)]
                complete = kept <= depth
            if not complete and keep is not None and keep < len(slots):
                codes = np.stack([column[slots] for column in self._bits], axis=1).view(np.uint8)
                slots = np.sort(slots[shortlist(codes, q, self.rows.entities[slots], keep)])
            scores = cosine(self._matrix[slots], q)
            return Ranking(
                self.rows.vids[slots], self.rows.entities[slots], scores, heads=self.heads
            ), complete

        result: tuple[Ranking, bool] | None = self.answer(conn, compute)
        return result

    # -- snapshots --

    def _own_state(self, room: int, private: bool) -> tuple[dict[str, Any], dict[str, Saved]]:
        n = self.rows.n
        gone = ~(self.rows.alive[:n] & self._has[:n])
        if private:  # nobody else holds this matrix: clear the gone rows in place and write it as it is
            matrix: Saved = Padded(self._matrix[:n], room)
            self._matrix[:n][gone] = 0.0
        else:
            matrix = fit(self._matrix[:n], room)
            matrix[:n][gone] = 0.0  # a purged memory's vector is not saved
        bits = (
            np.stack([fit(column[:n], room) for column in self._bits])
            if self._bits
            else np.zeros((0, room), dtype=np.uint64)
        )
        bits[:, :n][:, gone] = 0
        return (
            {"identity": self.identity, "dimension": self.dimension},
            {"matrix": matrix, "has": fit(self._has[:n] & self.rows.alive[:n], room), "bits": bits},
        )

    def _restore_own(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.identity, self.dimension = str(meta["identity"]), int(meta["dimension"])
        self._matrix, self._has = arrays["matrix"], arrays["has"]
        self._bits = [arrays["bits"][w] for w in range(arrays["bits"].shape[0])]

    def _compatible(self, conn: Connection, meta: dict[str, Any]) -> bool:
        return self.backend.vectors.model(conn) == (meta.get("identity"), meta.get("dimension"))

    def memory_bytes(self) -> int:
        return int(self._matrix.nbytes)
