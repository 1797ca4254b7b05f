"""The keyword arm on Postgres: postings tokenized in Python as FTS5 tokenizes, ranked by BM25 exactly as the
SQLite backend ranks (the protocol is :class:`~..base.KeywordStore`).

Why not Postgres's own full-text search: ``ts_rank`` is not BM25 (no document frequencies, its own length
normalisation), and its parsers and dictionaries are not FTS5's ``porter unicode61 remove_diacritics 2``.
A vault gives the same hits with the same scores on either backend, and the in-memory mirror
(:mod:`indexes.keyword`) ranks for both; so the index is ours: ``keyword_docs`` holds each version's
length in tokens and ``keyword_postings`` each term's weighted frequency in it (schema migration 4),
computed by :func:`bm25.terms`, a pure-Python tokenizer held to FTS5's on every code point of Unicode's
first two planes (tests/core/primitives/test_bm25.py).

Every version is indexed once, when it is written, and each document and posting carries its entity, scope
and whether it is current (closing a head turns that off): a search reads the postings alone, with no join
to the versions, and applies the view's other rules to its best rows only (:func:`hits.visible_hits`), as
the in-memory index's answers are. A history view ranks over every version, as the SQLite backend's
``versions_fts`` does. BM25's statistics are the SQLite
backend's: a scoped search (agent and/or workspace given) counts the scope's heads only, an unscoped one
every head, a history view every version (of the scope); each word's document frequency within the same
rows. The SQL ranks (the BM25 sum in query order, ``ORDER BY`` inside the aggregate, so its floating point
is the same as Python's), and :func:`search` recomputes the best rows' scores with :func:`bm25.phrase_scores`
summed in query order, as FTS5 sums its phrases, so the scores are the SQLite backend's to the last bit.

One approximation: postings carry no positions. A query word that tokenizes to several terms (``e-mail``)
is a phrase to FTS5, which counts the places where its terms follow one another; here a row holds the word
when it holds all of its terms, and the word's frequency there is the smallest of theirs. Query words are
single tokens in nearly every query (recall splits them so), and then the two agree exactly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...contract.params import Expansion
from ...primitives.bm25 import K1, B, Terms, avgdl, ceiling, idf, length_norm, phrase, phrase_scores, terms
from ...primitives.dialect import POSTGRES
from ...primitives.filters import View
from ...primitives.hits import Hit, Ranking, visible_hits
from ...primitives.porter import stem
from ..base import OP_GONE, OP_HEAD, OP_REBUILT, Connection
from .changes import log_changes

__all__ = [
    "index_versions",
    "log_changes",
    "rebuild",
    "search",
    "tokenizer",
    "totals",
    "unindex_head",
    "unindex_versions",
    "variants",
]

# Expansion reads up to 4 x max_variants vocabulary terms per query stem and checks each candidate's
# visibility: bounded as the SQLite backend's is (storage/sqlite/keyword.py).
MAX_EXPANDED_STEMS = 32
MAX_VARIANT_CHECKS = 256
REBUILD_BATCH = 2_000  # versions read and tokenized at a time by :func:`rebuild`
INSERT_BATCH = 50_000  # postings per INSERT
RANK_MARGIN = 16  # rows ranked by SQL beyond the pool, rescored in Python before the cut


# A B-tree key holds at most about 2,700 bytes, and FTS5 takes terms of any length: a term longer than this
# is stored as its first characters, "#" (never part of a term) and its SHA-256, so that it still matches
# itself exactly and no write fails on a long token (a URL without separators, a base64 blob).
MAX_TERM_BYTES = 1_000


def stored(term: str) -> str:
    """``term`` as its postings key (see :data:`MAX_TERM_BYTES`)."""
    if len(term) * 4 <= MAX_TERM_BYTES or len(term.encode("utf-8")) <= MAX_TERM_BYTES:
        return term
    return term[:200] + "#" + hashlib.sha256(term.encode("utf-8")).hexdigest()


class UnicodeTokenizer:
    """The index's own tokenizing (:class:`~..base.Tokenizer`): pure Python, no connection needed."""

    def terms(self, columns: Sequence[str | None]) -> tuple[Terms, int]:
        return terms(columns)


