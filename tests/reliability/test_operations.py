"""Operations (docs/operations.md): ``check`` detects and ``reindex`` repairs drift in every index (both keyword
indexes and the vectors), ``backup`` copies a consistent file while writer processes run, a newer
schema is refused without touching the file, and every earlier schema version migrates.

Already covered elsewhere: single-row FTS drift and the in-memory mirror after reindex
(``tests/core/storage/sqlite/test_maintenance.py``), a backup beside a writer thread (same file), the newer-schema
refusal and an atomic failing migration (``tests/core/storage/sqlite/test_schema.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import SetupError, Vault
from perseus_vault_core.storage.meta import RELATIONS_PENDING
from perseus_vault_core.storage.sqlite import schema
from perseus_vault_core.storage.sqlite.connection import connect

from ..conftest import Clock, FakeEmbedder
from ._checks import index_problems
from ._workers import CATEGORY
from .conftest import ROOT

NOTES = [f"durable note {i} about storage engine number {i}" for i in range(8)]


def _fill(vault: Vault) -> list[int]:
    ids = [vault.remember("note", f"k{i}", text).id for i, text in enumerate(NOTES)]
    vault.remember("note", "k0", "durable note 0 about storage engine, revised")  # a second version
    return ids


def _drop_head_from_fts(conn: Any) -> None:
    vid, content, summary, tags = conn.execute(
        "SELECT vid, content, summary, tags FROM entity_versions WHERE recorded_to_ms IS NULL ORDER BY vid LIMIT 1"
    ).fetchone()
    conn.execute(
        "INSERT INTO entities_fts(entities_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        (vid, content, summary, tags),
    )


def _bogus_head_row(conn: Any) -> None:
    conn.execute(
        "INSERT INTO entities_fts(rowid, content, summary, tags) VALUES (999999, 'ghost durable', NULL, '')"
    )


def _drop_version_from_fts(conn: Any) -> None:
    vid, content, summary, tags = conn.execute(
        "SELECT vid, content, summary, tags FROM entity_versions WHERE recorded_to_ms IS NOT NULL LIMIT 1"
    ).fetchone()
    conn.execute(
        "INSERT INTO versions_fts(versions_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        (vid, content, summary, tags),
    )


def _ghost_vector(conn: Any) -> None:  # only with foreign keys off, as a foreign tool might write it
    conn.execute(
        "INSERT INTO version_vectors SELECT vid + 100000, embedding, bits, scope FROM version_vectors LIMIT 1"
    )


def _torn_vector(conn: Any) -> None:
    conn.execute(
        "UPDATE version_vectors SET embedding = substr(embedding, 1, 10) WHERE vid = "
        "(SELECT max(vid) FROM entity_versions WHERE recorded_to_ms IS NULL)"
    )


def _foreign_size_vector(conn: Any) -> None:
    conn.execute(
        "UPDATE version_vectors SET embedding = embedding || embedding, bits = bits || bits WHERE vid = "
        "(SELECT min(vid) FROM entity_versions WHERE recorded_to_ms IS NULL)"
    )


DRIFT: dict[str, tuple[Callable[[Any], None], str]] = {
    "head missing from entities_fts": (_drop_head_from_fts, "entities_fts"),
    "ghost row in entities_fts": (_bogus_head_row, "entities_fts"),
    "version missing from versions_fts": (_drop_version_from_fts, "versions_fts"),
    "vector of a version that is gone": (_ghost_vector, "vectors"),
    "torn vector": (_torn_vector, "vectors"),
    "vector of another model's size": (_foreign_size_vector, "vectors"),
}


@pytest.mark.parametrize("kind", list(DRIFT))
def test_check_detects_and_reindex_repairs_drift(db_path: Path, clock: Clock, kind: str) -> None:
    damage, named = DRIFT[kind]
    with Vault(db_path, clock=clock, embedder=FakeEmbedder()) as vault:
        ids = _fill(vault)
        assert vault.check().ok
        conn = vault.engine.conn()
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("BEGIN IMMEDIATE")
        damage(conn)
        conn.execute("COMMIT")
        conn.execute("PRAGMA foreign_keys = ON")

        report = vault.check()
        assert not report.ok and any(named in p for p in report.problems), report.problems
        assert index_problems(db_path) != []  # the independent count sees it too

        repaired = vault.reindex()
        assert repaired.ok, repaired.problems
        vault.embed()  # refills any vector reindex dropped
        assert index_problems(db_path) == []
        for mode in ("fts5", "dense", "hybrid"):  # every memory is found again, in every mode, nothing extra
            found = {
                i.id
                for i in vault.recall("durable storage engine", mode=mode, limit=50, reinforce=False).items
            }
            assert found == set(ids), mode
        assert vault.wait_for_keyword_index(60) and vault.wait_for_vector_index(60)
        for mode in ("fts5", "dense"):
            found = {
                i.id
                for i in vault.recall("durable storage engine", mode=mode, limit=50, reinforce=False).items
            }
            assert found == set(ids), f"{mode} through the in-memory index"


def test_check_by_cli_exits_1_on_drift_and_reindex_fixes_it(db_path: Path) -> None:
    with Vault(db_path, embedder=False) as vault:
        _fill(vault)
        conn = vault.engine.conn()
        conn.execute("BEGIN IMMEDIATE")
        _drop_head_from_fts(conn)
        conn.execute("COMMIT")
    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "perseus_vault_core.cli", *args, "--db", str(db_path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    first = cli("check")
    assert first.returncode == 1 and "entities_fts" in first.stdout + first.stderr
    assert cli("reindex").returncode == 0
    assert cli("check").returncode == 0


# --- backup beside writer processes ------------------------------------------------------------


@pytest.mark.slow
def test_backup_is_consistent_while_writer_processes_run(db_path: Path, tmp_path: Path) -> None:
    batch = 3
    with Vault(db_path, embedder=FakeEmbedder()) as vault:
        vault.remember("seed", "s", "durable seed")
    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none")
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.reliability._workers",
                "batches",
                str(db_path),
                f"w{n}",
                "0",
                str(batch),
                "5",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    copies: list[Path] = []
    with Vault(db_path, embedder=FakeEmbedder()) as vault:
        deadline = time.monotonic() + 60
        while vault.scan(limit=1, category=CATEGORY).items == [] and time.monotonic() < deadline:
            time.sleep(0.05)
        for n in range(3):
            copies.append(Path(vault.backup(tmp_path / f"copy{n}.db")))
            time.sleep(0.5)
    outputs = [w.communicate(timeout=120) for w in writers]
    assert all(w.returncode == 0 for w in writers), [o[1][-2000:] for o in outputs]
    sizes = []
    for copy in copies:
        assert index_problems(copy) == [], copy
        conn = connect(str(copy))
        counts: dict[tuple[str, int], int] = {}
        for agent, key in conn.execute("SELECT agent_id, key FROM entities WHERE category = ?", (CATEGORY,)):
            n = int(key.split("-b")[1].split("-")[0])
            counts[(agent, n)] = counts.get((agent, n), 0) + 1
        for agent in (
            "w0",
            "w1",
        ):  # a snapshot: each writer's batches are whole, a prefix, and match its tally
            mine = sorted(n for a, n in counts if a == agent)
            assert mine == list(range(len(mine)))
            assert all(counts[(agent, n)] == batch for n in mine)
            tally = conn.execute(
                "SELECT v.content FROM entities e JOIN entity_versions v ON v.entity_id = e.id "
                "AND v.recorded_to_ms IS NULL WHERE e.category = 'tally' AND e.agent_id = ?",
                (agent,),
            ).fetchone()
            if mine:
                assert tally[0].endswith(f"through batch {mine[-1]}")
        sizes.append(len(counts))
        conn.close()
    assert sizes == sorted(sizes) and sizes[-1] > 0  # later copies hold more, and writes were landing


# --- schema versions ---------------------------------------------------------------------------


def test_a_newer_schema_is_refused_and_left_untouched(db_path: Path) -> None:
    with Vault(db_path, embedder=False) as vault:
        vault.remember("note", "k", "kept")
    conn = connect(str(db_path))
    conn.execute(f"PRAGMA user_version = {schema.LATEST + 1}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = db_path.read_bytes()
    with pytest.raises(
        SetupError, match=rf"schema version {schema.LATEST + 1}, newer .*\({schema.LATEST}\).*upgrade"
    ):
        Vault(db_path, embedder=False)
    done = subprocess.run(
        [sys.executable, "-m", "perseus_vault_core.cli", "stats", "--db", str(db_path)],
        cwd=ROOT,
        env=dict(os.environ, PERSEUS_VAULT_EMBEDDER="none"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "newer" in done.stderr and "Traceback" not in done.stderr
    assert db_path.read_bytes() == before


# What each version added, to take away again: a file as the vault of that version left it.
LATER_OBJECTS = {
    2: [
        "DROP TABLE version_vectors",
        "DELETE FROM vault_meta WHERE key IN ('embedding_model', 'embedding_dimension')",
    ],
    3: ["DROP TABLE trigger_vectors", "DROP INDEX links_closed"],
    4: [
        "DROP TABLE checkpoints",
        "DROP TABLE checkpoint_blobs",
        "DROP TABLE checkpoint_writes",
        "DROP TABLE kv_entries",
    ],
    # The scope key: the column away again, and the framework-state tables as step 4 made them (keyed without it).
    5: [
        *(
            f"ALTER TABLE {t} DROP COLUMN scope"
            for t in ("entities", "entity_versions", "links", "version_vectors")
        ),
        "DROP TABLE checkpoints",
        "DROP TABLE checkpoint_blobs",
        "DROP TABLE checkpoint_writes",
        "DROP TABLE kv_entries",
        *(s for s in schema.V4.split(";") if s.strip()),
    ],
    6: ["DROP INDEX entity_versions_triggered"],
    # Phrase vectors as step 3 kept them, one per phrase whichever scopes used it.
    7: [
        "CREATE TABLE pv_old (model TEXT NOT NULL, phrase TEXT NOT NULL, embedding BLOB NOT NULL, PRIMARY KEY (model, phrase))",
        "INSERT OR IGNORE INTO pv_old SELECT model, phrase, embedding FROM trigger_vectors",
        "DROP TABLE trigger_vectors",
        "ALTER TABLE pv_old RENAME TO trigger_vectors",
    ],
    8: ["DROP TABLE trigger_terms"],
    9: [f"DELETE FROM vault_meta WHERE key = '{RELATIONS_PENDING}'"],
}


def _as_version(db: Path, version: int) -> None:
    conn = connect(str(db))
    conn.execute("BEGIN IMMEDIATE")
    for later in range(schema.LATEST, version, -1):
        for sql in LATER_OBJECTS[later]:
            conn.execute(sql)
    conn.execute("DELETE FROM _migrations WHERE version > ?", (version,))
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("COMMIT")
    conn.close()


@pytest.mark.parametrize("version", range(1, schema.LATEST))
def test_every_earlier_schema_version_migrates(db_path: Path, clock: Clock, version: int) -> None:
    assert set(LATER_OBJECTS) == set(range(2, schema.LATEST + 1)), "a new migration needs its entry here"
    embedder: Any = FakeEmbedder() if version >= 2 else False  # a version-1 vault had no vectors
    with Vault(db_path, clock=clock, embedder=embedder) as vault:
        ids = _fill(vault)
        a, b = ids[:2]
        vault.link(a, b, "related")
        vault.unlink(a, b, "related")
        vault.link(a, b, "depends_on")
    _as_version(db_path, version)
    conn = connect(str(db_path))
    assert schema.current_version(conn) == version
    conn.close()

    with Vault(db_path, clock=clock, embedder=FakeEmbedder()) as vault:
        conn = vault.engine.conn()
        assert schema.current_version(conn) == schema.LATEST
        assert [v for (v,) in conn.execute("SELECT version FROM _migrations ORDER BY version")] == list(
            range(1, schema.LATEST + 1)
        )
        assert vault.check().ok
        assert {e.id for e in vault.scan(limit=100).items} == set(ids)
        assert vault.history("note", "k0").total == 2
        assert [n.entity.id for n in vault.traverse(a, depth=1, relations=["depends_on"]).nodes] == [a, b]
        if version < 2:
            vault.embed()  # a vault from before vectors gets them on request
        assert {
            i.id for i in vault.recall("durable storage", mode="dense", limit=50, reinforce=False).items
        } == set(ids)
        vault.remember("note", "new", "written after the migration", recall_when=["after migrating"])
        assert [i.key for i in vault.recall_when("we are after migrating now").items] == ["new"]
    assert index_problems(db_path) == []
