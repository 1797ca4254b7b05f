"""The keyword index on Postgres (storage/postgres/keyword.py) on a real server: the same hits with the same
BM25 scores as the SQLite backend for the same rows (scoped statistics, history views, filters), writes,
purges and rebuilds of the postings, query expansion and the totals."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import Expansion, Filters
from perseus_vault_core.primitives.bm25 import ceiling
from perseus_vault_core.primitives.filters import View, view
from perseus_vault_core.primitives.query import parse
from perseus_vault_core.storage.base import OP_GONE, OP_HEAD, OP_REBUILT
from perseus_vault_core.storage.postgres import changes
from perseus_vault_core.storage.postgres import keyword as pg_keyword
from perseus_vault_core.storage.postgres.connection import PgConnection, connect, write_transaction
from perseus_vault_core.storage.postgres.schema import migrate
from perseus_vault_core.storage.sqlite import keyword as lite_keyword
from perseus_vault_core.storage.sqlite.connection import read_snapshot

from ....conftest import Clock

WORDS = (
    "billing ledger invoice postgres sqlite replica backup restore cache latency queue worker deploy rollback "
    "canary schema migration index vector search ranking memory agent token secret rotate connect connected "
    "connecting connector connection the of and"
).split()
ODD = ["café", "naïve", "Größe", "emoji🙂", "日本語", "Москва"]
SCOPES = [("alice", "ws-a"), ("bob", "ws-a"), ("alice", "ws-b"), ("", "")]


def _text(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words) + 1), rng.choice(ODD))
    return " ".join(words)


@dataclass
class Pair:
    """One corpus in a SQLite vault and, row for row, in a Postgres database indexed by the Postgres module."""

    lite: Any
    pg: PgConnection
    now: int
    middle: int  # a time between the first writes and the updates (for history views)
    keys: dict[int, str]


def _corpus(vault: Vault, clock: Clock) -> int:
    """Memories in four scopes, then updates and archives; returns the time in between."""
    rng = random.Random(5)
    for agent, workspace in SCOPES:
        for i in range(25):
            vault.remember(
                rng.choice(["note", "decision"]),
                f"k{i}",
                _text(rng, rng.choice([3, 8, 20, 60])),
                summary=_text(rng, 4) if rng.random() < 0.3 else None,
                topic_path=rng.choice(["ops", "db/core", None]),
                agent_id=agent or None,
                workspace_hash=workspace or None,
            )
            clock.advance(10)
    middle = clock.advance(10)
    for agent, workspace in SCOPES:
        scope: dict[str, Any] = {"agent_id": agent or None, "workspace_hash": workspace or None}
        for i in range(0, 25, 4):
            vault.remember(rng.choice(["note", "decision"]), f"u{i}", _text(rng, 12), **scope)
            clock.advance(10)
            vault.remember("note", f"k{i}", _text(rng, 12), **scope)
            clock.advance(10)
        for item in vault.recall("", limit=100, include_archived=True, reinforce=False, **scope).items[:25:6]:
            if item.agent_id == (agent or "") and item.workspace_hash == (workspace or ""):
                vault.forget(item.id, **scope)
            clock.advance(10)
    return middle


def _copy(lite: Any, pg: PgConnection, table: str) -> list[tuple[Any, ...]]:
    columns = [r[1] for r in lite.execute(f"PRAGMA table_info({table})")]
    rows = [tuple(r) for r in lite.execute(f"SELECT {', '.join(columns)} FROM {table}")]
    pg.executemany(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows
    )
    key = columns[0]  # id, vid: past the copied ids, for the rows a test adds
    pg.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{key}'), (SELECT max({key}) FROM {table}))")
    return rows


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[Pair]:
    clock = Clock()
    with Vault(tmp_path / "v.db", clock=clock, embedder=False, keyword_index=False) as vault:
        middle = _corpus(vault, clock)
        lite = vault.engine.conn()
        pg = connect(pg_url)
        migrate(pg, 1_000)
        _copy(lite, pg, "entities")
        _copy(lite, pg, "entity_versions")
        rows = pg.execute("SELECT vid, content, summary, tags FROM entity_versions ORDER BY vid").fetchall()
        write_transaction(pg, lambda c: pg_keyword.index_versions(c, [tuple(r) for r in rows], heads=False))
        keys = dict(lite.execute("SELECT id, key FROM entities").fetchall())
        try:
            yield Pair(lite, pg, clock.now, middle, keys)
        finally:
            pg.close()


def _view(pair: Pair, **filters: Any) -> View:
    return view(Filters(**filters), pair.now)


def _lite(pair: Pair, query: str, v: View, pool: int = 1000) -> tuple[list[tuple[int, int, float]], float]:
    terms = parse(query)
    with read_snapshot(pair.lite):
        hits, top = lite_keyword.search(pair.lite, list(terms.words), v, pool)
    return [(h.entity_id, h.vid, h.score) for h in hits], top


def _pg(pair: Pair, query: str, v: View, pool: int = 1000) -> tuple[list[tuple[int, int, float]], float]:
    terms = parse(query)
    hits, top = pg_keyword.search(pair.pg, list(terms.words), v, pool)
    return [(h.entity_id, h.vid, h.score) for h in hits], top


QUERIES = [
    "billing ledger",
    "postgres replica backup restore",
    "cache",
    "café naïve",
    "Größe emoji🙂",
    "日本語 Москва",
    "secret rotate token agent memory",
    "connecting connector",
    "the of",
    "zzz nothing",
]
VIEWS: list[dict[str, Any]] = [
    {},
    {"include_archived": True},
    {"agent_id": "alice"},
    {"workspace_hash": "ws-a"},
    {"agent_id": "alice", "workspace_hash": "ws-a"},
    {"agent_id": "bob", "include_archived": True},
    {"topic_path": "db"},
    {"category": "note", "workspace_hash": "ws-b"},
]


@pytest.mark.parametrize("filters", VIEWS, ids=[",".join(f) or "unscoped" for f in VIEWS])
def test_the_same_hits_and_scores_as_the_sqlite_backend(pair: Pair, filters: dict[str, Any]) -> None:
    v = _view(pair, **filters)
    for query in QUERIES:
        assert _pg(pair, query, v) == _lite(pair, query, v), query
    for query in QUERIES[:3]:  # the pool's cut, ties by id
        assert _pg(pair, query, v, pool=5) == _lite(pair, query, v, pool=5), query


@pytest.mark.parametrize(
    "filters",
    [{}, {"agent_id": "alice"}, {"workspace_hash": "ws-a", "include_archived": True}],
    ids=["unscoped", "agent", "workspace"],
)
def test_history_views_rank_every_version_as_the_sqlite_backend(pair: Pair, filters: dict[str, Any]) -> None:
    for at in (pair.middle, pair.now):
        v = _view(pair, as_of_unix_ms=at, **filters)
        assert v.historical
        for query in QUERIES:
            assert _pg(pair, query, v) == _lite(pair, query, v), query
    v = _view(pair, valid_at_unix_ms=pair.middle, **filters)
    for query in QUERIES[:4]:
        assert _pg(pair, query, v) == _lite(pair, query, v), query


def test_a_word_given_twice_counts_twice(pair: Pair) -> None:
    v = _view(pair)
    once, top_once = pg_keyword.search(pair.pg, ["cache"], v, 50)
    twice, top_twice = pg_keyword.search(pair.pg, ["cache", "cache"], v, 50)
    assert [h.vid for h in twice] == [h.vid for h in once] and top_twice == 2 * top_once
    assert [h.score for h in twice] == [2 * h.score for h in once]
    with read_snapshot(pair.lite):
        lite, top = lite_keyword.search(pair.lite, ["cache", "cache"], v, 50)
    assert [(h.vid, h.score) for h in twice] == [(h.vid, h.score) for h in lite] and top_twice == top


def test_scoped_statistics_ignore_other_tenants_writes(pair: Pair) -> None:
    v = _view(pair, agent_id="alice", workspace_hash="ws-a")
    before = _pg(pair, "billing ledger cache", v)
    (eid,) = pair.pg.execute(
        "INSERT INTO entities (agent_id, workspace_hash, category, key, created_at_ms) "
        "VALUES ('bob', 'ws-a', 'note', 'new', 1) RETURNING id"
    ).fetchone()
    vid = _version(pair.pg, eid, "billing billing ledger cache cache cache", pair.now)
    _index(pair.pg, vid)
    assert _pg(pair, "billing ledger cache", v) == before
    unscoped = _pg(pair, "billing ledger cache", _view(pair))[0]
    assert unscoped[0][1] == vid  # the others' statistics moved: it is everyone's best match


def _version(pg: PgConnection, entity_id: int, content: str, now: int, summary: str | None = None) -> int:
    (vid,) = pg.execute(
        "INSERT INTO entity_versions (entity_id, version, change, recorded_from_ms, type, content, summary, tags, "
        "body, verified, recall_when, status, updated_at_ms) VALUES (?, 1, 'create', ?, 'note', ?, ?, '', '{}', 0, "
        "'[]', 'active', ?) RETURNING vid",
        (entity_id, now, content, summary, now),
    ).fetchone()
    return int(vid)


def _index(pg: PgConnection, vid: int) -> None:
    row = pg.execute(
        "SELECT vid, content, summary, tags FROM entity_versions WHERE vid = ?", (vid,)
    ).fetchone()
    write_transaction(pg, lambda c: pg_keyword.index_versions(c, [tuple(row)], heads=True))


def _postings(pg: PgConnection) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    return (
        [tuple(r) for r in pg.execute("SELECT vid, length FROM keyword_docs ORDER BY vid")],
        [tuple(r) for r in pg.execute("SELECT term, vid, freq FROM keyword_postings ORDER BY term, vid")],
    )


def test_rebuild_recomputes_the_same_postings_and_logs_a_rebuild(pair: Pair) -> None:
    before = _postings(pair.pg)
    assert before[0] and before[1]
    pair.pg.execute("DELETE FROM keyword_postings WHERE term = 'cach'")  # drift that a rebuild repairs
    write_transaction(pair.pg, pg_keyword.rebuild)
    assert _postings(pair.pg) == before
    top = changes.position(pair.pg)
    assert changes.entries(pair.pg, top - 1, top, vectors=False) == [(0, OP_REBUILT)]


def test_postings_are_fts5s_instances(pair: Pair) -> None:
    """Each version's length and weighted term frequencies are those FTS5 stores for it."""
    fts5 = lite_keyword.Fts5Tokenizer(pair.lite)
    for vid, content, summary, tags in pair.lite.execute(
        "SELECT vid, content, summary, tags FROM entity_versions ORDER BY vid LIMIT 60"
    ).fetchall():
        expected = fts5.terms([content, summary, tags])
        (length,) = pair.pg.execute("SELECT length FROM keyword_docs WHERE vid = ?", (vid,)).fetchone()
        got = dict(
            pair.pg.execute("SELECT term, freq FROM keyword_postings WHERE vid = ?", (vid,)).fetchall()
        )
        assert (got, length) == expected, vid


