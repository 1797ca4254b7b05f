"""``perseus-vault``: the command line (docs/cli.md), driven in-process and once as a real process.

Every failure must be exactly one line on stderr starting with ``error:``, exit status 1,
and no traceback.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import RecallResult, Vault
from perseus_vault_core.cli.main import main

from ...conftest import modes

DAY = r"\d{4}-\d\d-\d\d"  # a date as a person reads it: when a memory became true


@pytest.fixture(autouse=True)
def keyword_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the CLI's contract, not embeddings: run it keyword-only (the operator
    setting), so they are fast and their rankings are BM25's. tests/core/cli/test_admin.py runs the
    CLI with the bundled model."""
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PERSEUS_VAULT_DB", raising=False)
    monkeypatch.delenv("PERSEUS_VAULT_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)  # a stray default-path vault lands in the test's folder


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        return json.loads(self.out)

    def lines(self) -> list[str]:
        return self.out.splitlines()


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """Call ``main(argv)``; an argparse exit counts like a returned status."""

    def run(*argv: str) -> Run:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def assert_ok(run: Run) -> Run:
    assert run.code == 0, run.err
    assert run.err == ""
    return run


def assert_one_line_error(run: Run) -> str:
    assert run.code == 1
    lines = run.err.splitlines()
    assert len(lines) == 1, run.err
    assert lines[0].startswith("error:")
    assert "Traceback" not in run.err
    assert run.out == ""
    return lines[0]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "cli.db")


@pytest.fixture
def filled(cli: Any, db: str) -> str:
    assert_ok(
        cli(
            "--db",
            db,
            "remember",
            "decision",
            "db-engine",
            "We chose SQLite in WAL mode.",
            "--topic-path",
            "architecture/storage",
            "--summary",
            "sqlite",
        )
    )
    assert_ok(cli("--db", db, "remember", "decision", "cache", "Redis caches the hot lookups."))
    assert_ok(
        cli("--db", db, "remember", "note", "meeting", "Storage meeting: SQLite stays.", "--type", "fact")
    )
    return db


# --- remember ----------------------------------------------------------------------------------


def test_remember_human_and_json(cli: Any, db: str) -> None:
    run = assert_ok(cli("--db", db, "remember", "decision", "db", "We chose SQLite."))
    assert len(run.lines()) == 1 and re.fullmatch(
        rf"stored as #1 decision/db, version 1 \(true from {DAY}\); "
        "no candidate it repeats, updates or contradicts",
        run.lines()[0],
    )
    run = assert_ok(cli("--db", db, "--json", "remember", "decision", "db", "We chose SQLite, in WAL mode."))
    entity = run.json()
    assert (entity["id"], entity["version"], entity["content"]) == (1, 2, "We chose SQLite, in WAL mode.")
    with Vault(db) as vault:
        assert vault.get_entity(1).content == "We chose SQLite, in WAL mode."


def test_remember_says_when_it_wrote_nothing_and_what_a_memory_repeats(cli: Any, db: str) -> None:
    assert_ok(cli("--db", db, "remember", "note", "k1", "Same words here."))
    run = assert_ok(
        cli("--db", db, "remember", "note", "k2", "same  words HERE.")
    )  # an exact repeat: nothing written
    expected = [
        rf"already held by #1 note/k1 \(true from {DAY}\): nothing written; "
        "no other candidate it repeats, updates or contradicts",
        r"\(--keep-duplicate stores it\)",
    ]
    assert all(re.fullmatch(e, line) for e, line in zip(expected, run.lines(), strict=True))
    run = assert_ok(cli("--db", db, "remember", "note", "k2", "same  words HERE.", "--keep-duplicate"))
    expected = [
        rf"stored as #2 note/k2, version 1 \(true from {DAY}\)",
        "candidates it may repeat, update or contradict:",
        rf"#1 \(duplicate, true from {DAY}\): Same words here\.",
    ]
    assert all(re.fullmatch(e, line) for e, line in zip(expected, run.lines(), strict=True))
    run = assert_ok(cli("--db", db, "remember", "note", "k3", "Same words here"))  # a mark less: another text
    assert re.fullmatch(rf"stored as #3 note/k3, version 1 \(true from {DAY}\)", run.lines()[0])


