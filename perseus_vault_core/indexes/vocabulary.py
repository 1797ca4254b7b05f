"""The keyword index's vocabulary as a snapshot stores it: terms sorted, looked up by binary search.

A snapshot of a large vault holds a hundred thousand terms or more; building a dict of them took
longer than the first query itself. Loaded, the vocabulary stays in the mapped file (the sorted terms'
bytes, their offsets, and each one's term id) and a lookup is a binary search over it, about twenty
comparisons; terms first seen after the load go in a small dict beside it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def pack(items: Iterator[tuple[str, int]] | list[tuple[str, int]]) -> dict[str, np.ndarray]:
    """``(term, id)`` pairs as three arrays: the terms' UTF-8 bytes in sorted order, their offsets, their ids."""
    ordered = sorted((term.encode(), tid) for term, tid in items)
    blob = b"".join(term for term, _ in ordered)
    offsets = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum([len(term) for term, _ in ordered], out=offsets[1:])
    return {"terms": np.frombuffer(blob, dtype=np.uint8) if blob else np.zeros(0, dtype=np.uint8),
            "term_offsets": offsets, "term_ids": np.asarray([tid for _, tid in ordered], dtype=np.int32)}


class Vocabulary:
    """Term -> id, backed by :func:`pack`'s arrays; the dict methods the keyword index uses."""

    def __init__(self, terms: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> None:
        self._blob = terms
        self._offsets = offsets
        self._ids = ids
        self._n = len(ids)
        self._added: dict[str, int] = {}

    def _term(self, i: int) -> bytes:
        return bytes(self._blob[int(self._offsets[i]) : int(self._offsets[i + 1])])

    def _find(self, term: str) -> int | None:
        key = term.encode()
        lo, hi = 0, self._n
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < self._n and self._term(lo) == key:
            return int(self._ids[lo])
        return None

    def get(self, term: str) -> int | None:
        found = self._added.get(term)
        return found if found is not None else self._find(term)

    def setdefault(self, term: str, tid: int) -> int:
        found = self.get(term)
        if found is not None:
            return found
        self._added[term] = tid
        return tid

    def __len__(self) -> int:
        return self._n + len(self._added)

    def items(self) -> Iterator[tuple[str, int]]:
        for i in range(self._n):
            yield self._term(i).decode(), int(self._ids[i])
        yield from self._added.items()
