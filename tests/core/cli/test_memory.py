"""The CLI's memory verbs and search (keyword-only, like tests/core/cli/test_cli.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from .test_cli import _clean_env, assert_ok, assert_one_line_error, cli, db, keyword_only  # noqa: F401
from ..features.memory_files.test_verbs import FIXTURE


def test_memory_verbs(cli: Any, db: str, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "obsidian"
    shutil.copytree(FIXTURE, folder)
    out = assert_ok(cli("--db", db, "memory", "import", str(folder), "--bind")).lines()
    assert out[0].startswith("3 file(s): 15 entries written, 0 unchanged, 0 archived; 3 note(s), 3 link(s); bound to ")
    listed = assert_ok(cli("--db", db, "memory", "list")).lines()
    assert listed[0] == "Opinions  9 entries  [Testing, Work pace, Tools]"
    recall = assert_ok(cli("--db", db, "--json", "memory", "recall", "coffee", "--file", "Preferences")).json()
    assert [e["date"] for e in recall["entries"]] == ["2019-05-01", "2022-08-09"] and recall["search_mode"] == "fts"
    human = assert_ok(cli("--db", db, "memory", "recall", "testing", "--limit", "2")).lines()
    assert human[0].endswith("showing the 2 most relevant), oldest first:")
    section = assert_ok(cli("--db", db, "memory", "get", "Preferences", "--section", "Food")).out
    assert section.startswith("## Food\n- 2019-05-01: Coffee")
    path = folder / "About Me" / "Preferences.md"
    before = path.read_bytes()
    added = assert_ok(cli("--db", db, "memory", "add", "Preferences", "Food", "Oat milk now.", "--date", "2026-02-01"))
    assert added.lines()[0].startswith("added to Preferences / Food (2026-02-01); rewrote ")
    assert b"- 2026-02-01: Oat milk now.\n" in path.read_bytes()
    assert_ok(cli("--db", db, "memory", "delete", "Preferences", "Food", "--date", "2026-02-01"))
    assert path.read_bytes() == before
    assert "2" in assert_one_line_error(cli("--db", db, "memory", "delete", "Preferences", "Food", "--text", "o"))
    exported = assert_ok(cli("--db", db, "memory", "export", str(tmp_path / "out"))).lines()
    assert exported == [f"wrote 3 file(s) to {tmp_path / 'out'}"]
    found = assert_ok(cli("--db", db, "--json", "search", "modal editor")).json()
    assert [i["key"] for i in found["items"]] == ["Helix"]
    assert "folder" in assert_one_line_error(cli("--db", db, "memory", "import", str(tmp_path / "nope")))
