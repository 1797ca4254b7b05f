"""The keyword arm: SQLite FTS5, Porter-stemmed, ranked by BM25 as ``bm25()`` computes it.

``entities_fts`` indexes the current version of every entity; ``versions_fts`` every
version, for point-in-time recall. Visibility (scope, status, time) is part of the same
SQL statement as the MATCH, so the ``pool`` best rows are the best *visible* rows.

BM25's statistics (row count, average length, each word's document frequency) are a
tenant's own: a scoped search (agent and/or workspace given) counts only the rows that
scope admits, so another tenant's words and writes never move its scores. FTS5's
``bm25()`` counts the whole table, so it ranks unscoped searches only; scoped ones are
scored here from FTS5's own data (see :func:`scoped_search`), or by the in-memory mirror.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...contract.params import Expansion
from ...primitives.bm25 import ASCII_TOKEN, WEIGHTS, Terms, avgdl, ceiling, idf, length_norm, phrase_scores
from ...primitives.filters import View, scope_clauses
from ...primitives.hits import Hit, Ranking
from ...primitives.porter import stem
from ..base import CHANGE_LOG_KEEP, OP_GONE, OP_HEAD, OP_REBUILT, Connection
from .schema import TOKENIZE

_WEIGHTS = ", ".join(str(w) for w in WEIGHTS)
# Both FTS5 tables' columns, in order; an instance row's weight as SQL (``i.col`` is the column's name).
_COLUMNS = ("content", "summary", "tags")
_COLUMN_WEIGHT = "CASE i.col " + " ".join(f"WHEN '{c}' THEN {w}" for c, w in zip(_COLUMNS, WEIGHTS)) + " END"


def quote(token: str) -> str:
    """One FTS5 string literal; a doubled quote is how FTS5 escapes a quote inside it."""
    return '"' + token.replace('"', '""') + '"'


def match_expression(words: tuple[str, ...] | list[str]) -> str:
    """An FTS5 MATCH expression OR-ing ``words`` as literal strings."""
    return " OR ".join(quote(w) for w in words)


# --- FTS5's own tokenizing and statistics -----------------------------------------------------


class Fts5Tokenizer:
    """FTS5's own tokenizer, through a scratch table on one connection (for non-ASCII text)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.pv_tok USING fts5(c0, c1, c2, tokenize='{TOKENIZE}')"
        )
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.pv_tok_i USING fts5vocab(temp, pv_tok, 'instance')"
        )

    def terms(self, columns: Sequence[str | None]) -> tuple[Terms, int]:
        self.conn.execute("DELETE FROM temp.pv_tok")
        self.conn.execute("INSERT INTO temp.pv_tok(rowid, c0, c1, c2) VALUES (1, ?, ?, ?)", tuple(columns))
        counts: Terms = {}
        length = 0
        for term, col in self.conn.execute("SELECT term, col FROM temp.pv_tok_i"):
            weight = WEIGHTS[["c0", "c1", "c2"].index(col)]
            counts[term] = counts.get(term, 0.0) + weight
            length += 1
        self.conn.execute("DELETE FROM temp.pv_tok")
        return counts, length

    def phrase(self, word: str) -> tuple[str, ...]:
        """The index terms FTS5 makes of ``word`` (a quoted query word), in order: usually one, none
        or several when FTS5's Unicode tables split differently from Python's."""
        self.conn.execute("DELETE FROM temp.pv_tok")
        self.conn.execute("INSERT INTO temp.pv_tok(rowid, c0) VALUES (1, ?)", (word,))
        terms = tuple(t for (t,) in self.conn.execute('SELECT term FROM temp.pv_tok_i ORDER BY "offset"'))
        self.conn.execute("DELETE FROM temp.pv_tok")
        return terms


def phrase_of(conn: Connection, word: str) -> tuple[str, ...]:
    """The index terms of one query word: its stem when ASCII (the Python stemmer is FTS5's), else
    FTS5's own tokenizing."""
    if word.isascii():
        return tuple(stem(t) for t in ASCII_TOKEN.findall(word.lower()))
    return Fts5Tokenizer(conn).phrase(word)


