"""The keyword index's vocabulary as a snapshot stores it: terms sorted, looked up by binary search.

A snapshot of a large vault holds a hundred thousand terms or more; building a dict of them took
longer than the first query itself (21 ms for 110k terms). Loaded, the vocabulary is three flat arrays
(the sorted terms' bytes, their offsets, and each one's term id) and a lookup is a binary search over
them, about twenty comparisons; terms found or first seen after the load go in a small dict beside it.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator

import numpy as np


def pack(items: Iterator[tuple[str, int]] | list[tuple[str, int]]) -> dict[str, np.ndarray]:
    """``(term, id)`` pairs as three arrays: the terms' UTF-8 bytes in sorted order, their offsets, their ids."""
    ordered = sorted((term.encode(), tid) for term, tid in items)
    blob = b"".join(term for term, _ in ordered)
    offsets = np.zeros(len(ordered) + 1, dtype=np.int64)
    np.cumsum([len(term) for term, _ in ordered], out=offsets[1:])
    return {
        "terms": np.frombuffer(blob, dtype=np.uint8) if blob else np.zeros(0, dtype=np.uint8),
        "term_offsets": offsets,
        "term_ids": np.asarray([tid for _, tid in ordered], dtype=np.int32),
    }


class _Sorted:
    """The sorted terms as a sequence of bytes, for :func:`bisect.bisect_left`."""

    def __init__(self, blob: bytes, offsets: array[int]) -> None:
        self.blob, self.offsets = blob, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.blob[self.offsets[i] : self.offsets[i + 1]]


class Vocabulary:
    """Term -> id, backed by :func:`pack`'s arrays; the dict methods the keyword index uses. The arrays
    are copied out of the mapping once (a few milliseconds for a hundred thousand terms: plain bytes
    and machine integers, which a lookup indexes far faster than a mapped array); each term found is
    remembered, as a log replay asks for the same words again and again."""

    def __init__(self, terms: np.ndarray, offsets: np.ndarray, ids: np.ndarray) -> None:
        bounds: array[int] = array("q")
        bounds.frombytes(np.ascontiguousarray(offsets, dtype=np.int64).tobytes())
        self._ids: array[int] = array("i")
        self._ids.frombytes(np.ascontiguousarray(ids, dtype=np.int32).tobytes())
        self._sorted = _Sorted(terms.tobytes(), bounds)
        self._n = len(self._ids)
        self._known: dict[str, int] = {}  # found in the arrays, or added since the load
        self._added = 0

    def _find(self, term: str) -> int | None:
        key = term.encode()
        at = bisect_left(self._sorted, key)
        if at < self._n and self._sorted[at] == key:
            return self._ids[at]
        return None

    def get(self, term: str) -> int | None:
        found = self._known.get(term)
        if found is None:
            found = self._find(term)
            if found is not None:
                self._known[term] = found
        return found

    def setdefault(self, term: str, tid: int) -> int:
        found = self.get(term)
        if found is not None:
            return found
        self._known[term] = tid
        self._added += 1
        return tid

    def __len__(self) -> int:
        return self._n + self._added

    def items(self) -> Iterator[tuple[str, int]]:
        for i in range(self._n):
            yield self._sorted[i].decode(), self._ids[i]
        yield from ((term, tid) for term, tid in self._known.items() if tid >= self._n)
