"""The database schema, as numbered migrations.

Each migration is a small function run in its own ``BEGIN IMMEDIATE`` transaction and
recorded in ``_migrations``; ``PRAGMA user_version`` mirrors the latest. Opening a file
written by a newer vault refuses clearly rather than guessing.

Layout (version 1):

- ``entities``: identity and usage. One row per memory: its scope, (category, key),
  creation time and reinforcement state (retrieval count, last access). Never versioned.
- ``entity_versions``: every state a memory has had (content, status, validity, ...),
  with transaction time ``[recorded_from_ms, recorded_to_ms)``. The row whose
  ``recorded_to_ms`` is NULL is the head: the current state. Rows are immutable except
  for closing ``recorded_to_ms`` when a newer version arrives.
- ``entities_fts``: FTS5 over the heads only (the live corpus, so BM25 statistics are the
  current store's); ``versions_fts``: FTS5 over every version, for point-in-time recall.
  Both are external-content tables written by :mod:`.keyword` in the same transaction as
  the row, so an index can never lag its data. (Not by triggers: an FTS5 write inside a
  trigger runs in a savepoint that flushes FTS5's pending terms on every row, which made
  writes about twice as slow.) ``check`` proves the sync and ``reindex`` rebuilds it.
- ``head_changes``: a log of heads added and removed, so the in-memory keyword index
  (:mod:`indexes`) of any process can follow writes made by any other.
- ``links``: typed, weighted, directed edges with their own transaction-time history.

Version 2 adds ``version_vectors``: one embedding per version (see :mod:`.vectors`); version 3
``trigger_vectors``: embeddings of ``recall_when`` phrases (see features/proactive.py); version 4 the state
frameworks keep beside the memories: a graph's checkpoints (``checkpoints``, ``checkpoint_blobs``,
``checkpoint_writes``; see state/checkpoints.py) and key-value collections (``kv_entries``; state/keyvalue.py).
Version 5 gives every table that holds a scope's rows the scope key ``scope`` (primitives/scopes.py), as the
PostgreSQL schema has it for sharding (docs/postgres.md): the file needs no sharding, but one schema shape
keeps the shared SQL one. Version 7 keeps trigger-phrase vectors per scope (``trigger_vectors.scope``, in its key),
so that no scope's ``remember`` or ``recall_when`` depends on what another stored. Version 8 adds ``trigger_terms``,
the trigger-phrase index (storage/trigger_terms.py): content stem -> (version, phrase, stems it needs), filled from
the versions already there. Version 9 marks the memories written before writes judged their
relations, for ``reindex`` to judge (features/backfill.py).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from typing import Any

from ...primitives.dbapi import Connection
from ...primitives.dialect import SQLITE
from ..distribution import BACKFILL, OWN_SCOPE
from ..meta import mark_relations_pending
from ..migrations import run
from ..trigger_terms import rebuild as rebuild_trigger_index
from .connection import write_transaction

TOKENIZE = "porter unicode61 remove_diacritics 2"  # bm25() weighs the columns by bm25.WEIGHTS


def run_script(conn: Connection, script: str) -> None:
    """Execute ``script`` statement by statement inside the caller's transaction.

    ``executescript`` would commit the open transaction first, breaking a migration's atomicity.
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                conn.execute(pending)
            pending = ""
    if pending.strip():
        conn.execute(pending)


