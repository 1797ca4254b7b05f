"""Retrieval metrics as BEIR and pytrec_eval define them: linear gain, log2 discount."""

from __future__ import annotations

import math
from collections.abc import Sequence


def ndcg_at(ranked: Sequence[str], judged: dict[str, int], k: int) -> float:
    dcg = sum(judged.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(judged.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at(ranked: Sequence[str], judged: dict[str, int], k: int) -> float:
    relevant = {d for d, g in judged.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at(ranked: Sequence[str], judged: dict[str, int], k: int) -> float:
    for i, doc in enumerate(ranked[:k]):
        if judged.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0
