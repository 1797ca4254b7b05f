"""Looking after the file: check, reindex, stats and backup."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import CheckReport, InvalidInput, ReindexReport, Stats, Vault
from perseus_vault_core.storage.sqlite import schema

from ....conftest import Clock, modes


def healthy(vault: Vault, clock: Clock) -> dict[str, int]:
    ids = {
        "alpha": vault.remember("fact", "alpha", "the alpha quokka note", topic_path="zoo").id,
        "beta": vault.remember("fact", "beta", "the beta wombat note").id,
        "gamma": vault.remember("fact", "gamma", "the gamma numbat note", agent_id="a").id,
        "delta": vault.remember("fact", "delta", "the delta platypus note").id,
        "old": vault.remember("decision", "old", "the old decision").id,
        "new": vault.remember("decision", "new", "the new decision").id,
    }
    clock.advance(1000)
    vault.remember("fact", "beta", "the beta wombat note, revised")
    vault.forget(ids["delta"])
    vault.supersede(ids["old"], ids["new"])
    vault.link(ids["alpha"], ids["beta"], "related")
    vault.link(ids["alpha"], ids["delta"], "cites")
    vault.link(ids["beta"], ids["delta"], "cites")
    clock.advance(1000)
    vault.unlink(ids["beta"], ids["delta"])
    clock.advance(1000)
    return ids


def head(vault: Vault, entity_id: int) -> tuple[Any, ...]:
    return (
        vault.engine.conn()
        .execute(
            "SELECT vid, content, summary, tags FROM entity_versions WHERE entity_id = ? AND recorded_to_ms IS NULL",
            (entity_id,),
        )
        .fetchone()
    )


def link_rows(vault: Vault, *, entity_id: int | None = None, open_only: bool = False) -> tuple[int, int]:
    """Link rows (of ``entity_id``, else all; open ones only if asked), as (written, inferred on write)."""
    sql = "SELECT COALESCE(source, '') = 'inferred', COUNT(*) FROM links WHERE 1 = 1"
    args: tuple[Any, ...] = ()
    if entity_id is not None:
        sql += " AND (from_id = ? OR to_id = ?)"
        args = (entity_id, entity_id)
    if open_only:
        sql += " AND recorded_to_ms IS NULL"
    counts = dict(vault.engine.conn().execute(sql + " GROUP BY 1", args).fetchall())
    return counts.get(0, 0), counts.get(1, 0)


def export_text(vault: Vault) -> str:
    buf = io.StringIO()
    vault.export_jsonl(buf)
    return buf.getvalue()


def keys(vault: Vault, query: str) -> list[str]:
    return [i.key for i in vault.recall(query, reinforce=False).items]


# --- check and reindex ---------------------------------------------------------------------------


def test_check_is_ok_on_a_fresh_vault(vault: Vault) -> None:
    report = vault.check()
    assert isinstance(report, CheckReport)
    assert report.ok is True and report.problems == []


def test_check_is_ok_on_a_healthy_vault(vault: Vault, clock: Clock) -> None:
    healthy(vault, clock)
    vault.recall("wombat")
    vault.purge(vault.forget(vault.remember("tmp", "t", "short lived").id).id)
    assert vault.check() == CheckReport(ok=True, problems=[])


def drop_from_keyword_index(vault: Vault, entity_id: int) -> None:
    vault.engine.conn().execute(
        "INSERT INTO entities_fts(entities_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        head(vault, entity_id),
    )


def test_check_finds_a_head_missing_from_the_keyword_index(vault: Vault, clock: Clock) -> None:
    ids = healthy(vault, clock)
    assert vault.wait_for_keyword_index(timeout=60)  # the in-memory mirror, built from the healthy file
    assert keys(vault, "quokka") == ["alpha"]
    drop_from_keyword_index(vault, ids["alpha"])
    report = vault.check()
    assert report.ok is False
    assert any("entities_fts" in p for p in report.problems), report.problems
    repaired = vault.reindex()
    assert repaired == ReindexReport(ok=True, problems=[], relations_judged=0)
    assert vault.check().ok
    assert keys(vault, "quokka") == ["alpha"]
    assert vault.wait_for_keyword_index(timeout=60)  # the mirror rebuilds after a reindex, and agrees
    assert keys(vault, "quokka") == ["alpha"]


def test_recall_misses_a_dropped_row_until_reindex(db_path: Path, clock: Clock) -> None:
    with Vault(
        db_path, clock=clock, keyword_index=False, embedder=False
    ) as vault:  # FTS5 answers every recall
        ids = healthy(vault, clock)
        drop_from_keyword_index(vault, ids["alpha"])
        assert keys(vault, "quokka") == []
        assert vault.reindex().ok
        assert keys(vault, "quokka") == ["alpha"]


def test_reindex_brings_back_a_mirror_disabled_by_drift(vault: Vault, clock: Clock) -> None:
    """keyword.rebuild: "Rebuild both indexes from the rows; mirrors rebuild too"."""
    ids = healthy(vault, clock)
    drop_from_keyword_index(vault, ids["alpha"])
    vault.engine.reset_indexes()  # remember's similar-memory look-up built one already: build again, over the drift
    assert vault.wait_for_keyword_index(timeout=60) is False  # built over a drifted index: refuses to serve
    assert vault.reindex().ok
    assert vault.wait_for_keyword_index(timeout=60) is True
    assert keys(vault, "quokka") == ["alpha"]


def test_check_finds_a_bogus_row_in_the_keyword_index(vault: Vault, clock: Clock) -> None:
    healthy(vault, clock)
    vault.engine.conn().execute(
        "INSERT INTO entities_fts(rowid, content, summary, tags) VALUES (987654, 'phantom axolotl', NULL, 'x')"
    )
    report = vault.check()
    assert report.ok is False
    assert any("entities_fts" in p for p in report.problems)
    assert vault.reindex().ok
    assert keys(vault, "axolotl") == []
    assert keys(vault, "wombat") == ["beta"]


def test_check_finds_drift_in_the_history_index(vault: Vault, clock: Clock) -> None:
    ids = healthy(vault, clock)
    first = (
        vault.engine.conn()
        .execute(
            "SELECT vid, content, summary, tags FROM entity_versions WHERE entity_id = ? AND version = 1",
            (ids["beta"],),
        )
        .fetchone()
    )
    vault.engine.conn().execute(
        "INSERT INTO versions_fts(versions_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        first,
    )
    report = vault.check()
    assert report.ok is False
    assert any("versions_fts" in p for p in report.problems), report.problems
    assert not any("entities_fts" in p for p in report.problems)
    assert vault.reindex().ok
    then = vault.recall("wombat", as_of_unix_ms=vault.history("fact", "beta").items[1].recorded_from_ms)
    assert [(i.key, i.version) for i in then.items] == [("beta", 1)]


def test_check_finds_an_entity_without_a_current_version(vault: Vault, clock: Clock) -> None:
    ids = healthy(vault, clock)
    conn = vault.engine.conn()
    # Close the head without a successor (and keep the keyword index consistent with it).
    vid, content, summary, tags = head(vault, ids["alpha"])
    conn.execute(
        "INSERT INTO entities_fts(entities_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        (vid, content, summary, tags),
    )
    conn.execute("UPDATE entity_versions SET recorded_to_ms = ? WHERE vid = ?", (clock.now, vid))
    report = vault.check()
    assert report.ok is False
    assert any("1 entities have no current version" in p for p in report.problems), report.problems


def test_check_finds_a_link_to_a_missing_entity(vault: Vault, clock: Clock) -> None:
    ids = healthy(vault, clock)
    conn = vault.engine.conn()
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        conn.execute(
            "INSERT INTO links (from_id, to_id, relation, weight, created_at_ms, recorded_from_ms) "
            "VALUES (?, 424242, 'related', 1.0, 0, 0)",
            (ids["alpha"],),
        )
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    report = vault.check()
    assert report.ok is False
    assert any("1 links point at missing entities" in p for p in report.problems), report.problems


def test_reindex_on_a_healthy_vault_changes_no_answer(vault: Vault, clock: Clock) -> None:
    healthy(vault, clock)
    before = (export_text(vault), keys(vault, "note"), keys(vault, "decision"))
    assert vault.reindex() == ReindexReport(ok=True, problems=[], relations_judged=0)
    assert (export_text(vault), keys(vault, "note"), keys(vault, "decision")) == before


def test_writes_after_reindex_stay_in_sync(vault: Vault, clock: Clock) -> None:
    healthy(vault, clock)
    vault.reindex()
    clock.advance(1000)
    vault.remember("fact", "alpha", "the alpha quokka note, now with a capybara")
    vault.remember("fact", "epsilon", "the epsilon capybara note")
    assert vault.check().ok
    assert sorted(keys(vault, "capybara")) == ["alpha", "epsilon"]


# --- stats ---------------------------------------------------------------------------------------


def test_stats_of_an_empty_vault(vault: Vault, db_path: Path) -> None:
    s = vault.stats()
    assert isinstance(s, Stats)
    assert (s.entities, s.versions, s.links, s.by_status) == (0, 0, 0, {})
    assert s.path == str(db_path)
    assert s.schema_version == schema.LATEST
    assert s.db_bytes > 0
    assert s.sqlite_driver and s.sqlite_version and s.sqlite_vec_version


def test_stats_counts(vault: Vault, clock: Clock) -> None:
    healthy(vault, clock)
    s = vault.stats()
    assert s.entities == 6
    assert s.by_status == {"active": 4, "archived": 1, "superseded": 1}
    # 6 creates + beta's update + delta's archive + supersede (old and new).
    assert s.versions == 10
    # Open links only: beta -> delta was closed. The writes inferred links too (new -> old decision, ...).
    written, inferred = link_rows(vault, open_only=True)
    assert written == 2 and inferred > 0
    assert s.links == written + inferred


def test_stats_follow_purge(vault: Vault, clock: Clock) -> None:
    ids = healthy(vault, clock)
    written, inferred = link_rows(vault, entity_id=ids["delta"])
    assert written == 2  # alpha -> delta, and beta -> delta (closed)
    result = vault.purge(ids["delta"])
    assert (result.versions, result.links) == (2, written + inferred)  # every row of delta's links goes
    assert link_rows(vault, entity_id=ids["delta"]) == (0, 0)
    s = vault.stats()
    written, inferred = link_rows(vault, open_only=True)
    assert written == 1  # alpha -> beta
    assert (s.entities, s.versions, s.links) == (5, 8, written + inferred)
    assert s.by_status == {"active": 4, "superseded": 1}


# --- backup --------------------------------------------------------------------------------------


def test_backup_is_a_working_copy(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    ids = healthy(vault, clock)
    target = tmp_path / "backups" / "copy.db"
    target.parent.mkdir()
    written = vault.backup(target)
    assert written == os.path.abspath(target)
    assert target.exists()
    with Vault(target, clock=clock, embedder=False) as copy:
        assert copy.check().ok
        assert export_text(copy) == export_text(vault)
        assert copy.get_entity(ids["beta"]).content == "the beta wombat note, revised"
        assert [v.content for v in copy.history("fact", "beta").items] == [
            "the beta wombat note, revised",
            "the beta wombat note",
        ]
        assert keys(copy, "quokka") == ["alpha"]
        assert copy.stats().entities == vault.stats().entities


def test_backup_accepts_a_string_path(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    healthy(vault, clock)
    target = str(tmp_path / "copy.db")
    assert vault.backup(target) == target
    with Vault(target, clock=clock, embedder=False) as copy:
        assert copy.stats().entities == 6


def test_backup_refuses_an_existing_target(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    healthy(vault, clock)
    target = tmp_path / "taken.db"
    target.write_bytes(b"precious")
    with pytest.raises(InvalidInput) as err:
        vault.backup(target)
    assert err.value.field == "target"
    assert target.read_bytes() == b"precious"
    first = tmp_path / "first.db"
    vault.backup(first)
    size = first.stat().st_size
    with pytest.raises(InvalidInput):
        vault.backup(first)
    assert first.stat().st_size == size


def test_the_backup_does_not_follow_later_writes(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    healthy(vault, clock)
    target = tmp_path / "copy.db"
    vault.backup(target)
    vault.remember("fact", "later", "written after the backup")
    with Vault(target, clock=clock, embedder=False) as copy:
        assert copy.stats().entities == 6
        assert keys(copy, "later") == []


def test_backup_while_another_thread_keeps_writing(
    db_path: Path, vault: Vault, clock: Clock, tmp_path: Path
) -> None:
    for i in range(50):
        vault.remember("seed", f"s{i}", f"seed note {i}")
    stop = threading.Event()
    started = threading.Event()
    errors: list[BaseException] = []
    written: list[int] = []

    def writer() -> None:
        # Another client on the same file, with its own connections.
        try:
            with Vault(db_path, clock=clock, embedder=False) as other:
                n = 0
                while not stop.is_set() or n < 20:
                    written.append(
                        other.remember("stream", f"w{n}", f"written while backing up {n} " * 20).id
                    )
                    n += 1
                    if n == 10:
                        started.set()
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)
            started.set()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert started.wait(60)
        committed_before = {e.id: e.content for e in vault.scan(limit=1000).items}
        target = tmp_path / "live-copy.db"
        vault.backup(target)
    finally:
        stop.set()
        thread.join(60)
    assert not thread.is_alive()
    assert errors == []
    assert len(committed_before) >= 60
    with Vault(target, clock=clock, embedder=False) as copy:
        assert copy.check().ok
        in_copy = {e.id: e.content for e in copy.scan(limit=1000).items}
        for entity_id, content in committed_before.items():
            assert in_copy.get(entity_id) == content
        assert set(in_copy) <= set({e.id for e in vault.scan(limit=1000).items})
        # The copy is a prefix of the writer's stream: a snapshot, not a torn read.
        streamed = sorted(i for i in in_copy if i in set(written))
        assert streamed == sorted(written)[: len(streamed)]


def test_check_runs_the_full_integrity_check_and_the_cli_exits_1(
    tmp_path: Path, clock: Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    """An index whose entries no longer match its table (its definition changed under it, through SQLite's own
    writable schema) is damage that only the full integrity check finds: SQLite's quick check passes it."""
    from perseus_vault_core.cli.main import main
    from perseus_vault_core.storage.sqlite.connection import connect

    db = tmp_path / "v.db"
    with Vault(db, clock=clock, embedder=False) as vault:
        healthy(vault, clock)
    conn = connect(str(db))
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = 'CREATE INDEX entity_versions_time ON entity_versions(entity_id, "
        "recorded_to_ms)' WHERE name = 'entity_versions_time'"
    )
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.close()
    conn = connect(str(db))
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    conn.close()
    with Vault(db, clock=clock, embedder=False) as vault:
        report = vault.check()
    assert not report.ok and any("entity_versions_time" in p for p in report.problems), report.problems
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["--db", str(db), "check"])
    out = capsys.readouterr().out
    assert exited.value.code == 1
    assert out.startswith("problems:") and "entity_versions_time" in out


