"""Regression guard on conversational recall: the locomo-dev set (1,451 turns, 495 questions), real model.

Hybrid R@10 over categories 1-4 must stay at or above 0.69 (0.70 is the target the benchmark report
judges; the figure when this guard was added was 0.7004 for turns written as memories and 0.7030 through
the conversational ingest path), and at or above the better single arm overall and in every category.
Built through the public API as `benchmarks.conversation` does, embedded directly with the bundled model.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks import conversation

from ..conftest import shared_data

FLOOR = 0.69


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
        best = max(scores[m]["categories"][name]["r@10"] for m in ("fts5", "dense"))
        assert cell["r@10"] >= best, (name, cell["r@10"], best)
