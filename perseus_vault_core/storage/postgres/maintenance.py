"""Looking after the database on Postgres: ``stats``, ``check`` (the vault's invariants, the keyword
index against its rows), ``reindex``. Backups and encryption at rest are the server's (pg_dump, a
managed service's snapshots, its disk encryption: docs/postgres.md); the vault's portable copy is
``export``."""

from __future__ import annotations

from ...contract.models import CheckReport, Stats
from ...primitives.dbapi import Connection
from ..checks import BAD_VECTORS, invariant_problems
from ..trigger_terms import rebuild as rebuild_trigger_index
from ..vector_rows import coverage, model
from .keyword import rebuild as rebuild_keyword_index
from .schema import current_version
from .vectors import build_index, index_missing

# Versions whose keyword document is missing, indexed versions whose row is gone, documents that are wrong
# about their version (its entity, its scope, whether it is current), postings without their document and
# postings that disagree with it. Rows are matched by their scope key too (a row with another key than its
# parent's has no parent), as a distributed database matches them, shard by shard.
_KEYWORD_DRIFT = (
    "SELECT (SELECT count(*) FROM entity_versions v WHERE NOT EXISTS "
    "(SELECT 1 FROM keyword_docs d WHERE d.vid = v.vid AND d.scope = v.scope))"
    " + (SELECT count(*) FROM keyword_docs d WHERE NOT EXISTS "
    "(SELECT 1 FROM entity_versions v WHERE v.vid = d.vid AND v.scope = d.scope))"
    " + (SELECT count(*) FROM keyword_docs d JOIN entity_versions v ON v.vid = d.vid AND v.scope = d.scope"
    " JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope"
    " WHERE d.entity_id != v.entity_id OR d.agent_id != e.agent_id OR d.workspace_hash != e.workspace_hash"
    " OR d.head != (v.recorded_to_ms IS NULL))"
    " + (SELECT count(DISTINCT p.vid) FROM keyword_postings p WHERE NOT EXISTS "
    "(SELECT 1 FROM keyword_docs d WHERE d.vid = p.vid AND d.scope = p.scope))"
    " + (SELECT count(DISTINCT p.vid) FROM keyword_postings p JOIN keyword_docs d ON d.vid = p.vid AND d.scope = p.scope"
    " WHERE p.head != d.head OR p.length != d.length OR p.entity_id != d.entity_id)"
)


def stats(conn: Connection, url: str, keyword_index: str, vector_index: str) -> Stats:
    by_status = dict(
        conn.execute(
            "SELECT status, count(*) FROM entity_versions WHERE recorded_to_ms IS NULL GROUP BY status ORDER BY status"
        ).fetchall()
    )
    recorded = model(conn)
    embedded, heads = coverage(conn)
    import psycopg

    pgvector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return Stats(
        path=url,
        backend="postgres",
        schema_version=current_version(conn),  # type: ignore[arg-type]
        entities=int(conn.execute("SELECT count(*) FROM entities").fetchone()[0]),
        by_status={str(k): int(v) for k, v in by_status.items()},
        versions=int(conn.execute("SELECT count(*) FROM entity_versions").fetchone()[0]),
        links=int(conn.execute("SELECT count(*) FROM links WHERE recorded_to_ms IS NULL").fetchone()[0]),
        db_bytes=int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]),
        sqlite_driver=f"psycopg {psycopg.__version__}",
        sqlite_version=str(conn.execute("SHOW server_version").fetchone()[0]),
        sqlite_vec_version=f"pgvector {pgvector[0]}" if pgvector else "",
        keyword_index=keyword_index,
        embedding_model=recorded[0] if recorded else None,
        embedding_dimension=recorded[1] if recorded else None,
        embedded=embedded,
        embedding_coverage=round(embedded / heads, 6) if heads else 0.0,
        vector_index=vector_index,
    )


def check(conn: Connection) -> CheckReport:
    """The vault's invariants, the keyword index against the rows, unusable vectors, and the vectors' HNSW
    index (an ``embed`` stopped before its end leaves it unbuilt)."""
    problems: list[str] = []
    drift = int(conn.execute(_KEYWORD_DRIFT).fetchone()[0])
    if drift:
        problems.append(
            f"the keyword index does not match its rows ({drift} versions differ; reindex rebuilds it)"
        )
    if index_missing(conn):
        problems.append(
            "the vectors have no HNSW index, so a search by SQL scans them all (an embed stopped "
            "before building it; embed or reindex builds it)"
        )
    problems.extend(invariant_problems(conn))
    return CheckReport(ok=not problems, problems=problems)


# The tables an import grows, whose statistics :func:`analyze` refreshes.
GROWN = (
    "entities",
    "entity_versions",
    "keyword_docs",
    "keyword_postings",
    "version_vectors",
    "head_changes",
    "links",
    "trigger_terms",
)


def analyze(conn: Connection) -> None:
    """``ANALYZE`` the tables an import grows, inside its transaction. Autovacuum cannot see rows not yet
    committed, and a prepared statement keeps the plan it was given while a table was small (a scan of the
    whole table); new statistics re-plan them. A 30k ``migrate`` took 101 s with this, 217 s without."""
    conn.execute(f"ANALYZE {', '.join(GROWN)}")


def reindex(conn: Connection) -> None:
    """Rebuild the keyword and trigger-phrase indexes from the rows, drop unusable vectors and build a missing HNSW index (the
    caller holds the write)."""
    conn.execute(f"DELETE FROM version_vectors WHERE vid IN ({BAD_VECTORS})")
    rebuild_trigger_index(conn)
    rebuild_keyword_index(conn)  # logs a rebuild, which every process's keyword and vector mirrors follow
    build_index(conn)
