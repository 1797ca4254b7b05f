"""The keyword arm: SQLite FTS5, Porter-stemmed, ranked by ``bm25()``.

``entities_fts`` indexes the current version of every entity; ``versions_fts`` every
version, for point-in-time recall (its BM25 statistics are those of the whole history).
Visibility (scope, status, time) is part of the same SQL statement as the MATCH, so
the ``pool`` best rows are the best *visible* rows.
"""

from __future__ import annotations

from typing import Any

from .filters import View
from .keyword_index import KeywordIndex
from .mirror import OP_GONE, OP_HEAD, OP_REBUILT, Hit, visible_hits
from .params import Expansion
from .porter import stem
from .query import match_expression, quote
from .schema import BM25_WEIGHTS

_WEIGHTS = ", ".join(str(w) for w in BM25_WEIGHTS)


# The change log keeps this many entries; a mirror further behind rebuilds.
CHANGE_LOG_KEEP = 200_000


def log_changes(conn: Any, vids: list[int], op: int) -> None:
    """Record changes for the in-memory mirrors (see mirror.py), in the writer's transaction."""
    conn.executemany("INSERT INTO head_changes (vid, op) VALUES (?, ?)", [(vid, op) for vid in vids])
    top = conn.execute("SELECT max(seq) FROM head_changes").fetchone()[0]
    if top is not None and top % 10_000 < len(vids):  # crossed a multiple of 10,000: trim
        conn.execute("DELETE FROM head_changes WHERE seq <= ?", (top - CHANGE_LOG_KEEP,))


def index_versions(conn: Any, rows: list[tuple[int, str, str | None, str]], heads: bool) -> None:
    """Index new versions ``(vid, content, summary, tags)``: always in ``versions_fts``; in
    ``entities_fts`` too when they are heads."""
    conn.executemany("INSERT INTO versions_fts(rowid, content, summary, tags) VALUES (?, ?, ?, ?)", rows)
    if heads:
        conn.executemany("INSERT INTO entities_fts(rowid, content, summary, tags) VALUES (?, ?, ?, ?)", rows)
        log_changes(conn, [row[0] for row in rows], OP_HEAD)


def unindex_head(conn: Any, vid: int, content: str, summary: str | None, tags: str) -> None:
    """A head was closed: it leaves the current index (it stays in the history index)."""
    conn.execute(
        "INSERT INTO entities_fts(entities_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        (vid, content, summary, tags),
    )
    log_changes(conn, [vid], OP_GONE)


def rebuild(conn: Any) -> None:
    """Rebuild both indexes from the rows; mirrors rebuild too."""
    conn.execute("INSERT INTO entities_fts(entities_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO versions_fts(versions_fts) VALUES ('rebuild')")
    log_changes(conn, [0], OP_REBUILT)


def unindex_versions(conn: Any, entity_id: int) -> None:
    """Remove every version of an entity from both indexes (purge), before the rows go."""
    for vid, content, summary, tags, closed in conn.execute(
        "SELECT vid, content, summary, tags, recorded_to_ms FROM entity_versions WHERE entity_id = ?", (entity_id,)
    ).fetchall():
        conn.execute(
            "INSERT INTO versions_fts(versions_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
            (vid, content, summary, tags),
        )
        if closed is None:
            unindex_head(conn, vid, content, summary, tags)


def search(
    conn: Any, words: list[str], stems: list[str], view: View, pool: int, index: KeywordIndex | None = None
) -> list[Hit]:
    """The ``pool`` best visible matches for the OR of ``words``, best first, ties by id.

    ``stems`` are the words' index terms, in the same order. When the in-memory ``index``
    can answer for this connection's snapshot, it ranks and SQL only filters; otherwise
    FTS5 does both in one statement. The two give the same hits with the same scores.
    """
    if not words:
        return []
    if index is not None and not view.historical and not view.narrowed and all(w.isascii() for w in words):
        ranking = index.search(conn, stems, view.params.get("agent_id"), view.params.get("workspace_hash"))
        if ranking is not None:
            return visible_hits(conn, ranking, view, pool)
    table = "versions_fts" if view.historical else "entities_fts"
    sql = (
        f"SELECT v.entity_id, v.vid, bm25({table}, {_WEIGHTS}) AS rank_score "
        f"FROM {table} CROSS JOIN entity_versions v ON v.vid = {table}.rowid CROSS JOIN entities e ON e.id = v.entity_id "
        f"WHERE {table} MATCH :match AND {view.where} "
        "ORDER BY rank_score, v.entity_id LIMIT :pool"
    )
    params = dict(view.params, match=match_expression(words), pool=pool)
    return [Hit(int(eid), int(vid), -float(s)) for eid, vid, s in conn.execute(sql, params)]


def variants(conn: Any, stems: tuple[str, ...], config: Expansion, view: View) -> list[str]:
    """Indexed terms that extend a query stem (``connect`` -> ``connector``), most common first.

    Only terms that are their own stem are used, so that sending one back through the porter
    tokenizer finds exactly that term; and only terms that occur in an entity this caller may
    see, so the count of variants says nothing about other tenants' words.
    """
    table = "versions_fts" if view.historical else "entities_fts"
    visible = (
        f"SELECT 1 FROM {table} CROSS JOIN entity_versions v ON v.vid = {table}.rowid "
        f"CROSS JOIN entities e ON e.id = v.entity_id WHERE {table} MATCH :term AND {view.where} LIMIT 1"
    )
    found: list[str] = []
    for s in stems:
        if len(s) < config.min_stem_chars or len(found) >= config.max_variants:
            continue
        rows = conn.execute(
            f"SELECT term FROM {table}_vocab WHERE term > :s AND term < :end ORDER BY doc DESC, term LIMIT :n",
            {"s": s, "end": s + "\U0010ffff", "n": 4 * config.max_variants},
        ).fetchall()
        for (term,) in rows:
            if len(found) >= config.max_variants:
                break
            if term in stems or term in found or stem(term) != term:
                continue
            if conn.execute(visible, dict(view.params, term=quote(term))).fetchone() is not None:
                found.append(term)
    return found
