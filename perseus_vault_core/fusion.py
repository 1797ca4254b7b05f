"""Reciprocal-rank fusion of the recall arms. Pure functions.

Each arm contributes ``weight / (k + rank)`` for every item it ranked (rank 1 is its best);
an arm that found nothing is dropped, not counted as zero. Items are ordered by fused score,
ties by id, so the same arms give the same order every time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field


class Fusion(BaseModel):
    """Hybrid recall's arm weights; k is the rank damping constant."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    k: int = Field(default=20, ge=1, le=10_000)
    keyword_weight: float = Field(default=1.0, ge=0.0, le=100.0)
    dense_weight: float = Field(default=1.0, ge=0.0, le=100.0)

    def weight(self, arm: str) -> float:
        return self.keyword_weight if arm == "fts5" else self.dense_weight


def rrf(arms: Mapping[str, Sequence[int]], fusion: Fusion) -> list[tuple[int, float]]:
    """Fuse ranked id lists into [(id, score)], best first, ties by id."""
    scores: dict[int, float] = {}
    for arm, ids in arms.items():
        if not ids:
            continue
        weight = fusion.weight(arm)
        for rank, item in enumerate(ids, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (fusion.k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
