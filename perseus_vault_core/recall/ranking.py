"""Scoring knobs: pure functions of their inputs (docs/recall.md).

A recall arm yields candidates with an absolute relevance (see fusion.py: the keyword score, the
cosine, or their weighted sum). Relevance is judged first: ``min_score`` applies to it, and each
candidate is *related* or not (recall's thresholds, ``min_score="auto"``). The knobs then weigh it,
each as a factor:

    score = relevance x bounded(trust factor x content factor x validity x startup) x recency

where ``bounded`` holds the product to ``KNOB_RANGE`` (0.8 to 1.25): those knobs re-order near-ties
(memories within about a third of each other's relevance). ``recency`` (``recency_half_life_secs``)
is ``0.5 ** (age / half-life)`` in full: between two related memories it may reorder anything. The
order is every related candidate before every unrelated one, each by score, so no knob ever lifts an
unrelated memory over a related one. ``diversity_halving`` then caps how many slots each matched
keyword may take at the top. Ties break by entity id, ascending, so the same store and call give the
same order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def trust(verified: bool, certainty: float | None) -> float:
    """Provenance strength in [0, 1]: verified is full; unverified is its certainty (none = 0)."""
    if verified:
        return 1.0
    return min(1.0, max(0.0, certainty or 0.0))


def witness(stems: Sequence[str], content_stems: set[str], content_chars: int) -> float:
    """Share of the query's words literally present in the content, damped by content length.

    A short note naming every query word scores near 1; the same words buried in a long
    document count less: damping is 1 / (1 + log10(1 + chars / 500)).
    """
    if not stems:
        return 0.0
    share = sum(1 for s in stems if s in content_stems) / len(stems)
    return share / (1.0 + math.log10(1.0 + content_chars / 500.0))


def recency(age_ms: int, half_life_secs: float) -> float:
    """Multiplier 0.5 ** (age / half-life) for ``recency_half_life_secs``."""
    return float(0.5 ** (max(0, age_ms) / 1000.0 / half_life_secs))


@dataclass(slots=True)
class Scored:
    """A candidate moving through the knobs: its absolute ``relevance`` and the ``score`` it ranks by."""

    id: int
    relevance: float
    score: float = 0.0
    keyword: int | None = None  # index of the first query word it matches, for diversity
    related: bool = True  # judged on its relevance, before the knobs: related ones rank first
    linked: bool = False  # related only as a related hit's linked neighbour (linked.py)
    lift: float = 0.0  # the relevance its link to a related hit added (linked.py)


# How far the knobs together may move a relevance: a factor in this range (docs/recall.md).
KNOB_RANGE = (0.8, 1.25)


def bounded(factor: float) -> float:
    """The knobs' combined factor held to :data:`KNOB_RANGE`."""
    return min(KNOB_RANGE[1], max(KNOB_RANGE[0], factor))


def order(items: list[Scored]) -> list[Scored]:
    """Related before unrelated; then highest score first; equal scores by ascending id (determinism)."""
    return sorted(items, key=lambda s: (not s.related, -s.score, s.id))


def diversify(items: list[Scored], limit: int, halving: float) -> list[Scored]:
    """Give the n-th distinct matched keyword ceil(limit x halving^n) of the top slots.

    ``items`` is in score order. Keywords are numbered by query order. Items beyond their
    keyword's quota are not dropped: they follow, in order, after the items that fit.
    ``halving`` 1.0 leaves the order unchanged.
    """
    if halving >= 1.0:
        return items
    used: dict[int | None, int] = {}
    head: list[Scored] = []
    tail: list[Scored] = []
    for item in items:
        n = item.keyword
        quota = limit if n is None else math.ceil(limit * halving**n)
        if used.get(n, 0) < quota:
            used[n] = used.get(n, 0) + 1
            head.append(item)
        else:
            tail.append(item)
    return head + tail
