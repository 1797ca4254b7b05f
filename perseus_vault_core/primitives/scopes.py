"""The scope key: one column that names a memory's scope (agent and workspace), so that a distributed
PostgreSQL (Citus) can shard every table by it (docs/postgres.md, "Sharding by scope").

Citus distributes a table by one column, and a scope is two (``agent_id``, ``workspace_hash``). Every
table that holds a scope's rows therefore carries ``scope``, this key of the two: written explicitly where
the writer knows the scope, copied from the parent row in the same statement elsewhere (a version from
its entity, a vector from its version). Queries still filter ``agent_id`` and ``workspace_hash`` exactly;
the key adds placement (rows of one scope on one shard), routing (a query naming the key goes to one
shard) and joins that stay inside a shard (every join between two scoped tables also equates their keys).

The key is the agent id's length in UTF-8 bytes, a colon, the agent id, then the workspace hash
(``5:alicews-1``): a key names exactly one (agent, workspace) pair, whatever characters either holds.
That matters because row-level security on a distributed table admits rows by their own key (Citus takes
no subquery in a policy), so two scopes sharing a key would see each other's rows. A separator character
alone would not do: nothing stops an agent id from containing it. :meth:`dialect.Dialect.scope_key` spells
the same key in SQL, for migrations and invariant checks.
"""

from __future__ import annotations


def scope_key(agent_id: str | None, workspace_hash: str | None) -> str:
    """The ``scope`` column's value for rows of (``agent_id``, ``workspace_hash``); ``None`` reads as ``''``,
    the unscoped vault's, as the rows store it."""
    agent, workspace = agent_id or "", workspace_hash or ""
    return f"{len(agent.encode('utf-8'))}:{agent}{workspace}"


__all__ = ["scope_key"]
