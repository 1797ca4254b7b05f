"""Hybrid recall: the two arms' absolute scores, combined. Pure functions.

Each arm scores on an absolute scale (docs/recall.md): the keyword arm gives BM25 as a share of the
most the query's words could score (:func:`keyword_score`, 0..1), the dense arm the cosine of the
two embeddings (-1..1). Hybrid relevance is their weighted sum,

    relevance = keyword_weight * keyword score + dense_weight * cosine

over every candidate either arm found (a candidate the keyword arm did not find scores 0 there; the
dense arm's cosine is computed for every candidate). Items are ordered by relevance, ties by id, so
the same arms give the same order every time; and the relevance of an item means the same in every
query, so a threshold (``min_score``) can cut the unrelated ones.

Why a weighted sum of scores rather than reciprocal-rank fusion: ranks throw away how strong a match
is, and fusing them let a weak arm drag hybrid below the better arm (conversational memory: keyword
0.627 R@10, rank fusion 0.607). On every evaluation collection and category the weighted sum with
these defaults is at or above the better arm (figures in docs/recall.md and docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..contract.params import Fusion

K1 = 1.2  # BM25's term-frequency saturation, as FTS5 uses it: a word can score at most idf x (K1 + 1)


def keyword_score(bm25: float, ceiling: float) -> float:
    """BM25 as a share of ``ceiling``, the most the query's words could score (each word's idf x
    (K1 + 1), a term frequency saturated in a short document): 0..1, comparable across queries. A
    document holding every rare query word many times scores near 1; one common word once, little."""
    if ceiling <= 0.0:
        return 0.0
    return min(1.0, max(0.0, bm25 / ceiling))


def combine(
    keyword: Mapping[int, float], dense: Mapping[int, float], fusion: Fusion
) -> list[tuple[int, float]]:
    """Hybrid relevance of every candidate, best first, ties by id: ``keyword`` and ``dense`` map an
    id to its keyword score and its cosine (an id missing from ``keyword`` scores 0 there; every id
    must have a cosine unless the dense arm did not run)."""
    ids = set(keyword) | set(dense)
    scored = {
        i: fusion.keyword_weight * keyword.get(i, 0.0) + fusion.dense_weight * dense.get(i, 0.0) for i in ids
    }
    return sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))
