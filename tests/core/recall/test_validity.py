"""The validity profile's figures (docs/recall.md): freshness, scope, provenance, supersession, expiry."""

from __future__ import annotations

import pytest

from perseus_vault_core.recall.validity import HALF_LIFE_MS, validity

BASE = dict(
    now_ms=10 * HALF_LIFE_MS,
    updated_at_ms=10 * HALF_LIFE_MS,
    status="active",
    superseded_by=None,
    expires_at_ms=None,
    verified=False,
    provenance_class=None,
    workspace_hash=None,
    query_workspace=None,
)


def v(**changes: object):  # type: ignore[no-untyped-def]
    return validity(**{**BASE, **changes})  # type: ignore[arg-type]


def test_fresh_and_valid() -> None:
    result = v()
    assert (result.multiplier, result.grade, result.freshness) == (1.0, "valid", 1.0)


def test_freshness_halves_each_half_life() -> None:
    assert v(updated_at_ms=9 * HALF_LIFE_MS).freshness == pytest.approx(0.5)
    assert v(updated_at_ms=9 * HALF_LIFE_MS - 1).grade == "stale"
    assert v(updated_at_ms=6 * HALF_LIFE_MS).grade == "context_invalid"  # 1/16 < 0.125


def test_boosts_and_penalties() -> None:
    assert v(workspace_hash="w", query_workspace="w").multiplier == pytest.approx(1.10)
    assert v(verified=True).multiplier == pytest.approx(1.15)
    assert v(provenance_class="corroborated").corroborated
    assert v(provenance_class="ai_draft").multiplier == 1.0  # weaker provenance is never penalised
    superseded = v(status="superseded", superseded_by=7)
    assert superseded.multiplier == pytest.approx(0.35) and superseded.grade == "context_invalid"
    expired = v(expires_at_ms=BASE["now_ms"] - 1)  # type: ignore[operator]
    assert expired.expired and expired.grade == "context_invalid"
    soon = v(expires_at_ms=BASE["now_ms"] + 1000)  # type: ignore[operator]
    assert soon.multiplier == pytest.approx(0.70) and soon.grade == "stale"
