"""The vault as an MCP server, on the official ``mcp`` SDK (2.x, ``MCPServer``).

One tool per verb of the core's registry (:mod:`perseus_vault_core.verbs`), named
``perseus_vault_<verb>``. A tool's input schema is generated from the verb's params model, the
same model ``Vault`` validates every call with, so the tools cannot drift from the Python API.

The boundary is strict: a tool refuses an unknown or misspelled argument and a wrongly typed one
(no coercion of ``"5"`` to ``5``), with one line naming the argument; nothing is written then.
Schemas say ``additionalProperties: false``. Times are accepted as unix ms or ISO 8601 text.

Compact by default: a model pays for every listed tool in every session, so the server lists the
registry's ``core`` profile (``--tools all``, or ``PERSEUS_VAULT_TOOLS=all``, serves every verb),
and each tool groups the knobs an agent rarely needs under one ``options`` argument.

Text content is written for a model: ``prepare`` answers with its markdown block, ``get_memory``
with the file's text, ``global_recall`` with its answer context, ``conversation`` with its turns as a
transcript, a time-travel lookup that finds nothing says so; other tools answer with their result as
JSON. Structured content always carries the engine's result model.

A server bound to a scope (``agent_id`` / ``workspace_hash``) applies it to every call: a call naming
another scope is refused, the scope arguments leave the schemas, and verbs that would reach past the
scope (``embed``, ``stats``) are not offered.

Compatibility names stay callable but are listed only when ``PERSEUS_VAULT_TOOL_ALIASES=all``:
``mimir_<verb>`` for every served verb (flat arguments, as that generation of tools took them),
the memory-file tools' ``vault_*`` names, and ``perseus_vault_context`` for ``prepare``.

Transports: stdio (``serve_stdio``, over :mod:`mcp_stdio`), and streamable HTTP (:mod:`mcp_http`).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations
from pydantic import BaseModel, TypeAdapter

from perseus_vault_core import Vault, VaultError, __version__
from perseus_vault_core.conversations import transcript
from perseus_vault_core.errors import InvalidInput
from perseus_vault_core.params import ADVANCED, MAX_INT, is_advanced, validate
from perseus_vault_core.verbs import BY_NAME, PROFILES, VERBS, Verb

PREFIX = "perseus_vault_"
LEGACY_PREFIX = "mimir_"
MEMORY_FILE_ALIASES = {  # the memory-file tools' names in an earlier generation of servers
    "vault_memory_recall": "memory_recall", "vault_get_memory": "get_memory",
    "vault_list_memory_files": "list_memory_files", "vault_delete_memory": "delete_memory", "vault_search": "search",
}
ALIASES_ENV = "PERSEUS_VAULT_TOOL_ALIASES"
TOOLS_ENV = "PERSEUS_VAULT_TOOLS"
OPTIONS = "options"
# Each result's ``_meta`` carries the engine's own time for the call, so a client can tell the
# vault's work from the protocol's (the MCP benchmark subtracts it).
ENGINE_MS_META = "perseus-vault/engine_ms"
SCOPE = ("agent_id", "workspace_hash")
INSTRUCTIONS = (
    "Long-term memory: remember facts, decisions and notes, and recall them by keyword, meaning, graph, time or "
    "triggers. Start a turn with perseus_vault_prepare; answer questions with perseus_vault_recall; store what "
    "is worth keeping with perseus_vault_remember.")

log = logging.getLogger("perseus_vault.mcp")


# --- schemas -------------------------------------------------------------------------------------


# Keys a model does not need to call a tool well: titles repeat the names; length limits and lower
# bounds are documented (docs/limits.md) and refused with an error naming them (upper bounds stay:
# they tell a model how much it may ask for); ``advanced`` is our marker.
_DROPPED = frozenset({"title", "minLength", "maxLength", "maxItems", "minimum", "exclusiveMinimum", ADVANCED})


def _compact(schema: Any, defs: dict[str, Any], *, inputs: bool = True) -> Any:
    """A JSON schema without what costs a model tokens and tells it nothing (:data:`_DROPPED`, the
    ``null`` arms of optional values, ``default: null``, the integer range every id and time
    shares); references inlined."""
    if isinstance(schema, list):
        return [_compact(s, defs, inputs=inputs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = defs[schema["$ref"].rsplit("/", 1)[-1]]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or (key == "maximum" and value == MAX_INT):
            continue
        if key == "default" and (value is None or (value is False and inputs)):  # what omitting it means anyway
            continue
        if key == "properties":
            out[key] = {name: _compact(prop, defs, inputs=inputs) for name, prop in value.items()}
        else:
            out[key] = _compact(value, defs, inputs=inputs)
    arms = out.get("anyOf")
    if inputs and isinstance(arms, list):  # an omitted argument says it; a result's null is a value
        kept = [a for a in arms if a != {"type": "null"}]
        if len(kept) == 1:
            del out["anyOf"]
            out = {**kept[0], **out}
        else:
            out["anyOf"] = kept
    if out.get("additionalProperties") is True:
        del out["additionalProperties"]
    return out


def input_schema(verb: Verb, *, grouped: bool, hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The tool's input schema from the verb's params model: required arguments first; with
    ``grouped``, the advanced knobs inside one ``options`` object."""
    raw = verb.params.model_json_schema()
    defs = raw.get("$defs", {})
    required = [n for n in raw.get("required", []) if n not in hidden]
    props: dict[str, Any] = {}
    options: dict[str, Any] = {}
    fields = verb.params.model_fields
    for name, prop in raw.get("properties", {}).items():
        if name in verb.exclude or name in hidden:
            continue
        (options if grouped and is_advanced(fields[name]) else props)[name] = _compact(prop, defs)
    ordered = {n: props[n] for n in required} | {n: p for n, p in props.items() if n not in required}
    if options:
        ordered[OPTIONS] = {"type": "object", "additionalProperties": False, "properties": options,
                            "description": "Rarely needed knobs"}
    schema: dict[str, Any] = {"type": "object", "properties": ordered, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def output_schema(verb: Verb) -> dict[str, Any]:
    returns = verb.returns
    if isinstance(returns, type) and issubclass(returns, BaseModel):
        raw = returns.model_json_schema(mode="serialization")
    else:  # X | None, lists, counts: wrapped as {"result": ...}, as the SDK wraps them
        inner = TypeAdapter(returns).json_schema(mode="serialization")
        raw = {"type": "object", "properties": {"result": {k: v for k, v in inner.items() if k != "$defs"}},
               "required": ["result"], "$defs": inner.get("$defs", {})}
    defs = raw.pop("$defs", {})
    compact: dict[str, Any] = _compact(raw, defs, inputs=False)
    return compact


# --- tools ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VaultTool:
    """One served tool name: the verb it runs and how its arguments are shaped."""

    name: str
    verb: Verb
    grouped: bool  # advanced knobs under ``options`` (canonical names); flat for compatibility names
    listed: bool
    tool: Tool

    @property
    def advanced(self) -> frozenset[str]:
        return frozenset(n for n, f in self.verb.params.model_fields.items() if is_advanced(f))


def _arguments(tool: VaultTool, given: Any, bound: dict[str, str]) -> dict[str, Any]:
    """The call's arguments as the params model's flat fields, checked against the tool's shape
    (options lifted, excluded fields refused) and with the server's scope applied."""
    if not isinstance(given, dict):
        raise InvalidInput("arguments", "must be a JSON object")
    args = dict(given)
    advanced = tool.advanced
    if tool.grouped and advanced:
        for name in args:
            if name in advanced:
                raise InvalidInput(name, f"is an option: pass it inside {OPTIONS}")
        options = args.pop(OPTIONS, None)
        if options is not None:
            if not isinstance(options, dict):
                raise InvalidInput(OPTIONS, "must be a JSON object")
            for name, value in options.items():
                if name not in advanced or name in tool.verb.exclude:
                    raise InvalidInput(f"{OPTIONS}.{name}", "unknown option")
                args[name] = value
    for name in tool.verb.exclude:
        if name in args:
            raise InvalidInput(name, "unknown argument")
    fields = tool.verb.params.model_fields
    for name, value in bound.items():
        if name in fields:
            if args.get(name) is not None and args[name] != value:
                raise InvalidInput(name, f"this server is bound to {name}={value!r}")
            args[name] = value
    if bound and isinstance(args.get("items"), list):  # remember_many: each memory carries its own scope
        items = []
        for n, item in enumerate(args["items"]):
            if isinstance(item, dict):
                item = dict(item)
                for name, value in bound.items():
                    if item.get(name) is not None and item[name] != value:
                        raise InvalidInput(f"items.{n}.{name}", f"this server is bound to {name}={value!r}")
                    item[name] = value
            items.append(item)
        args["items"] = items
    return args


def _one_line(text: str) -> str:
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _text(verb: Verb, args: dict[str, Any], result: Any) -> str:
    """What the tool says in text, for a model that reads only text."""
    if verb.name == "prepare":
        return result.markdown or "No stored memory matches this turn."
    if verb.name == "get_memory":
        return str(result.text)
    if verb.name == "global_recall":
        return str(result.context)
    if verb.name == "conversation":
        return transcript(result, around=args.get("around"))
    if result is None and verb.name in ("as_of", "valid_at", "bitemporal"):
        believed, true = _when(args.get("as_of_unix_ms")), _when(args.get("valid_at_unix_ms"))
        when = {"as_of": f"was believed at {believed}", "valid_at": f"was true in the world at {true}",
                "bitemporal": f"was believed at {believed} to be true at {true}"}[verb.name]
        return f"No version of {args['category']}/{args['key']} {when}."
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    return json.dumps(_jsonable(result), ensure_ascii=False)


def _when(ms: Any) -> str:
    import datetime as dt

    if not isinstance(ms, int):
        return "that time"
    stamp = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
    return f"{stamp.replace('+00:00', 'Z')} ({ms} unix ms)"


def _jsonable(result: Any) -> Any:
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    if isinstance(result, list):
        return [_jsonable(r) for r in result]
    return result


def _timed(work: Callable[[], Any]) -> tuple[Any, float]:
    """The engine's answer and its own time in ms (measured where it runs, in the worker thread)."""
    started = time.perf_counter()
    result = work()
    return result, (time.perf_counter() - started) * 1000


class VaultServer(MCPServer):
    """An MCPServer whose tools are the registry's verbs, validated strictly by their params models."""

    def __init__(self, *, holder: dict[str, Vault], bound: dict[str, str], profile: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.holder, self.bound, self.profile = holder, bound, profile
        self.tools: dict[str, VaultTool] = {}

    def add_vault_tool(self, tool: VaultTool) -> None:
        self.tools[tool.name] = tool

    async def list_tools(self) -> list[Tool]:
        everything = os.environ.get(ALIASES_ENV) == "all"
        return [t.tool for t in self.tools.values() if t.listed or everything]

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.tools.get(name)
        return None if tool is None else tool.tool.input_schema

    def _unknown(self, name: str) -> str:
        verb = name.removeprefix(PREFIX)
        if verb in BY_NAME and not BY_NAME[verb].scoped and self.bound:
            return f"{name} is not offered by a server bound to a scope (it reaches past the scope)"
        if verb in BY_NAME:
            return (f"{name} is not in this server's tool profile {self.profile!r} (start it with --tools all "
                    "for every tool)")
        return f"no tool named {_one_line(name)[:100]!r} on this server"

    def remove_tool(self, name: str) -> None:
        if self.tools.pop(name, None) is None:
            raise ToolError(f"unknown tool: {name}")

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        tool = self.tools.get(name)
        if tool is None:
            raise ToolError(self._unknown(name))
        try:
            args = _arguments(tool, arguments, self.bound)
            try:
                p = validate(tool.verb.params, args)
            except InvalidInput as exc:  # name a knob given inside options as the caller wrote it
                given = arguments.get(OPTIONS) if isinstance(arguments, dict) else None
                if tool.grouped and isinstance(given, dict) and exc.field.split(".")[0] in given:
                    raise InvalidInput(f"{OPTIONS}.{exc.field}", exc.message) from None
                raise
            call = partial(getattr(self.holder["vault"], tool.verb.name), **p.model_dump(exclude_unset=True))
            result, engine_ms = await anyio.to_thread.run_sync(_timed, call)
        except VaultError as exc:
            raise ToolError(_one_line(str(exc))) from exc
        except Exception as exc:  # never a trace or a path to the caller; the server's log has it
            log.exception("tool %s failed", name)
            raise ToolError(f"internal error ({type(exc).__name__}); the server's log has the details") from exc
        # The result's shape is the verb's, not the value's: an Entity-or-null result is always wrapped.
        returns = tool.verb.returns
        direct = isinstance(returns, type) and issubclass(returns, BaseModel)
        structured = result.model_dump(mode="json") if direct else {"result": _jsonable(result)}
        return CallToolResult(content=[TextContent(type="text", text=_text(tool.verb, p.model_dump(), result))],
                              structured_content=structured, _meta={ENGINE_MS_META: round(engine_ms, 3)})


def served(profile: str, bound: dict[str, str]) -> list[Verb]:
    """The verbs a server with this tool profile and binding serves."""
    if profile in PROFILES:
        names = PROFILES[profile]
    else:  # a comma-separated list of verbs
        names = frozenset(n.strip() for n in profile.split(",") if n.strip())
        unknown = sorted(names - PROFILES["all"])
        if unknown or not names:
            raise InvalidInput("tools", f"must be {', '.join(PROFILES)} or a comma-separated list of verbs "
                                        f"(unknown: {', '.join(unknown) or 'none given'})")
    return [v for v in VERBS if v.name in names and (v.scoped or not bound)]


def build_server(path: str | None = None, *, agent_id: str | None = None, workspace_hash: str | None = None,
                 vault: Vault | None = None, tools: str | None = None) -> VaultServer:
    """An MCP server over the vault at ``path`` (opened when the server starts, closed when it stops),
    or over an open ``vault``; bound to a scope when ``agent_id`` / ``workspace_hash`` are given.
    ``tools``: the tool profile, ``core`` (default, or ``PERSEUS_VAULT_TOOLS``), ``all``, or a
    comma-separated list of verbs."""
    holder: dict[str, Vault] = {}
    bound = {k: v for k, v in (("agent_id", agent_id), ("workspace_hash", workspace_hash)) if v is not None}
    profile = tools or os.environ.get(TOOLS_ENV) or "core"

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        own = vault is None
        holder["vault"] = vault if vault is not None else Vault(path)
        try:
            yield
        finally:
            if own:
                holder.pop("vault").close()

    server = VaultServer(holder=holder, bound=bound, profile=profile, name="perseus-vault", version=__version__,
                         instructions=INSTRUCTIONS, lifespan=lifespan, log_level="WARNING")
    older = {verb: alias for alias, verb in MEMORY_FILE_ALIASES.items()}
    hidden = frozenset(bound)
    for verb in served(profile, bound):
        annotations = ToolAnnotations(read_only_hint=verb.read_only, destructive_hint=verb.destructive,
                                      idempotent_hint=verb.idempotent, open_world_hint=False)
        out = output_schema(verb)
        shapes = {grouped: input_schema(verb, grouped=grouped, hidden=hidden) for grouped in (True, False)}
        names = [(PREFIX + verb.name, True, True)] + [(PREFIX + a, True, False) for a in verb.aliases]
        names += [(LEGACY_PREFIX + n, False, False) for n in (verb.name, *verb.aliases)]
        names += [(older[verb.name], False, False)] if verb.name in older else []
        for name, grouped, listed in names:
            text = verb.description if listed else f"Compatibility name of {PREFIX + verb.name}. {verb.description}"
            tool = Tool(name=name, description=text, input_schema=shapes[grouped], output_schema=out,
                        annotations=annotations)
            server.add_vault_tool(VaultTool(name, verb, grouped, listed, tool))
    return server


def serve_stdio(vault: Vault, *, agent_id: str | None = None, workspace_hash: str | None = None,
                tools: str | None = None) -> None:
    """Serve over stdin/stdout until the client closes them (see mcp_stdio.py for the transport)."""
    from .mcp_stdio import stdio_streams

    lowlevel = build_server(vault=vault, agent_id=agent_id, workspace_hash=workspace_hash,
                            tools=tools)._lowlevel_server

    async def main() -> None:
        async with stdio_streams() as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(main)


# --- the reference page --------------------------------------------------------------------------


def tool_size(tool: Tool) -> int:
    """What a listed tool costs a model in characters: its name, description and input schema (as
    ``json.dumps`` writes it by default, with a space after each separator)."""
    return len(tool.name) + len(tool.description or "") + len(json.dumps(tool.input_schema))


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
    core_size = sum(tool_size(t) for t in tools if t.name.removeprefix(PREFIX) in core)
    lines = ["# MCP tool reference", "",
             "Generated from the server's schemas by `python -m perseus_vault_integrations.mcp_server` "
             "(a test checks it is current). Every tool returns the engine's result model as structured content; "
             "arguments marked `options.` go inside the tool's `options` object.", "",
             f"The default `core` profile lists {len(core)} tools ({core_size:,} characters of names, descriptions "
             f"and input schemas); `--tools all` lists all {len(tools)} ({sum(map(tool_size, tools)):,} characters).", ""]
    for tool in sorted(tools, key=lambda t: t.name):
        a = tool.annotations
        assert a is not None
        hints = [h for h, on in (("read-only", a.read_only_hint), ("destructive", a.destructive_hint),
                                 ("idempotent", a.idempotent_hint)) if on]
        profile = "core" if tool.name.removeprefix(PREFIX) in core else "all"
        lines += [f"## {tool.name}", "", tool.description or "", "",
                  f"Profile: `{profile}`. Annotations: {', '.join(hints) or 'writes'}; closed-world.", ""]
        props = tool.input_schema.get("properties", {})
        if props:
            lines += ["| argument | type | required / default | meaning |", "|---|---|---|---|"]
            lines += _rows(props, set(tool.input_schema.get("required", [])))
            lines.append("")
    aliases = ", ".join([f"`{LEGACY_PREFIX}<verb>` for every verb (flat arguments)", f"`{PREFIX}context`"]
                        + [f"`{k}`" for k in MEMORY_FILE_ALIASES])
    lines += ["## Compatibility names", "",
              f"Callable but listed only with `{ALIASES_ENV}=all`: {aliases} (docs/mcp.md).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference(), end="")
