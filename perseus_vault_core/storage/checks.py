"""The vault's own invariants, as counting queries both backends run alike (``check`` reports them)."""

from __future__ import annotations

from ..dbapi import Connection

# (count query, what a non-zero count means): the vault's own invariants.
INVARIANTS = [
    ("SELECT count(*) FROM entities e WHERE NOT EXISTS "
     "(SELECT 1 FROM entity_versions v WHERE v.entity_id = e.id AND v.recorded_to_ms IS NULL)",
     "entities have no current version"),
    ("SELECT count(*) FROM entity_versions v WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = v.entity_id)",
     "versions belong to no entity"),
    ("SELECT count(*) FROM links l WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = l.from_id) "
     "OR NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = l.to_id)",
     "links point at missing entities"),
    ("SELECT count(*) FROM (SELECT recorded_to_ms AS ends, "
     "lead(recorded_from_ms) OVER (PARTITION BY entity_id ORDER BY version) AS next_starts FROM entity_versions) "
     "AS spans WHERE next_starts IS NOT NULL AND (ends IS NULL OR ends > next_starts)",
     "versions overlap the next version of their entity in transaction time"),
]


# Vectors that dense recall cannot use: one whose version is gone, or a blob whose size is not the
# recorded model's (a foreign or torn write). Either makes every dense query fail, so
# ``check`` reports them and ``reindex`` drops them (``embed`` then refills the missing ones).
BAD_VECTORS = (
    "SELECT x.vid FROM version_vectors x WHERE NOT EXISTS (SELECT 1 FROM entity_versions v WHERE v.vid = x.vid) "
    "OR length(x.embedding) != 4 * coalesce((SELECT CAST(value AS INTEGER) FROM vault_meta "
    "WHERE key = 'embedding_dimension'), length(x.embedding) / 4) "
    "OR length(x.bits) != (length(x.embedding) / 4 + 7) / 8"
)


def invariant_problems(conn: Connection) -> list[str]:
    """What ``check`` reports of the invariants and the vectors: one line per kind of breach, with its count."""
    problems: list[str] = []
    for sql, problem in INVARIANTS:
        count = conn.execute(sql).fetchone()[0]
        if count:
            problems.append(f"{count} {problem}")
    bad = conn.execute(f"SELECT count(*) FROM ({BAD_VECTORS}) AS bad").fetchone()[0]
    if bad:
        problems.append(f"{bad} vectors match no version or are not the model's size (reindex drops them, embed refills)")
    return problems
