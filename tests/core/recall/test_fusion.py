"""Hybrid fusion: absolute arm scores, weighted by the query's own weights and summed; deterministic, ties by id."""

from __future__ import annotations

import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.indexes.keyword import ceiling, idf
from perseus_vault_core.contract.params import Fusion
from perseus_vault_core.recall.fusion import KEYWORD_REACH_FLOOR, combine, keyword_score, query_weights

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def test_the_weighted_sum_of_the_arms_scores() -> None:
    weights = Fusion(keyword_weight=0.6, dense_weight=0.4)
    fused = dict(combine({1: 0.5, 2: 0.2}, {1: 0.1, 2: 0.9, 3: 0.4}, weights))
    assert fused[1] == pytest.approx(0.6 * 0.5 + 0.4 * 0.1)
    assert fused[2] == pytest.approx(0.6 * 0.2 + 0.4 * 0.9)
    assert fused[3] == pytest.approx(0.4 * 0.4)  # not found by the keyword arm: 0 there


def test_each_query_weighs_an_arm_by_how_far_its_scores_reach() -> None:
    base = Fusion()
    assert base.keyword_weight == base.dense_weight == 0.5
    # Keyword's best 0.8, cosines spread 0.2: the cosines barely separate these, the keyword arm does.
    w = query_weights({1: 0.8}, {1: 0.5, 2: 0.3}, base)
    assert w.keyword_weight == pytest.approx((0.5 / 0.8) / (0.5 / 0.8 + 0.5 / 0.2))
    assert w.keyword_weight + w.dense_weight == pytest.approx(1.0)
    # The same cosines beside a keyword arm whose best match is weak: it is credited the floor's reach.
    weak = query_weights({1: 0.05}, {1: 0.5, 2: 0.3}, base)
    assert weak.keyword_weight == pytest.approx((0.5 / KEYWORD_REACH_FLOOR) / (0.5 / KEYWORD_REACH_FLOOR + 0.5 / 0.2))
    # Cosines spread four times as wide: their weight per unit of cosine falls, as the scale they span grew.
    wide = query_weights({1: 0.8}, {1: 0.9, 2: 0.1}, base)
    assert wide.dense_weight / wide.keyword_weight == pytest.approx((w.dense_weight / w.keyword_weight) / 4)
    # The base weights as given where one arm cannot say: no keyword hit, one candidate, cosines all alike.
    for keyword, dense in (({}, {1: 0.5, 2: 0.3}), ({1: 0.5}, {1: 0.4}), ({1: 0.5}, {1: 0.4, 2: 0.4})):
        assert query_weights(keyword, dense, base) == base
    # An arm weighed 0 stays 0: a caller's keyword-only or dense-only fusion is kept.
    only = Fusion(keyword_weight=1.0, dense_weight=0.0)
    assert query_weights({1: 0.8}, {1: 0.5, 2: 0.3}, only).dense_weight == 0.0


def test_the_query_weights_order_as_both_arms_scaled_to_their_reach() -> None:
    """Ordering by the query's weights is ordering by each arm's score over its reach (the keyword score
    over its best, the cosine from the worst to the best), summed with the base weights."""
    keyword, dense = {1: 0.6, 2: 0.3, 4: 0.1}, {1: 0.2, 2: 0.7, 3: 0.65, 4: 0.3}
    base = Fusion(keyword_weight=0.5, dense_weight=0.5)
    by_weights = [i for i, _ in combine(keyword, dense, query_weights(keyword, dense, base))]
    scaled = {i: 0.5 * keyword.get(i, 0.0) / 0.6 + 0.5 * (dense[i] - 0.2) / (0.7 - 0.2) for i in dense}
    assert by_weights == sorted(scaled, key=lambda i: (-scaled[i], i))


def test_order_and_ties_by_id() -> None:
    assert [i for i, _ in combine({5: 0.3, 4: 0.3}, {}, Fusion())] == [4, 5]
    assert [i for i, _ in combine({9: 0.5}, {2: 0.75}, Fusion())] == [2, 9]


def test_weights_apply_and_cannot_both_be_zero() -> None:
    assert combine({1: 0.9}, {2: 0.9}, Fusion(keyword_weight=0.0, dense_weight=1.0))[0][0] == 2
    assert combine({1: 0.9}, {2: 0.9}, Fusion(keyword_weight=1.0, dense_weight=0.0))[0][0] == 1
    with pytest.raises(ValueError, match="both be 0"):
        Fusion(keyword_weight=0.0, dense_weight=0.0)


def test_keyword_score_is_bm25_over_the_ceiling_of_the_query_words() -> None:
    top = ceiling(1000, [10, 0])  # a word in 10 rows, and a word in none
    assert top == pytest.approx((idf(1000, 10) + idf(1000, 0)) * 2.2)
    assert keyword_score(top / 4, top) == pytest.approx(0.25)
    assert keyword_score(top * 2, top) == 1.0 and keyword_score(1.0, 0.0) == 0.0


def test_fusion_weights_are_checked_on_the_vault_and_per_call(tmp_path: object) -> None:
    from pathlib import Path

    with pytest.raises(InvalidInput, match="fusion"):
        Vault(Path(str(tmp_path)) / "v.db", embedder=False, fusion={"k": 60})
    with Vault(Path(str(tmp_path)) / "w.db", embedder=False) as vault:
        with pytest.raises(InvalidInput, match="fusion.keyword_weight"):
            vault.recall("x", fusion={"keyword_weight": 2.0})
