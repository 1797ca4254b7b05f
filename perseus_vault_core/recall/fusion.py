"""Hybrid recall: the two arms' absolute scores, combined. Pure functions.

Each arm scores on an absolute scale (docs/recall.md): the keyword arm gives BM25 as a share of the
most the query's words could score (:func:`keyword_score`, 0..1), the dense arm the cosine of the
two embeddings (-1..1). Hybrid relevance is their weighted sum,

    relevance = keyword_weight * keyword score + dense_weight * cosine

over every candidate either arm found (a candidate the keyword arm did not find scores 0 there; the
dense arm's cosine is computed for every candidate). Items are ordered by relevance, ties by id, so
the same arms give the same order every time.

The weights are the query's own (:func:`query_weights`): each arm's base weight divided by how far the arm
reaches for this query, read from its best score over the caller's scope (the keyword arm's best score; the
best cosine above :data:`COSINE_FLOOR`), then scaled to sum to 1. That puts both arms on one footing: the
bundled model's cosines of one query's candidates often span a tenth of the keyword scores' range, and with
fixed weights whichever arm spans more decides most orders, so a memory only the model finds rarely rose
above one that shares an incidental word. The weights sum to 1, so relevance stays a weighted mean of the
two absolute scores and a threshold (``min_score``) means about the same in every query. They are read
before any filter, so a ``where`` (or a category, a topic) only removes memories: what it keeps is in the
unfiltered order.

One memory may be weighed apart (:func:`trusted`): when the query's words match nothing strongly and the model
finds one memory that stands out, that memory is weighed as if its words matched as well as the keyword arm's best
match. A paraphrase ("where do we keep passwords and tokens" for "Secrets live in AWS Secrets Manager") shares no
word with its answer, and a memory sharing one incidental word ("tokens" in a ticket) otherwise outranks it.

When the best memories are documents (:func:`is_document`), the model is asked again (:func:`fed_back`): the
query's vector moved toward the vectors of the two best memories of the first ranking (pseudo-relevance feedback,
long known to help document retrieval). A question rarely says what a whole abstract does; the abstracts that
answer it best say it for the model. Short memories (facts, notes, conversation turns) are never fed back: one
memory's words pull a question about another away from it.

A memory that says what the question asks for is weighed as if it matched one more of its words (``answering`` in
:func:`combine`, :data:`ASKED_SHARE`): for a question asking when, a memory naming a time (:mod:`.asked`).

Why a weighted sum of scores rather than reciprocal-rank fusion: ranks throw away how strong a match
is, and fusing them let a weak arm drag hybrid below the better arm (conversational memory: keyword
0.627 R@10, rank fusion 0.607). On every evaluation collection and category the weighted sum with
these defaults is at or above the better arm (figures in docs/recall.md and docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence

import numpy as np

from ..contract.params import Fusion

K1 = 1.2  # BM25's term-frequency saturation, as FTS5 uses it: a word can score at most idf x (K1 + 1)
# How far each arm reaches for a query is read from its best score over the caller's scope (:func:`query_weights`):
# the keyword arm's from nothing, at least KEYWORD_REACH (a best match of one common word is no strong one); the
# dense arm's from COSINE_FLOOR, about where the bundled model's cosines of unrelated texts lie, at least
# DENSE_REACH.
KEYWORD_REACH = 0.2
COSINE_FLOOR = 0.1
DENSE_REACH = 0.1
# The dense arm's best match is trusted (:func:`trusted`) when it is at least TRUST_MARGIN of cosine above the
# arm's second and the keyword arm's best score is below TRUST_KEYWORD (no strong match of the query's words).
TRUST_MARGIN = 0.05
TRUST_KEYWORD = 0.3
# Feedback (:func:`fed_back`): the query's vector moved toward the FEEDBACK_MEMORIES best memories, by FEEDBACK_WEIGHT
# of their mean vector, when every one is a document of DOCUMENT_WORDS words or more.
FEEDBACK_MEMORIES = 2
FEEDBACK_WEIGHT = 0.3
DOCUMENT_WORDS = 80
# A memory that says what the question asks for (a time, for a question asking when: recall/asked.py) is weighed as
# if it matched one more of its words: ASKED_SHARE more keyword score. Measured on locomo-dev's questions asking
# when (docs/recall.md): 0.1 to 0.2 lift them alike.
ASKED_SHARE = 0.15


def keyword_score(bm25: float, ceiling: float) -> float:
    """BM25 as a share of ``ceiling``, the most the query's words could score (each word's idf x
    (K1 + 1), a term frequency saturated in a short document): 0..1, comparable across queries. A
    document holding every rare query word many times scores near 1; one common word once, little."""
    if ceiling <= 0.0:
        return 0.0
    return min(1.0, max(0.0, bm25 / ceiling))


def combine(
    keyword: Mapping[int, float],
    dense: Mapping[int, float],
    fusion: Fusion,
    trust: tuple[int, float] | None = None,
    answering: Container[int] = (),
) -> list[tuple[int, float]]:
    """Hybrid relevance of every candidate, best first, ties by id: ``keyword`` and ``dense`` map an
    id to its keyword score and its cosine (an id missing from ``keyword`` scores 0 there; every id
    must have a cosine unless the dense arm did not run). ``trust``: a memory (id) weighed as if its keyword
    score were at least the one given (:func:`trusted`). ``answering``: the memories that say what the question
    asks for (a time, for a question asking when: :mod:`.asked`), each weighed as if its keyword score were
    :data:`ASKED_SHARE` higher (past 1 if need be, so that each gains the same)."""
    given, lifted = trust if trust is not None else (None, 0.0)

    def words(i: int) -> float:  # the keyword score the candidate is weighed with
        score = max(keyword.get(i, 0.0), lifted) if i == given else keyword.get(i, 0.0)
        return score + ASKED_SHARE if i in answering else score  # not capped: every such memory gains alike

    scored = {
        i: fusion.keyword_weight * words(i) + fusion.dense_weight * dense.get(i, 0.0)
        for i in set(keyword) | set(dense)
    }
    return sorted(scored.items(), key=lambda pair: (-pair[1], pair[0]))


def trusted(
    best_keyword: float | None,
    nearest: Sequence[tuple[int, float]],
    keyword_found: Container[int],
    related: float,
) -> int | None:
    """The memory hybrid trusts though only the model finds it, if one: the dense arm's best match (``nearest``:
    the arm's first matches, best first, as (id, cosine)) when it is related (its cosine at least ``related``, the
    model's floor of a related memory) and stands out, at least :data:`TRUST_MARGIN` above the second, the keyword
    arm did not find it (``keyword_found``) and the keyword arm's best score (``best_keyword``)
    is below :data:`TRUST_KEYWORD`: the query's words match nothing strongly, so one that shares an incidental word
    must not bury what the model alone ranks first. Read, like the weights, over the caller's scope before any
    filter. :func:`combine` then weighs it as if its words matched as well as the keyword arm's best match."""
    if best_keyword is None or best_keyword >= TRUST_KEYWORD or len(nearest) < 2:
        return None
    (first, cosine), (_, second) = nearest[0], nearest[1]
    if first in keyword_found or cosine < related or cosine - second < TRUST_MARGIN:
        return None
    return first


