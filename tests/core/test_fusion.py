"""Reciprocal-rank fusion: deterministic, ties by id, empty arms dropped, weights honoured."""

from __future__ import annotations

import pytest

from perseus_vault_core.fusion import Fusion, rrf


def test_rrf_sums_weighted_reciprocal_ranks() -> None:
    fused = dict(rrf({"fts5": [1, 2, 3], "dense": [3, 1]}, Fusion(k=20)))
    assert fused[1] == pytest.approx(1 / 21 + 1 / 22)
    assert fused[3] == pytest.approx(1 / 23 + 1 / 21)
    assert fused[2] == pytest.approx(1 / 22)


def test_order_and_ties_by_id() -> None:
    assert [i for i, _ in rrf({"fts5": [5, 4], "dense": [4, 5]}, Fusion())] == [4, 5]
    assert [i for i, _ in rrf({"fts5": [9], "dense": [2]}, Fusion())] == [2, 9]


def test_empty_arm_is_dropped_and_weights_apply() -> None:
    alone = rrf({"fts5": [], "dense": [7, 8]}, Fusion())
    assert [i for i, _ in alone] == [7, 8]
    heavy_keyword = rrf({"fts5": [1], "dense": [2]}, Fusion(keyword_weight=2.0, dense_weight=1.0))
    assert [i for i, _ in heavy_keyword] == [1, 2]
    assert rrf({"fts5": [1], "dense": [2]}, Fusion(keyword_weight=0.0))[0][0] == 2