V1 = f"""
        CREATE TABLE vault_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE entities (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            agent_id         TEXT NOT NULL DEFAULT '',
            workspace_hash   TEXT NOT NULL DEFAULT '',
            category         TEXT NOT NULL,
            key              TEXT NOT NULL,
            created_at_ms    INTEGER NOT NULL,
            retrieval_count  INTEGER NOT NULL DEFAULT 0,
            last_accessed_ms INTEGER,
            UNIQUE (agent_id, workspace_hash, category, key)
        );

        CREATE TABLE entity_versions (
            vid              INTEGER PRIMARY KEY AUTOINCREMENT,
            entity_id        INTEGER NOT NULL REFERENCES entities(id),
            version          INTEGER NOT NULL,
            change           TEXT NOT NULL,
            recorded_from_ms INTEGER NOT NULL,
            recorded_to_ms   INTEGER,
            type             TEXT NOT NULL,
            topic_path       TEXT,
            content          TEXT NOT NULL,
            summary          TEXT,
            tags             TEXT NOT NULL,
            body             TEXT NOT NULL,
            source           TEXT,
            verified         INTEGER NOT NULL,
            certainty        REAL,
            provenance_class TEXT,
            recall_when      TEXT NOT NULL,
            status           TEXT NOT NULL,
            valid_from_ms    INTEGER,
            valid_to_ms      INTEGER,
            expires_at_ms    INTEGER,
            supersedes       INTEGER,
            superseded_by    INTEGER,
            updated_at_ms    INTEGER NOT NULL,
            UNIQUE (entity_id, version)
        );
        CREATE UNIQUE INDEX entity_versions_head ON entity_versions(entity_id) WHERE recorded_to_ms IS NULL;
        CREATE INDEX entity_versions_time ON entity_versions(entity_id, recorded_from_ms);

        CREATE VIEW entity_heads AS
            SELECT vid, content, summary, tags FROM entity_versions WHERE recorded_to_ms IS NULL;

        CREATE VIRTUAL TABLE entities_fts USING fts5(
            content, summary, tags, content='entity_heads', content_rowid='vid', tokenize='{TOKENIZE}');
        CREATE VIRTUAL TABLE versions_fts USING fts5(
            content, summary, tags, content='entity_versions', content_rowid='vid', tokenize='{TOKENIZE}');
        CREATE VIRTUAL TABLE entities_fts_vocab USING fts5vocab(entities_fts, 'row');
        CREATE VIRTUAL TABLE versions_fts_vocab USING fts5vocab(versions_fts, 'row');
        -- Every change to the set of heads, in commit order, for in-memory mirrors of
        -- entities_fts to follow (op: +1 became a head, -1 stopped being one, 0 rebuilt).
        CREATE TABLE head_changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, vid INTEGER NOT NULL, op INTEGER NOT NULL);

        -- Versions are history: only closing one (and purge) may change it.
        CREATE TRIGGER entity_versions_immutable BEFORE UPDATE OF
            entity_id, version, content, summary, tags, body, status, type, topic_path ON entity_versions BEGIN
            SELECT RAISE(ABORT, 'entity versions are immutable');
        END;

        CREATE TABLE links (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            from_id          INTEGER NOT NULL REFERENCES entities(id),
            to_id            INTEGER NOT NULL REFERENCES entities(id),
            relation         TEXT NOT NULL,
            weight           REAL NOT NULL,
            source           TEXT,
            created_at_ms    INTEGER NOT NULL,
            recorded_from_ms INTEGER NOT NULL,
            recorded_to_ms   INTEGER
        );
        CREATE UNIQUE INDEX links_alive ON links(from_id, to_id, relation) WHERE recorded_to_ms IS NULL;
        CREATE INDEX links_from ON links(from_id, recorded_from_ms);
        CREATE INDEX links_to ON links(to_id, recorded_from_ms);
"""


def _v1(conn: Connection) -> None:
    run_script(conn, V1)


def _v2(conn: Connection) -> None:
    # One vector per version (sqlite-vec float32 blobs) and its sign bits (one per dimension), kept
    # so that the dense pre-filter compares 48 bytes per row instead of re-quantizing 1.5 KB.
    # The model is recorded in vault_meta.
    conn.execute(
        "CREATE TABLE version_vectors (vid INTEGER PRIMARY KEY REFERENCES entity_versions(vid), "
        "embedding BLOB NOT NULL, bits BLOB NOT NULL)"
    )


def _v3(conn: Connection) -> None:
    # Vectors of recall_when trigger phrases, by model, computed when proactive recall first needs
    # them (see proactive.py): a fresh process then embeds only the context.
    conn.execute(
        "CREATE TABLE trigger_vectors (model TEXT NOT NULL, phrase TEXT NOT NULL, embedding BLOB NOT NULL, "
        "PRIMARY KEY (model, phrase))"
    )
    # Closed links, so that noticing an unlink (communities.stamp) reads a few index entries, not every link.
    conn.execute("CREATE INDEX links_closed ON links(recorded_to_ms) WHERE recorded_to_ms IS NOT NULL")


