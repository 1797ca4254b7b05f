"""Dense-vector arithmetic shared by the SQL path (:mod:`storage.sqlite.vectors`) and the in-memory
index (:mod:`indexes.vector`): one canonical cosine and one sign-bit code, so both paths give
byte-identical answers.
"""

from __future__ import annotations

import numpy as np


def cosine(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of unit rows to a unit query, one canonical way: each row summed on its own in float64
    by einsum's own loop (no BLAS), so a row's score never depends on its neighbours or on blocking
    (BLAS float32 results did). Both dense paths score with this and give byte-identical answers."""
    scores: np.ndarray = np.einsum("ij,j->i", rows, np.asarray(query, dtype=np.float32), dtype=np.float64)
    return scores


def words(dimension: int) -> int:
    return (dimension + 63) // 64


def sign_words(vector: np.ndarray) -> list[np.uint64]:
    """A vector's sign bits (bit set where the component is > 0), as 64-bit words: the bits stored
    beside each vector (vectors.sign_bits), so Hamming distances agree with SQL's."""
    bits = np.packbits(np.asarray(vector) > 0)
    padded = np.zeros(words(len(vector)) * 8, dtype=np.uint8)
    padded[: len(bits)] = bits
    return list(padded.view(np.uint64))


def nearest(distance: np.ndarray, entity_ids: np.ndarray, depth: int) -> np.ndarray:
    """Indexes of the ``depth`` smallest distances, ties by entity id: the same rows as SQL's
    ``ORDER BY distance, entity_id LIMIT depth``."""
    if len(distance) <= depth:
        return np.arange(len(distance))
    cut = np.partition(distance, depth - 1)[depth - 1]
    below = np.flatnonzero(distance < cut)
    at = np.flatnonzero(distance == cut)
    at = at[np.argsort(entity_ids[at], kind="stable")][: depth - len(below)]
    return np.concatenate([below, at])


def sign_bits(vector: np.ndarray) -> bytes:
    """One bit per dimension, set where the component is > 0 (padded to whole bytes): the dense
    pre-filter's code, stored beside each vector. :func:`sign_words` packs the same bits."""
    return np.packbits(np.asarray(vector) > 0).tobytes()
