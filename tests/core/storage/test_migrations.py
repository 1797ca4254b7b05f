"""The migration loop both backends run (storage/migrations.py), on a bare SQLite connection: steps in
order, each once and recorded, the version read again inside each transaction, a newer schema refused."""

from __future__ import annotations

from typing import Any

import pytest
import sqlean

from perseus_vault_core.contract.errors import SetupError
from perseus_vault_core.storage.migrations import run

TABLE = (
    "CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at_ms INTEGER)"
)


def current(conn: Any) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def transaction(conn: Any, work: Any) -> None:
    conn.execute("BEGIN")
    try:
        work(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def mark(conn: Any, version: int) -> None:
    conn.execute(f"PRAGMA user_version = {version}")


def migrate(conn: Any, steps: list[Any], now_ms: int = 7, **more: Any) -> int:
    return run(
        conn, steps, current=current, transaction=transaction, table=TABLE, now_ms=now_ms, mark=mark, **more
    )


@pytest.fixture
def conn() -> Any:
    c = sqlean.connect(":memory:", isolation_level=None)
    yield c
    c.close()


def test_steps_run_in_order_once_each_and_are_recorded(conn: Any) -> None:
    ran: list[int] = []
    steps = [(v, f"step {v}", lambda c, v=v: ran.append(v)) for v in (1, 2, 3)]
    assert migrate(conn, steps[:2]) == 2 and ran == [1, 2]
    assert migrate(conn, steps, now_ms=9) == 3 and ran == [1, 2, 3]
    assert migrate(conn, steps) == 3 and ran == [1, 2, 3]
    assert conn.execute("SELECT * FROM _migrations").fetchall() == [
        (1, "step 1", 7),
        (2, "step 2", 7),
        (3, "step 3", 9),
    ]


def test_a_step_applied_meanwhile_by_another_is_skipped(conn: Any) -> None:
    ran: list[str] = []

    def lock(c: Any) -> None:  # as if another process had applied step 1 just before this one got the lock
        if current(c) == 0:
            c.execute(TABLE)
            c.execute("INSERT INTO _migrations VALUES (1, 'theirs', 1)")
            mark(c, 1)

    assert (
        migrate(
            conn, [(1, "ours", lambda c: ran.append("1")), (2, "two", lambda c: ran.append("2"))], lock=lock
        )
        == 2
    )
    assert ran == ["2"]
    assert conn.execute("SELECT name FROM _migrations ORDER BY version").fetchall() == [("theirs",), ("two",)]


def test_a_failed_step_leaves_the_version_where_it_was(conn: Any) -> None:
    def broken(c: Any) -> None:
        c.execute("CREATE TABLE half (a)")
        raise RuntimeError("step 2 failed")

    with pytest.raises(RuntimeError, match="step 2 failed"):
        migrate(conn, [(1, "one", lambda c: None), (2, "two", broken)])
    assert current(conn) == 1
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone() == (0,)


def test_a_newer_schema_is_refused_and_nothing_runs(conn: Any) -> None:
    mark(conn, 5)
    with pytest.raises(SetupError, match="schema version 5, newer than this perseus-vault supports \\(2\\)"):
        migrate(conn, [(1, "one", lambda c: pytest.fail("ran")), (2, "two", lambda c: pytest.fail("ran"))])