def fts5_totals(conn: Connection, table: str = "entities_fts") -> tuple[int, int]:
    """(rows, tokens in all columns) as FTS5 itself stores them (its 'averages' record)."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    values, blob, i = [], bytes(row[0]), 0
    while i < len(blob):
        value, i = _varint(blob, i)
        values.append(value)
    return values[0], sum(values[1:])


def varints_total(blob: bytes) -> int:
    """The sum of SQLite varints laid end to end (FTS5's ``_docsize`` records: one per column).

    A byte below 0x80 ends a varint; each byte's 7 bits are worth 128 ** (bytes to that end).
    Token counts never need the ninth byte, whose 8 bits this would misread."""
    b = np.frombuffer(blob, dtype=np.uint8)
    ends = np.flatnonzero(b < 0x80)
    at = np.arange(len(b))
    place = ends[np.searchsorted(ends, at)] - at
    return int(((b & 0x7F).astype(np.int64) << (7 * place)).sum())


def doc_length(size: bytes) -> int:
    """A row's length in tokens, all columns, from its ``_docsize`` record (one varint per column:
    as many bytes as columns means every column is under 128 tokens, one byte each)."""
    return sum(size) if len(size) == len(WEIGHTS) else varints_total(size)


def _varint(blob: bytes, i: int) -> tuple[int, int]:
    """SQLite's varint: big-endian 7-bit groups, the ninth byte carrying 8 bits."""
    value = 0
    for n in range(9):
        byte = blob[i + n]
        if n == 8:
            return (value << 8) | byte, i + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, i + n + 1
    raise ValueError("bad varint")  # pragma: no cover


def tokenizer(conn: Connection) -> Fts5Tokenizer:
    """FTS5's own tokenizer on ``conn`` (the keyword mirror uses it for non-ASCII text)."""
    return Fts5Tokenizer(conn)


def totals(conn: Connection) -> tuple[int, int]:
    """(rows, tokens) of the current-versions index, as FTS5 stores them."""
    return fts5_totals(conn)


# Expansion reads up to 4 x max_variants vocabulary rows per query stem and checks each candidate's
# visibility with a MATCH: a 4,096-character query holds about a thousand stems, so one call is bounded.
MAX_EXPANDED_STEMS = 32  # the query's first stems long enough to expand
MAX_VARIANT_CHECKS = 256  # visibility checks in all


def log_changes(conn: Connection, vids: list[int], op: int) -> None:
    """Record changes for the in-memory mirrors (see indexes/mirror.py), in the writer's transaction."""
    conn.executemany("INSERT INTO head_changes (vid, op) VALUES (?, ?)", [(vid, op) for vid in vids])
    top = conn.execute("SELECT max(seq) FROM head_changes").fetchone()[0]
    if top is not None and top % 10_000 < len(vids):  # crossed a multiple of 10,000: trim
        conn.execute("DELETE FROM head_changes WHERE seq <= ?", (top - CHANGE_LOG_KEEP,))


def index_versions(conn: Connection, rows: list[tuple[int, str, str | None, str]], heads: bool) -> None:
    """Index new versions ``(vid, content, summary, tags)``: always in ``versions_fts``; in
    ``entities_fts`` too when they are heads."""
    conn.executemany("INSERT INTO versions_fts(rowid, content, summary, tags) VALUES (?, ?, ?, ?)", rows)
    if heads:
        conn.executemany("INSERT INTO entities_fts(rowid, content, summary, tags) VALUES (?, ?, ?, ?)", rows)
        log_changes(conn, [row[0] for row in rows], OP_HEAD)


def unindex_head(conn: Connection, vid: int, content: str, summary: str | None, tags: str) -> None:
    """A head was closed: it leaves the current index (it stays in the history index)."""
    conn.execute(
        "INSERT INTO entities_fts(entities_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        (vid, content, summary, tags),
    )
    log_changes(conn, [vid], OP_GONE)


def rebuild(conn: Connection) -> None:
    """Rebuild both indexes from the rows; mirrors rebuild too."""
    conn.execute("INSERT INTO entities_fts(entities_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO versions_fts(versions_fts) VALUES ('rebuild')")
    log_changes(conn, [0], OP_REBUILT)


def unindex_versions(conn: Connection, entity_id: int) -> None:
    """Remove every version of an entity from both indexes (purge), before the rows go."""
    for vid, content, summary, tags, closed in conn.execute(
        "SELECT vid, content, summary, tags, recorded_to_ms FROM entity_versions WHERE entity_id = ?",
        (entity_id,),
    ).fetchall():
        conn.execute(
            "INSERT INTO versions_fts(versions_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
            (vid, content, summary, tags),
        )
        if closed is None:
            unindex_head(conn, vid, content, summary, tags)


