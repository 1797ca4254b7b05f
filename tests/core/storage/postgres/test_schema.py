"""The Postgres schema (storage/postgres/schema.py) on a real server: its migrations, the shared tables'
columns against the SQLite schema's, the immutability of versions, and pv_decay against primitives/decay.py's decay."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from perseus_vault_core.contract.errors import SetupError
from perseus_vault_core.primitives.decay import decay
from perseus_vault_core.storage.meta import get_meta, set_meta
from perseus_vault_core.storage.postgres.connection import PgConnection, connect
from perseus_vault_core.storage.postgres.schema import LATEST, current_version, migrate, next_id

SHARED = (
    "vault_meta",
    "entities",
    "entity_versions",
    "links",
    "version_vectors",
    "trigger_vectors",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "kv_entries",
)


@pytest.fixture
def conn(pg_url: str) -> Iterator[PgConnection]:
    c = connect(pg_url)
    yield c
    c.close()


def test_a_new_database_is_migrated_once(conn: PgConnection) -> None:
    assert current_version(conn) == 0
    assert migrate(conn, 1_000) == LATEST
    assert migrate(conn, 2_000) == LATEST  # nothing left to do
    assert conn.execute("SELECT version, applied_at_ms FROM _migrations ORDER BY version").fetchall() == [
        (v, 1_000) for v in range(1, LATEST + 1)
    ]


def test_hosts_opening_a_new_database_at_once_apply_each_step_once(pg_url: str) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(4, timeout=30)

    def open_it() -> None:
        c = connect(pg_url)
        try:
            start.wait()
            migrate(c, 1_000)
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            c.close()

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    c = connect(pg_url)
    try:
        assert c.execute("SELECT count(*) FROM _migrations").fetchone() == (LATEST,)
    finally:
        c.close()


def test_a_newer_schema_is_refused(conn: PgConnection) -> None:
    migrate(conn, 1_000)
    conn.execute("INSERT INTO _migrations VALUES (?, 'from the future', 0)", (LATEST + 1,))
    with pytest.raises(SetupError, match=f"schema version {LATEST + 1}, newer than"):
        migrate(conn, 2_000)


POSTGRES_ONLY = {"version_vectors": [("vec", False)]}  # pgvector's copy, for the HNSW index


def test_the_shared_tables_have_the_sqlite_schemas_columns(conn: PgConnection, tmp_path: Path) -> None:
    from perseus_vault_core import Vault

    migrate(conn, 1_000)
    with Vault(tmp_path / "v.db") as vault:
        lite = vault.engine.conn()
        for table in SHARED:
            # (name, NOT NULL); a key column counts as NOT NULL (SQLite lets a TEXT key be NULL, by a quirk)
            sqlite_columns = [(r[1], bool(r[3] or r[5])) for r in lite.execute(f"PRAGMA table_info({table})")]
            pg_columns = [
                (name, nullable == "NO")
                for name, nullable in conn.execute(
                    "SELECT column_name, is_nullable FROM information_schema.columns WHERE table_name = ? "
                    "ORDER BY ordinal_position",
                    (table,),
                )
            ]
            # Postgres's own columns (which the shared SQL never names) aside, the same columns in the same order.
            own = POSTGRES_ONLY.get(table, [])
            assert [c for c in pg_columns if c not in own] == sqlite_columns, table
            assert set(own) <= set(pg_columns), table


def _version(conn: PgConnection) -> int:
    (eid,) = conn.execute(
        "INSERT INTO entities (category, key, created_at_ms) VALUES ('fact', 'k', 1) RETURNING id"
    ).fetchone()
    (vid,) = conn.execute(
        "INSERT INTO entity_versions (entity_id, version, change, recorded_from_ms, type, content, tags, body, "
        "verified, recall_when, status, updated_at_ms) VALUES (?, 1, 'create', 1, 'fact', 'text', '', '{}', 0, "
        "'[]', 'active', 1) RETURNING vid",
        (eid,),
    ).fetchone()
    return int(vid)


def test_a_version_may_be_closed_but_never_rewritten(conn: PgConnection) -> None:
    import psycopg

    migrate(conn, 1_000)
    vid = _version(conn)
    assert conn.execute("UPDATE entity_versions SET recorded_to_ms = 5 WHERE vid = ?", (vid,)).rowcount == 1
    for column, value in (("content", "other"), ("status", "archived"), ("body", '{"a": 1}')):
        with pytest.raises(psycopg.errors.RaiseException, match="entity versions are immutable"):
            conn.execute(f"UPDATE entity_versions SET {column} = ? WHERE vid = ?", (value, vid))
    assert conn.execute("SELECT content, status FROM entity_versions WHERE vid = ?", (vid,)).fetchone() == (
        "text",
        "active",
    )


def test_one_head_per_entity(conn: PgConnection) -> None:
    import psycopg

    migrate(conn, 1_000)
    vid = _version(conn)
    (eid,) = conn.execute("SELECT entity_id FROM entity_versions WHERE vid = ?", (vid,)).fetchone()
    with pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute(
            "INSERT INTO entity_versions (entity_id, version, change, recorded_from_ms, type, content, tags, body, "
            "verified, recall_when, status, updated_at_ms) VALUES (?, 2, 'update', 2, 'fact', 'new', '', '{}', 0, "
            "'[]', 'active', 2)",
            (eid,),
        )


DAY = 86_400_000


@pytest.mark.parametrize(
    ("now", "last", "updated", "count"),
    [
        (0, None, 0, 0),
        (30 * DAY, None, 0, 0),
        (45 * DAY + 123, 10 * DAY, 3 * DAY, 7),
        (DAY, 5 * DAY, 0, 0),
        (400 * DAY, None, 2 * DAY, 1_000),
        (10 * DAY, None, None, None),
        (None, None, None, None),
        (1_765_000_000_000, 1_760_000_000_000, 1_750_000_000_000, 3),
    ],
)
def test_pv_decay_is_ranking_decay(
    conn: PgConnection, now: int | None, last: int | None, updated: int | None, count: int | None
) -> None:
    migrate(conn, 1_000)
    (got,) = conn.execute("SELECT pv_decay(?, ?, ?, ?)", (now, last, updated, count)).fetchone()
    assert got == pytest.approx(decay(now or 0, last, updated or 0, count or 0), rel=1e-12, abs=1e-300)


def test_settings_are_kept_replaced_and_removed(conn: PgConnection) -> None:
    migrate(conn, 1_000)
    assert get_meta(conn, "model") is None
    set_meta(conn, "model", "a")
    set_meta(conn, "model", "b")
    assert get_meta(conn, "model") == "b"
    set_meta(conn, "model", None)
    assert get_meta(conn, "model") is None


def test_next_id_is_past_every_id_given_even_after_a_purge_or_an_import(conn: PgConnection) -> None:
    migrate(conn, 1_000)
    assert next_id(conn, "entities") == 1
    vid = _version(conn)
    assert next_id(conn, "entities") == 2 and next_id(conn, "entity_versions", "vid") == vid + 1
    conn.execute("DELETE FROM entity_versions")
    conn.execute("DELETE FROM entities")
    assert next_id(conn, "entities") == 2  # the sequence remembers the purged id
    conn.execute("INSERT INTO entities (id, category, key, created_at_ms) VALUES (40, 'fact', 'imported', 1)")
    assert next_id(conn, "entities") == 41  # an explicit id leaves the sequence behind it