# Framework state that is not memory (checkpoints.py, keyvalue.py): never recalled, embedded or versioned, so
# tables of their own rather than entities. Each row carries its scope first, as the entities do.
V4 = """
        CREATE TABLE checkpoints (
            agent_id             TEXT NOT NULL DEFAULT '',
            workspace_hash       TEXT NOT NULL DEFAULT '',
            thread_id            TEXT NOT NULL,
            checkpoint_ns        TEXT NOT NULL,
            checkpoint_id        TEXT NOT NULL,
            parent_checkpoint_id TEXT,
            run_id               TEXT,
            type                 TEXT NOT NULL,
            checkpoint           BLOB NOT NULL,
            channel_versions     TEXT NOT NULL,
            metadata             TEXT NOT NULL,
            PRIMARY KEY (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id)
        );
        CREATE TABLE checkpoint_blobs (
            agent_id       TEXT NOT NULL DEFAULT '',
            workspace_hash TEXT NOT NULL DEFAULT '',
            thread_id      TEXT NOT NULL,
            checkpoint_ns  TEXT NOT NULL,
            channel        TEXT NOT NULL,
            version        TEXT NOT NULL,
            type           TEXT NOT NULL,
            blob           BLOB,
            PRIMARY KEY (agent_id, workspace_hash, thread_id, checkpoint_ns, channel, version)
        );
        CREATE TABLE checkpoint_writes (
            agent_id       TEXT NOT NULL DEFAULT '',
            workspace_hash TEXT NOT NULL DEFAULT '',
            thread_id      TEXT NOT NULL,
            checkpoint_ns  TEXT NOT NULL,
            checkpoint_id  TEXT NOT NULL,
            task_id        TEXT NOT NULL,
            idx            INTEGER NOT NULL,
            channel        TEXT NOT NULL,
            type           TEXT NOT NULL,
            blob           BLOB NOT NULL,
            task_path      TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
        );
        CREATE TABLE kv_entries (
            agent_id       TEXT NOT NULL DEFAULT '',
            workspace_hash TEXT NOT NULL DEFAULT '',
            collection     TEXT NOT NULL,
            key            TEXT NOT NULL,
            value          TEXT NOT NULL,
            updated_at_ms  INTEGER NOT NULL,
            PRIMARY KEY (agent_id, workspace_hash, collection, key)
        );
"""


def _v4(conn: Connection) -> None:
    run_script(conn, V4)


def _scope_last(ddl: str) -> str:
    """Step 4's tables with ``scope`` as their last column and in their key (where Postgres's ON CONFLICT
    needs it, the shared SQL names it, so SQLite's keys must hold it too)."""
    ddl = re.sub(r"CREATE TABLE (\w+)", r"CREATE TABLE pv_new_\1", ddl)
    return re.sub(
        r"(\n\s*)PRIMARY KEY \(([^)]*)\)", r"\1scope TEXT NOT NULL DEFAULT '',\1PRIMARY KEY (\2, scope)", ddl
    )