def test_no_stored_text_reaches_the_terminal_as_a_control(cli: Any, db: str) -> None:
    """ESC, BEL, CR, DEL and the C1 controls in a stored name or text print as escapes, in text and JSON."""
    assert_ok(cli("--db", db, "remember", "note", "k\x1b[2J", "title \x1b]0;pwned\x07 set\r, \x7f\x9b done"))
    for argv in (
        ("recall", "title"),
        ("scan", "--all"),
        ("--json", "recall", "title"),
        ("--json", "scan", "--all"),
        ("remember", "note", "k\x1b[2J", "title \x1b]0;pwned\x07 set\r, \x7f\x9b done"),
    ):
        run = assert_ok(cli("--db", db, *argv))
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", run.out), (argv, run.out)
        assert "\\x1b" in run.out or "\\u001b" in run.out, (argv, run.out)
    with Vault(db) as vault:  # stored as given: only what is printed is escaped
        assert vault.scan().items[-1].content == "title \x1b]0;pwned\x07 set\r, \x7f\x9b done"
    run = cli("--db", db, "--json", "scan")
    assert json.loads(run.out)["items"][-1]["key"] == "k\x1b[2J"


@pytest.mark.parametrize("flag", ["--where", "--body"])
def test_json_nested_past_reading_is_one_clear_line(cli: Any, db: str, flag: str) -> None:
    verb = ["recall", "x"] if flag == "--where" else ["remember", "note", "deep", "text"]
    for deep in ("[" * 5000 + "]" * 5000, '{"a":' * 5000 + "1" + "}" * 5000):
        line = assert_one_line_error(cli("--db", db, *verb, flag, deep))
        assert "nested too deeply" in line and "RecursionError" not in line, line


def test_remember_passes_fields(cli: Any, db: str) -> None:
    run = assert_ok(
        cli(
            "--db",
            db,
            "--json",
            "remember",
            "decision",
            "db",
            "We chose SQLite.",
            "--summary",
            "sqlite",
            "--type",
            "decision",
            "--topic-path",
            "architecture/storage",
            "--agent-id",
            "agent-a",
            "--workspace-hash",
            "ws-1",
            "--source",
            "meeting",
            "--verified",
            "--certainty",
            "0.9",
            "--provenance-class",
            "human",
            "--recall-when",
            "choosing a database",
            "--recall-when",
            "storage",
            "--body",
            '{"ticket": "PV-7"}',
            "--valid-from-ms",
            "1000",
            "--expires-at-ms",
            "9999999999999",
        )
    )
    e = run.json()
    assert e["summary"] == "sqlite" and e["type"] == "decision" and e["topic_path"] == "architecture/storage"
    assert (e["agent_id"], e["workspace_hash"]) == ("agent-a", "ws-1")
    assert e["verified"] is True and e["certainty"] == 0.9 and e["provenance_class"] == "human"
    assert e["recall_when"] == ["choosing a database", "storage"]
    assert e["ticket"] == "PV-7" and e["body"] == {}  # a body field once, at top level
    assert e["valid_from_ms"] == 1000 and e["expires_at_ms"] == 9999999999999


@pytest.mark.parametrize("position", ["before", "after"])
def test_db_before_or_after_the_subcommand(cli: Any, tmp_path: Path, position: str) -> None:
    db = str(tmp_path / f"{position}.db")
    args = ["remember", "fact", "k", "hello there"]
    argv = ["--db", db, *args] if position == "before" else [args[0], "--db", db, *args[1:]]
    assert_ok(cli(*argv))
    with Vault(db) as vault:
        assert [e.key for e in vault.scan().items] == ["k"]
    assert not (tmp_path / "perseus_vault.db").exists()
    run = assert_ok(cli("recall", "hello", "--db", db, "--json"))
    assert [i["key"] for i in run.json()["items"]] == ["k"]


