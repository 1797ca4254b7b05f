"""The scoring knobs are pure functions; their documented effects, one by one."""

from __future__ import annotations

import pytest

from perseus_vault_core.recall.ranking import (
    KNOB_RANGE,
    Scored,
    bounded,
    diversify,
    order,
    recency,
    trust,
    witness,
)


def test_trust_never_negative() -> None:
    assert trust(True, None) == 1.0
    assert trust(False, 0.4) == 0.4
    assert trust(False, None) == 0.0
    assert trust(True, 0.1) == 1.0


def test_witness_share_damped_by_length() -> None:
    assert witness(["a", "b"], {"a", "b"}, 0) == 1.0
    assert witness(["a", "b"], {"a"}, 0) == 0.5
    assert witness(["a"], {"a"}, 5000) < witness(["a"], {"a"}, 50) < 1.0
    assert witness([], {"a"}, 10) == 0.0


def test_recency_multiplier() -> None:
    assert recency(0, 10) == 1.0
    assert recency(10_000, 10) == pytest.approx(0.5)


def test_order_breaks_ties_by_id() -> None:
    items = [Scored(3, 0.5, 0.5), Scored(1, 1.0, 1.0), Scored(2, 0.5, 0.5)]
    assert [s.id for s in order(items)] == [1, 2, 3]


def test_the_knobs_factor_is_bounded() -> None:
    assert bounded(1.1) == 1.1 and bounded(0.9) == 0.9
    assert bounded(4.0) == KNOB_RANGE[1] and bounded(0.01) == KNOB_RANGE[0]


def test_diversify_quota_per_keyword() -> None:
    items = [Scored(i, 1.0, keyword=k) for i, k in enumerate([1, 1, 1, 0, 1, 0])]
    assert [s.id for s in diversify(items, 4, 0.5)] == [0, 1, 3, 5, 2, 4]
    assert diversify(items, 4, 1.0) == items
