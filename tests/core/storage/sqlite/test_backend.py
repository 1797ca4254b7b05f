"""The SQLite backend (storage/sqlite/backend.py): whether a path holds a vault, ids never used twice, the
meta values, and where the in-memory indexes' snapshots go beside the file."""

from __future__ import annotations

from pathlib import Path

from perseus_vault_core.storage.sqlite.backend import SQLiteBackend

from ....conftest import T0


def test_a_missing_or_empty_file_holds_no_vault(tmp_path: Path) -> None:
    missing = SQLiteBackend(str(tmp_path / "none.db"))
    assert not missing.exists()
    (tmp_path / "empty.db").touch()
    assert not SQLiteBackend(str(tmp_path / "empty.db")).exists()
    missing.close()


def test_a_migrated_file_is_a_vault_whose_ids_are_never_used_twice(tmp_path: Path) -> None:
    backend = SQLiteBackend(str(tmp_path / "v.db"))
    try:
        backend.migrate(T0)
        assert backend.exists()
        conn = backend.conn()
        first = backend.next_id(conn, "links")
        backend.set_meta(conn, "high_water:links", str(first + 41))  # a purge removed ids up to here
        assert backend.next_id(conn, "links") == first + 42
        assert backend.get_meta(conn, "high_water:links") == str(first + 41)
        backend.set_meta(conn, "high_water:links", None)
        assert backend.get_meta(conn, "high_water:links") is None
    finally:
        backend.close()


def test_index_snapshots_go_beside_the_file(tmp_path: Path) -> None:
    backend, in_memory = SQLiteBackend(str(tmp_path / "v.db")), SQLiteBackend(":memory:")
    try:
        assert backend.mirror_file("keyword-index") == f"{tmp_path / 'v.db'}-keyword-index.pvidx"
        assert in_memory.mirror_file("keyword-index") is None  # nothing beside a database in memory
    finally:
        backend.close()
        in_memory.close()