def search(conn: Connection, words: list[str], view: View, pool: int) -> tuple[list[Hit], float]:
    """The ``pool`` best visible matches for the OR of ``words``, best first, ties by id, scored by
    BM25; and the query's ceiling, the most its words could score under the same statistics
    (:func:`keyword_index.ceiling`), which turns a BM25 score into an absolute one.

    FTS5 ranks and filters in one statement (unscoped), or :func:`scoped_search` does (scoped); the
    in-memory keyword index, which recall asks first (recall/arms.py), gives the same hits with the same
    scores.
    """
    if not words:
        return [], 0.0
    if view.scoped:
        return scoped_search(conn, words, view, pool)
    table = "versions_fts" if view.historical else "entities_fts"
    sql = (
        f"SELECT v.entity_id, v.vid, bm25({table}, {_WEIGHTS}) AS rank_score "
        f"FROM {table} CROSS JOIN entity_versions v ON v.vid = {table}.rowid CROSS JOIN entities e ON e.id = v.entity_id "
        f"WHERE {table} MATCH :match AND {view.where} "
        "ORDER BY rank_score, v.entity_id LIMIT :pool"
    )
    params = dict(view.params, match=match_expression(words), pool=pool)
    hits = [Hit(int(eid), int(vid), -float(s)) for eid, vid, s in conn.execute(sql, params)]
    # FTS5's own statistics: its row count, and each word's rows as its MATCH counts them.
    dfs = [
        int(conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (quote(w),)).fetchone()[0])
        for w in words
    ]
    return hits, ceiling(fts5_totals(conn, table)[0], dfs)


def scoped_search(conn: Connection, words: list[str], view: View, pool: int) -> tuple[list[Hit], float]:
    """The ``pool`` best visible matches for the OR of ``words``, scored with the scope's statistics.

    Rows are counted as FTS5 counts them, but only the scope's: every head in it (every version of
    its entities for the history index), whatever its status. Row count and token total come from
    FTS5's ``<table>_docsize``; each word's rows and weighted frequency from FTS5's index itself (an
    ``fts5vocab`` instance table), never from re-tokenizing; the arithmetic is the mirror's, so the
    two paths give the same scores.
    """
    table = "versions_fts" if view.historical else "entities_fts"
    scope = " AND ".join(scope_clauses(*view.scope, {}))
    n_rows, n_tokens = _scope_totals(conn, table, scope, view.params)
    counts: list[dict[int, float]] = []  # per word: in-scope row -> weighted frequency
    visible: dict[int, tuple[int, bytes]] = {}  # row the view shows -> (entity id, size record)
    for word in words:
        freq: dict[int, float] = {}
        for vid, entity_id, shown, size, f in _phrase_rows(conn, table, phrase_of(conn, word), scope, view):
            freq[vid] = freq.get(vid, 0.0) + f
            if shown:
                visible[vid] = (entity_id, size)
        counts.append(freq)
    top = ceiling(n_rows, [len(freq) for freq in counts])
    if not visible:
        return [], top
    vids = np.fromiter(visible, dtype=np.int64, count=len(visible))
    slot = {vid: i for i, vid in enumerate(visible)}
    lengths = np.array([doc_length(size) for _, size in visible.values()], dtype=np.float64)
    mean = avgdl(n_rows, n_tokens)
    score = np.zeros(len(vids), dtype=np.float64)
    for freq in counts:  # words in query order, as FTS5 sums its phrases
        held = [(slot[vid], f) for vid, f in freq.items() if vid in slot]
        if held:
            rows = np.array([i for i, _ in held], dtype=np.int64)
            freqs = np.array([f for _, f in held], dtype=np.float64)
            score[rows] += phrase_scores(freqs, length_norm(lengths[rows], mean), idf(n_rows, len(freq)))
    entity_ids = np.array([entity_id for entity_id, _ in visible.values()], dtype=np.int64)
    return [Hit(eid, vid, s) for eid, vid, s in Ranking(vids, entity_ids, score).top(pool)], top


