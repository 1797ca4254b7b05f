"""docs/cli.md is generated from the parser (perseus_vault_core/cli/reference.py) and current."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from perseus_vault_core.cli.main import build_parser
from perseus_vault_core.cli.parser import listed
from perseus_vault_core.cli.reference import reference

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_command_reference_in_the_docs_is_current() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert text == reference(), "regenerate: python -m perseus_vault_core.cli.reference > docs/cli.md"


def test_every_command_and_argument_is_on_the_page() -> None:
    text = reference()
    headings = set(re.findall(r"^##+ (.+)$", text, flags=re.M))
    parsers = listed(build_parser())
    assert set(parsers) <= headings, set(parsers) - headings
    for words, parser in parsers.items():
        section = text.split(f"# {words}\n", 1)[1].split("\n#", 1)[0]
        for action in parser._actions:
            if (
                action.dest not in ("help", "db", "json")
                and action.option_strings
                and action.help != argparse.SUPPRESS
            ):
                assert f"`{action.option_strings[0]}`" in section, (words, action.option_strings[0])


def test_links_on_the_page_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+\.md)\)", reference()):
        assert (DOCS / target).exists(), target


def test_every_option_and_argument_has_help() -> None:
    """Every option and positional a person can type says what it is in --help (the refused --token is hidden)."""
    missing = []
    for words, parser in listed(build_parser()).items():
        for action in parser._actions:
            if (
                isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
                or action.help == argparse.SUPPRESS
            ):
                continue
            if not (action.help or "").strip():
                missing.append(f"{words} {(action.option_strings or [action.dest])[0]}")
    assert missing == []
