"""Regression guard on retrieval quality: Cranfield (1,400 docs, all 225 judged queries), real model.

Keyword (fts5) and hybrid nDCG@10 must not fall more than 0.01 below the figures recorded by the
benchmark harness (docs/benchmarks.md, `python -m benchmarks.run`; re-recorded 2026-12-05 when hybrid began
feeding its query back toward the best documents, 0.4198 to 0.4254). Quality, not time: the guard builds
the collection through the public API, as `benchmarks.quality` does, and embeds it directly with the
bundled model (no vector cache, so it holds on a clean checkout).
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import quality

from ..conftest import shared_data

RECORDED = {"fts5": 0.3698, "hybrid": 0.4254}
TOLERANCE = 0.01


@pytest.fixture(scope="module")
def cranfield() -> quality.Collection:
    collection = quality.load("cranfield", shared_data("cranfield"))
    assert len(collection.docs) == 1400 and len(collection.queries) == 225
    return collection


@pytest.mark.slow
def test_keyword_quality_holds(cranfield: quality.Collection, tmp_path: Any) -> None:
    vault = quality.build_vault(cranfield, str(tmp_path / "kw.db"))
    try:
        score = quality.evaluate(vault, cranfield, "fts5")["ndcg@10"]
    finally:
        vault.close()
    assert score >= RECORDED["fts5"] - TOLERANCE, (
        f"keyword nDCG@10 {score:.4f} fell below {RECORDED['fts5']} - {TOLERANCE}"
    )


@pytest.mark.slow
def test_hybrid_quality_holds(cranfield: quality.Collection, tmp_path: Any, real_embedder: Any) -> None:
    vault = quality.build_vault(cranfield, str(tmp_path / "hy.db"), real_embedder)
    try:
        vault.wait_for_keyword_index()
        vault.wait_for_vector_index()
        scores = {m: quality.evaluate(vault, cranfield, m)["ndcg@10"] for m in ("hybrid", "fts5")}
    finally:
        vault.close()
    assert scores["hybrid"] >= RECORDED["hybrid"] - TOLERANCE, (
        f"hybrid nDCG@10 {scores['hybrid']:.4f} fell below {RECORDED['hybrid']} - {TOLERANCE}"
    )
    # Fusion must earn its keep: hybrid above the keyword arm it fuses.
    assert scores["hybrid"] > scores["fts5"]
