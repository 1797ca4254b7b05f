"""Schema versions: migrations recorded, idempotent, atomic, and newer files refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import SetupError, Vault
from perseus_vault_core.storage.sqlite import schema
from perseus_vault_core.storage.sqlite.connection import connect


def test_fresh_file_is_at_the_latest_version(db_path: Path) -> None:
    with Vault(db_path) as vault:
        conn = vault.engine.conn()
        assert schema.current_version(conn) == schema.LATEST
        assert conn.execute("SELECT version FROM _migrations").fetchall() == [
            (v,) for v, _, _ in schema.MIGRATIONS
        ]
    with Vault(db_path) as vault:  # reopening applies nothing twice
        assert vault.engine.conn().execute("SELECT count(*) FROM _migrations").fetchone()[0] == len(
            schema.MIGRATIONS
        )


def test_newer_schema_is_refused(db_path: Path) -> None:
    Vault(db_path).close()
    conn = connect(str(db_path))
    conn.execute(f"PRAGMA user_version = {schema.LATEST + 1}")
    conn.close()
    with pytest.raises(SetupError, match="newer"):
        Vault(db_path)


def test_a_failing_migration_changes_nothing(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Vault(db_path).close()

    def broken(conn: Any) -> None:
        conn.execute("CREATE TABLE half_done (x)")
        raise RuntimeError("migration failed midway")

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, (schema.LATEST + 1, "broken", broken)])
    monkeypatch.setattr(schema, "LATEST", schema.LATEST + 1)
    with pytest.raises(RuntimeError):
        Vault(db_path)
    conn = connect(str(db_path))
    assert schema.current_version(conn) == schema.LATEST - 1
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0


def test_prepare_finds_the_triggered_versions_through_the_trigger_index(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prepare's first read looks the context's stems up in ``trigger_terms`` (step 8) by its key, not a scan, and
    reads only the versions it names through the view; a forgotten memory is found there and not shown."""
    from perseus_vault_core.features import proactive
    from perseus_vault_core.storage import trigger_terms

    with Vault(db_path, embedder=False) as vault:
        vault.remember_many(
            [
                {
                    "category": "note",
                    "key": f"k{i}",
                    "content": f"note {i} about billing",
                    "recall_when": ["working on billing"] if i % 100 == 0 else [f"topic {i} only"],
                }
                for i in range(1_000)
            ]
        )
        vault.forget(vault.recall_when("working on billing").items[0].id)
        conn = vault.engine.conn()
        plan = [
            row[-1]
            for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT vid FROM trigger_terms WHERE term IN (SELECT value FROM json_each(?)) "
                "GROUP BY vid, phrase HAVING count(*) >= max(need)",
                ('["work", "bill"]',),
            )
        ]
        assert any("trigger_terms USING PRIMARY KEY (term=?)" in step for step in plan), plan
        read: list[int] = []
        found = proactive.candidates
        monkeypatch.setattr(
            proactive, "candidates", lambda c, v, vids: read.extend(vids) or found(c, v, vids)
        )
        assert len(vault.recall_when("working on billing").items) == 9
        assert (
            len(read) == 11
        )  # the ten versions of the ten memories with the phrase, and the forgotten one's
        assert trigger_terms.versions(conn, ["work", "bill"]) == sorted(read)
        assert trigger_terms.versions(conn, ["bill", "note"]) == []  # one of its two stems: it cannot match


def test_a_copy_that_lost_its_schema_version_opens_and_gets_it_back(db_path: Path) -> None:
    # ``sqlite3 vault.db .dump | sqlite3 copy.db`` carries every table, _migrations included, but not
    # PRAGMA user_version: the copy is at version 0 with the whole schema in it. The migrations must not run
    # again over it ("table vault_meta already exists"); the version is read back from _migrations.
    with Vault(str(db_path), embedder=False) as v:
        v.remember("note", "ledger", "the ledger runs on Postgres")
    plain = sqlite3.connect(db_path)
    plain.execute("PRAGMA user_version = 0")
    plain.close()
    with Vault(str(db_path), embedder=False) as v:
        assert [i.key for i in v.recall("ledger").items] == ["ledger"]
    conn = connect(str(db_path))
    assert schema.current_version(conn) == schema.LATEST
    conn.close()


def test_a_file_of_version_6_keeps_its_phrase_vectors_in_each_scope_that_uses_them(db_path: Path) -> None:
    """Step 7 copies each shared phrase vector to every scope whose versions use the phrase (history included), and
    drops one no version uses any more."""
    from perseus_vault_core.primitives.scopes import scope_key

    with Vault(db_path, embedder=False) as vault:
        vault.remember("note", "a", "alice's", recall_when=["shared phrase", "alice only"], agent_id="alice")
        vault.remember("note", "b", "bob's, at first", recall_when=["shared phrase"], agent_id="bob")
        vault.remember("note", "b", "bob's, later", agent_id="bob")  # the phrase is in his history only
    conn = connect(str(db_path))
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DROP TABLE trigger_vectors")
    conn.execute("DROP TABLE trigger_terms")  # step 8's
    conn.execute(
        "CREATE TABLE trigger_vectors (model TEXT NOT NULL, phrase TEXT NOT NULL, embedding BLOB NOT NULL, "
        "PRIMARY KEY (model, phrase))"
    )
    for phrase in ("shared phrase", "alice only", "nobody's"):
        conn.execute("INSERT INTO trigger_vectors VALUES ('m', ?, ?)", (phrase, phrase.encode()))
    conn.execute("DELETE FROM _migrations WHERE version > 6")
    conn.execute("PRAGMA user_version = 6")
    conn.execute("COMMIT")
    conn.close()
    with Vault(db_path, embedder=False) as vault:
        rows = (
            vault.engine.conn()
            .execute("SELECT model, scope, phrase, embedding FROM trigger_vectors")
            .fetchall()
        )
    alice, bob = scope_key("alice", ""), scope_key("bob", "")
    assert sorted(map(tuple, rows)) == sorted(
        [
            ("m", alice, "alice only", b"alice only"),
            ("m", alice, "shared phrase", b"shared phrase"),
            ("m", bob, "shared phrase", b"shared phrase"),
        ]
    )
