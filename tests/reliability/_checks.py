"""Whole-file invariants the reliability tests assert after load, kills and repairs.

Independent of ``Vault.check`` on purpose: these count what the indexes themselves answer (an
FTS5 ``MATCH`` reads the index, not the rows), so a ghost or a missing index row shows up here
even if the vault's own check had a blind spot.
"""

from __future__ import annotations

from pathlib import Path

from perseus_vault_core import Vault
from perseus_vault_core.storage.sqlite.connection import connect


def index_problems(db: Path | str, word: str = "durable") -> list[str]:
    """Problems in ``db``: SQLite's integrity check, the vault's ``check``, and both keyword indexes
    and the vectors against the rows (``word`` must occur in the content of the rows to count)."""
    problems: list[str] = []
    conn = connect(str(db))
    try:
        integrity = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if integrity != ["ok"]:
            problems.append(f"integrity_check: {integrity[:5]}")
        heads = conn.execute("SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL "
                             "AND content LIKE ?", (f"%{word}%",)).fetchone()[0]
        in_heads_fts = conn.execute("SELECT count(*) FROM entities_fts WHERE entities_fts MATCH ?", (word,)).fetchone()[0]
        if heads != in_heads_fts:
            problems.append(f"entities_fts finds {in_heads_fts} heads with {word!r}, the rows have {heads}")
        versions = conn.execute("SELECT count(*) FROM entity_versions WHERE content LIKE ?", (f"%{word}%",)).fetchone()[0]
        in_versions_fts = conn.execute("SELECT count(*) FROM versions_fts WHERE versions_fts MATCH ?", (word,)).fetchone()[0]
        if versions != in_versions_fts:
            problems.append(f"versions_fts finds {in_versions_fts} versions with {word!r}, the rows have {versions}")
        all_heads = conn.execute("SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL").fetchone()[0]
        entities = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
        if all_heads != entities:
            problems.append(f"{entities} entities but {all_heads} current versions")
        missing = conn.execute("SELECT count(*) FROM entity_versions v WHERE NOT EXISTS "
                               "(SELECT 1 FROM version_vectors x WHERE x.vid = v.vid)").fetchone()[0]
        ghosts = conn.execute("SELECT count(*) FROM version_vectors x WHERE NOT EXISTS "
                              "(SELECT 1 FROM entity_versions v WHERE v.vid = x.vid)").fetchone()[0]
        if missing or ghosts:
            problems.append(f"vectors: {missing} versions without one, {ghosts} without a version")
    finally:
        conn.close()
    with Vault(db, embedder=False) as vault:
        report = vault.check()
        problems.extend(f"check: {p}" for p in report.problems)
    return problems
