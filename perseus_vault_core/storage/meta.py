"""Vault-wide settings (``vault_meta``: the embedding model, index markers ...), by key: the same SQL on
every backend (an upsert both SQLite and Postgres take)."""

from __future__ import annotations

from ..primitives.dbapi import Connection

# The highest entity id written before writes judged relations (features/backfill.py ``relations``): set by a
# migration of a vault that held memories then, removed once ``reindex`` has judged them.
RELATIONS_PENDING = "relations_pending_through"


def mark_relations_pending(conn: Connection) -> None:
    """The migration step that sets :data:`RELATIONS_PENDING` (nothing, in a vault with no memory yet)."""
    conn.execute(
        "INSERT INTO vault_meta (key, value) SELECT ?, CAST(max(id) AS TEXT) FROM entities "
        "HAVING max(id) IS NOT NULL",
        (RELATIONS_PENDING,),
    )


def get_meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM vault_meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else None


def set_meta(conn: Connection, key: str, value: str | None) -> None:
    """Set ``key`` to ``value``; ``None`` removes it."""
    if value is None:
        conn.execute("DELETE FROM vault_meta WHERE key = ?", (key,))
    else:
        conn.execute(
            "INSERT INTO vault_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )
