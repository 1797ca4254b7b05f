"""A keyword search answered by the in-memory index, for both backends' ``KeywordStore.search``.

When the mirror (:class:`~.base.KeywordMirror`) can vouch for the connection's snapshot it ranks, and SQL
only filters the best rows by the view (:func:`hits.visible_hits`); the backends fall back to their own
SQL otherwise, with the same scores.
"""

from __future__ import annotations

from ..primitives.filters import View
from ..primitives.hits import Hit, visible_hits
from .base import Connection, KeywordMirror


def answer(conn: Connection, index: KeywordMirror | None, words: list[str], stems: list[str], view: View,
           pool: int) -> tuple[list[Hit], float] | None:
    """The mirror's ``pool`` best visible hits and the query's ceiling, or None when it cannot answer: no
    mirror, a view it does not cover (a point in time, a list of ids), non-ASCII words, or a snapshot it
    is not at."""
    if index is None or view.historical or view.narrowed or not all(w.isascii() for w in words):
        return None
    # The best rows only (pruned: see indexes/keyword.py), deep enough for the pool in most views;
    # when the view's filters hide many of them, every match is ranked.
    ranking = index.search(conn, stems, *view.scope, depth=2 * pool + 64)
    if ranking is None:
        return None
    hits = visible_hits(conn, ranking, view, pool)
    if len(hits) < pool and ranking.partial:
        ranking = index.search(conn, stems, *view.scope)
        if ranking is None:
            return None
        hits = visible_hits(conn, ranking, view, pool)
    return hits, ranking.ceiling
