"""The trigger-phrase index (``trigger_terms``): which versions' ``recall_when`` phrases hold a word, by stem.

``recall_when`` and ``prepare`` (features/proactive.py) match a context against every visible memory's trigger
phrases. A phrase can match by words only when the context holds at least one of its content stems (``phrase``
needs all its stems in order, ``terms`` at least one of them), so an inverted index from content stem to version
finds every version that can match by words, and no other: the cost follows the words the context holds, not
how many phrases are stored.

One row per (term, version): a phrase's terms are its distinct content stems (Porter, stopwords aside); a phrase
of stopwords only is filed under ``""`` (:data:`NO_CONTENT`), which no context's stem equals, so that it is found
when it matches by meaning (it never matches by words). Every version is indexed, closed ones too, so time travel
finds the versions it sees. Rows are written in the transaction that writes their version (records/store.py),
deleted with it (purge), and rebuilt from the versions by the migration that made the table and by ``reindex``.
Each row carries its version's scope key, as every scoped table does (storage/distribution.py).

The SQL is shared by both backends.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import lru_cache

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


def terms(phrase: str) -> tuple[str, ...]:
    """The terms a phrase is filed under: its content stems, or :data:`NO_CONTENT`. Pure."""
    return analysed(phrase)[1] or (NO_CONTENT,)


def rows(vid: int, scope: str, recall_when: str) -> list[tuple[str, int, str]]:
    """The index rows (term, vid, scope) of one version, from its ``recall_when`` column (a JSON list). Pure."""
    if recall_when == "[]":
        return []
    found = dict.fromkeys(t for phrase in json.loads(recall_when) for t in terms(phrase))
    return [(t, vid, scope) for t in found]


def write(conn: Connection, versions: Iterable[tuple[int, str, str]]) -> None:
    """File versions given as (vid, scope key, recall_when), in the caller's write transaction."""
    found = [row for vid, scope, recall_when in versions for row in rows(vid, scope, recall_when)]
    if found:
        conn.executemany("INSERT INTO trigger_terms (term, vid, scope) VALUES (?, ?, ?)", found)


def delete(conn: Connection, versions: Iterable[tuple[int, str, str]]) -> None:
    """Remove the rows of versions given as (vid, scope key, recall_when), before a purge deletes them."""
    found = [row for vid, scope, recall_when in versions for row in rows(vid, scope, recall_when)]
    if found:
        conn.executemany("DELETE FROM trigger_terms WHERE term = ? AND vid = ? AND scope = ?", found)


def rebuild(conn: Connection) -> None:
    """Rebuild the index from every version (the caller holds the write transaction)."""
    conn.execute("DELETE FROM trigger_terms")
    after = 0
    while True:
        batch = conn.execute(
            "SELECT vid, scope, recall_when FROM entity_versions WHERE vid > ? AND recall_when != '[]' "
            "ORDER BY vid LIMIT ?", (after, REBUILD_BATCH)).fetchall()
        if not batch:
            return
        write(conn, ((int(vid), scope, text) for vid, scope, text in batch))
        after = int(batch[-1][0])


def versions(conn: Connection, wanted: Sequence[str], scope: str | None = None) -> list[int]:
    """The versions filed under any of the ``wanted`` terms (in ``scope`` only, when given), ascending."""
    if not wanted:
        return []
    d = dialect(conn)
    sql = f"SELECT DISTINCT vid FROM trigger_terms WHERE term IN (SELECT value FROM {d.texts('?')} )"
    params: tuple[str, ...] = (json.dumps(sorted(set(wanted)), ensure_ascii=False),)
    if scope is not None:
        sql += " AND scope = ?"
        params += (scope,)
    return sorted(int(vid) for (vid,) in conn.execute(sql + " ORDER BY vid", params))


def holding(conn: Connection, scope: str, phrase: str) -> list[int]:
    """The versions in ``scope`` filed under every term of ``phrase``: each that holds the phrase, and maybe others."""
    wanted = sorted(set(terms(phrase)))
    d = dialect(conn)
    return [int(vid) for (vid,) in conn.execute(
        f"SELECT vid FROM trigger_terms WHERE scope = ? AND term IN (SELECT value FROM {d.texts('?')} ) "
        "GROUP BY vid HAVING count(*) = ? ORDER BY vid",
        (scope, json.dumps(wanted, ensure_ascii=False), len(wanted)))]
