"""Actionability: concrete anchors outrank vague, date-only and very short text."""

from __future__ import annotations

import pytest

from perseus_vault_core.recall.actionability import actionability, startup_factor


def test_anchors_raise_the_score() -> None:
    concrete = actionability(
        "Decided to move billing to Postgres; see ENG-142 and src/billing/ledger.py, owner Alice."
    )
    vague = actionability("Talked about some stuff with the team, maybe revisit things later.")
    assert concrete.score > vague.score
    assert {"ticket key", "path", "decision language", "named system"} <= set(concrete.reasons)
    assert "vague" in vague.reasons


def test_date_only_and_short_text_fall() -> None:
    assert "date-only" in actionability("Meeting on 2026-03-04").reasons
    assert "very short" in actionability("ok noted").reasons
    assert (
        actionability("ok noted").score
        < actionability("Escalate OPS-12 to the on-call owner if the queue stalls.").score
    )


def test_url_and_ref_count_and_score_is_bounded() -> None:
    text = "Fix #562 per https://example.com/runbook and PROJ-1, PROJ-2: decided, owner Bob, deadline Friday, SQLite"
    result = actionability(text)
    assert 0.0 <= result.score <= 1.0 and "url" in result.reasons and "#ref" in result.reasons


def test_startup_factor_spans_the_knobs_range() -> None:
    assert startup_factor(0.0) == 0.8 and startup_factor(1.0) == 1.25
    assert startup_factor(0.5) == pytest.approx(1.025)
