"""Write transactions retried whole, the one policy every backend runs: what counts as worth a retry is
the backend's (SQLite: the file is busy; Postgres: a conflict with a concurrent transaction), the pacing
is shared. Nothing is committed until the work returns, so a retry never repeats half a write, and any
exception rolls back everything the work did.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from ..contract.errors import StorageError
from ..primitives.dbapi import Connection

C = TypeVar("C", bound=Connection)
T = TypeVar("T")

WRITE_RETRIES = 8
FIRST_PAUSE = 0.01  # seconds before the first retry; doubled each time (with jitter), up to 0.5


def pause(delay: float) -> float:
    """Wait ``delay`` to twice that (the jitter spreads out connections retrying together) and return
    the next, longer delay."""
    time.sleep(delay * (1 + random.random()))
    return min(delay * 2, 0.5)


def transaction(
    conn: C,
    work: Callable[[C], T],
    *,
    begin: str,
    retryable: Callable[[BaseException], bool],
    gave_up: str,
    retries: int = WRITE_RETRIES,
) -> T:
    """Run ``work(conn)`` between ``begin`` and ``COMMIT``; run it again, whole, while it fails with an
    error ``retryable`` accepts, up to ``retries`` times. A ``begin`` that keeps failing is a
    :class:`StorageError` that starts with ``gave_up`` (what kept failing, in the backend's words); the
    work's own last error is raised as it is."""
    delay = FIRST_PAUSE
    for attempt in range(retries + 1):
        try:
            conn.execute(begin)
        except Exception as exc:
            if retryable(exc) and attempt < retries:
                delay = pause(delay)
                continue
            raise StorageError(f"{gave_up} after {attempt + 1} attempts: {exc}") from exc
        try:
            result = work(conn)
            conn.execute("COMMIT")
            return result
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if retryable(exc) and attempt < retries:
                delay = pause(delay)
                continue
            raise
    raise StorageError(gave_up)  # pragma: no cover - the loop returns or raises
