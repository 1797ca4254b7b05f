"""Whole-file invariants the reliability tests assert after load, kills and repairs.

Independent of ``Vault.check`` on purpose: these count what the indexes themselves answer (an
FTS5 ``MATCH`` reads the index, not the rows), so a ghost or a missing index row shows up here
even if the vault's own check had a blind spot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perseus_vault_core import Vault
from perseus_vault_core.primitives.porter import stem
from perseus_vault_core.storage.sqlite.connection import connect


def is_database(db: Path | str) -> bool:
    return str(db).startswith("postgresql://")


def open_conn(db: Path | str) -> Any:
    """A connection of the vault's own kind to ``db`` (a file, or a PostgreSQL URL), taking ``?`` parameters."""
    if is_database(db):
        from perseus_vault_core.storage.postgres.connection import connect as connect_pg

        return connect_pg(str(db))
    return connect(str(db))


def holds_vault(db: Path | str) -> bool:
    """True once ``db`` has the vault's tables (a writer killed while it opened a new one may leave none)."""
    if not is_database(db):
        return Path(db).exists()
    conn = open_conn(db)
    try:
        return conn.execute("SELECT to_regclass('entities')").fetchone()[0] is not None
    finally:
        conn.close()


def _postgres_index_problems(conn: Any, word: str) -> list[str]:
    """The Postgres keyword index against the rows: a document per version, and ``word``'s postings."""
    problems: list[str] = []
    versions = conn.execute("SELECT count(*) FROM entity_versions").fetchone()[0]
    docs = conn.execute("SELECT count(*) FROM keyword_docs").fetchone()[0]
    if versions != docs:
        problems.append(f"keyword_docs has {docs} documents for {versions} versions")
    for heads, where in ((True, " AND v.recorded_to_ms IS NULL"), (False, "")):
        rows = conn.execute(
            f"SELECT count(*) FROM entity_versions v WHERE v.content LIKE ?{where}", (f"%{word}%",)
        ).fetchone()[0]
        posted = conn.execute(
            f"SELECT count(*) FROM keyword_postings p JOIN entity_versions v ON v.vid = p.vid "
            f"WHERE p.term = ?{where}",
            (stem(word),),
        ).fetchone()[0]
        if rows != posted:
            problems.append(
                f"the postings find {posted} {'heads' if heads else 'versions'} with {word!r}, "
                f"the rows have {rows}"
            )
    return problems


def index_problems(db: Path | str, word: str = "durable") -> list[str]:
    """Problems in ``db``: SQLite's integrity check (or Postgres's keyword index against its rows), the vault's
    ``check``, and the keyword indexes and the vectors against the rows (``word`` must occur in the content
    of the rows to count)."""
    if is_database(db):
        conn = open_conn(db)
        try:
            problems = _postgres_index_problems(conn, word) + _row_problems(conn)
        finally:
            conn.close()
    else:
        problems = _sqlite_index_problems(db, word)
    with Vault(db, embedder=False) as vault:
        report = vault.check()
        problems.extend(f"check: {p}" for p in report.problems)
    return problems


def _row_problems(conn: Any) -> list[str]:
    """Heads against entities, and vectors against versions."""
    problems: list[str] = []
    all_heads = conn.execute("SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL").fetchone()[
        0
    ]
    entities = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
    if all_heads != entities:
        problems.append(f"{entities} entities but {all_heads} current versions")
    missing = conn.execute(
        "SELECT count(*) FROM entity_versions v WHERE NOT EXISTS "
        "(SELECT 1 FROM version_vectors x WHERE x.vid = v.vid)"
    ).fetchone()[0]
    ghosts = conn.execute(
        "SELECT count(*) FROM version_vectors x WHERE NOT EXISTS "
        "(SELECT 1 FROM entity_versions v WHERE v.vid = x.vid)"
    ).fetchone()[0]
    if missing or ghosts:
        problems.append(f"vectors: {missing} versions without one, {ghosts} without a version")
    return problems


def _sqlite_index_problems(db: Path | str, word: str) -> list[str]:
    problems: list[str] = []
    conn = connect(str(db))
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            problems.append(f"integrity_check: {integrity[:5]}")
        heads = conn.execute(
            "SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL AND content LIKE ?",
            (f"%{word}%",),
        ).fetchone()[0]
        in_heads_fts = conn.execute(
            "SELECT count(*) FROM entities_fts WHERE entities_fts MATCH ?", (word,)
        ).fetchone()[0]
        if heads != in_heads_fts:
            problems.append(f"entities_fts finds {in_heads_fts} heads with {word!r}, the rows have {heads}")
        versions = conn.execute(
            "SELECT count(*) FROM entity_versions WHERE content LIKE ?", (f"%{word}%",)
        ).fetchone()[0]
        in_versions_fts = conn.execute(
            "SELECT count(*) FROM versions_fts WHERE versions_fts MATCH ?", (word,)
        ).fetchone()[0]
        if versions != in_versions_fts:
            problems.append(
                f"versions_fts finds {in_versions_fts} versions with {word!r}, the rows have {versions}"
            )
        problems.extend(_row_problems(conn))
    finally:
        conn.close()
    return problems


def integrity(db: Path | str) -> str:
    """SQLite's full integrity check of the file, through SQLite: ``"ok"`` or every problem it names."""
    conn = connect(str(db))
    try:
        return "; ".join(str(row[0]) for row in conn.execute("PRAGMA integrity_check"))
    finally:
        conn.close()
