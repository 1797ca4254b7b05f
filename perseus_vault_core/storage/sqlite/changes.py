"""The change log (``head_changes``) as the in-memory indexes read it (see :mod:`indexes.mirror`).

The writer appends to it in its own transaction (:func:`keyword.log_changes`); a reader follows
it up to its own snapshot. Positions are SQLite's AUTOINCREMENT sequence: they only grow, and with one
writer at a time they commit in order. The readers are the shared ones (:mod:`..changelog`); this
module adds how a list of versions is passed to SQLite.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..base import Connection
from ..changelog import entries, first, head_sql, heads, marker, pending, position, rebuilt_since


def rows(conn: Connection, feed: str, vids: Sequence[int]) -> dict[int, Sequence[Any]]:
    """Versions with the feed's columns, by vid (those purged since are absent)."""
    if not vids:
        return {}
    found = conn.execute(
        head_sql(feed, "WHERE v.vid IN (SELECT value FROM json_each(?))"),
        ("[" + ",".join(str(int(v)) for v in vids) + "]",),
    )
    return {int(row[0]): row for row in found}


__all__ = ["entries", "first", "heads", "marker", "pending", "position", "rebuilt_since", "rows"]
