"""What a recall arm returns: candidates as a :class:`Ranking` (from an index) or :class:`Hit` s (visible,
best first), and the walk that turns one into the other under the caller's view.

Shared by the backend's searches (:mod:`storage`) and the in-memory indexes (:mod:`indexes`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from .dbapi import Connection
from .filters import FROM_VERSIONS_FIRST, View, from_vids, id_list

# A current head's columns as held in memory: (its POOL_COLUMNS, its filters.RULE_COLUMNS).
HeadColumns = tuple[tuple[Any, ...], tuple[Any, ...]]


class Heads(Protocol):
    """The current heads' columns held in memory (:class:`indexes.heads.Heads`), as the walk below reads
    them: stated here, so that what the indexes and the storage searches share names no index."""

    def matching(
        self, conn: Connection, condition: tuple[str, dict[str, Any]], vids: np.ndarray, heads: int
    ) -> np.ndarray: ...

    def rows(self, conn: Connection, vids: Sequence[int]) -> list[HeadColumns | None]: ...


class Ranking:
    """Scored candidates of one query, ordered on demand (best first, ties by entity id).
    ``ceiling``: for a keyword ranking, the most the query's words could score (see fusion.py).
    ``exact``: when given, rows that could not reach the best ``exact`` were left out (``partial``), so
    only that many are in the store's own order; a walk that needs more asks for the whole ranking.
    ``heads``: given by an index whose candidates are all current heads of the snapshot being read;
    the walk then reads what it needs of them from that memory (:mod:`indexes.heads`). ``population``:
    about how many heads the ranking was drawn from, when known (:func:`visible_hits` weighs a pass over
    them against a long walk)."""

    def __init__(
        self,
        vids: np.ndarray,
        entity_ids: np.ndarray,
        scores: np.ndarray,
        ceiling: float = 0.0,
        exact: int | None = None,
        heads: Heads | None = None,
        population: int = 0,
    ) -> None:
        self.vids, self.entity_ids, self.scores, self.ceiling = vids, entity_ids, scores, ceiling
        self.partial = exact is not None
        self.exact = len(scores) if exact is None else min(exact, len(scores))
        self.heads = heads
        self.population = population

    def __len__(self) -> int:
        return len(self.scores)

    def top(self, k: int) -> list[tuple[int, int, float]]:
        """The best ``k`` as (entity id, vid, score); exact at the cut, where ties go by id."""
        return list(zip(*self.best(k)))

    def best(self, k: int) -> tuple[list[int], list[int], list[float]]:
        """The best ``k`` as three lists, entity ids, vids and scores (the order of :meth:`top`)."""
        scores = self.scores
        if k < len(scores):
            cut = np.partition(scores, len(scores) - k)[len(scores) - k]
            pick = np.flatnonzero(scores >= cut)
        else:
            pick = np.arange(len(scores))
        order = pick[np.lexsort((self.entity_ids[pick], -scores[pick]))][:k]
        return self.entity_ids[order].tolist(), self.vids[order].tolist(), scores[order].tolist()


# What recall's knobs read of every pool candidate (recall._rank). The walk below reads them in the
# statement that checks visibility, so the pool costs no second statement.
POOL_COLUMNS = (
    "v.entity_id",
    "v.verified",
    "v.certainty",
    "e.created_at_ms",
    "v.updated_at_ms",
    "v.status",
    "v.superseded_by",
    "v.expires_at_ms",
    "v.provenance_class",
    "e.workspace_hash",
    "v.valid_from_ms",
)
POOL_NAMES = tuple(c.split(".")[1] for c in POOL_COLUMNS)


@dataclass(slots=True)
class Hit:
    """One match of a recall arm: the entity, the version that matched, and its score (higher is better);
    ``row``: its :data:`POOL_COLUMNS` when the search read them already. (Not frozen: a recall makes a
    few hundred, and a frozen dataclass costs seven times as much to make.)"""

    entity_id: int
    vid: int
    score: float
    row: tuple[Any, ...] | None = field(default=None, compare=False, repr=False)


def visible_hits(conn: Connection, ranking: Ranking, view: View, pool: int) -> list[Hit]:
    """The ``pool`` best candidates of ``ranking`` the view lets this caller see, best first (:func:`walk`)."""
    return walk(conn, ranking, view, pool).hits


class Walk(NamedTuple):
    """What :func:`walk` found: the visible hits, best first, and how many candidates it looked at (for
    callers that judge the filters' bite)."""

    hits: list[Hit]
    examined: int


def walk(conn: Connection, ranking: Ranking, view: View, pool: int) -> Walk:
    """Walk a ranking best first, keeping the candidates the view lets this caller see (a partial
    ranking: its exact part only).

    Batches grow with the share of candidates the filters rejected so far, so a narrow view
    costs a few statements, not one per page of candidates. The walk says how many candidates it looked
    at (``examined``), for callers that judge the filters' bite.

    A where filter that keeps so few candidates that the walk would look at more than :data:`SCAN_SHARE` of
    the ranking's ``population`` is asked about every candidate at once instead (:func:`kept_by_where`: one
    pass over the heads, remembered), and the walk goes on over the ones it keeps: the same hits."""
    hits: list[Hit] = []
    want = pool + pool // 4 + 8
    taken = 0
    sql = f"SELECT v.vid, {', '.join(POOL_COLUMNS)} FROM {from_vids(conn)} WHERE {view.where}"
    heads, rule = ranking.heads, view.rule
    while len(hits) < pool and taken < ranking.exact:
        population = ranking.population
        if (
            taken
            and population
            and view.condition_sql is not None
            and not ranking.partial
            and (pool - len(hits)) / max(len(hits) / taken, 1e-6) > SCAN_SHARE * population
            and ranking.exact - taken > SCAN_SHARE * population
        ):
            # The filter keeps few: ask it about every candidate at once, then walk the ones it keeps.
            keep = kept_by_where(conn, view, ranking.vids, heads, population)
            return walk(
                conn,
                Ranking(ranking.vids[keep], ranking.entity_ids[keep], ranking.scores[keep], heads=heads),
                view,
                pool,
            )
        eids, vids, scores = ranking.best(min(taken + want, ranking.exact))
        eids, vids, scores = eids[taken:], vids[taken:], scores[taken:]
        taken += len(vids)
        if heads is not None and rule is not None:  # heads of this snapshot: the rule decides, in memory
            for eid, vid, score, known in zip(eids, vids, scores, heads.rows(conn, vids)):
                if known is not None and rule(known[1]):
                    hits.append(Hit(eid, vid, score, known[0]))
        else:
            visible = {row[0]: row[1:] for row in conn.execute(sql, dict(view.params, vids=id_list(vids)))}
            hits.extend(
                Hit(eid, vid, score, visible[vid])
                for eid, vid, score in zip(eids, vids, scores)
                if vid in visible
            )
        rate = max(len(hits) / taken, 0.01)
        want = min(int((pool - len(hits)) / rate * 1.25) + 8, 20_000)
    return Walk(hits[:pool], taken)


# A walk that would look at more candidates than this share of the heads asks the where filter about all
# of them at once instead: a pass over the heads costs about a fifth of what the walk pays per candidate
# (measured at 100k: 65 ms for the pass; the walk's statements about 4 us a candidate), and the answers
# are remembered (indexes/heads.py).
SCAN_SHARE = 0.2


def kept_by_where(
    conn: Connection, view: View, vids: np.ndarray, heads: Heads | None, population: int
) -> np.ndarray:
    """Whether the view's where filter (alone) keeps each of ``vids`` (current heads), as booleans: from the
    heads' memory when there is one, else in one statement (over every head for many ``vids``)."""
    assert view.condition_sql is not None
    if heads is not None:
        return heads.matching(conn, view.condition_sql, vids, population)
    asked, kept = ask(conn, view.condition_sql, vids, len(vids) > SCAN_SHARE * population)
    return np.isin(vids, asked[kept])


def ask(
    conn: Connection, condition: tuple[str, dict[str, Any]], vids: np.ndarray, whole: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(versions, whether the where filter ``condition`` keeps each): for ``vids``, or, ``whole``, for every
    current head in one pass (cheaper than a lookup per version past a fifth of them)."""
    sql, params = condition
    if whole:
        # The heads, then those the filter keeps: two statements cost less than a flag on every row, and the
        # entities are joined only when the filter reads their columns (at 100k the join costs what the JSON does).
        source = FROM_VERSIONS_FIRST if re.search(r"\be\.", sql) else "entity_versions v"
        heads = np.array(
            [
                r[0]
                for r in conn.execute("SELECT v.vid FROM entity_versions v WHERE v.recorded_to_ms IS NULL")
            ],
            dtype=np.int64,
        )
        kept = np.array(
            [
                r[0]
                for r in conn.execute(
                    f"SELECT v.vid FROM {source} WHERE v.recorded_to_ms IS NULL AND {sql}", params
                )
            ],
            dtype=np.int64,
        )
        return heads, np.isin(heads, kept)
    rows = conn.execute(
        f"SELECT v.vid, CASE WHEN {sql} THEN 1 ELSE 0 END FROM {from_vids(conn)}",
        dict(params, vids=id_list(np.asarray(vids).tolist())),
    ).fetchall()
    return (np.array([r[0] for r in rows], dtype=np.int64), np.array([bool(r[1]) for r in rows], dtype=bool))


def selection(conn: Connection, view: View) -> dict[int, tuple[Any, ...]]:
    """Every head the current ``view`` shows (its where filter with the rest), with its :data:`POOL_COLUMNS`,
    by vid: one pass over the heads, for a filter that keeps few of them."""
    sql = f"SELECT v.vid, {', '.join(POOL_COLUMNS)} FROM {FROM_VERSIONS_FIRST} WHERE {view.where}"
    return {row[0]: tuple(row[1:]) for row in conn.execute(sql, view.params)}


def selected_hits(ranking: Ranking, visible: dict[int, tuple[Any, ...]], pool: int) -> list[Hit]:
    """The ``pool`` best of ``ranking`` among ``visible`` (a :func:`selection`), best first, ties by id."""
    if not visible or not len(ranking):
        return []
    keep = np.isin(ranking.vids, np.fromiter(visible, dtype=np.int64, count=len(visible)))
    kept = Ranking(ranking.vids[keep], ranking.entity_ids[keep], ranking.scores[keep])
    return [Hit(eid, vid, score, visible[vid]) for eid, vid, score in kept.top(pool)]
