"""Dense-vector arithmetic (dense.py): the sign-bit scan must count exactly as a plain popcount does."""

from __future__ import annotations

import numpy as np
import pytest

from perseus_vault_core.primitives import dense


@pytest.mark.parametrize("dimension", [64, 100, 200, 384])
@pytest.mark.parametrize("rows", [0, 1, 37, 5_000])
def test_the_blocked_and_shared_scan_counts_as_a_plain_popcount(
    dimension: int, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense, "_BLOCK", 256)  # several blocks, and a second thread from 1,000 rows
    monkeypatch.setattr(dense, "SHARED_SCAN_ROWS", 1_000)
    rng = np.random.default_rng(dimension + rows)
    vectors = rng.standard_normal((rows, dimension)).astype(np.float32)
    words = [dense.sign_words(v) for v in vectors]
    columns = [np.asarray([w[k] for w in words], dtype=np.uint64) for k in range(dense.words(dimension))]
    query = dense.sign_words(rng.standard_normal(dimension).astype(np.float32))
    expected = np.asarray(
        [sum(bin(int(c[i]) ^ int(q)).count("1") for c, q in zip(columns, query)) for i in range(rows)],
        dtype=np.uint16,
    )
    got = dense.hamming(columns, query, rows)
    assert got.dtype == np.uint16 and got.tolist() == expected.tolist()


def test_a_scan_of_sign_bits_counts_the_dimensions_whose_signs_differ() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((50, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    columns = [np.asarray(c, dtype=np.uint64) for c in zip(*(dense.sign_words(v) for v in vectors))]
    got = dense.hamming(columns, dense.sign_words(query), 50)
    assert got.tolist() == [int(np.count_nonzero((v > 0) != (query > 0))) for v in vectors]


@pytest.mark.parametrize("dimension", [48, 100, 384])
def test_sign_scores_sum_the_query_over_each_rows_set_bits(dimension: int) -> None:
    rng = np.random.default_rng(dimension)
    vectors = rng.standard_normal((30, dimension)).astype(np.float32)
    query = rng.standard_normal(dimension).astype(np.float32)
    packed = np.stack([np.frombuffer(dense.sign_bits(v), dtype=np.uint8) for v in vectors])
    padded = np.stack([np.asarray(dense.sign_words(v), dtype=np.uint64) for v in vectors]).view(np.uint8)
    expected = [float(query[v > 0].astype(np.float64).sum()) for v in vectors]
    for codes in (packed, padded):  # the file's bytes and the index's 64-bit words read alike
        assert dense.sign_scores(codes, query) == pytest.approx(expected, abs=1e-4)


def test_a_rows_sign_score_does_not_depend_on_its_neighbours() -> None:
    rng = np.random.default_rng(9)
    vectors = rng.standard_normal((500, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    codes = np.stack([np.frombuffer(dense.sign_bits(v), dtype=np.uint8) for v in vectors])
    order = rng.permutation(500)
    assert (
        dense.sign_scores(codes[order], query).tobytes() == dense.sign_scores(codes, query)[order].tobytes()
    )


def test_the_shortlist_keeps_the_best_sign_scores_ties_by_entity_id() -> None:
    query = np.asarray([1.0, 0.5, 0.25, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    bits = ["10000000", "01000000", "11000000", "11000000", "00100000", "00000000"]
    codes = np.asarray([[int(b, 2)] for b in bits], dtype=np.uint8)
    entity_ids = np.asarray([10, 11, 12, 5, 13, 14])
    picked = dense.shortlist(codes, query, entity_ids, 3)
    # rows 2 and 3 score 1.5 (tie: entity 5 first), row 0 scores 1.0, the rest less
    assert sorted(picked.tolist()) == [0, 2, 3]
    assert sorted(dense.shortlist(codes, query, entity_ids, 1).tolist()) == [3]


@pytest.mark.parametrize("dimension", [100, 384])
def test_a_codes_padding_leaves_its_sign_score_byte_for_byte(dimension: int) -> None:
    # The file stores ceil(dimension / 8) bytes, the index whole 64-bit words: the SQL path and the index
    # must score a row to the same bits, or their shortlists could part at a near-tie.
    rng = np.random.default_rng(dimension + 1)
    vectors = rng.standard_normal((200, dimension)).astype(np.float32)
    query = rng.standard_normal(dimension).astype(np.float32)
    packed = np.stack([np.frombuffer(dense.sign_bits(v), dtype=np.uint8) for v in vectors])
    padded = np.stack([np.asarray(dense.sign_words(v), dtype=np.uint64) for v in vectors]).view(np.uint8)
    assert dense.sign_scores(packed, query).tobytes() == dense.sign_scores(padded, query).tobytes()


@pytest.mark.parametrize("depth", [1, 7, 40, 99, 100, 150])
def test_nearest_keeps_the_rows_a_sort_by_distance_then_entity_id_keeps(depth: int) -> None:
    rng = np.random.default_rng(depth)
    distance = rng.integers(0, 12, 100).astype(np.uint16)  # many ties at every distance
    entity_ids = rng.permutation(1000)[:100]
    expected = sorted(range(100), key=lambda i: (int(distance[i]), int(entity_ids[i])))[:depth]
    assert sorted(dense.nearest(distance, entity_ids, depth).tolist()) == sorted(expected)


@pytest.mark.parametrize(("depth", "expected"), [(2, [1, 5]), (3, [1, 4, 5]), (5, [1, 2, 3, 4, 5])])
def test_nearest_splits_the_ties_at_its_cut_by_the_lowest_entity_ids(depth: int, expected: list[int]) -> None:
    distance = np.asarray([3, 1, 2, 2, 2, 2, 5], dtype=np.uint16)  # four rows tie at the cut, 2
    entity_ids = np.asarray([70, 60, 50, 40, 30, 20, 10])  # the ties' ids fall as their rows rise
    assert sorted(dense.nearest(distance, entity_ids, depth).tolist()) == expected


def test_canonical_cosine_does_not_depend_on_row_position() -> None:
    import numpy as np

    from perseus_vault_core.primitives.dense import cosine

    rng = np.random.default_rng(3)
    rows = rng.standard_normal((500, 384)).astype(np.float32)
    query = rng.standard_normal(384).astype(np.float32)
    order = rng.permutation(500)
    assert np.array_equal(cosine(rows, query)[order], cosine(rows[order], query))
    assert np.array_equal(cosine(rows[:3], query), cosine(rows, query)[:3])
    for shift in (
        1,
        2,
        3,
        5,
    ):  # rows that start at any 4-byte boundary, as a blob or a mapped file gives them
        buffer = np.zeros(rows.size + 16, dtype=np.float32)
        moved = buffer[shift : shift + rows.size].reshape(rows.shape)
        moved[:] = rows
        assert np.array_equal(cosine(moved, query), cosine(rows, query))
        held = np.zeros(400, dtype=np.float32)
        held[shift : shift + 384] = query
        assert np.array_equal(cosine(rows, held[shift : shift + 384]), cosine(rows, query))