def tokenizer(conn: Connection) -> UnicodeTokenizer:
    """The tokenizer the index was written with (the in-memory mirror uses it for non-ASCII text)."""
    return UnicodeTokenizer()


def totals(conn: Connection) -> tuple[int, int]:
    """(heads indexed, their tokens in all columns): the statistics an unscoped search counts."""
    n, tokens = conn.execute(
        "SELECT count(*), coalesce(sum(length), 0) FROM keyword_docs WHERE head"
    ).fetchone()
    return int(n), int(tokens)


# --- writing -----------------------------------------------------------------------------------


def _write(conn: Connection, rows: Sequence[Sequence[Any]]) -> None:
    """Index versions ``(vid, content, summary, tags)``: one document each and its postings, in a few
    statements (arrays unnested server-side, not a statement per row)."""
    vids: list[int] = []
    lengths: list[int] = []
    p_terms: list[str] = []
    p_vids: list[int] = []
    p_freqs: list[float] = []
    for vid, content, summary, tags in rows:
        counts, length = terms((content, summary, tags))
        vids.append(int(vid))
        lengths.append(length)
        p_terms.extend(map(stored, counts))
        p_vids.extend([int(vid)] * len(counts))
        p_freqs.extend(counts.values())
    if not vids:
        return
    conn.execute(  # each version's entity, scope and currency, copied from its rows
        "INSERT INTO keyword_docs (vid, entity_id, agent_id, workspace_hash, head, length, scope) "
        "SELECT u.vid, v.entity_id, e.agent_id, e.workspace_hash, v.recorded_to_ms IS NULL, u.length, v.scope "
        "FROM unnest(CAST(? AS bigint[]), CAST(? AS integer[])) AS u(vid, length) "
        "JOIN entity_versions v ON v.vid = u.vid JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope",
        (vids, lengths),
    )
    for at in range(0, len(p_terms), INSERT_BATCH):
        conn.execute(
            "INSERT INTO keyword_postings (term, vid, freq, length, entity_id, agent_id, workspace_hash, head, scope) "
            "SELECT u.term, u.vid, u.freq, d.length, d.entity_id, d.agent_id, d.workspace_hash, d.head, d.scope FROM "
            "unnest(CAST(? AS text[]), CAST(? AS bigint[]), CAST(? AS double precision[])) AS u(term, vid, freq) "
            "JOIN keyword_docs d ON d.vid = u.vid",
            (
                p_terms[at : at + INSERT_BATCH],
                p_vids[at : at + INSERT_BATCH],
                p_freqs[at : at + INSERT_BATCH],
            ),
        )


def index_versions(conn: Connection, rows: list[tuple[int, str, str | None, str]], heads: bool) -> None:
    """Index new versions ``(vid, content, summary, tags)``; ``heads``: they are current (the change log
    says so to the mirrors)."""
    _write(conn, rows)
    if heads:
        log_changes(conn, [row[0] for row in rows], OP_HEAD)


def unindex_head(conn: Connection, vid: int, content: str, summary: str | None, tags: str) -> None:
    """A head was closed: it stays in the index as history, no longer current (its document and postings
    say so), and the mirrors are told."""
    conn.execute("UPDATE keyword_docs SET head = false WHERE vid = ?", (vid,))
    conn.execute("UPDATE keyword_postings SET head = false WHERE vid = ?", (vid,))
    log_changes(conn, [vid], OP_GONE)


def unindex_versions(conn: Connection, entity_id: int) -> None:
    """Remove every version of an entity from the index (purge), before the rows go."""
    head = conn.execute(
        "SELECT vid FROM entity_versions WHERE entity_id = ? AND recorded_to_ms IS NULL", (entity_id,)
    ).fetchone()
    if head is not None:
        log_changes(conn, [int(head[0])], OP_GONE)
    versions = "SELECT vid, scope FROM entity_versions WHERE entity_id = ?"
    conn.execute(f"DELETE FROM keyword_postings WHERE (vid, scope) IN ({versions})", (entity_id,))
    conn.execute(f"DELETE FROM keyword_docs WHERE (vid, scope) IN ({versions})", (entity_id,))


