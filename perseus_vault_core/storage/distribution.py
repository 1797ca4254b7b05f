"""Which tables shard by scope on a distributed PostgreSQL (Citus), which stay whole, and why: the plan
docs/postgres.md ("Sharding by scope") shows and the tests hold the schema to.

Citus places a table's rows on shards by one column. Every table that holds a scope's rows carries the
scope key ``scope`` (:mod:`..primitives.scopes`) for that, and its keys and foreign keys include it, as Citus requires
of a distributed table; the shared SQL's joins between two of them equate their keys, so that each join stays
inside a shard. The other tables hold no scope's rows: settings, schema history, role bindings and the
change log. (Trigger-phrase vectors were a cache every scope shared until each scope kept its own: they are a
scope's rows now, distributed with the rest.) Both backends have the same tables and the same ``scope`` columns
(one schema shape keeps the shared SQL one); only Postgres has ``keyword_docs`` and
``keyword_postings`` (SQLite's keyword index is FTS5's).
"""

from __future__ import annotations

# Every table holding a scope's rows, distributed by ``scope`` and co-located with ``entities``.
DISTRIBUTED = (
    "entities",
    "entity_versions",
    "links",
    "version_vectors",
    "keyword_docs",
    "keyword_postings",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "kv_entries",
    "trigger_vectors",
    "trigger_terms",
)

# The tables whose key is their own (agent_id, workspace_hash)'s ...
OWN_SCOPE = ("entities", "checkpoints", "checkpoint_blobs", "checkpoint_writes", "kv_entries")
# ... and those whose key is their parent row's: (parent table as ``p``, how a row (``{t}``) finds it),
# parents before children.
BACKFILL = {
    "entity_versions": ("entities", "p.id = {t}.entity_id"),
    "links": ("entities", "p.id = {t}.from_id"),  # both ends share a scope (graph.link refuses others)
    "version_vectors": ("entity_versions", "p.vid = {t}.vid"),
    "keyword_docs": ("entity_versions", "p.vid = {t}.vid"),
    "keyword_postings": ("keyword_docs", "p.vid = {t}.vid"),
}

# The tables that stay whole: Citus reference tables (a copy on every node, for statements the workers run)
# or tables local to the coordinator (which every write reaches anyway), each with its reason.
REFERENCE = {
    "vault_meta": "the vault's settings (its model, its id, a memory folder's binding): a few rows every node reads",
    "_migrations": "the schema's history: which steps ran, read when a vault opens",
    "vault_scopes": "which database role is bound to which scope: every shard's row-level security reads it",
}
COORDINATOR = {
    "head_changes": "the change log every process's in-memory indexes follow, in one global commit order "
    "(its positions must commit in order, which one table on one node gives); each row also "
    "carries its version's scope, for row-level security only"
}
GLOBAL = {**REFERENCE, **COORDINATOR}


def citus_statements() -> list[str]:
    """What an operator runs once on the Citus coordinator, after the vault has migrated the database to
    its latest schema and before writers start again (docs/postgres.md shows these, and a test holds them
    to this list): the functions the workers run, the whole tables, then the distributed ones, each
    co-located with ``entities`` (referenced tables first, as Citus requires of foreign keys)."""
    return [
        "SET citus.enable_unsafe_triggers = on;  -- the versions' immutability trigger runs on every shard",
        *(
            f"SELECT create_distributed_function('{f}');"
            for f in (
                "pv_decay(bigint, bigint, bigint, bigint)",
                "pv_bound_scope()",
                "pv_phrase_vector_fits(text, bytea)",
                "pv_versions_immutable()",
            )
        ),
        *(f"SELECT create_reference_table('{t}');" for t in REFERENCE),
        *(f"SELECT citus_add_local_table_to_metadata('{t}');" for t in COORDINATOR),
        "SELECT create_distributed_table('entities', 'scope');",
        *(
            f"SELECT create_distributed_table('{t}', 'scope', colocate_with => 'entities');"
            for t in DISTRIBUTED
            if t != "entities"
        ),
    ]


__all__ = ["BACKFILL", "COORDINATOR", "DISTRIBUTED", "GLOBAL", "OWN_SCOPE", "REFERENCE", "citus_statements"]