def query_weights(best_keyword: float | None, best_cosine: float | None, fusion: Fusion) -> Fusion:
    """This query's weights: ``fusion``'s (the base weights), each divided by how far its arm reaches for the
    query, then scaled to sum to 1 (module docstring). ``best_keyword`` and ``best_cosine``: each arm's best
    score for the query over the caller's whole scope, read before any filter (``where``, category, type,
    topic, a list of entities), so that a filter only ever removes memories from a recall and never reorders
    the ones it keeps. ``fusion`` itself when either arm found nothing."""
    if best_keyword is None or best_cosine is None:
        return fusion
    k = fusion.keyword_weight / max(best_keyword, KEYWORD_REACH)
    d = fusion.dense_weight / max(best_cosine - COSINE_FLOOR, DENSE_REACH)
    return Fusion.model_construct(keyword_weight=k / (k + d), dense_weight=d / (k + d))


def is_document(content: str) -> bool:
    """Whether a memory's content is a document (:data:`DOCUMENT_WORDS` words or more: an abstract, a page, a
    file), not a statement: what :func:`fed_back` moves a query toward."""
    return len(content.split(maxsplit=DOCUMENT_WORDS)) >= DOCUMENT_WORDS


def fed_back(query: np.ndarray, best: Sequence[np.ndarray]) -> np.ndarray:
    """``query`` moved toward the vectors of the best memories (``best``: the first ranking's
    :data:`FEEDBACK_MEMORIES` best, every one a document): the query plus :data:`FEEDBACK_WEIGHT` of their mean,
    at unit length, in the query's own type."""
    moved = query.astype(np.float64) + FEEDBACK_WEIGHT * np.mean(np.stack(best).astype(np.float64), axis=0)
    unit: np.ndarray = (moved / np.linalg.norm(moved)).astype(query.dtype)
    return unit
