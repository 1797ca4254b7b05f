"""Scoring knobs and decay: pure functions of their inputs (docs/recall.md).

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

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DAY_MS = 86_400_000
DECAY_HALF_LIFE_DAYS = 30.0


def decay(now_ms: int, last_accessed_ms: int | None, updated_at_ms: int, retrieval_count: int) -> float:
    """Freshness in (0, 1]: halves every half-life of idleness; use lengthens the half-life.

    idle      = now - max(last access, last update), never negative
    half-life = 30 days x (1 + log2(1 + retrieval_count))
    decay     = 0.5 ** (idle / half-life)

    Anchored by ``now_ms`` (``query_time_unix_ms``), so a result can be replayed exactly.
    """
    last = max(last_accessed_ms or 0, updated_at_ms)
    idle_days = max(0, now_ms - last) / DAY_MS
    half_life = DECAY_HALF_LIFE_DAYS * (1.0 + math.log2(1 + max(0, retrieval_count)))
    return float(0.5 ** (idle_days / half_life))


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


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preview(content: str, cap: int, entity_id: int, *, cut: bool = False) -> str:
    """Cut ``content`` at ``cap`` characters, with a footer naming the tool that reads the whole
    memory (also when only its other fields were cut: ``cut``)."""
    if len(content) <= cap and not cut:
        return content
    what = f"truncated at {cap} of {len(content)} characters" if len(content) > cap else "its other fields cut"
    return (content[:cap] + f"\n[... preview, {what}; the whole memory: "
            f"perseus_vault_get_entity(id={entity_id}), or vault.get_entity({entity_id}) in Python]")


def preview_body(body: dict[str, Any], cap: int) -> tuple[dict[str, Any], bool]:
    """``body`` within about ``cap`` characters of JSON, and whether anything was cut: the fields
    that fit whole are kept, in order; then text fields that did not fit are cut into the room
    left; other fields that do not fit are left out. Pure."""
    costs = {name: len(name) + 4 + len(json.dumps(value, ensure_ascii=False)) for name, value in body.items()}
    kept: set[str] = set()
    used = 2
    for name, cost in costs.items():
        if used + cost <= cap:
            kept.add(name)
            used += cost
    cut: dict[str, str] = {}
    for name, value in body.items():
        room = cap - used - len(name) - 7
        if name not in kept and isinstance(value, str) and room >= 20:
            cut[name] = value[:room] + "…"
            used = cap
    out = {name: cut.get(name, value) for name, value in body.items() if name in kept or name in cut}
    return out, len(kept) < len(body)
