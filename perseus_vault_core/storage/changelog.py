"""Reading the change log (``head_changes``), as the in-memory indexes follow it (see :mod:`indexes.mirror`):
the :class:`~.base.ChangeLog` protocol in SQL both backends run alike. Each backend's ``changes`` module
adds what differs: how a list of versions is passed (``rows``), and on Postgres how writers append in
commit order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .base import OP_VECTOR, Connection

# What each feed adds to (vid, entity id, agent, workspace) per current version.
_FEEDS = {
    "text": "v.content, v.summary, v.tags",
    "vector": "(SELECT x.embedding FROM version_vectors x WHERE x.vid = v.vid AND x.scope = v.scope)",
}


def head_sql(feed: str, where: str) -> str:
    """The feed's columns of the versions ``where`` selects."""
    return (
        f"SELECT v.vid, v.entity_id, e.agent_id, e.workspace_hash, {_FEEDS[feed]} "
        f"FROM entity_versions v JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope {where}"
    )


POSITION_SQL = "SELECT coalesce(max(seq), 0) FROM head_changes"


def position(conn: Connection) -> int:
    """The latest entry's position (0 for an empty log); inside a Postgres read snapshot, as read with its
    BEGIN (``PgConnection.begin_snapshot``)."""
    memo = getattr(conn, "memo", None)
    if memo is not None:
        return int(memo["position"])
    return int(conn.execute(POSITION_SQL).fetchone()[0])


def marker(conn: Connection, seq: int) -> str | None:
    """What identifies the entry at ``seq`` in this database's history: its version and op, and when that
    version was recorded (another history of the file, say a restored backup written on since, has a
    different entry there). "0" for the empty log; ``None`` when no entry at ``seq`` is kept."""
    if seq == 0:
        return "0"
    # Two reads, not an outer join: on a distributed database the log stays on the coordinator and the
    # versions are sharded, and Citus joins those only one way round.
    row = conn.execute("SELECT c.vid, c.op FROM head_changes c WHERE c.seq = ?", (seq,)).fetchone()
    if row is None:
        return None
    at = conn.execute(
        "SELECT v.recorded_from_ms FROM entity_versions v WHERE v.vid = ?", (row[0],)
    ).fetchone()
    return f"{seq}:{row[0]}:{row[1]}:{at[0] if at is not None else None}"


def first(conn: Connection) -> int | None:
    """The oldest entry still kept (older ones were trimmed), or None."""
    value = conn.execute("SELECT min(seq) FROM head_changes").fetchone()[0]
    return int(value) if value is not None else None


def _ops(vectors: bool) -> str:
    return "TRUE" if vectors else f"op <> {OP_VECTOR}"


def pending(conn: Connection, after: int, upto: int, vectors: bool) -> int:
    """How many entries lie in (after, upto]; ``vectors``: count vector writes too."""
    return int(
        conn.execute(
            f"SELECT count(*) FROM head_changes WHERE seq > ? AND seq <= ? AND {_ops(vectors)}", (after, upto)
        ).fetchone()[0]
    )


def entries(conn: Connection, after: int, upto: int, vectors: bool) -> list[tuple[int, int]]:
    """The entries in (after, upto] as (vid, op), in order."""
    return [
        (int(vid), int(op))
        for vid, op in conn.execute(
            f"SELECT c.vid, c.op FROM head_changes c WHERE c.seq > ? AND c.seq <= ? AND {_ops(vectors)} ORDER BY c.seq",
            (after, upto),
        )
    ]


def rebuilt_since(conn: Connection, after: int) -> bool:
    """Whether the indexes were rebuilt after position ``after``."""
    return (
        conn.execute("SELECT 1 FROM head_changes WHERE seq > ? AND op = 0 LIMIT 1", (after,)).fetchone()
        is not None
    )


def heads(conn: Connection, feed: str) -> Iterable[Sequence[Any]]:
    """Every current version with the feed's columns, by vid."""
    return conn.execute(head_sql(feed, "WHERE v.recorded_to_ms IS NULL ORDER BY v.vid"))


__all__ = ["entries", "first", "head_sql", "heads", "marker", "pending", "position", "rebuilt_since"]
