"""Key-value collections: JSON documents by collection and key, kept in the vault's database.

Framework state that is not memory lives here: LlamaIndex's document and index stores
(``perseus_vault_integrations.llama_index.kvstore``) keep their nodes, hashes and index structures as
values, so that an index persisted "to the vault" writes nothing beside it. A value is a JSON object;
putting a key again replaces its value (no history: this is bookkeeping, not a memory), and nothing
here is recalled, embedded or logged.

The table (``kv_entries``, schema step 4 on SQLite, 8 on PostgreSQL) is keyed by scope, collection and
key; a :class:`KeyValues` reads and writes one scope (``agent_id`` / ``workspace_hash``, ``''`` for the
unscoped vault).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..contract.errors import InvalidInput
from ..facade.edge import edge
from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from .scoped import Scoped, json_object, text


class KeyValues(Scoped):
    """The key-value collections of one scope of a vault: ``KeyValues(vault, agent_id=..., workspace_hash=...)``
    (see the module docstring). Safe to share between threads."""

    @edge
    def put_many(self, collection: str, items: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Set each (key, value) of ``items`` in ``collection``, all in one transaction (a later item
        with the same key wins)."""
        base = {**self.scope, "c": text("collection", collection), "at": self._engine.now()}
        rows = {}
        for i, pair in enumerate(items):
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise InvalidInput(f"items[{i}]", "must be a (key, value) pair")
            key = text(f"items[{i}].key", pair[0])
            rows[key] = {**base, "k": key, "v": json_object(f"items[{i}].value", pair[1])}
        if rows:
            self._engine.write(
                lambda conn: conn.executemany(
                    "INSERT INTO kv_entries (agent_id, workspace_hash, collection, key, value, updated_at_ms, scope) "
                    "VALUES (:a, :w, :c, :k, :v, :at, :s) ON CONFLICT (agent_id, workspace_hash, collection, key, scope) "
                    "DO UPDATE SET value = excluded.value, updated_at_ms = excluded.updated_at_ms",
                    list(rows.values()),
                )
            )

    def put(self, collection: str, key: str, value: Mapping[str, Any]) -> None:
        """Set ``key`` in ``collection`` to ``value`` (a JSON object)."""
        self.put_many(collection, [(key, value)])

    @edge
    def get(self, collection: str, key: str) -> dict[str, Any] | None:
        """The value of ``key`` in ``collection``, or ``None``."""
        params = {**self.scope, "c": text("collection", collection), "k": text("key", key)}
        row = self._engine.read(
            lambda conn: conn.execute(
                "SELECT value FROM kv_entries WHERE agent_id = :a AND workspace_hash = :w AND scope = :s AND collection = :c "
                "AND key = :k",
                params,
            ).fetchone()
        )
        return json.loads(row[0]) if row is not None else None

    @edge
    def get_many(self, collection: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The values of those of ``keys`` that ``collection`` holds, by key (one read)."""
        if isinstance(keys, str):
            raise InvalidInput("keys", "must be a list of keys")
        wanted = [text(f"keys[{i}]", k) for i, k in enumerate(keys)]
        if not wanted:
            return {}
        params = {**self.scope, "c": text("collection", collection), "keys": json.dumps(wanted)}

        def read(conn: Connection) -> list[Any]:
            return conn.execute(
                f"SELECT key, value FROM kv_entries WHERE agent_id = :a AND workspace_hash = :w AND scope = :s AND collection = :c "
                f"AND key IN (SELECT value FROM {dialect(conn).texts(':keys')} j)",
                params,
            ).fetchall()

        return {str(k): json.loads(v) for k, v in self._engine.read(read)}

    @edge
    def get_all(self, collection: str) -> dict[str, dict[str, Any]]:
        """Every key of ``collection`` with its value."""
        params = {**self.scope, "c": text("collection", collection)}
        rows = self._engine.read(
            lambda conn: conn.execute(
                "SELECT key, value FROM kv_entries WHERE agent_id = :a AND workspace_hash = :w AND scope = :s AND collection = :c",
                params,
            ).fetchall()
        )
        return {str(k): json.loads(v) for k, v in rows}

    @edge
    def delete(self, collection: str, key: str) -> bool:
        """Remove ``key`` from ``collection``; whether it was there."""
        params = {**self.scope, "c": text("collection", collection), "k": text("key", key)}
        removed: int = self._engine.write(
            lambda conn: (
                conn.execute(
                    "DELETE FROM kv_entries WHERE agent_id = :a AND workspace_hash = :w AND scope = :s AND collection = :c AND key = :k",
                    params,
                ).rowcount
            )
        )
        return removed > 0
