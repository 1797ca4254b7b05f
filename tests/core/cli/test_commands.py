"""The commands as the command table makes them (perseus_vault_core/cli/commands.py), keyword-only like
tests/core/cli/test_main.py: the graph and proactive verbs (link, unlink, traverse, communities,
community-summary, global-recall, recall-when, prepare), the memory verbs and search."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ..features.memory_files.conftest import FIXTURE
from .test_main import _clean_env, assert_ok, assert_one_line_error, cli, db, keyword_only  # noqa: F401

NOTES = [
    ("storage", "s0", "We chose SQLite in WAL mode for storage."),
    ("storage", "s1", "Nightly backups copy the SQLite file."),
    ("storage", "s2", "FTS5 indexes the storage text."),
    ("oncall", "o0", "Escalate sev1 incidents to the on-call lead."),
    ("oncall", "o1", "Incident reviews happen within two days."),
]


@pytest.fixture
def linked(cli: Any, db: str) -> str:  # noqa: F811
    for category, key, text in NOTES:
        assert_ok(cli("--db", db, "remember", category, key, text))
    for a, b in ((1, 2), (2, 3), (4, 5)):
        assert_ok(cli("--db", db, "link", str(a), str(b), "--relation", "related"))
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
    return db


def test_link_unlink_traverse(cli: Any, linked: str) -> None:  # noqa: F811
    run = assert_ok(cli("--db", linked, "--json", "link", "3", "1", "--relation", "cites", "--weight", "0.5"))
    assert (run.json()["from_id"], run.json()["to_id"], run.json()["weight"]) == (3, 1, 0.5)
    walk = assert_ok(
        cli("--db", linked, "--json", "traverse", "1", "--depth", "1", "--direction", "out")
    ).json()
    assert [n["entity"]["id"] for n in walk["nodes"]] == [1, 2]
    human = assert_ok(cli("--db", linked, "traverse", "1", "--no-inferred")).lines()  # the links written here
    assert human[0].startswith("#1 [storage/s0]") and human[-1] == "3 node(s), 3 link(s)"
    walk = assert_ok(cli("--db", linked, "--json", "traverse", "1")).json()  # and those the vault inferred
    assert {e["source"] for e in walk["edges"]} == {None, "inferred"}
    assert assert_ok(cli("--db", linked, "unlink", "3", "1")).lines() == ["closed 1 link(s)"]
    assert "to_id" in assert_one_line_error(cli("--db", linked, "link", "1", "1"))
    assert "depth" in assert_one_line_error(cli("--db", linked, "traverse", "1", "--depth", "99"))


def test_communities_summary_and_global_recall(cli: Any, linked: str) -> None:  # noqa: F811
    result = assert_ok(cli("--db", linked, "--json", "communities")).json()
    assert result["total"] == 2 and [c["members"] for c in result["communities"]] == [[1, 2, 3], [4, 5]]
    human = assert_ok(cli("--db", linked, "communities")).lines()
    assert human[0] == "2 communities (label_propagation; 6 entities, 3 links)"
    cid = result["communities"][1]["id"]
    written = assert_ok(cli("--db", linked, "--json", "community-summary", cid)).json()
    assert written["materialized"] is True and written["members"] == [4, 5]
    again = assert_ok(cli("--db", linked, "community-summary", cid)).lines()
    assert again[0].endswith("(unchanged)")
    answer = assert_ok(cli("--db", linked, "global-recall", "incidents and escalation", "--communities", "1"))
    assert answer.out.startswith("# Communities for: incidents and escalation")
    assert "(#4)" in answer.out and "(#1)" not in answer.out
    assert "community" in assert_one_line_error(cli("--db", linked, "community-summary", "cnothere"))
    assert "max_chars" in assert_one_line_error(cli("--db", linked, "global-recall", "x", "--max-chars", "1"))


def test_recall_when_and_prepare(cli: Any, linked: str) -> None:  # noqa: F811
    hits = assert_ok(cli("--db", linked, "--json", "recall-when", "we are choosing databases")).json()
    assert [(i["key"], i["match"]) for i in hits["items"]] == [("db", "terms")]
    assert assert_ok(cli("--db", linked, "recall-when", "nothing relevant")).lines() == ["no trigger matches"]
    block = assert_ok(
        cli(
            "--db",
            linked,
            "prepare",
            "choosing a database for storage: is WAL mode safe?",
            "--max-chars",
            "400",
        )
    )
    text = block.out.rstrip("\n")
    assert text.startswith("## Memory for this turn\n### Triggered\n- **decision/db**") and len(text) <= 400
    assert "### Related" in text
    data = assert_ok(cli("--db", linked, "--json", "prepare", "choosing a database", "--related", "0")).json()
    assert data["related"] == [] and data["triggered"] == [6]
    assert "max_chars" in assert_one_line_error(cli("--db", linked, "prepare", "x", "--max-chars", "5"))


def test_memory_verbs(cli: Any, db: str, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "obsidian"
    shutil.copytree(FIXTURE, folder)
    out = assert_ok(cli("--db", db, "memory", "import", str(folder), "--bind")).lines()
    assert out[0].startswith(
        "3 file(s): 15 entries written, 0 unchanged, 0 archived; 3 note(s), 3 link(s); bound to "
    )
    listed = assert_ok(cli("--db", db, "memory", "list")).lines()
    assert listed[0] == "Opinions  9 entries  [Testing, Work pace, Tools]"
    recall = assert_ok(
        cli("--db", db, "--json", "memory", "recall", "coffee", "--file", "Preferences")
    ).json()
    assert [e["date"] for e in recall["entries"]] == ["2019-05-01", "2022-08-09"] and recall[
        "search_mode"
    ] == "fts"
    human = assert_ok(cli("--db", db, "memory", "recall", "testing", "--limit", "2")).lines()
    assert human[0].endswith("showing the 2 most relevant), oldest first:")
    section = assert_ok(cli("--db", db, "memory", "get", "Preferences", "--section", "Food")).out
    assert section.startswith("## Food\n- 2019-05-01: Coffee")
    path = folder / "About Me" / "Preferences.md"
    before = path.read_bytes()
    added = assert_ok(
        cli("--db", db, "memory", "add", "Preferences", "Food", "Oat milk now.", "--date", "2026-02-01")
    )
    assert added.lines()[0].startswith("added to Preferences / Food (2026-02-01); rewrote ")
    assert b"- 2026-02-01: Oat milk now.\n" in path.read_bytes()
    assert_ok(cli("--db", db, "memory", "delete", "Preferences", "Food", "--date", "2026-02-01"))
    assert path.read_bytes() == before
    assert "2" in assert_one_line_error(
        cli("--db", db, "memory", "delete", "Preferences", "Food", "--text", "o")
    )
    exported = assert_ok(cli("--db", db, "memory", "export", str(tmp_path / "out"))).lines()
    assert exported == [f"wrote 3 file(s) to {tmp_path / 'out'}"]
    found = assert_ok(cli("--db", db, "--json", "search", "modal editor")).json()
    assert [i["key"] for i in found["items"]] == ["Helix"]
    assert "folder" in assert_one_line_error(cli("--db", db, "memory", "import", str(tmp_path / "nope")))