def test_a_closed_head_stays_as_history_and_a_purge_removes_every_version(pair: Pair) -> None:
    ((eid, vid, content, summary, tags),) = pair.pg.execute(
        "SELECT v.entity_id, v.vid, v.content, v.summary, v.tags FROM entity_versions v JOIN entities e "
        "ON e.id = v.entity_id WHERE v.recorded_to_ms IS NULL AND e.agent_id = 'alice' AND e.workspace_hash = 'ws-a' "
        "AND v.status = 'active' AND v.version > 1 ORDER BY v.vid LIMIT 1"
    ).fetchall()
    word = next(w for w in content.split() if w in WORDS)
    now = _view(pair, agent_id="alice", workspace_hash="ws-a")
    assert eid in {h[0] for h in _pg(pair, word, now)[0]}

    def close(c: Any) -> None:
        c.execute("UPDATE entity_versions SET recorded_to_ms = ? WHERE vid = ?", (pair.now, vid))
        pg_keyword.unindex_head(c, vid, content, summary, tags)

    write_transaction(pair.pg, close)
    assert eid not in {h[0] for h in _pg(pair, word, now)[0]}
    then = _view(pair, as_of_unix_ms=pair.now - 1, agent_id="alice", workspace_hash="ws-a")
    assert (eid, vid) in {h[:2] for h in _pg(pair, word, then)[0]}  # still indexed, as history
    versions = [v for (v,) in pair.pg.execute("SELECT vid FROM entity_versions WHERE entity_id = ?", (eid,))]
    assert len(versions) > 1

    def purge(c: Any) -> None:
        pg_keyword.unindex_versions(c, eid)
        c.execute("DELETE FROM entity_versions WHERE entity_id = ?", (eid,))

    position = changes.position(pair.pg)
    write_transaction(pair.pg, purge)
    assert changes.position(pair.pg) == position  # its head was closed: no second GONE
    assert pair.pg.execute(
        "SELECT count(*) FROM keyword_docs WHERE vid = ANY(?)", (versions,)
    ).fetchone() == (0,)
    assert pair.pg.execute(
        "SELECT count(*) FROM keyword_postings WHERE vid = ANY(?)", (versions,)
    ).fetchone() == (0,)
    assert eid not in {h[0] for h in _pg(pair, word, then)[0]}
    assert changes.entries(pair.pg, position - 1, position, vectors=False) == [(vid, OP_GONE)]


