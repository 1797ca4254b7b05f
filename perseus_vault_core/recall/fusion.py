"""Hybrid recall: the two arms' absolute scores, combined. Pure functions.

Each arm scores on an absolute scale (docs/recall.md): the keyword arm gives BM25 as a share of the
most the query's words could score (:func:`keyword_score`, 0..1), the dense arm the cosine of the
two embeddings (-1..1). Hybrid relevance is their weighted sum,

    relevance = keyword weight x keyword score + dense weight x cosine

over every candidate either arm found (a candidate the keyword arm did not find scores 0 there; the
dense arm's cosine is computed for every candidate). Items are ordered by relevance, ties by id, so
the same arms give the same order every time.

The weights are the query's own (:func:`query_weights`): each arm's base weight divided by how far its
scores reach over this query's candidates, the keyword arm's best score (at least
``KEYWORD_REACH_FLOOR``) and the spread of the cosines (best less worst). That puts both arms on one
footing before they are weighed: the model's cosines over one query's candidates often span a tenth of
the keyword scores' range, and unscaled, whichever arm spans more decides most of the order. The floor
keeps a keyword arm whose best match is one common word from being stretched to a strong one. Ordering
by these weights is ordering by ``base weight x score / reach`` summed over the arms (the cosine measured
from the worst candidate's); the two weights are scaled to sum to 1, so relevance stays a weighted mean
of the two absolute scores, and a threshold (``min_score``) means about the same in every query.

Why a weighted sum of scores rather than reciprocal-rank fusion: ranks throw away how strong a match
is, and fusing them let a weak arm drag hybrid below the better arm (conversational memory: keyword
0.627 R@10, rank fusion 0.607). On every evaluation collection and category the weighted sum with
these defaults is at or above the better arm (figures in docs/recall.md and docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..contract.params import Fusion

K1 = 1.2  # BM25's term-frequency saturation, as FTS5 uses it: a word can score at most idf x (K1 + 1)
# The least reach a keyword arm is credited with: below it, a weak best keyword match (one common word)
# is not read as a strong separation of the candidates (docs/recall.md#hybrid-fusion).
KEYWORD_REACH_FLOOR = 0.2


def keyword_score(bm25: float, ceiling: float) -> float:
    """BM25 as a share of ``ceiling``, the most the query's words could score (each word's idf x
    (K1 + 1), a term frequency saturated in a short document): 0..1, comparable across queries. A
    document holding every rare query word many times scores near 1; one common word once, little."""
    if ceiling <= 0.0:
        return 0.0
    return min(1.0, max(0.0, bm25 / ceiling))


def combine(keyword: Mapping[int, float], dense: Mapping[int, float], fusion: Fusion) -> list[tuple[int, float]]:
    """Hybrid relevance of every candidate, best first, ties by id: ``keyword`` and ``dense`` map an
    id to its keyword score and its cosine (an id missing from ``keyword`` scores 0 there; every id
    must have a cosine unless the dense arm did not run)."""
    ids = set(keyword) | set(dense)
    scored = {i: fusion.keyword_weight * keyword.get(i, 0.0) + fusion.dense_weight * dense.get(i, 0.0) for i in ids}
    return sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))


def query_weights(keyword: Mapping[int, float], dense: Mapping[int, float], fusion: Fusion) -> Fusion:
    """The weights of this query's candidates (module docstring): ``fusion``'s, each divided by its arm's
    reach over them (the keyword arm's best score, at least ``KEYWORD_REACH_FLOOR``; the cosines' best
    less their worst), scaled to sum to 1. ``fusion`` itself where an arm has no candidates, or the
    cosines do not spread (one candidate, or all alike)."""
    if not keyword or len(dense) < 2:
        return fusion
    spread = max(dense.values()) - min(dense.values())
    if spread <= 1e-9:
        return fusion
    k = fusion.keyword_weight / max(max(keyword.values()), KEYWORD_REACH_FLOOR)
    d = fusion.dense_weight / spread
    return Fusion(keyword_weight=k / (k + d), dense_weight=d / (k + d))
