"""Docs grow with the code: every CLI command is documented, every page exists, every example runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from perseus_vault_core.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def cli_commands() -> list[str]:
    """The commands ``perseus-vault --help`` lists (other names of a command are accepted, not listed)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sorted(a.dest for a in sub._choices_actions)  # type: ignore[attr-defined]


def test_every_cli_command_is_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^## (\S+)", text, flags=re.M))
    assert set(cli_commands()) <= documented, set(cli_commands()) - documented


def test_index_links_resolve() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)#]+\.md)\)", index):
        assert (ROOT / "docs" / target).exists(), target


def test_readme_starts_with_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## ")[0]
    assert "make demo" in head and "make test" in head


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example_runs(example: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    env = dict(os.environ)
    if (
        example.name == "postgres.py"
    ):  # an empty database of its own (skips, or fails under REQUIRE_PG, without one)
        env["PERSEUS_VAULT_PG_URL"] = request.getfixturevalue("pg_url")
    result = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()


def test_the_glossary_names_modules_that_exist_and_the_architecture_links_it() -> None:
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[a-z_]+/)+(?:[a-z_]+\.py)?)`", glossary))
    assert len(named) > 20
    missing = [
        m for m in sorted(named) if not (ROOT / "perseus_vault_core" / m).exists() and not (ROOT / m).exists()
    ]
    assert not missing, missing
    assert "(glossary.md)" in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