def test_purging_a_current_entity_logs_its_head_gone(pair: Pair) -> None:
    ((eid, vid),) = pair.pg.execute(
        "SELECT entity_id, vid FROM entity_versions WHERE recorded_to_ms IS NULL ORDER BY vid LIMIT 1"
    ).fetchall()
    write_transaction(pair.pg, lambda c: pg_keyword.unindex_versions(c, eid))
    top = changes.position(pair.pg)
    assert changes.entries(pair.pg, top - 1, top, vectors=False) == [(vid, OP_GONE)]


def test_new_heads_are_logged_for_the_mirrors(pair: Pair) -> None:
    (eid,) = pair.pg.execute(
        "INSERT INTO entities (category, key, created_at_ms) VALUES ('note', 'fresh', 1) RETURNING id"
    ).fetchone()
    vid = _version(pair.pg, eid, "a fresh canary deploy", pair.now, summary="Café")
    _index(pair.pg, vid)
    top = changes.position(pair.pg)
    assert changes.entries(pair.pg, top - 1, top, vectors=False) == [(vid, OP_HEAD)]
    assert pair.pg.execute("SELECT length FROM keyword_docs WHERE vid = ?", (vid,)).fetchone() == (5,)


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"agent_id": "alice"},
        {"workspace_hash": "ws-b", "include_archived": True},
        {"as_of_unix_ms": "middle"},
    ],
    ids=["unscoped", "agent", "workspace", "history"],
)
def test_variants_are_the_sqlite_backends(pair: Pair, filters: dict[str, Any]) -> None:
    if filters.get("as_of_unix_ms") == "middle":
        filters = {"as_of_unix_ms": pair.middle}
    v = _view(pair, **filters)
    for query in ("connect", "connect rotat", "roll cana", "mig", "bill ledg"):
        stems = parse(query).stems
        for config in (Expansion(), Expansion(max_variants=1), Expansion(min_stem_chars=6)):
            with read_snapshot(pair.lite):
                expected = lite_keyword.variants(pair.lite, stems, config, v)
            assert pg_keyword.variants(pair.pg, stems, config, v) == expected, (query, config)
    assert pg_keyword.variants(pair.pg, ("connect",), Expansion(), v)  # the corpus has some


