"""docs/cli.md is generated from the parser (perseus_vault_core/cli/reference.py) and current."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from perseus_vault_core.cli import build_parser
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
            if action.dest not in ("help", "db", "json") and action.option_strings and action.help != argparse.SUPPRESS:
                assert f"`{action.option_strings[0]}`" in section, (words, action.option_strings[0])


def test_links_on_the_page_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+\.md)\)", reference()):
        assert (DOCS / target).exists(), target
