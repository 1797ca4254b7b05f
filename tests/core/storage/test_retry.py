"""storage/retry.py: a write transaction run whole again while it fails with a retryable error, rolled back
on any failure, and a ``begin`` that keeps failing reported as a StorageError."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from perseus_vault_core.contract.errors import StorageError
from perseus_vault_core.storage import retry


class Busy(Exception):
    """The error the tests' backend counts as worth a retry."""


def busy(exc: BaseException) -> bool:
    return isinstance(exc, Busy)


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("CREATE TABLE t (x INTEGER)")
    yield connection
    connection.close()


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The delays each retry waited (none is slept)."""
    waited: list[float] = []

    def pause(delay: float) -> float:
        waited.append(delay)
        return min(delay * 2, 0.5)

    monkeypatch.setattr(retry, "pause", pause)
    return waited


def rows(conn: sqlite3.Connection) -> list[int]:
    return [x for (x,) in conn.execute("SELECT x FROM t ORDER BY x")]


def test_work_that_succeeds_is_committed_and_returned(conn: sqlite3.Connection, pauses: list[float]) -> None:
    def work(c: sqlite3.Connection) -> str:
        c.execute("INSERT INTO t VALUES (1)")
        return "done"

    assert retry.transaction(conn, work, begin="BEGIN", retryable=busy, gave_up="busy") == "done"
    assert not conn.in_transaction
    assert rows(conn) == [1]
    assert pauses == []


def test_a_retryable_failure_runs_the_work_again_whole(conn: sqlite3.Connection, pauses: list[float]) -> None:
    calls = []

    def work(c: sqlite3.Connection) -> int:
        calls.append(len(calls))
        c.execute("INSERT INTO t VALUES (?)", (len(calls),))
        if len(calls) < 3:
            raise Busy("locked")
        return len(calls)

    assert retry.transaction(conn, work, begin="BEGIN", retryable=busy, gave_up="busy") == 3
    assert rows(conn) == [3]  # the first two attempts' rows were rolled back, not half kept
    assert pauses == [retry.FIRST_PAUSE, retry.FIRST_PAUSE * 2]


def test_other_errors_roll_back_and_are_raised_as_they_are(
    conn: sqlite3.Connection, pauses: list[float]
) -> None:
    def work(c: sqlite3.Connection) -> None:
        c.execute("INSERT INTO t VALUES (1)")
        raise KeyError("not a busy file")

    with pytest.raises(KeyError, match="not a busy file"):
        retry.transaction(conn, work, begin="BEGIN", retryable=busy, gave_up="busy")
    assert not conn.in_transaction
    assert rows(conn) == []
    assert pauses == []


def test_a_retryable_failure_past_the_budget_is_raised_as_it_is(
    conn: sqlite3.Connection, pauses: list[float]
) -> None:
    attempts = []

    def work(c: sqlite3.Connection) -> None:
        attempts.append(1)
        c.execute("INSERT INTO t VALUES (1)")
        raise Busy("still locked")

    with pytest.raises(Busy, match="still locked"):
        retry.transaction(conn, work, begin="BEGIN", retryable=busy, gave_up="busy", retries=2)
    assert len(attempts) == 3
    assert len(pauses) == 2
    assert rows(conn) == []
    assert not conn.in_transaction


class FailingBegin:
    """A connection whose ``begin`` fails ``failures`` times, then works."""

    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.executed: list[str] = []
        self.in_transaction = False

    def execute(self, sql: str, parameters: object = (), /) -> None:
        if sql == "BEGIN" and self.failures:
            self.failures -= 1
            raise self.error
        self.executed.append(sql)
        self.in_transaction = sql == "BEGIN"


def test_a_begin_that_keeps_failing_is_a_storage_error(pauses: list[float]) -> None:
    conn = FailingBegin(10, Busy("database is locked"))
    with pytest.raises(StorageError, match=r"^could not begin after 3 attempts: database is locked"):
        retry.transaction(
            conn, lambda c: None, begin="BEGIN", retryable=busy, gave_up="could not begin", retries=2
        )
    assert conn.executed == []
    assert len(pauses) == 2


def test_a_begin_that_fails_for_good_is_not_retried(pauses: list[float]) -> None:
    conn = FailingBegin(1, OSError("disk I/O error"))
    with pytest.raises(StorageError, match="after 1 attempts: disk I/O error") as raised:
        retry.transaction(conn, lambda c: None, begin="BEGIN", retryable=busy, gave_up="begin failed")
    assert isinstance(raised.value.__cause__, OSError)
    assert pauses == []


def test_a_begin_that_fails_once_is_retried(pauses: list[float]) -> None:
    conn = FailingBegin(1, Busy("locked"))
    result = retry.transaction(conn, lambda c: 7, begin="BEGIN", retryable=busy, gave_up="busy")
    assert result == 7
    assert conn.executed == ["BEGIN", "COMMIT"]
    assert pauses == [retry.FIRST_PAUSE]


def test_pause_waits_between_the_delay_and_twice_it_and_doubles_up_to_half_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(retry.time, "sleep", slept.append)
    assert retry.pause(0.01) == 0.02
    assert retry.pause(0.3) == 0.5
    assert retry.pause(0.5) == 0.5
    assert 0.01 <= slept[0] <= 0.02 and 0.3 <= slept[1] <= 0.6 and 0.5 <= slept[2] <= 1.0
