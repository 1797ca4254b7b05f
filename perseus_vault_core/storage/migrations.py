"""Numbered schema migrations: the loop every backend runs over its own steps.

A backend lists its steps as ``(version, name, step)`` and says how to read its version, how to run a
write transaction, and what else a step needs (a lock to take first, a version mark to set after). Each
step runs in a transaction of its own and is recorded in ``_migrations``; the version is read again inside
that transaction, so processes (or hosts) opening one new database at once apply each step once. A
database whose schema is newer than this package's is refused, never guessed at.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..contract.errors import SetupError
from ..primitives.dbapi import Connection

C = TypeVar("C", bound=Connection)
Step = Callable[[Any], None]


def run(
    conn: C,
    steps: Sequence[tuple[int, str, Step]],
    *,
    current: Callable[[C], int],
    transaction: Callable[[C, Callable[[C], None]], Any],
    table: str,
    now_ms: int,
    lock: Callable[[C], object] | None = None,
    mark: Callable[[C, int], object] | None = None,
) -> int:
    """Apply the ``steps`` above ``current(conn)`` in order, each by ``transaction``; return the version.
    ``table``: the backend's ``CREATE TABLE IF NOT EXISTS _migrations`` statement."""
    latest = steps[-1][0]
    found = current(conn)
    if found > latest:
        raise SetupError(
            f"this database has schema version {found}, newer than this perseus-vault supports ({latest}); "
            "upgrade perseus-vault to open it"
        )
    for version, name, step in steps:
        if version <= found:
            continue

        def apply(c: C, version: int = version, name: str = name, step: Step = step) -> None:
            if lock is not None:
                lock(c)
            c.execute(table)
            if (
                current(c) >= version
            ):  # read again inside the transaction: another may have migrated meanwhile
                return
            step(c)
            c.execute("INSERT INTO _migrations VALUES (?, ?, ?)", (version, name, now_ms))
            if mark is not None:
                mark(c, version)

        transaction(conn, apply)
    return current(conn)