def _scope_totals(conn: Connection, table: str, scope: str, params: dict[str, Any]) -> tuple[int, int]:
    """(rows, tokens) of ``table`` within the scope, as FTS5 would count them in a table of its own."""
    heads = " AND v.recorded_to_ms IS NULL" if table == "entities_fts" else ""
    n, sizes = conn.execute(  # one row back: the size records laid end to end, summed in numpy
        f"SELECT count(*), group_concat(hex(d.sz), '') FROM entities e CROSS JOIN entity_versions v "
        f"ON v.entity_id = e.id{heads} CROSS JOIN {table}_docsize d ON d.id = v.vid WHERE {scope}",
        params,
    ).fetchone()
    return int(n), varints_total(bytes.fromhex(sizes or ""))


def _phrase_rows(
    conn: Connection, table: str, phrase: tuple[str, ...], scope: str, view: View
) -> list[tuple[Any, ...]]:
    """``(vid, entity id, shown by the view, size record, weighted frequency)`` for every in-scope row
    holding ``phrase``: FTS5's per-row phrase frequency; the number of rows is the phrase's document
    frequency in the scope."""
    if not phrase:
        return []
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.pv_{table}_i USING fts5vocab(main, {table}, 'instance')"
    )
    # v, e and d depend on i.doc alone, so they are the same on every row of a group.
    base = (
        f"FROM temp.pv_{table}_i i CROSS JOIN entity_versions v ON v.vid = i.doc CROSS JOIN entities e "
        f"ON e.id = v.entity_id CROSS JOIN {table}_docsize d ON d.id = i.doc WHERE i.term = :term AND {scope}"
    )
    if len(phrase) == 1:
        sql = f"SELECT i.doc, v.entity_id, ({view.where}), d.sz, sum({_COLUMN_WEIGHT}) {base} GROUP BY i.doc"
        return list(conn.execute(sql, dict(view.params, term=phrase[0])))
    # FTS5 split the word into several terms: count the places where they follow one another in a
    # column (overlapping places count, as in FTS5).
    sql = f'SELECT i.doc, i.col, i."offset", v.entity_id, ({view.where}), d.sz {base}'
    places = [
        {(r[0], r[1], r[2]): r[3:] for r in conn.execute(sql, dict(view.params, term=term))}
        for term in phrase
    ]
    weight = dict(zip(_COLUMNS, WEIGHTS))
    found: dict[int, list[Any]] = {}
    for (doc, col, start), about in places[0].items():
        if all((doc, col, start + k) in places[k] for k in range(1, len(phrase))):
            found.setdefault(doc, [doc, *about, 0.0])[-1] += weight[col]
    return [tuple(row) for row in found.values()]


def variants(conn: Connection, stems: tuple[str, ...], config: Expansion, view: View) -> list[str]:
    """Indexed terms that extend a query stem (``connect`` -> ``connector``), most common first.

    Only terms that are their own stem are used, so that sending one back through the porter
    tokenizer finds exactly that term; and only terms that occur in an entity this caller may
    see, so the count of variants says nothing about other tenants' words. Only the first
    ``MAX_EXPANDED_STEMS`` stems (of at least ``min_stem_chars``) are expanded, with at most
    ``MAX_VARIANT_CHECKS`` visibility checks in all.
    """
    table = "versions_fts" if view.historical else "entities_fts"
    visible = (
        f"SELECT 1 FROM {table} CROSS JOIN entity_versions v ON v.vid = {table}.rowid "
        f"CROSS JOIN entities e ON e.id = v.entity_id WHERE {table} MATCH :term AND {view.where} LIMIT 1"
    )
    found: list[str] = []
    checks = 0
    for s in [s for s in stems if len(s) >= config.min_stem_chars][:MAX_EXPANDED_STEMS]:
        if len(found) >= config.max_variants or checks >= MAX_VARIANT_CHECKS:
            break
        rows = conn.execute(
            f"SELECT term FROM {table}_vocab WHERE term > :s AND term < :end ORDER BY doc DESC, term LIMIT :n",
            {"s": s, "end": s + "\U0010ffff", "n": 4 * config.max_variants},
        ).fetchall()
        for (term,) in rows:
            if len(found) >= config.max_variants or checks >= MAX_VARIANT_CHECKS:
                break
            if term in stems or term in found or stem(term) != term:
                continue
            checks += 1
            if conn.execute(visible, dict(view.params, term=quote(term))).fetchone() is not None:
                found.append(term)
    return found