def test_totals_are_fts5s(pair: Pair) -> None:
    assert pg_keyword.totals(pair.pg) == lite_keyword.totals(pair.lite)
    assert (
        pg_keyword.totals(pair.pg)[0]
        == pair.lite.execute("SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL").fetchone()[
            0
        ]
    )


def test_the_tokenizer_is_fts5s(pair: Pair) -> None:
    columns = ["Café naïve Größe", "emoji🙂 connected", "日本語 tags"]
    assert pg_keyword.tokenizer(pair.pg).terms(columns) == lite_keyword.tokenizer(pair.lite).terms(columns)


def test_an_empty_index_and_an_empty_query(pg_url: str) -> None:
    pg = connect(pg_url)
    try:
        migrate(pg, 1_000)
        v = view(Filters(), 1_000)
        assert pg_keyword.search(pg, [], v, 10) == ([], 0.0)
        hits, top = pg_keyword.search(pg, ["cache"], v, 10)
        assert hits == [] and top == ceiling(0, [0])
        assert pg_keyword.totals(pg) == (0, 0)
        write_transaction(pg, pg_keyword.rebuild)
        assert pg_keyword.variants(pg, ("connect",), Expansion(), v) == []
    finally:
        pg.close()


def test_a_multi_term_word_requires_all_its_terms(pair: Pair) -> None:
    """The documented approximation: a word that tokenizes to several terms matches the rows holding all
    of them, adjacent or not (FTS5 asks for the phrase), with the least of their frequencies."""
    (eid,) = pair.pg.execute(
        "INSERT INTO entities (category, key, created_at_ms) VALUES ('note', 'phrase', 1) RETURNING id"
    ).fetchone()
    vid = _version(pair.pg, eid, "wibble wobble wobble", pair.now)
    _index(pair.pg, vid)
    hits, _ = pg_keyword.search(pair.pg, ["wibble-wobble"], _view(pair), 10)
    assert [h.vid for h in hits] == [vid]
    alone, _ = pg_keyword.search(pair.pg, ["wibble"], _view(pair), 10)
    assert hits[0].score == alone[0].score  # frequency 1, the least of 1 and 2; same document frequency


def test_a_term_too_long_for_a_btree_key_is_stored_and_found(pg_url: str) -> None:
    from perseus_vault_core import Vault

    long_word = "x" * 3000  # one token: FTS5 takes it, a B-tree key cannot
    with Vault(pg_url, embedder=False) as vault:
        vault.remember("note", "blob", f"a blob {long_word} here")
        vault.remember("note", "other", f"another {long_word[:-1]}y")
        vault.engine.keyword_index = None  # the SQL path
        assert [i.key for i in vault.recall(long_word, reinforce=False).items] == ["blob"]
        assert vault.check().ok
