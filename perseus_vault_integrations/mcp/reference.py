"""The MCP tool reference (docs/mcp-tools.md), generated from the tools' own schemas (each argument's
full schema and meaning: the listing a model reads says the rarely needed knobs in brief).

    python -m perseus_vault_integrations.mcp.reference > docs/mcp-tools.md

A test checks that the committed page is current.
"""

from __future__ import annotations

import os
from typing import Any

import anyio

from perseus_vault_core import BY_NAME, PROFILES

from .server import (
    ALIASES_ENV,
    LEGACY_PREFIX,
    MEMORY_FILE_ALIASES,
    OPTIONS,
    PREFIX,
    SCOPE_INSTRUCTIONS,
    build_server,
    input_schema,
    tool_size,
)


def _type(schema: dict[str, Any]) -> str:
    """A short type name for a JSON-schema property."""
    if "anyOf" in schema:
        return " | ".join(dict.fromkeys(_type(s) for s in schema["anyOf"]))
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    if "enum" in schema:
        return " | ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    return str(kind)


def _rows(props: dict[str, Any], required: set[str], prefix: str = "") -> list[str]:
    rows = []
    for name, schema in props.items():
        if name == OPTIONS:
            rows += _rows(schema.get("properties", {}), set(), prefix=f"{OPTIONS}.")
            continue
        default = "required" if name in required else f"default `{schema.get('default')!r}`"
        meaning = str(schema.get("description", "")).replace("|", "&#124;")
        rows.append(f"| `{prefix}{name}` | {_type(schema).replace('|', '&#124;')} | {default} | {meaning} |")
    return rows


def reference() -> str:
    """The tool reference (docs/mcp-tools.md), generated from the tools' own schemas."""
    with_aliases = os.environ.pop(ALIASES_ENV, None)
    try:
        server = build_server(vault=None, tools="all")
        tools = anyio.run(server.list_tools)
    finally:
        if with_aliases is not None:
            os.environ[ALIASES_ENV] = with_aliases
    core = PROFILES["core"]
    core_size = sum(tool_size(t) for t in tools if t.name.removeprefix(PREFIX) in core) + len(
        SCOPE_INSTRUCTIONS
    )
    lines = [
        "# MCP tool reference",
        "",
        "Generated from the server's schemas by `python -m perseus_vault_integrations.mcp.reference` "
        "(a test checks it is current). Every tool returns the engine's result model as structured content; "
        "arguments marked `options.` go inside the tool's `options` object.",
        "",
        f"The default `core` profile lists {len(core)} tools ({core_size:,} characters of names, descriptions "
        "and input schemas, with the sentence of the server's instructions that says what the scope arguments "
        f"mean); `--tools all` lists all {len(tools)} ({sum(map(tool_size, tools)):,} characters).",
        "",
    ]
    for tool in sorted(tools, key=lambda t: t.name):
        a = tool.annotations
        assert a is not None
        hints = [
            h
            for h, on in (
                ("read-only", a.read_only_hint),
                ("destructive", a.destructive_hint),
                ("idempotent", a.idempotent_hint),
            )
            if on
        ]
        profile = "core" if tool.name.removeprefix(PREFIX) in core else "all"
        lines += [
            f"## {tool.name}",
            "",
            tool.description or "",
            "",
            f"Profile: `{profile}`. Annotations: {', '.join(hints) or 'writes'}; closed-world.",
            "",
        ]
        full = input_schema(BY_NAME[tool.name.removeprefix(PREFIX)], grouped=True, terse=False)
        props = full.get("properties", {})
        if props:
            lines += ["| argument | type | required / default | meaning |", "|---|---|---|---|"]
            lines += _rows(props, set(full.get("required", [])))
            lines.append("")
    aliases = ", ".join(
        [f"`{LEGACY_PREFIX}<verb>` for every verb (flat arguments)", f"`{PREFIX}context`"]
        + [f"`{k}`" for k in MEMORY_FILE_ALIASES]
    )
    lines += [
        "## Compatibility names",
        "",
        f"Callable but listed only with `{ALIASES_ENV}=all`: {aliases} (docs/mcp.md).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference(), end="")