def rebuild(conn: Connection) -> None:
    """Recompute the index from the rows, a batch of versions at a time; mirrors rebuild too. (DELETE, not
    TRUNCATE: readers in an older snapshot keep seeing the old index, as MVCC promises.)"""
    conn.execute("DELETE FROM keyword_postings")
    conn.execute("DELETE FROM keyword_docs")
    last = 0
    while True:
        rows = conn.execute(
            "SELECT vid, content, summary, tags FROM entity_versions WHERE vid > ? ORDER BY vid LIMIT ?",
            (last, REBUILD_BATCH),
        ).fetchall()
        if not rows:
            break
        _write(conn, rows)
        last = int(rows[-1][0])
    log_changes(conn, [0], OP_REBUILT)


# --- searching ---------------------------------------------------------------------------------

# The rows holding each of the query's phrases (``:q_*``: one row per distinct term of each phrase) among the
# rows the statistics count ({rows}: a clause over the postings ``p``), and the phrase's frequency there:
# all its terms present, the least of their frequencies (see the module docstring).
_HITS = (
    "WITH kq(ph, term, n) AS (SELECT * FROM unnest(CAST(:q_ph AS integer[]), CAST(:q_term AS text[]), "
    "CAST(:q_n AS integer[]))), "
    "kh AS (SELECT kq.ph, p.vid, p.entity_id, p.length, min(p.freq) AS f FROM kq JOIN keyword_postings p "
    'ON p.term = kq.term COLLATE "C" WHERE {rows} GROUP BY kq.ph, p.vid, p.entity_id, p.length '
    "HAVING count(*) = max(kq.n))"
)
_VERSIONS = (
    "JOIN entity_versions v ON v.vid = {0}.vid AND v.scope = {0}.scope "
    "JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope"
)
# The best ``:limit`` rows by their BM25 sum over the words in query order (the same operations, in the same
# order, as bm25.length_norm and bm25.phrase_scores), from the postings alone; the view's other rules
# (status, time, category...) are applied to them afterwards, best first (hits.visible_hits).
_RANK = (
    _HITS
    + ", kw(pos, ph, idf) AS (SELECT * FROM unnest(CAST(:w_pos AS integer[]), CAST(:w_ph AS integer[]), "
    "CAST(:w_idf AS double precision[]))) "
    "SELECT kh.entity_id, kh.vid, kh.length, array_agg(kw.pos ORDER BY kw.pos), array_agg(kh.f ORDER BY kw.pos), "
    "sum(kw.idf * ((kh.f * CAST(:k1p1 AS double precision)) / (kh.f + CAST(:k1 AS double precision) * "
    "(1 - CAST(:b AS double precision) + CAST(:b AS double precision) * kh.length / CAST(:avgdl AS double precision)))) "
    "ORDER BY kw.pos) AS score "
    "FROM kh JOIN kw ON kw.ph = kh.ph GROUP BY kh.vid, kh.entity_id, kh.length "
    "ORDER BY score DESC, kh.entity_id LIMIT :limit"
)


# The same two statements when every phrase is one term (nearly every query): the postings of each term
# directly, with no grouping of a phrase's terms first.
_DF_TERMS = (
    "SELECT p.term, count(*) FROM keyword_postings p WHERE p.term = ANY(CAST(:terms AS text[])) "
    "AND {rows} GROUP BY p.term"
)
_RANK_TERMS = (
    "WITH kw(pos, term, idf) AS (SELECT * FROM unnest(CAST(:w_pos AS integer[]), CAST(:w_term AS text[]), "
    "CAST(:w_idf AS double precision[]))) "
    "SELECT p.entity_id, p.vid, p.length, array_agg(kw.pos ORDER BY kw.pos), array_agg(p.freq ORDER BY kw.pos), "
    "sum(kw.idf * ((p.freq * CAST(:k1p1 AS double precision)) / (p.freq + CAST(:k1 AS double precision) * "
    "(1 - CAST(:b AS double precision) + CAST(:b AS double precision) * p.length / CAST(:avgdl AS double precision)))) "
    "ORDER BY kw.pos) AS score "
    'FROM kw JOIN keyword_postings p ON p.term = kw.term COLLATE "C" WHERE {rows} '
    "GROUP BY p.vid, p.entity_id, p.length ORDER BY score DESC, p.entity_id LIMIT :limit"
)


