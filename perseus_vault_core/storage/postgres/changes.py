"""The change log (``head_changes``) on Postgres: appended by writers, followed by the in-memory indexes
of every process on every host (see :mod:`indexes.mirror`; the protocol is :class:`~..base.ChangeLog`).

A follower reads the log up to the newest position its snapshot shows and resumes after it, so positions
must become visible in order: no entry may commit below a position a reader has already passed. SQLite
has one writer at a time, so its sequence gives that for free. Postgres hands out identity values when
rows are inserted, not when they commit: a transaction that took position 10 may commit after one that
took 11, and a follower that read up to 11 in between would never see 10. :func:`log_changes` therefore
takes a transaction-scoped advisory lock before it appends, held to commit, so writers append (and
commit) one after another and the log's order is its commit order. Writers still run in parallel up to
that point; only their last step, the append and commit, is in turn.

Each entry also carries its version's scope key (``''`` for a rebuild's, vid 0), by which row-level
security admits it (tenancy.py); the log itself is not sharded (storage/distribution.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import Connection
from ..changelog import entries, first, head_sql, heads, marker, pending, position, rebuilt_since

CHANGE_LOG_LOCK = 0x7065727365757332  # "perseus2": held from a writer's append to its commit


def log_changes(conn: Connection, vids: list[int], op: int) -> None:
    """Append ``(vid, op)`` for each of ``vids``, in the writer's transaction, in commit order (above)."""
    if not vids:
        return
    conn.execute("SELECT pg_advisory_xact_lock(?)", (CHANGE_LOG_LOCK,))
    # Each version's scope read first, then the entries in the order given (vid 0, a rebuild, has none).
    scopes = (
        dict(
            conn.execute(
                "SELECT vid, scope FROM entity_versions WHERE vid = ANY(?)", ([int(v) for v in vids if v],)
            ).fetchall()
        )
        if any(vids)
        else {}
    )
    conn.executemany(
        "INSERT INTO head_changes (vid, op, scope) VALUES (?, ?, ?)",
        [(vid, op, scopes.get(vid, "")) for vid in vids],
    )
    top = conn.execute("SELECT max(seq) FROM head_changes").fetchone()[0]
    if top is not None and top % 10_000 < len(vids):  # crossed a multiple of 10,000: trim
        # By the schema's function, which keeps the newest CHANGE_LOG_KEEP entries: a role bound to a scope may
        # not delete from the log that every process follows (tenancy.py).
        conn.execute("SELECT pv_trim_changes()")


def rows(conn: Connection, feed: str, vids: Sequence[int]) -> dict[int, Sequence[Any]]:
    """Versions with the feed's columns, by vid (those purged since are absent)."""
    if not vids:
        return {}
    found = conn.execute(head_sql(feed, "WHERE v.vid = ANY(?)"), ([int(v) for v in vids],))
    return {int(row[0]): row for row in found}


__all__ = [
    "entries",
    "first",
    "heads",
    "log_changes",
    "marker",
    "pending",
    "position",
    "rebuilt_since",
    "rows",
]