def test_env_var_is_the_default_path(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_db = tmp_path / "from-env.db"
    monkeypatch.setenv("PERSEUS_VAULT_DB", str(env_db))
    assert_ok(cli("remember", "fact", "k", "from the environment"))
    assert env_db.exists()
    run = assert_ok(cli("--json", "recall", "environment"))
    assert [i["key"] for i in run.json()["items"]] == ["k"]
    explicit = tmp_path / "explicit.db"
    assert_ok(cli("--db", str(explicit), "remember", "fact", "other", "explicit wins"))
    with Vault(explicit) as vault:
        assert [e.key for e in vault.scan().items] == ["other"]
    with Vault(env_db) as vault:
        assert [e.key for e in vault.scan().items] == ["k"]


def test_without_db_or_env_uses_perseus_vault_db_here(cli: Any, tmp_path: Path) -> None:
    assert_ok(cli("remember", "fact", "k", "default file"))
    assert (tmp_path / "perseus_vault.db").exists()


# --- recall ------------------------------------------------------------------------------------


def test_recall_human(cli: Any, filled: str) -> None:
    run = assert_ok(cli("--db", filled, "recall", "sqlite"))
    lines = run.lines()
    assert lines[0] == "2 result(s), fts5:"
    assert len(lines) == 3
    assert all("[decision/db-engine]" in line or "[note/meeting]" in line for line in lines[1:])


def test_recall_no_match_human(cli: Any, filled: str) -> None:
    run = assert_ok(cli("--db", filled, "recall", "kubernetes"))
    assert run.lines() == ["no matches (fts5)"]


def test_recall_json_is_a_recall_result(cli: Any, filled: str) -> None:
    run = assert_ok(cli("--db", filled, "recall", "sqlite", "--json", "--limit", "5"))
    result = RecallResult.model_validate_json(run.out)
    assert result.search_mode == "fts5"
    assert result.total == len(result.items) == 2
    assert {i.key for i in result.items} == {"db-engine", "meeting"}
    assert all(i.ranks.get("fts5") for i in result.items)
    assert set(run.json()) == {"items", "total", "variants", "search_mode"}


def test_recall_filters_and_enumeration(cli: Any, filled: str) -> None:
    run = assert_ok(cli("--db", filled, "--json", "recall", "", "--category", "decision", "--no-reinforce"))
    assert {i["key"] for i in run.json()["items"]} == {"db-engine", "cache"}
    run = assert_ok(cli("--db", filled, "--json", "recall", "sqlite", "--type", "fact"))
    assert [i["key"] for i in run.json()["items"]] == ["meeting"]
    run = assert_ok(cli("--db", filled, "--json", "recall", "", "--topic-path", "architecture"))
    assert [i["key"] for i in run.json()["items"]] == ["db-engine"]


def test_include_archived_marks_what_is_no_longer_current(cli: Any, filled: str) -> None:
    """recall --include-archived lists archived and superseded memories, each marked so: never read as current."""
    assert_ok(
        cli(
            "--db", filled, "remember", "decision", "db-engine-2", "We moved the vault to PostgreSQL storage."
        )
    )
    with Vault(filled) as vault:
        vault.supersede(1, 4)
        vault.forget(3)
    lines = assert_ok(
        cli("--db", filled, "recall", "storage", "--include-archived", "--mode", "fts5")
    ).lines()
    marks = {int(re.search(r"#(\d+)", line).group(1)): line for line in lines[1:]}  # type: ignore[union-attr]
    assert marks[1].endswith("[superseded by #4]") and marks[3].endswith("[archived]")
    assert "superseded" not in marks[4] and "archived" not in marks[4]  # the current one carries no mark
    assert (
        1
        not in {
            int(re.search(r"#(\d+)", line).group(1))  # type: ignore[union-attr]
            for line in assert_ok(cli("--db", filled, "recall", "storage", "--mode", "fts5")).lines()[1:]
        }
    )


def test_recall_no_reinforce(cli: Any, filled: str) -> None:
    assert_ok(cli("--db", filled, "recall", "redis", "--no-reinforce"))
    with Vault(filled) as vault:
        assert vault.get_entity(2).retrieval_count == 0
    assert_ok(cli("--db", filled, "recall", "redis"))
    with Vault(filled) as vault:
        assert vault.get_entity(2).retrieval_count == 1


# --- scan --------------------------------------------------------------------------------------


def test_scan_one_page_and_cursor(cli: Any, filled: str) -> None:
    run = assert_ok(cli("--db", filled, "--json", "scan", "--limit", "2"))
    page = run.json()
    assert [e["id"] for e in page["items"]] == [1, 2] and page["has_more"] is True
    run = assert_ok(cli("--db", filled, "--json", "scan", "--limit", "2", "--cursor", page["next_cursor"]))
    assert [e["id"] for e in run.json()["items"]] == [3] and run.json()["has_more"] is False
    human = assert_ok(cli("--db", filled, "scan", "--limit", "2"))
    assert human.lines()[0].startswith("#1 [decision/db-engine]")
    assert human.lines()[-1].startswith("next cursor: ")


def test_scan_all(cli: Any, filled: str) -> None:
    run = assert_ok(cli("--db", filled, "scan", "--all", "--limit", "1"))
    assert [line.split()[0] for line in run.lines()] == ["#1", "#2", "#3"]
    run = assert_ok(cli("--db", filled, "scan", "--all", "--limit", "2", "--json"))
    assert [json.loads(line)["id"] for line in run.lines()] == [1, 2, 3]
    run = assert_ok(cli("--db", filled, "scan", "--all", "--json", "--category", "decision"))
    assert [json.loads(line)["key"] for line in run.lines()] == ["db-engine", "cache"]


def test_scan_bad_cursor_is_one_line(cli: Any, filled: str) -> None:
    line = assert_one_line_error(cli("--db", filled, "scan", "--cursor", "garbage"))
    assert "cursor" in line


# --- history -----------------------------------------------------------------------------------


def test_history(cli: Any, filled: str) -> None:
    assert_ok(cli("--db", filled, "remember", "decision", "cache", "Redis caches lookups; TTL 60s."))
    run = assert_ok(cli("--db", filled, "history", "decision", "cache"))
    lines = run.lines()
    assert lines[0] == "2 version(s) of decision/cache, newest first:"
    assert lines[1].startswith("v2 update") and lines[2].startswith("v1 create")
    page = assert_ok(cli("--db", filled, "--json", "history", "decision", "cache", "--limit", "1")).json()
    assert page["total"] == 2 and page["has_more"] is True
    assert [e["version"] for e in page["items"]] == [2]
    page = assert_ok(cli("--db", filled, "--json", "history", "decision", "cache", "--offset", "1")).json()
    assert [e["version"] for e in page["items"]] == [1]


def test_history_scoped(cli: Any, db: str) -> None:
    assert_ok(cli("--db", db, "remember", "fact", "k", "mine", "--agent-id", "agent-a"))
    assert_ok(cli("--db", db, "remember", "fact", "k", "unscoped"))
    page = assert_ok(cli("--db", db, "--json", "history", "fact", "k", "--agent-id", "agent-a")).json()
    assert [e["content"] for e in page["items"]] == ["mine"]
    page = assert_ok(cli("--db", db, "--json", "history", "fact", "k")).json()
    assert [e["content"] for e in page["items"]] == ["unscoped"]


# --- import / export ---------------------------------------------------------------------------


def test_import_jsonl_file(cli: Any, db: str, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    rows = [{"category": "fact", "key": f"k{i}", "content": f"imported fact {i}"} for i in range(5)]
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    run = assert_ok(cli("--db", db, "import", str(source)))
    assert run.lines() == ["imported: 5 created, 0 updated, 0 unchanged, 0 links"]
    report = assert_ok(cli("--db", db, "--json", "import", str(source))).json()
    assert report == {"created": 0, "updated": 0, "unchanged": 5, "links": 0}
    with Vault(db) as vault:
        assert sorted(e.key for e in vault.scan().items) == [f"k{i}" for i in range(5)]


def test_import_from_stdin(cli: Any, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys, "stdin", io.StringIO('{"category": "fact", "key": "s", "content": "from stdin"}\n')
    )
    run = assert_ok(cli("--db", db, "import", "-"))
    assert "1 created" in run.out


def test_import_bad_line_is_one_error_and_imports_nothing(cli: Any, db: str, tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"category": "fact", "key": "a", "content": "fine"}\n{not json\n', encoding="utf-8")
    line = assert_one_line_error(cli("--db", db, "import", str(source)))
    assert "line 2" in line
    with Vault(db) as vault:
        assert vault.scan().items == []


def test_import_missing_file_is_one_error(cli: Any, db: str, tmp_path: Path) -> None:
    assert_one_line_error(cli("--db", db, "import", str(tmp_path / "nope.jsonl")))


def test_export_stdout_and_file_round_trip(cli: Any, filled: str, tmp_path: Path) -> None:
    assert_ok(cli("--db", filled, "remember", "decision", "cache", "Redis caches lookups; TTL 60s."))
    with Vault(filled) as vault:
        vault.link(1, 2, "depends_on")
        vault.forget(3)
    to_stdout = assert_ok(cli("--db", filled, "export")).out
    records = [json.loads(line) for line in to_stdout.splitlines()]
    assert records[0] == {"record": "vault", "format": 1}
    assert [r["id"] for r in records if r["record"] == "entity"] == [1, 2, 3]
    links = [r for r in records if r["record"] == "link"]  # the one written, and those the vault inferred
    assert [(r["from_id"], r["to_id"]) for r in links if r["source"] != "inferred"] == [(1, 2)]

    target = tmp_path / "out.jsonl"
    run = assert_ok(cli("--db", filled, "export", str(target)))
    assert run.lines() == [f"exported {len(records)} lines to {target}"]
    assert target.read_text(encoding="utf-8") == to_stdout
    assert assert_ok(cli("--db", filled, "--json", "export", str(tmp_path / "again.jsonl"))).json() == {
        "file": str(tmp_path / "again.jsonl"),
        "lines": len(records),
    }

    fresh = str(tmp_path / "fresh.db")
    report = assert_ok(cli("--db", fresh, "--json", "import", str(target))).json()
    assert report["created"] == 3 and report["links"] == len(links)
    assert assert_ok(cli("--db", fresh, "export")).out == to_stdout


def test_export_and_backup_files_are_private(cli: Any, filled: str, tmp_path: Path, umask: int) -> None:
    folder = tmp_path / "copies"
    folder.mkdir()
    assert_ok(cli("--db", filled, "export", str(folder / "out.jsonl")))
    assert_ok(cli("--db", filled, "backup", str(folder / "copy.db")))
    assert modes(folder) == {"copy.db": 0o600, "out.jsonl": 0o600}


def test_export_scoped(cli: Any, db: str) -> None:
    assert_ok(cli("--db", db, "remember", "fact", "k", "a's", "--agent-id", "agent-a"))
    assert_ok(cli("--db", db, "remember", "fact", "k", "b's", "--agent-id", "agent-b"))
    out = assert_ok(cli("--db", db, "export", "--agent-id", "agent-b")).out
    entities = [json.loads(line) for line in out.splitlines() if '"entity"' in line]
    assert [e["agent_id"] for e in entities] == ["agent-b"]


# --- stats, check, reindex, backup -------------------------------------------------------------


def test_stats(cli: Any, filled: str) -> None:
    stats = assert_ok(cli("--db", filled, "--json", "stats")).json()
    assert stats["entities"] == 3 and stats["versions"] == 3 and stats["by_status"] == {"active": 3}
    human = assert_ok(cli("--db", filled, "stats")).lines()
    assert re.fullmatch(
        rf"vault +{re.escape(filled)} \(sqlite, schema {stats['schema_version']}, \d+ KB\)", human[0]
    )
    assert "memories       3 (3 active)" in human
    assert (
        f"links          {stats['links']}" in human and stats["links"] >= 1
    )  # the two SQLite memories: inferred
    assert "vectors        none (no embedding model has written to this vault)" in human
    assert not any("{" in line or "_" in line.split()[0] for line in human)  # no dicts, no field names


def test_times_a_person_reads_are_iso_8601(cli: Any, filled: str) -> None:
    iso = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    history = assert_ok(cli("--db", filled, "history", "decision", "cache")).lines()
    assert all(re.search(rf"recorded {iso}, true from {DAY}( to {DAY})?: ", line) for line in history[1:])
    entity_id = assert_ok(cli("--db", filled, "--json", "history", "decision", "cache")).json()["items"][0][
        "id"
    ]
    shown = assert_ok(cli("--db", filled, "get-entity", str(entity_id))).lines()
    assert re.fullmatch(f"true from {iso}( to {iso})?; created {iso}, this version written {iso}", shown[1])
    assert all(re.match(iso, line) for line in assert_ok(cli("--db", filled, "recent")).lines()[:-1])
    missing = assert_ok(cli("--db", filled, "as-of", "decision", "cache", "946684800000")).out
    assert "was believed at 2000-01-01T00:00:00.000Z" in missing
    missing = assert_ok(cli("--db", filled, "as-of", "decision", "cache", "2000-01-01T00:00:00Z")).out
    assert "was believed at 2000-01-01T00:00:00Z" in missing


def test_check_ok(cli: Any, filled: str) -> None:
    assert assert_ok(cli("--db", filled, "check")).lines() == ["ok"]
    assert assert_ok(cli("--db", filled, "--json", "check")).json() == {"ok": True, "problems": []}


def test_check_fails_on_a_broken_index_and_reindex_repairs_it(cli: Any, filled: str) -> None:
    raw = sqlite3.connect(filled)
    try:
        raw.execute("INSERT INTO entities_fts(entities_fts) VALUES ('delete-all')")
        raw.commit()
    finally:
        raw.close()
    run = cli("--db", filled, "check")
    assert run.code == 1
    assert run.lines()[0] == "problems:"
    assert any("entities_fts" in line for line in run.lines()[1:])
    assert assert_ok(cli("--db", filled, "reindex")).lines() == ["reindexed; check ok"]
    assert assert_ok(cli("--db", filled, "check")).lines() == ["ok"]
    run = assert_ok(cli("--db", filled, "--json", "recall", "redis"))
    assert [i["key"] for i in run.json()["items"]] == ["cache"]


def test_reindex_json(cli: Any, filled: str) -> None:
    assert assert_ok(cli("--db", filled, "--json", "reindex")).json() == {
        "ok": True,
        "problems": [],
        "relations_judged": 0,
    }


def test_backup(cli: Any, filled: str, tmp_path: Path) -> None:
    target = tmp_path / "copy.db"
    run = assert_ok(cli("--db", filled, "backup", str(target)))
    assert run.lines() == [f"backed up to {target}"]
    with Vault(target) as copy:
        assert [e.key for e in copy.scan().items] == ["db-engine", "cache", "meeting"]
    line = assert_one_line_error(cli("--db", filled, "backup", str(target)))
    assert "target" in line and "exists" in line
    assert assert_ok(cli("--db", filled, "--json", "backup", str(tmp_path / "two.db"))).json() == {
        "backup": str(tmp_path / "two.db")
    }


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "mentions"),
    [
        (["remember", "fact", "k", "c", "--body", "{not json"], "body"),
        (["remember", "fact", "k", "c", "--body", "[1, 2]"], "body"),
        (["recall", "x", "--mode", "bogus"], "mode"),
        (["recall", "x", "--mode", "dense"], "dense"),
        (["recall", "x", "--mode", "hybrid"], "hybrid"),
        (["remember", "fact", "k"], "content"),
        (["remember"], "required"),
        (["history", "fact"], "key"),
        (["history", "no-such", "fact"], "no-such"),
        (["recall", "x", "--limit", "0"], "limit"),
        (["recall", "x", "--limit", "ten"], "limit"),
        (["scan", "--limit", "1001"], "limit"),
        (["remember", "fact", "k", "c", "--certainty", "2"], "certainty"),
        (["bogus-command"], "bogus-command"),
        ([], "command"),
    ],
)
def test_errors_are_one_line_exit_1(cli: Any, db: str, argv: list[str], mentions: str) -> None:
    assert_ok(cli("--db", db, "init"))
    line = assert_one_line_error(cli("--db", db, *argv))
    assert mentions in line


def test_error_leaves_the_vault_unchanged(cli: Any, filled: str) -> None:
    before = assert_ok(cli("--db", filled, "export")).out
    assert_one_line_error(cli("--db", filled, "remember", "decision", "cache", "new", "--body", "{oops"))
    assert assert_ok(cli("--db", filled, "export")).out == before


def test_not_found_message_with_a_newline_in_the_key_is_still_one_line(cli: Any, db: str) -> None:
    assert_ok(cli("--db", db, "init"))
    line = assert_one_line_error(cli("--db", db, "history", "fact", "two\nlines"))
    assert "two\\nlines" in line


def test_help_lists_the_commands(cli: Any) -> None:
    run = cli("--help")
    assert run.code == 0
    for command in (
        "remember",
        "recall",
        "scan",
        "history",
        "import",
        "export",
        "stats",
        "check",
        "reindex",
        "backup",
    ):
        assert command in run.out


def test_a_call_naming_a_command_builds_its_parser_alone(
    cli: Any, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot call pays for its own command's parser (its group's, for a grouped one), not the
    forty others'; asking the top level for help first still lists every command."""
    from perseus_vault_core.cli import parser as cli_parser

    added: list[str] = []
    real = cli_parser.Commands.add

    def add(self: Any, command: Any, *, arguments: bool = True) -> None:
        added.append(command.name)
        real(self, command, arguments=arguments)

    monkeypatch.setattr(cli_parser.Commands, "add", add)
    assert_ok(cli("--db", db, "init"))
    assert added == ["init"]
    added.clear()
    assert_ok(cli("--db", db, "--json", "context", "a turn"))
    assert added == ["prepare"]
    added.clear()
    assert_ok(cli("--db", db, "memory", "list"))
    assert added and all(name.startswith("memory ") for name in added)
    listed = re.findall(r"^    (\S+)", cli("-h", "prepare").out, flags=re.M)
    assert {"init", "recall", "prepare", "memory", "rekey"} <= set(listed)


# --- as a real process -------------------------------------------------------------------------


def _command() -> list[str]:
    found = shutil.which("perseus-vault", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "perseus_vault_core.cli"]


def _spawn(argv: Sequence[str], env_db: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PERSEUS_VAULT_DEBUG",)}
    env["PERSEUS_VAULT_DB"] = env_db
    return subprocess.run(
        [*_command(), *argv], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_real_process(tmp_path: Path) -> None:
    db = str(tmp_path / "proc.db")
    done = _spawn(["remember", "decision", "db", "We chose SQLite in WAL mode."], db)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(
        rf"stored as #1 decision/db, version 1 \(true from {DAY}\); no candidate it repeats, updates "
        "or contradicts",
        done.stdout.strip(),
    )
    done = _spawn(["recall", "sqlite", "--json"], db)
    assert done.returncode == 0, done.stderr
    assert [i.key for i in RecallResult.model_validate_json(done.stdout).items] == ["db"]
    done = _spawn(["history", "nope", "nothing"], db)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("error:") and "Traceback" not in done.stderr
    done = _spawn(["recall", "x", "--mode", "dense"], db)
    assert done.returncode == 1 and done.stderr.startswith("error:") and len(done.stderr.splitlines()) == 1


# --- reads never create; names shared with the MCP tools; versions and times --------------------


def test_a_read_of_a_missing_vault_is_one_line_and_creates_nothing(cli: Any, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "x.db"
    for argv in (
        ["recall", "foo"],
        ["scan"],
        ["stats"],
        ["prepare", "a turn"],
        ["export"],
        ["check"],
        ["memory", "list"],
        ["get-entity", "1"],
        ["history", "note", "k"],
    ):
        line = assert_one_line_error(cli("--db", str(missing), *argv))
        assert "no vault at" in line, argv
        assert not (tmp_path / "no").exists(), argv
    assert_ok(cli("--db", str(missing), "init"))
    assert missing.is_file()
    assert assert_ok(cli("--db", str(missing), "recall", "foo")).out.startswith("no matches")
    other = tmp_path / "other" / "y.db"
    assert_ok(cli("--db", str(other), "remember", "note", "k", "a write creates the vault"))
    assert other.is_file()


def test_options_are_never_abbreviated(cli: Any, db: str) -> None:
    assert_ok(cli("--db", db, "init"))
    assert "--lim" in assert_one_line_error(cli("--db", db, "recall", "x", "--lim", "1"))


def test_version(cli: Any) -> None:
    from importlib.metadata import version

    run = cli("--version")
    assert run.code == 0 and run.out.strip() == f"perseus-vault {version('perseus-vault')}"


def test_the_mcp_names_of_verbs_are_accepted_but_not_listed(cli: Any, db: str) -> None:
    assert_ok(
        cli(
            "--db",
            db,
            "remember",
            "decision",
            "db",
            "We chose SQLite.",
            "--recall-when",
            "choosing a database",
        )
    )
    prepared = assert_ok(cli("--db", db, "prepare", "we are choosing a database")).out
    assert assert_ok(cli("--db", db, "context", "we are choosing a database")).out == prepared
    assert (
        assert_ok(cli("--db", db, "recall_when", "we are choosing a database")).out
        == assert_ok(cli("--db", db, "recall-when", "we are choosing a database")).out
    )
    assert assert_ok(cli("--db", db, "--json", "get_entity", "1")).json()["key"] == "db"
    listed = re.findall(r"^    (\S+)", assert_ok(cli("--help")).out, flags=re.M)
    assert "prepare" in listed and "recall-when" in listed
    assert not {"context", "recall_when", "get_entity"} & set(listed)


def test_times_on_the_command_line_are_unix_ms_or_iso_8601(cli: Any, db: str) -> None:
    made = assert_ok(
        cli("--db", db, "--json", "remember", "note", "k", "text", "--valid-from-ms", "2026-01-01T00:00:00Z")
    ).json()
    assert made["valid_from_ms"] == 1_767_225_600_000
    assert assert_ok(cli("--db", db, "--json", "as-of", "note", "k", "2100-01-01")).json()["id"] == made["id"]
    assert assert_ok(cli("--db", db, "as-of", "note", "k", "1")).out.startswith("No version of note/k")
    assert "as_of_unix_ms" in assert_one_line_error(cli("--db", db, "as-of", "note", "k", "soon"))
    found = assert_ok(cli("--db", db, "--json", "recall", "", "--as-of", "2100-01-01T00:00:00Z")).json()
    assert [i["id"] for i in found["items"]] == [made["id"]]


def test_a_name_stored_with_line_breaks_prints_on_one_line(cli: Any, db: str) -> None:
    """A key an older vault stored with line breaks (refused since) cannot add a line to the CLI's output."""
    with Vault(db, embedder=False) as vault:
        planted = vault.remember("note", "k", "the deploy checklist lives in the wiki").id
        vault.engine.write(
            lambda c: c.execute(
                "UPDATE entities SET key = ? WHERE id = ?", ("old\n#99 [forged/line]\u2028x", planted)
            )
        )
    recalled = cli("--db", db, "recall", "deploy checklist")
    assert recalled.code == 0 and len(recalled.lines()) == 2, recalled.out  # the header and one hit
    assert "old\\n#99 [forged/line]\\u2028x" in recalled.out
    forgotten = cli("--db", db, "forget", str(planted))
    assert forgotten.code == 0 and forgotten.lines() == [
        f"archived #{planted} [note/old\\n#99 [forged/line]\\u2028x]"
    ]