def test_check_finds_overlapping_versions(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "k", "first")
    clock.advance(100)
    vault.remember("fact", "k", "second")
    vault.engine.conn().execute(
        "UPDATE entity_versions SET recorded_to_ms = recorded_to_ms + 50 WHERE entity_id = ? AND version = 1",
        (e.id,),
    )
    report = vault.check()
    assert not report.ok and any("overlap" in p for p in report.problems)


def test_check_waits_out_a_brief_writer_instead_of_reporting_drift(vault: Vault) -> None:
    import threading

    from perseus_vault_core.storage.sqlite.connection import connect

    vault.remember("fact", "k", "content")
    holder = connect(vault.path)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, lambda: holder.execute("COMMIT")).start()
    assert vault.check().ok
    holder.close()


def test_a_backup_is_private(vault: Vault, clock: Clock, tmp_path: Path, umask: int) -> None:
    """A backup holds every memory: 0600 whatever the umask (VACUUM INTO alone would make it 0644)."""
    healthy(vault, clock)
    folder = tmp_path / "backups"
    folder.mkdir()
    vault.backup(folder / "copy.db")
    assert modes(folder) == {"copy.db": 0o600}
    with Vault(folder / "copy.db", clock=clock, embedder=False) as copy:
        assert copy.stats().entities == 6


def test_a_backup_never_writes_through_a_symlink(vault: Vault, clock: Clock, tmp_path: Path) -> None:
    healthy(vault, clock)
    elsewhere = tmp_path / "elsewhere.db"
    (tmp_path / "copy.db").symlink_to(elsewhere)  # dangling: the target does not exist yet
    with pytest.raises(InvalidInput, match="already exists") as err:
        vault.backup(tmp_path / "copy.db")
    assert err.value.field == "target" and not elsewhere.exists()


def test_a_failed_backup_leaves_no_file(tmp_path: Path) -> None:
    import sqlite3

    from perseus_vault_core.storage.sqlite import maintenance

    class Failing:
        def execute(self, sql: str, *args: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

    with pytest.raises(sqlite3.OperationalError):
        maintenance.backup(Failing(), str(tmp_path / "copy.db"))
    assert not (tmp_path / "copy.db").exists()  # the empty file made for VACUUM INTO is gone again