def _statistics_rows(view: View, alias: str) -> tuple[str, dict[str, Any]]:
    """The rows BM25's statistics count, as a clause over the postings or documents (``alias``) and its
    parameters: the scope's heads, or every version of it for a history view; for a view narrowed to a
    list of entities, only those are ranked (the statistics stay the scope's)."""
    params: dict[str, Any] = {}
    agent_id, workspace_hash = view.scope
    clauses = []
    if agent_id is not None:
        clauses.append(f"{alias}.agent_id = :agent_id")
        params["agent_id"] = agent_id
    if workspace_hash is not None:
        clauses.append(f"{alias}.workspace_hash = :workspace_hash")
        params["workspace_hash"] = workspace_hash
    if "scope" in view.params:  # both given: the scope key too, which a distributed database routes by
        clauses.append(f"{alias}.scope = :scope")
        params["scope"] = view.params["scope"]
    if not view.historical:
        clauses.append(f"{alias}.head")
    return " AND ".join(clauses) or "TRUE", params


def search(conn: Connection, words: list[str], view: View, pool: int) -> tuple[list[Hit], float]:
    """The ``pool`` best visible matches for the OR of ``words``, best first, ties by id, scored by BM25;
    and the query's ceiling (:func:`bm25.ceiling`) under the same statistics. A word given twice counts
    twice, as in FTS5's OR of phrases. (The in-memory keyword index, which recall asks first, gives the
    same hits with the same scores: recall/arms.py.)
    """
    if not words:
        return [], 0.0
    return _ranked(conn, words, view, pool)


def _ranked(conn: Connection, words: list[str], view: View, pool: int) -> tuple[list[Hit], float]:
    """:func:`search` over the postings: statistics, document frequencies, the best rows by score, then the
    view's rules over them, deeper while they hide too many."""
    phrases: list[tuple[str, ...]] = []  # distinct, non-empty
    of_word: list[int] = []  # each word's phrase, -1 for a word with no terms
    for word in words:
        terms_of = tuple(dict.fromkeys(phrase(word)))  # a term repeated within the word is required once
        if terms_of and terms_of not in phrases:
            phrases.append(terms_of)
        of_word.append(phrases.index(terms_of) if terms_of else -1)
    q: dict[str, list[Any]] = {
        "q_ph": [i for i, p in enumerate(phrases) for _ in p],
        "q_term": [stored(t) for p in phrases for t in p],
        "q_n": [len(p) for p in phrases for _ in p],
    }
    docs, scope = _statistics_rows(view, "d")
    n_rows, n_tokens = (
        int(x)
        for x in conn.execute(
            f"SELECT count(*), coalesce(sum(d.length), 0) FROM keyword_docs d WHERE {docs}", scope or None
        ).fetchone()
    )
    rows, _ = _statistics_rows(view, "p")
    hits_sql = _HITS.replace("{rows}", rows)
    single = all(len(p) == 1 for p in phrases)
    df = [0] * len(phrases)
    if phrases and n_rows and single:
        counted = dict(
            conn.execute(_DF_TERMS.replace("{rows}", rows), dict(scope, terms=q["q_term"])).fetchall()
        )
        df = [int(counted.get(term, 0)) for term in q["q_term"]]
    elif phrases and n_rows:
        for ph, count in conn.execute(
            f"{hits_sql} SELECT kh.ph, count(*) FROM kh GROUP BY kh.ph", dict(scope, **q)
        ):
            df[int(ph)] = int(count)
    dfs = [df[i] if i >= 0 else 0 for i in of_word]
    top = ceiling(n_rows, dfs)
    weights = [idf(n_rows, d) for d in dfs]
    held = [pos for pos, i in enumerate(of_word) if i >= 0 and df[i]]
    if not held:
        return [], top
    if view.narrowed:  # only the listed entities are ranked
        rows += f" AND p.entity_id IN (SELECT value FROM {POSTGRES.ids(':only_ids')} j)"
        scope["only_ids"] = view.params["only_ids"]
    mean = avgdl(n_rows, n_tokens)
    params: dict[str, Any] = dict(
        scope, w_pos=held, w_idf=[weights[pos] for pos in held], k1p1=K1 + 1.0, k1=K1, b=B, avgdl=mean
    )
    if single:
        rank = _RANK_TERMS.replace("{rows}", rows)
        params["w_term"] = [q["q_term"][of_word[pos]] for pos in held]
    else:
        rank = _RANK.replace("{rows}", rows)
        params.update(q, w_ph=[of_word[pos] for pos in held])
    depth = 2 * pool + 64
    while True:
        found = conn.execute(rank, dict(params, limit=depth)).fetchall()
        hits = visible_hits(conn, _rescored(found, weights, mean, n_rows), view, pool)
        if len(hits) >= pool or len(found) < depth:
            return hits, top
        depth *= 8  # the view hid too many of the best: rank deeper


