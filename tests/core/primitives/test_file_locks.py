"""primitives/file_locks.py: the registry of files this process holds open through SQLite, and the guard that
keeps every other read or write of a named file off them (closing such a descriptor drops the locks)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from perseus_vault_core import InvalidInput, SetupError, Vault
from perseus_vault_core.primitives import file_locks
from perseus_vault_core.storage.sqlite import connection, file_checks

from ...conftest import Clock


def test_a_connection_holds_its_file_until_closed_or_collected(tmp_path: Path) -> None:
    db = str(tmp_path / "v.db")
    assert file_locks.holding(db) is None
    first = connection.connect(db)
    second = connection.connect(db)
    assert file_locks.holding(db) == file_locks.Holding(
        connection.choose_driver().name, False, os.path.realpath(db)
    )
    first.close()
    first.close()  # twice is harmless
    assert file_locks.holding(db) is not None  # the second still holds it
    del second  # collected unclosed: SQLite closes it, and the registration goes with it
    gc.collect()
    assert file_locks.holding(db) is None and db not in file_locks.held_files()


def test_the_held_file_and_what_sqlite_keeps_beside_it_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "v.db"
    conn = connection.connect(str(db))
    conn.execute("CREATE TABLE t (x)")
    (tmp_path / "link.db").symlink_to(db)
    os.link(db, tmp_path / "hard.db")
    try:
        for name in ("v.db", "v.db-wal", "v.db-shm", "v.db-journal", "link.db", "hard.db"):
            with pytest.raises(InvalidInput, match=r"^target: .*the vault's own database file"):
                file_locks.refuse_held(tmp_path / name, "target")
        for name in ("other.db", "v.db-wal.txt", "v.db.jsonl"):
            file_locks.refuse_held(tmp_path / name, "target")  # anything else passes
    finally:
        conn.close()
    file_locks.refuse_held(db, "target")  # nothing holds it now


def test_the_vaults_own_files_are_refused_by_every_verb_that_names_a_file(
    tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Import, export, backup, a key file and memory files never open the vault's own files beside SQLite."""
    db = tmp_path / "v.db"
    with Vault(db, clock=clock, embedder=False) as vault:
        vault.remember("fact", "a", "kept")
        for name in ("v.db", "v.db-wal", "v.db-shm"):
            with pytest.raises(InvalidInput, match="source: .*own database file"):
                vault.import_jsonl(str(tmp_path / name))
            with pytest.raises(InvalidInput, match="target: .*own database file"):
                vault.export_jsonl(str(tmp_path / name))
        with pytest.raises(InvalidInput, match="target: .*own database file"):
            vault.backup(str(tmp_path / "v.db-journal"))
        monkeypatch.setenv("PERSEUS_VAULT_KEY_FILE", str(db))
        with pytest.raises(SetupError, match="PERSEUS_VAULT_KEY_FILE: .*own database file"):
            Vault(tmp_path / "other.db", embedder=False)
        monkeypatch.delenv("PERSEUS_VAULT_KEY_FILE")
        assert vault.get_entity(1).content == "kept" and vault.check().ok


def test_a_memory_file_that_is_the_vault_is_neither_read_nor_replaced(tmp_path: Path, clock: Clock) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    db = folder / "Vault.md"  # a vault kept, oddly, where memory files go
    with Vault(db, clock=clock, embedder=False) as vault:
        vault.remember("fact", "a", "kept")
        with pytest.raises(InvalidInput, match="own database file"):
            vault.memory_import(str(folder))
        assert vault.get_entity(1).content == "kept" and vault.check().ok


def test_a_second_sqlite_library_or_another_key_beside_a_held_file_is_refused() -> None:
    plain = file_locks.Holding("sqlean", False, "/v.db")
    keyed = file_locks.Holding("sqlcipher", True, "/v.db")
    file_checks.beside("/v.db", plain, "sqlean", False)  # the same library: fine
    with pytest.raises(SetupError, match="open in this process through the sqlean SQLite driver"):
        file_checks.beside("/v.db", plain, "stdlib", False)
    with pytest.raises(SetupError, match="is not encrypted, but an encryption key is set"):
        file_checks.beside("/v.db", plain, "sqlcipher", True)
    with pytest.raises(SetupError, match="is encrypted"):
        file_checks.beside("/v.db", keyed, "sqlean", False)


def test_what_sqlite_keeps_beside_a_held_file_is_known_under_a_renamed_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    conn = connection.connect(str(tmp_path / "a" / "v.db"))
    try:
        conn.execute("CREATE TABLE t (x)")
        (tmp_path / "a").rename(tmp_path / "b")
        for name in ("v.db-wal", "v.db-shm"):
            with pytest.raises(InvalidInput, match="own database file"):
                file_locks.refuse_held(tmp_path / "b" / name, "target")
    finally:
        conn.close()


def test_a_vault_file_with_two_names_is_refused(tmp_path: Path) -> None:
    """SQLite names the -wal after the name a file was opened by: two names keep two logs of one file."""
    db = tmp_path / "v.db"
    with Vault(db, embedder=False) as vault:
        vault.remember("fact", "a", "kept")
        (tmp_path / "alias.db").symlink_to(db)  # a symlink resolves to one name: allowed
        with Vault(tmp_path / "alias.db", embedder=False) as same:
            assert same.get_entity(1).content == "kept"
        os.link(db, tmp_path / "link.db")
        with pytest.raises(SetupError, match="open in this process under another name"):
            Vault(tmp_path / "link.db", embedder=False)
    with pytest.raises(SetupError, match="has 2 names \\(hard links\\)"):
        Vault(db, embedder=False)
    os.unlink(tmp_path / "link.db")
    with Vault(db, embedder=False) as vault:
        assert vault.get_entity(1).content == "kept"
