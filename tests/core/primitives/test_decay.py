"""A memory's decay (decay.py): halved by each half-life of idleness, the half-life lengthened by use. Pure."""

from __future__ import annotations

import pytest

from perseus_vault_core.primitives.decay import DAY_MS, decay


def test_decay_halves_per_half_life_and_use_slows_it() -> None:
    assert decay(0, None, 0, 0) == 1.0
    assert decay(30 * DAY_MS, None, 0, 0) == pytest.approx(0.5)
    assert decay(30 * DAY_MS, None, 0, 1) == pytest.approx(0.5**0.5)  # half-life 60 days
    assert decay(30 * DAY_MS, 30 * DAY_MS, 0, 0) == 1.0  # accessed just now
    assert decay(0, None, 10 * DAY_MS, 0) == 1.0  # never negative idleness