def _rescored(found: list[Any], weights: list[float], mean: float, population: int) -> Ranking:
    """The SQL's best rows scored again as the SQLite backend scores (words in query order)."""
    if not found:
        return Ranking(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    entity_ids = np.array([int(r[0]) for r in found], dtype=np.int64)
    vids = np.array([int(r[1]) for r in found], dtype=np.int64)
    norm = length_norm(np.array([float(r[2]) for r in found], dtype=np.float64), mean)
    score = np.zeros(len(found), dtype=np.float64)
    freq_at: list[dict[int, float]] = [dict(zip(r[3], r[4])) for r in found]
    for pos, weight in enumerate(weights):
        rows = [i for i, freqs in enumerate(freq_at) if pos in freqs]
        if rows:
            at = np.array(rows, dtype=np.int64)
            freqs = np.array([freq_at[i][pos] for i in rows], dtype=np.float64)
            score[at] += phrase_scores(freqs, norm[at], weight)
    return Ranking(vids, entity_ids, score, population=population)


def variants(conn: Connection, stems: tuple[str, ...], config: Expansion, view: View) -> list[str]:
    """Indexed terms that extend a query stem (``connect`` -> ``connector``), most common first (by the
    number of heads holding them, every version's for a history view; then by term).

    As on the SQLite backend: only terms that are their own stem, only terms some entity this caller may
    see holds, the first ``MAX_EXPANDED_STEMS`` stems (of at least ``min_stem_chars``), at most
    ``MAX_VARIANT_CHECKS`` visibility checks in all.
    """
    heads = "" if view.historical else " AND p.head"
    vocabulary = (
        f"SELECT p.term FROM keyword_postings p WHERE p.term > :s AND p.term < :end{heads} "
        "GROUP BY p.term ORDER BY count(*) DESC, p.term LIMIT :n"
    )
    visible = (
        f"SELECT 1 FROM keyword_postings p {_VERSIONS.format('p')} WHERE p.term = :term AND {view.where} "
        "LIMIT 1"
    )
    found: list[str] = []
    checks = 0
    for s in [s for s in stems if len(s) >= config.min_stem_chars][:MAX_EXPANDED_STEMS]:
        if len(found) >= config.max_variants or checks >= MAX_VARIANT_CHECKS:
            break
        rows = conn.execute(
            vocabulary, {"s": s, "end": s + "\U0010ffff", "n": 4 * config.max_variants}
        ).fetchall()
        for (term,) in rows:
            if len(found) >= config.max_variants or checks >= MAX_VARIANT_CHECKS:
                break
            if "#" in term or term in stems or term in found or stem(term) != term:
                continue
            checks += 1
            if conn.execute(visible, dict(view.params, term=term)).fetchone() is not None:
                found.append(term)
    return found
