"""Dense-vector arithmetic (dense.py): the sign-bit scan must count exactly as a plain popcount does."""

from __future__ import annotations

import numpy as np
import pytest

from perseus_vault_core import dense


@pytest.mark.parametrize("dimension", [64, 100, 200, 384])
@pytest.mark.parametrize("rows", [0, 1, 37, 5_000])
def test_the_blocked_and_shared_scan_counts_as_a_plain_popcount(
        dimension: int, rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dense, "_BLOCK", 256)  # several blocks, and a second thread from 1,000 rows
    monkeypatch.setattr(dense, "SHARED_SCAN_ROWS", 1_000)
    rng = np.random.default_rng(dimension + rows)
    vectors = rng.standard_normal((rows, dimension)).astype(np.float32)
    words = [dense.sign_words(v) for v in vectors]
    columns = [np.asarray([w[k] for w in words], dtype=np.uint64) for k in range(dense.words(dimension))]
    query = dense.sign_words(rng.standard_normal(dimension).astype(np.float32))
    expected = np.asarray([sum(bin(int(c[i]) ^ int(q)).count("1") for c, q in zip(columns, query))
                           for i in range(rows)], dtype=np.uint16)
    got = dense.hamming(columns, query, rows)
    assert got.dtype == np.uint16 and got.tolist() == expected.tolist()


def test_a_scan_of_sign_bits_counts_the_dimensions_whose_signs_differ() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    columns = [np.asarray(c, dtype=np.uint64) for c in zip(*(dense.sign_words(v) for v in vectors))]
    got = dense.hamming(columns, dense.sign_words(query), 50)
    assert got.tolist() == [int(np.count_nonzero((v > 0) != (query > 0))) for v in vectors]
