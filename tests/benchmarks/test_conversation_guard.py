"""Regression guard on conversational recall: the locomo-dev set (1,451 turns, 495 questions), real model.

Hybrid R@10 over categories 1-4 must stay within 0.01 of the figure recorded for turns written as memories
(docs/benchmarks.md, `python -m benchmarks.run --only conversation`: 0.7611 since a memory naming a time answers
a question asking when), and at or above the better single arm, overall and in every category, in R@10 and in
nDCG@10. Built through the public API as `benchmarks.conversation` does, embedded directly with the bundled model.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import conversation

from ..conftest import shared_data

FLOOR = 0.7611 - 0.01


@pytest.mark.slow
def test_hybrid_recall_on_conversations_holds(tmp_path: Any, real_embedder: Any) -> None:
    from perseus_vault_core import Vault

    turns, questions, qrels = conversation.load(shared_data("locomo-dev"))
    with Vault(tmp_path / "turns.db", embedder=real_embedder) as vault:
        conversation.write_turns(vault, turns)
        scores = {
            m: conversation.evaluate(vault, questions, qrels, m, lambda i: i.key)
            for m in ("fts5", "dense", "hybrid")
        }
    hybrid = scores["hybrid"]
    assert hybrid["r@10"] >= FLOOR, f"hybrid R@10 {hybrid['r@10']:.4f} below {FLOOR}"
    for metric in ("r@10", "ndcg@10"):
        assert hybrid[metric] >= max(scores["fts5"][metric], scores["dense"][metric]), metric
    for name, cell in hybrid["categories"].items():
        for metric in ("r@10", "ndcg@10"):
            best = max(scores[m]["categories"][name][metric] for m in ("fts5", "dense"))
            assert cell[metric] >= best, (name, metric, cell[metric], best)