def _v5(conn: Connection) -> None:
    # Tables keyed by their scope first: rebuilt with the key in their primary key (SQLite cannot change a key).
    run_script(conn, _scope_last(V4))
    for table in OWN_SCOPE:
        if table != "entities":
            conn.execute(
                f"INSERT INTO pv_new_{table} SELECT *, {SQLITE.scope_key('agent_id', 'workspace_hash')} "
                f"FROM {table}"
            )
            conn.execute(f"DROP TABLE {table}")
            conn.execute(f"ALTER TABLE pv_new_{table} RENAME TO {table}")
    # The others gain the column, filled from the row's own scope or its parent's.
    conn.execute("ALTER TABLE entities ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
    conn.execute(f"UPDATE entities SET scope = {SQLITE.scope_key('agent_id', 'workspace_hash')}")
    for table, (parent, key) in BACKFILL.items():
        if table.startswith("keyword_"):  # the keyword index is FTS5's here, with no rows of its own
            continue
        conn.execute(f"ALTER TABLE {table} ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
        conn.execute(
            f"UPDATE {table} SET scope = coalesce((SELECT p.scope FROM {parent} p "
            f"WHERE {key.format(t=table)}), '')"
        )


def _v6(conn: Connection) -> None:
    # The current versions that carry trigger phrases, which prepare (every agent turn) reads first: without it
    # that read scanned every current version (66 ms at 100,000 memories, about half a second at a million).
    conn.execute(
        "CREATE INDEX entity_versions_triggered ON entity_versions(entity_id) "
        "WHERE recorded_to_ms IS NULL AND recall_when != '[]'"
    )


def _v7(conn: Connection) -> None:
    # Trigger-phrase vectors per scope (the scope key in their key), as on PostgreSQL: a phrase another scope had
    # stored made a remember faster (it was not embedded again), which told one tenant of a shared file what
    # phrases another uses. Each vector is copied to every scope whose versions use its phrase.
    run_script(
        conn,
        """
        CREATE TABLE pv_new_trigger_vectors (model TEXT NOT NULL, phrase TEXT NOT NULL, embedding BLOB NOT NULL,
                                             scope TEXT NOT NULL DEFAULT '', PRIMARY KEY (model, phrase, scope));
        INSERT INTO pv_new_trigger_vectors (model, phrase, embedding, scope)
            SELECT t.model, t.phrase, t.embedding, u.scope FROM trigger_vectors t JOIN (
                SELECT DISTINCT v.scope, j.value AS phrase FROM entity_versions v, json_each(v.recall_when) j
                WHERE v.recall_when != '[]') u ON u.phrase = t.phrase;
        DROP TABLE trigger_vectors;
        ALTER TABLE pv_new_trigger_vectors RENAME TO trigger_vectors;
""",
    )


def _v8(conn: Connection) -> None:
    # The trigger-phrase index: recall_when and prepare look a context's stems up in it instead of reading every
    # visible memory's phrases (7-8 s a turn at 20,000 memories of 32 phrases). Keyed by term first, for that
    # lookup; a purge deletes its versions' rows by the same key.
    conn.execute(
        "CREATE TABLE trigger_terms (term TEXT NOT NULL, vid INTEGER NOT NULL, phrase INTEGER NOT NULL, "
        "need INTEGER NOT NULL, scope TEXT NOT NULL DEFAULT '', PRIMARY KEY (term, vid, phrase, scope)) "
        "WITHOUT ROWID"
    )
    rebuild_trigger_index(conn)


Migration = Callable[[Any], None]
MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "entities, versions, keyword indexes, links", _v1),
    (2, "vectors", _v2),
    (3, "trigger phrase vectors, closed-links index", _v3),
    (4, "graph checkpoints, key-value collections", _v4),
    (5, "the scope key on every scoped table", _v5),
    (6, "current versions with trigger phrases", _v6),
    (7, "trigger phrase vectors per scope", _v7),
    (8, "trigger phrase index", _v8),
    (9, "memories written before writes judged relations, marked for reindex", mark_relations_pending),
]
LATEST = MIGRATIONS[-1][0]


def current_version(conn: Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: Connection, now_ms: int) -> int:
    """Bring the schema up to :data:`LATEST`, one transaction per step; return the version. A copy that kept
    the steps' record but not ``PRAGMA user_version`` (``sqlite3 vault.db .dump | sqlite3 copy.db`` does not
    carry it) gets its version back from ``_migrations`` first."""
    if (
        current_version(conn) == 0
        and conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_migrations'"
        ).fetchone()
        is not None
    ):
        recorded = int(conn.execute("SELECT coalesce(max(version), 0) FROM _migrations").fetchone()[0])
        if recorded:
            write_transaction(conn, lambda c: c.execute(f"PRAGMA user_version = {recorded}"))
    return run(
        conn,
        MIGRATIONS,
        current=current_version,
        transaction=write_transaction,
        now_ms=now_ms,
        table="CREATE TABLE IF NOT EXISTS _migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)",
        mark=lambda c, version: c.execute(f"PRAGMA user_version = {int(version)}"),
    )


def next_id(conn: Connection, table: str, column: str = "id") -> int:
    """The id the table's next row gets (never reusing one, even after a purge): past AUTOINCREMENT's counter,
    the largest id, and the largest a purge removed (``high_water:<table>`` in vault_meta, which the PostgreSQL
    backend needs and this one keeps alike)."""
    row = conn.execute(
        f"SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), "
        f"coalesce((SELECT max({column}) FROM {table}), 0), "
        f"coalesce((SELECT max(CAST(value AS INTEGER)) FROM vault_meta WHERE key = ?), 0)) + 1",
        (table, f"high_water:{table}"),
    ).fetchone()
    return int(row[0])
