"""The trigger-phrase index (``trigger_terms``): which versions' ``recall_when`` phrases a context can match by words.

``recall_when`` and ``prepare`` (features/proactive.py) match a context against every visible memory's trigger
phrases. By words, a phrase of n distinct content stems (Porter, stopwords aside) matches only when the context holds
at least :func:`needed` (n) of them: ``phrase`` needs all its stems in order, ``terms`` at least 2/3 of its content
stems and at least min(2, n). So the index files each phrase of each version under each of its content stems, with
that number: one row (term, vid, phrase, need, scope), ``phrase`` being the phrase's place in the version's list. A
lookup counts, per (version, phrase), how many of its terms the context holds, and keeps those that reach their
``need``: exactly the phrases that could match by words, and the versions that hold them, and no other; only those
phrases are then matched (a version of 32 phrases found for one of them is matched on that one). What it reads is the rows of the
context's stems; a phrase whose words the context does not hold costs nothing, and one sharing a single word
with it costs one row.

A phrase of stopwords only is filed under ``""`` (:data:`NO_CONTENT`), which no context's stem equals, so that it is
found when it matches by meaning (it never matches by words). Every version is indexed, closed ones too, so time
travel finds the versions it sees. Rows are written in the transaction that writes their version (records/store.py),
deleted with it (purge), and rebuilt from the versions by the migration that made the table and by ``reindex``.
Each row carries its version's scope key, as every scoped table does (storage/distribution.py).

The SQL is shared by both backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache, lru_cache

from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from ..primitives.porter import stem
from ..primitives.query import STOPWORDS, tokenize

NO_CONTENT = ""  # the term of a phrase with no content word (it can match by meaning only)
REBUILD_BATCH = 2_000  # versions read at a time when the index is rebuilt


@lru_cache(maxsize=65_536)
def analysed(phrase: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A trigger phrase's stems in order, and its distinct content stems (stopwords aside), in order. Pure."""
    tokens = tokenize(phrase)
    return tuple(stem(t) for t in tokens), tuple(dict.fromkeys(stem(t) for t in tokens if t not in STOPWORDS))


@cache
def needed(n: int) -> int:
    """How many of a phrase's ``n`` distinct content stems a context must hold for it to match by words: the fewest
    that ``terms`` accepts (at least 2/3 of them, and at least min(2, n), computed as proactive.lexical does), which
    ``phrase`` (all of them) never falls below. 1 for a phrase of no content stem (filed under NO_CONTENT). Pure."""
    return next((f for f in range(1, n + 1) if f / n >= 2 / 3 and f >= min(2, n)), 1)


def terms(phrase: str) -> tuple[str, ...]:
    """The terms a phrase is filed under: its content stems, or :data:`NO_CONTENT`. Pure."""
    return analysed(phrase)[1] or (NO_CONTENT,)


Row = tuple[str, int, int, int, str]  # (term, vid, phrase number, need, scope)


def rows(vid: int, scope: str, recall_when: str) -> list[Row]:
    """The index rows (term, vid, phrase, need, scope) of one version, from its ``recall_when`` column (a JSON list):
    each phrase under each of its terms, numbered by its place in the list. Pure."""
    if recall_when == "[]":
        return []
    out: list[Row] = []
    for number, phrase in enumerate(json.loads(recall_when)):
        content = analysed(phrase)[1]
        out += [(t, vid, number, needed(len(content)), scope) for t in terms(phrase)]
    return out


def write(conn: Connection, versions: Iterable[tuple[int, str, str]]) -> None:
    """File versions given as (vid, scope key, recall_when), in the caller's write transaction."""
    found = [row for vid, scope, recall_when in versions for row in rows(vid, scope, recall_when)]
    if found:
        conn.executemany(
            "INSERT INTO trigger_terms (term, vid, phrase, need, scope) VALUES (?, ?, ?, ?, ?)", found
        )


def delete(conn: Connection, versions: Iterable[tuple[int, str, str]]) -> None:
    """Remove the rows of versions given as (vid, scope key, recall_when), before a purge deletes them."""
    found = [
        (term, vid, number, scope)
        for vid, scope, recall_when in versions
        for term, _, number, _, _ in rows(vid, scope, recall_when)
    ]
    if found:
        conn.executemany(
            "DELETE FROM trigger_terms WHERE term = ? AND vid = ? AND phrase = ? AND scope = ?", found
        )


def rebuild(conn: Connection) -> None:
    """Rebuild the index from every version (the caller holds the write transaction)."""
    conn.execute("DELETE FROM trigger_terms")
    after = 0
    while True:
        batch = conn.execute(
            "SELECT vid, scope, recall_when FROM entity_versions WHERE vid > ? AND recall_when != '[]' "
            "ORDER BY vid LIMIT ?",
            (after, REBUILD_BATCH),
        ).fetchall()
        if not batch:
            return
        write(conn, ((int(vid), scope, text) for vid, scope, text in batch))
        after = int(batch[-1][0])


def versions(conn: Connection, stems: Iterable[str], scope: str | None = None) -> list[int]:
    """The versions (in ``scope`` only, when given) with a phrase of which a context holding ``stems`` holds at least
    its ``need`` content stems, ascending: every version with a phrase that can match such a context by words."""
    return sorted(phrases(conn, stems, scope))


def phrases(conn: Connection, stems: Iterable[str], scope: str | None = None) -> dict[int, set[int]]:
    """Those versions (as :func:`versions`), each with the places in its ``recall_when`` list of the phrases that
    can match by words: no other phrase of it needs to be looked at."""
    wanted = sorted(set(stems) - {NO_CONTENT})
    if not wanted:
        return {}
    d = dialect(conn)
    where, params = f"term IN (SELECT value FROM {d.texts('?')} )", [json.dumps(wanted, ensure_ascii=False)]
    if scope is not None:
        where += " AND scope = ?"
        params.append(scope)
    out: dict[int, set[int]] = {}
    for vid, number in conn.execute(
        f"SELECT vid, phrase FROM trigger_terms WHERE {where} GROUP BY vid, phrase "
        "HAVING count(*) >= max(need)",
        params,
    ):
        out.setdefault(int(vid), set()).add(int(number))
    return out


def holding(conn: Connection, scope: str, phrase: str) -> list[int]:
    """The versions in ``scope`` with a phrase filed under every term of ``phrase``: each that holds the phrase, and
    maybe others (a phrase of the same content stems and more)."""
    wanted = sorted(set(terms(phrase)))
    d = dialect(conn)
    return [
        int(vid)
        for (vid,) in conn.execute(
            f"SELECT DISTINCT vid FROM (SELECT vid FROM trigger_terms WHERE scope = ? AND term IN "
            f"(SELECT value FROM {d.texts('?')} ) GROUP BY vid, phrase HAVING count(*) = ?) found ORDER BY vid",
            (scope, json.dumps(wanted, ensure_ascii=False), len(wanted)),
        )
    ]
