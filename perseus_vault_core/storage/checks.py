"""The vault's own invariants, as counting queries both backends run alike (``check`` reports them).

Each correlates its rows by the scope key too (primitives/scopes.py), as the shared queries do: a row whose key is
not its parent's has no parent in its scope and is reported so; and each query stays one a distributed
PostgreSQL runs shard by shard (docs/postgres.md, "Sharding by scope")."""

from __future__ import annotations

from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from .distribution import OWN_SCOPE

# (count query, what a non-zero count means): the vault's own invariants.
INVARIANTS = [
    (
        "SELECT count(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM entity_versions v WHERE v.entity_id = e.id "
        "AND v.scope = e.scope AND v.recorded_to_ms IS NULL)",
        "entities have no current version (in their scope)",
    ),
    (
        "SELECT count(*) FROM entity_versions v WHERE NOT EXISTS "
        "(SELECT 1 FROM entities e WHERE e.id = v.entity_id AND e.scope = v.scope)",
        "versions belong to no entity (of their scope key)",
    ),
    (
        "SELECT count(*) FROM links l WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = l.from_id "
        "AND e.scope = l.scope) OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = l.to_id AND e.scope = l.scope)",
        "links point at missing entities (or at entities outside the link's scope key)",
    ),
    (
        "SELECT count(*) FROM (SELECT recorded_to_ms AS ends, lead(recorded_from_ms) OVER "
        "(PARTITION BY scope, entity_id ORDER BY version) AS next_starts FROM entity_versions) "
        "AS spans WHERE next_starts IS NOT NULL AND (ends IS NULL OR ends > next_starts)",
        "versions overlap the next version of their entity in transaction time",
    ),
]


def _own_scope(conn: Connection) -> list[tuple[str, str]]:
    """Rows that name their own agent and workspace whose scope key is not theirs."""
    key = dialect(conn).scope_key("agent_id", "workspace_hash")
    return [
        (
            f"SELECT count(*) FROM {table} WHERE scope != {key}",
            f"{table} rows carry a scope key that is not their agent and workspace's",
        )
        for table in OWN_SCOPE
    ]


# Vectors that dense recall cannot use: one whose version is gone, or a blob whose size is not the
# recorded model's (a foreign or torn write). Either makes every dense query fail, so
# ``check`` reports them and ``reindex`` drops them (``embed`` then refills the missing ones).
BAD_VECTORS = (
    "SELECT x.vid FROM version_vectors x WHERE NOT EXISTS "
    "(SELECT 1 FROM entity_versions v WHERE v.vid = x.vid AND v.scope = x.scope) "
    "OR length(x.embedding) != 4 * coalesce((SELECT CAST(value AS INTEGER) FROM vault_meta "
    "WHERE key = 'embedding_dimension'), length(x.embedding) / 4) "
    "OR length(x.bits) != (length(x.embedding) / 4 + 7) / 8"
)


def invariant_problems(conn: Connection) -> list[str]:
    """What ``check`` reports of the invariants and the vectors: one line per kind of breach, with its count."""
    problems: list[str] = []
    for sql, problem in INVARIANTS + _own_scope(conn):
        count = conn.execute(sql).fetchone()[0]
        if count:
            problems.append(f"{count} {problem}")
    bad = conn.execute(f"SELECT count(*) FROM ({BAD_VECTORS}) AS bad").fetchone()[0]
    if bad:
        problems.append(
            f"{bad} vectors match no version (of their scope key) or are not the model's size "
            "(reindex drops them, embed refills)"
        )
    return problems
