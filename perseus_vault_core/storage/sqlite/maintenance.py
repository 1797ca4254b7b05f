"""Looking after the file: ``stats``, ``check`` (integrity and index sync), ``reindex``, ``backup``."""

from __future__ import annotations

import os

from ...contract.errors import InvalidInput
from ...contract.models import CheckReport, Stats
from ...primitives import file_locks
from ...primitives.dbapi import Connection
from ..checks import BAD_VECTORS, invariant_problems
from ..trigger_terms import rebuild as rebuild_trigger_index
from .connection import SQLITE_ERRORS, write_transaction
from .keyword import rebuild as rebuild_keyword_index
from .schema import current_version
from .vectors import coverage, model


def stats(
    conn: Connection, path: str, driver_name: str, sqlite_version: str, keyword_index: str, vector_index: str
) -> Stats:
    by_status = {
        status: count
        for status, count in conn.execute(
            "SELECT status, count(*) FROM entity_versions WHERE recorded_to_ms IS NULL GROUP BY status ORDER BY status"
        )
    }
    recorded = model(conn)
    embedded, heads = coverage(conn)
    size = 0
    for suffix in ("", "-wal"):
        try:
            size += os.path.getsize(path + suffix)
        except OSError:
            pass
    return Stats(
        path=path,
        schema_version=current_version(conn),
        entities=int(conn.execute("SELECT count(*) FROM entities").fetchone()[0]),
        by_status=by_status,
        versions=int(conn.execute("SELECT count(*) FROM entity_versions").fetchone()[0]),
        links=int(conn.execute("SELECT count(*) FROM links WHERE recorded_to_ms IS NULL").fetchone()[0]),
        db_bytes=size,
        sqlite_driver=driver_name,
        sqlite_version=sqlite_version,
        sqlite_vec_version=str(conn.execute("SELECT vec_version()").fetchone()[0]),
        keyword_index=keyword_index,
        embedding_model=recorded[0] if recorded else None,
        embedding_dimension=recorded[1] if recorded else None,
        embedded=embedded,
        embedding_coverage=round(embedded / heads, 6) if heads else 0.0,
        vector_index=vector_index,
    )


def _fts_in_sync(conn: Connection, table: str) -> str | None:
    # FTS5's integrity-check is issued as a write: run it as one, so a busy file is waited out
    # (and reported as busy if it stays so) instead of being mistaken for drift.
    try:
        write_transaction(
            conn, lambda c: c.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        )
    except SQLITE_ERRORS as exc:  # FTS5 reports drift as a "malformed" error
        return f"{table} does not match its rows ({exc})"
    return None


def check(conn: Connection) -> CheckReport:
    """SQLite's integrity check, both keyword indexes against their rows, and the vault's invariants."""
    problems: list[str] = []
    result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
    if result != ["ok"]:
        problems.extend(f"integrity_check: {line}" for line in result[:20])
    for table in ("entities_fts", "versions_fts"):
        problem = _fts_in_sync(conn, table)
        if problem:
            problems.append(problem)
    problems.extend(invariant_problems(conn))
    return CheckReport(ok=not problems, problems=problems)


def reindex(conn: Connection) -> None:
    """Rebuild both keyword indexes and the trigger-phrase index from the rows and drop unusable vectors (the caller holds the
    write transaction)."""
    conn.execute(f"DELETE FROM version_vectors WHERE vid IN ({BAD_VECTORS})")
    rebuild_trigger_index(conn)
    rebuild_keyword_index(conn)  # logs a rebuild, which every process's keyword and vector mirrors follow


def backup(conn: Connection, target: str) -> str:
    """A consistent, compacted copy of the vault at ``target`` (which must not exist yet), mode 0600.

    ``VACUUM INTO`` reads one snapshot, so writers may keep writing meanwhile. It accepts an empty
    target, so the file is created first, exclusively and private: a backup holds every memory, and
    no file or symlink that appears at ``target`` meanwhile is written through.
    """
    target = os.path.abspath(target)
    file_locks.refuse_held(target, "target")  # the vault's own -wal or -journal, say, which SQLite would read
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise InvalidInput("target", f"{target} already exists; choose a new file") from None
    except OSError as exc:
        raise InvalidInput("target", f"cannot create {target}: {exc.strerror}") from None
    try:
        conn.execute("VACUUM INTO ?", (target,))
    except BaseException:
        os.unlink(target)  # no half-written copy left behind
        raise
    return target
