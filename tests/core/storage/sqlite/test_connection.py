"""The connection factory: driver choice, extension loading, pragmas, bounded write retry."""

from __future__ import annotations

import importlib
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from perseus_vault_core import SetupError, StorageError, Vault
from perseus_vault_core.storage.sqlite import connection as factory

from ....conftest import modes


def test_default_driver_loads_sqlite_vec_and_fts5(tmp_path: Path) -> None:
    driver = factory.choose_driver()
    conn = factory.connect(str(tmp_path / "x.db"), driver)
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == factory.BUSY_TIMEOUT_MS
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    conn.close()


def test_stdlib_is_used_only_when_it_can_load_extensions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_SQLITE", "stdlib")
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        assert factory.choose_driver().name == "stdlib"
    else:
        with pytest.raises(SetupError, match="pip install sqlean-py"):
            factory.choose_driver()


def test_falls_back_to_a_drop_in_build(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module
    crippled = SimpleNamespace(Connection=type("Connection", (), {}))  # no enable_load_extension

    def fake_import(name: str, *args: Any) -> Any:
        return crippled if name == "sqlite3" else real_import(name, *args)

    monkeypatch.setattr(factory.importlib, "import_module", fake_import)
    monkeypatch.setattr(factory, "_driver", None)
    monkeypatch.delenv("PERSEUS_VAULT_SQLITE", raising=False)
    assert factory.choose_driver().name in ("sqlean", "pysqlite3")


def test_no_usable_driver_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    crippled = SimpleNamespace(Connection=type("Connection", (), {}))
    monkeypatch.setattr(factory.importlib, "import_module", lambda name, *a: crippled)
    monkeypatch.setattr(factory, "_driver", None)
    monkeypatch.delenv("PERSEUS_VAULT_SQLITE", raising=False)
    with pytest.raises(SetupError) as err:
        factory.choose_driver()
    assert "cannot load extensions" in str(err.value) and "pip install sqlean-py" in str(err.value)
    monkeypatch.setenv("PERSEUS_VAULT_SQLITE", "oracle")
    with pytest.raises(SetupError, match="not one of"):
        factory.choose_driver()


def test_write_waits_out_a_busy_database(tmp_path: Path) -> None:
    path = str(tmp_path / "busy.db")
    holder = factory.connect(path)
    holder.execute("CREATE TABLE t (x)")
    writer = factory.connect(path)
    writer.execute("PRAGMA busy_timeout = 20")  # make SQLite give up fast, so the engine's retry shows
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    factory.write_transaction(writer, lambda c: c.execute("INSERT INTO t VALUES (1)"), retries=12)
    assert writer.execute("SELECT count(*) FROM t").fetchone()[0] == 1


def test_write_gives_up_after_the_retry_budget(tmp_path: Path) -> None:
    path = str(tmp_path / "busy.db")
    holder = factory.connect(path)
    holder.execute("CREATE TABLE t (x)")
    writer = factory.connect(path)
    writer.execute("PRAGMA busy_timeout = 1")
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(StorageError, match="busy"):
        factory.write_transaction(writer, lambda c: c.execute("INSERT INTO t VALUES (1)"), retries=2)
    assert time.monotonic() - started < 5
    holder.execute("ROLLBACK")


def test_failed_work_rolls_back(tmp_path: Path) -> None:
    conn = factory.connect(str(tmp_path / "r.db"))
    conn.execute("CREATE TABLE t (x)")

    def work(c: Any) -> None:
        c.execute("INSERT INTO t VALUES (1)")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        factory.write_transaction(conn, work)
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    assert not conn.in_transaction


def test_pool_gives_each_thread_its_connection(tmp_path: Path) -> None:
    pool = factory.ConnectionPool(str(tmp_path / "p.db"))
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(id(pool.get()))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 3 and pool.get() is pool.get()
    pool.close()
    with pytest.raises(StorageError, match="closed"):
        pool.get()


def test_the_vaults_own_errors_are_never_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perseus_vault_core import Conflict

    conn = factory.connect(str(tmp_path / "c.db"))
    sleeps: list[float] = []
    from perseus_vault_core.storage import retry

    monkeypatch.setattr(retry.time, "sleep", sleeps.append)  # the retry's pause

    def work(c: Any) -> None:
        raise Conflict("key 'database is locked' is superseded")

    with pytest.raises(Conflict):
        factory.write_transaction(conn, work)
    assert sleeps == []


def test_synchronous_must_be_a_real_setting(tmp_path: Path) -> None:
    from perseus_vault_core import InvalidInput

    with pytest.raises(InvalidInput) as err:
        factory.connect(str(tmp_path / "s.db"), synchronous="ful")
    assert err.value.field == "synchronous"


# --- file modes ---------------------------------------------------------------------------------

RAW_KEY = "x'" + "5c" * 32 + "'"


@pytest.mark.parametrize("key", [None, RAW_KEY], ids=["plaintext", "encrypted"])
def test_a_new_vault_and_its_wal_and_shm_are_private(tmp_path: Path, umask: int, key: str | None) -> None:
    """SQLite would create the file 0644 (less the umask); the -wal and -shm files take its mode."""
    if key is not None:
        pytest.importorskip("sqlcipher3")
    with Vault(tmp_path / "v.db", embedder=False, key=key) as vault:
        vault.remember("note", "n", "private")
        found = modes(tmp_path)
        indexes = {name: mode for name, mode in found.items() if ".pvidx" in name}  # saved in the background
        assert set(indexes.values()) <= {0o600}
        assert {k: v for k, v in found.items() if k not in indexes} == {
            "v.db": 0o600,
            "v.db-shm": 0o600,
            "v.db-wal": 0o600,
        }


def test_an_existing_vault_keeps_its_mode(tmp_path: Path, umask: int) -> None:
    db = tmp_path / "v.db"
    with Vault(db, embedder=False) as vault:
        vault.remember("note", "n", "shared with the group")
    db.chmod(0o640)  # the owner's choice, e.g. a group of service accounts
    with Vault(db, embedder=False) as vault:
        vault.remember("note", "m", "written again")
        found = {k: v for k, v in modes(tmp_path).items() if ".pvidx" not in k}  # an index saved meanwhile
        assert found == {"v.db": 0o640, "v.db-shm": 0o640, "v.db-wal": 0o640}
    conn = factory.connect(str(tmp_path / "raw.db"))  # the factory itself, below the Vault
    conn.close()
    assert modes(tmp_path)["raw.db"] == 0o600


def test_first_openings_of_a_new_file_at_once_all_succeed(tmp_path: Path) -> None:
    # Two first openings can deadlock on the switch to WAL, and SQLite then answers one "database is
    # locked" at once, busy timeout or not; connect tries that one again. Without the retry about one
    # round in eight failed here.
    for round_ in range(40):
        path = str(tmp_path / f"r{round_}.db")
        barrier = threading.Barrier(6)
        errors: list[BaseException] = []
        modes_seen: list[str] = []

        def open_once(path: str = path, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                conn = factory.connect(path)
                modes_seen.append(conn.execute("PRAGMA journal_mode").fetchone()[0])
                conn.close()
            except Exception as exc:  # collected for the assertion below
                errors.append(exc)

        threads = [threading.Thread(target=open_once) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and modes_seen == ["wal"] * 6


def _app_file(path: Path, script: str) -> bytes:
    """An application's own SQLite file, in the default rollback-journal mode; its bytes."""
    other = sqlite3.connect(path)
    other.executescript(script)
    other.close()
    return path.read_bytes()


@pytest.mark.parametrize(
    ("script", "named"),
    [
        (
            "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ada');",
            "tables 'users'",
        ),
        # Many applications keep their own schema version in user_version (Android's, a browser's history)
        ("CREATE TABLE places (id INTEGER PRIMARY KEY); PRAGMA user_version = 2;", "tables 'places'"),
        ("CREATE TABLE moz (id INTEGER PRIMARY KEY); PRAGMA user_version = 77;", "tables 'moz'"),
        ("CREATE VIEW answer AS SELECT 42;", "schema entries 'answer'"),
        ("PRAGMA user_version = 5;", "no tables, schema version 5"),
        (
            "CREATE TABLE vault_meta (key TEXT, value TEXT);",
            "tables 'vault_meta'",
        ),  # a vault's name is not enough
    ],
)
def test_another_applications_sqlite_file_is_refused_and_left_as_it_was(
    tmp_path: Path, script: str, named: str
) -> None:
    path = tmp_path / "app.db"
    before = _app_file(path, script)
    for _ in range(2):  # refused every time, not only the first
        with pytest.raises(SetupError) as refused:
            Vault(str(path), embedder=False)
        assert str(refused.value) == (
            f"{str(path)!r} is not a vault: it is a SQLite database of another application "
            f"({named}); the vault wrote nothing to it. Give a new file's path, or an "
            "existing vault's"
        )
    assert path.read_bytes() == before  # not switched to WAL, no table added, its version kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]


def test_a_refused_files_table_names_cannot_break_the_message(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    _app_file(
        path,
        'CREATE TABLE "a, b and 3 more" (x); CREATE TABLE "b two\nlines\x1b[2J" (x); '
        f'CREATE TABLE "c{"n" * 500}" (x); CREATE TABLE d1 (x); CREATE TABLE d2 (x); '
        "CREATE TABLE d3 (x); CREATE TABLE d4 (x);",
    )
    with pytest.raises(SetupError) as refused:
        Vault(str(path), embedder=False)
    said = str(refused.value)
    assert "\n" not in said and "\x1b" not in said  # written as escapes: no second line, no terminal control
    assert (
        "'a, b and 3 more', 'b two\\nlines\\x1b[2J', 'c" + "n" * 59 + "...', 'd1', 'd2' and 2 more)" in said
    )


def test_first_openings_of_a_new_vault_in_many_processes_all_succeed(tmp_path: Path) -> None:
    # A vault that another process is creating holds tables before this one's first look at it: it must
    # not be taken for another application's file (the first migration step commits _migrations and
    # vault_meta together).
    said = [
        "the ledger runs on Postgres",
        "deploys stop on Fridays",
        "Aisha owns billing",
        "backups run nightly",
    ]
    code = (
        "import sys; from perseus_vault_core import Vault\n"
        "with Vault(sys.argv[1], embedder=False) as v: v.remember('note', sys.argv[2], sys.argv[3])\n"
    )
    for round_ in range(3):
        path = str(tmp_path / f"n{round_}.db")
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, path, f"k{i}", said[i]], stderr=subprocess.PIPE, text=True
            )
            for i in range(4)
        ]
        errors = [p.communicate()[1] for p in procs if p.wait() != 0]
        assert errors == []
        with Vault(path, embedder=False) as v:
            assert sorted(e.key for e in v.scan(limit=10).items) == ["k0", "k1", "k2", "k3"]
