"""The MCP tool reference (mcp/reference.py): generated from the tools' own schemas, committed as
docs/mcp-tools.md and kept current; each argument's type written short, its default or "required", and
the knobs inside ``options`` named as such."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from perseus_vault_core import PROFILES, VERBS
from perseus_vault_integrations.mcp.reference import _rows, _type, reference
from perseus_vault_integrations.mcp.server import ALIASES_ENV, OPTIONS, PREFIX


def test_the_tool_reference_in_the_docs_is_current() -> None:
    docs = Path(__file__).resolve().parents[3] / "docs" / "mcp-tools.md"
    assert docs.read_text(encoding="utf-8") == reference(), (
        "regenerate: python -m perseus_vault_integrations.mcp.reference > docs/mcp-tools.md"
    )


@pytest.mark.parametrize(
    ("schema", "short"),
    [
        ({"type": "integer"}, "integer"),
        ({}, "any"),
        ({"type": ["string", "null"]}, "string | null"),
        ({"type": "array", "items": {"type": "integer"}}, "list[integer]"),
        ({"type": "array"}, "list[any]"),
        ({"type": "string", "enum": ["auto", "fts5"]}, "'auto' | 'fts5'"),
        ({"const": "hybrid"}, "'hybrid'"),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "integer"}]}, "integer | string"),
        (
            {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "list[string] | null",
        ),
    ],
)
def test_a_type_is_written_short(schema: dict, short: str) -> None:
    assert _type(schema) == short


def test_a_row_says_required_or_its_default_and_options_are_named_inside_it() -> None:
    props = {
        "query": {"type": "string", "description": "what to find"},
        "limit": {"type": "integer", "default": 10, "description": "at most | this many"},
        OPTIONS: {"type": "object", "properties": {"startup": {"type": "boolean", "default": False}}},
    }
    assert _rows(props, {"query"}) == [
        "| `query` | string | required | what to find |",
        "| `limit` | integer | default `10` | at most &#124; this many |",  # a pipe cannot end the cell
        f"| `{OPTIONS}.startup` | boolean | default `False` |  |",
    ]
    assert _rows({"mode": {"anyOf": [{"type": "string"}, {"type": "null"}]}}, set()) == [
        "| `mode` | string &#124; null | default `None` |  |"
    ]


def test_every_tool_has_a_section_with_its_profile_and_the_aliases_are_listed_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ALIASES_ENV, raising=False)
    plain = reference()
    monkeypatch.setenv(ALIASES_ENV, "all")
    page = reference()
    assert page == plain  # the same whatever the environment lists
    assert os.environ[ALIASES_ENV] == "all"  # and the setting is given back
    sections = re.findall(r"^## (.+)$", page, flags=re.M)
    assert (
        sections[-1] == "Compatibility names"
        and f"`{ALIASES_ENV}=all`" in page.split("## Compatibility names")[1]
    )
    tools = [s for s in sections if s.startswith(PREFIX)]
    assert tools == sorted(tools) and {t.removeprefix(PREFIX) for t in tools} == {v.name for v in VERBS}
    for tool in tools:
        profile = "core" if tool.removeprefix(PREFIX) in PROFILES["core"] else "all"
        assert f"## {tool}\n" in page
        section = page.split(f"## {tool}\n", 1)[1].split("\n## ", 1)[0]
        assert f"Profile: `{profile}`." in section, tool
    assert f"lists {len(PROFILES['core'])} tools" in page and f"lists all {len(tools)}" in page
