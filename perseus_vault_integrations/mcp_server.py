"""The vault as an MCP server (SPEC 6.3), on the official ``mcp`` SDK (2.x, ``MCPServer``).

One tool per engine verb, named ``perseus_vault_<verb>``. Each tool's input schema is built from
the engine's own signature or pydantic input model (the same one ``Vault`` validates with), and its
output schema from the engine's result model, so the tools cannot drift from the Python API.
Engine calls run in a worker thread, off the event loop; engine errors become tool errors carrying
the engine's message (which names the bad argument), and nothing a caller sends crashes the server.

A server bound to a scope (``agent_id`` / ``workspace_hash``) applies it to every call: a call naming
another scope is refused, and verbs that would reach past the scope are not offered.

Legacy names stay callable but are listed only when ``PERSEUS_VAULT_TOOL_ALIASES=all``:
``mimir_<verb>`` for every verb, and the memory-file seed's ``vault_memory_recall``,
``vault_get_memory``, ``vault_list_memory_files``, ``vault_delete_memory`` and ``vault_search``.

Transports: stdio, and streamable HTTP (``serve_http``), which binds to loopback unless told
otherwise and, bound anywhere else, refuses to start without a bearer token; with a token, every
request must carry it.
"""

from __future__ import annotations

import hmac
import inspect
import ipaddress
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from perseus_vault_core import Vault, VaultError
from perseus_vault_core import models as m

PREFIX = "perseus_vault_"
LEGACY_PREFIX = "mimir_"
SEED_ALIASES = {  # the memory-file seed's tool names
    "vault_memory_recall": "memory_recall", "vault_get_memory": "get_memory",
    "vault_list_memory_files": "list_memory_files", "vault_delete_memory": "delete_memory", "vault_search": "search",
}
ALIASES_ENV = "PERSEUS_VAULT_TOOL_ALIASES"
TOKEN_ENV = "PERSEUS_VAULT_HTTP_TOKEN"


class VaultServer(MCPServer):
    """MCPServer whose legacy alias tools are callable but listed only on request."""

    aliases: frozenset[str] = frozenset()

    async def list_tools(self) -> list[Any]:
        tools = await super().list_tools()
        if os.environ.get(ALIASES_ENV) == "all":
            return tools
        return [t for t in tools if t.name not in self.aliases]


@dataclass(frozen=True)
class Spec:
    """One tool: the Vault method it calls, where its parameters come from, and what it promises."""

    verb: str
    method: str
    description: str
    params: type[BaseModel] | None = None  # input model; None: the method's own signature
    positional: tuple[str, ...] = ()  # parameters passed positionally (the method's leading ones)
    exclude: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()  # fields of the engine's Filters the method takes as **filters
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    global_: bool = False  # reaches past any scope (not offered on a scope-bound server)


SPECS: tuple[Spec, ...] = (
    Spec("recall", "recall", "Find memories about a topic: keyword (fts5), meaning (dense) or both (hybrid, the default "
         "when the vault has vectors). Use it to answer 'what do we know about X'.", m.RecallParams, ("query",),
         idempotent=False),
    Spec("scan", "scan", "List every memory in scope exactly once, by ascending id, page by page: feed next_cursor "
         "back until has_more is false. Use it to enumerate, not to search.", m.ScanParams),
    Spec("get_entity", "get_entity", "Fetch one memory whole by its id."),
    Spec("history", "history", "Every version of a fact (category, key), newest first."),
    Spec("as_of", "as_of", "The version of a fact the vault believed at an instant (unix ms)."),
    Spec("valid_at", "valid_at", "The version of a fact that was true in the world at an instant (unix ms)."),
    Spec("bitemporal", "bitemporal", "The version believed at one instant to be true at another."),
    Spec("remember", "remember", "Create or update a memory by (category, key); the same content again is a no-op.",
         m.RememberInput, ("category", "key", "content"), read_only=False),
    Spec("remember_many", "remember_many", "Remember a batch of memories in one transaction: all are written, or "
         "none.", read_only=False, idempotent=False),
    Spec("forget", "forget", "Archive a memory (reversible: remembering it again restores it).", read_only=False),
    Spec("purge", "purge", "Delete an archived memory, its history and its links for good.", read_only=False,
         destructive=True),
    Spec("supersede", "supersede", "Mark one memory as superseded by another.", read_only=False),
    Spec("link", "link", "Link two memories of one scope with a typed, weighted, directed edge.", read_only=False),
    Spec("unlink", "unlink", "Close the link(s) from one memory to another.", read_only=False, destructive=True),
    Spec("traverse", "traverse", "Walk the link graph breadth-first from a memory; scope and time rules apply on "
         "every hop.", filters=tuple(m.Filters.model_fields)),
    Spec("communities", "communities", "Clusters (communities) of the link graph, largest first, with their most "
         "central members: the themes of the store.", m.CommunitiesParams),
    Spec("community_summary", "community_summary", "The extractive summary of one community (written once as a "
         "memory linked to its members).", m.CommunitySummaryParams, ("community_id",), read_only=False),
    Spec("global_recall", "global_recall", "Answer a question that spans a cluster of memories: the best "
         "communities by their summaries, evidence from their members, and an answer context.",
         m.GlobalRecallParams, ("query",), read_only=False, idempotent=False),
    Spec("recall_when", "recall_when", "Memories whose recall_when trigger phrases match the given context: what "
         "should come back unasked.", m.RecallWhenParams, ("context",)),
    Spec("context", "prepare", "The markdown block to inject before an agent turn: triggered memories first, then "
         "the most relevant others, within a character budget.", m.PrepareParams, ("context",)),
    Spec("hygiene", "hygiene", "Read-only report of vague, duplicate, expired and unused memories, with reasons.",
         filters=("type", "category", "topic_path", "agent_id", "workspace_hash")),
    Spec("embed", "embed", "Give every memory a vector with the configured model (backfill), or re-embed all after "
         "a model change (reembed=true).", read_only=False, destructive=False, idempotent=True, global_=True),
    Spec("stats", "stats", "Counts, sizes, versions, embedding coverage and model of the vault.", global_=True),
    Spec("memory_recall", "memory_recall", "Recall memory-file entries about a topic across all files and dates, "
         "oldest first, to show how a preference, opinion or fact evolved."),
    Spec("get_memory", "get_memory", "A memory file, or one of its sections, verbatim."),
    Spec("list_memory_files", "list_memory_files", "The memory files, their entry counts and sections."),
    Spec("add_memory", "add_memory", "Add a dated entry to a section of a memory file.", read_only=False,
         idempotent=False),
    Spec("delete_memory", "delete_memory", "Delete exactly one entry of a memory file (kept in history).",
         read_only=False, destructive=True),
    Spec("search", "search", "Recall over an imported folder's notes (outside the memory layer).", m.RecallParams,
         ("query",), exclude=("type",)),
)


def _parameters(vault_method: Callable[..., Any], spec: Spec) -> list[inspect.Parameter]:
    """The tool's parameters: the input model's fields, or the method's own keyword-able parameters."""
    kind = inspect.Parameter.KEYWORD_ONLY
    if spec.params is not None:
        out = []
        for name, field in spec.params.model_fields.items():
            if name in spec.exclude:
                continue
            default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
            out.append(inspect.Parameter(name, kind, default=default, annotation=_annotated(field)))
        return out
    signature = inspect.signature(vault_method, eval_str=True)
    out = []
    for p in signature.parameters.values():
        if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL) or p.name in ("self", "progress", "polish"):
            continue
        out.append(p.replace(kind=kind))
    for name in spec.filters:  # the method's **filters, as the engine's Filters model defines them
        field = m.Filters.model_fields[name]
        out.append(inspect.Parameter(name, kind, default=field.get_default(call_default_factory=True),
                                     annotation=_annotated(field)))
    return out


def _annotated(field: Any) -> Any:
    """A model field as a parameter annotation with its description. Its constraints stay with the
    engine, which checks every call against the model itself and names the argument in one line."""
    if not field.description:
        return field.annotation
    return Annotated[field.annotation, Field(description=field.description)]


def _result(vault_method: Callable[..., Any]) -> Any:
    return inspect.signature(vault_method, eval_str=True).return_annotation


def _direct(vault_method: Callable[..., Any]) -> bool:
    """Whether the method returns one result model, which the tool then serializes itself (the
    others, ``X | None`` or lists, go through the SDK's wrapped ``{"result": ...}`` output)."""
    returns = _result(vault_method)
    return isinstance(returns, type) and issubclass(returns, BaseModel)


def build_server(path: str | None = None, *, agent_id: str | None = None, workspace_hash: str | None = None,
                 vault: Vault | None = None) -> MCPServer:
    """An MCP server over the vault at ``path`` (opened when the server starts, closed when it stops),
    or over an open ``vault``; bound to a scope when ``agent_id`` / ``workspace_hash`` are given."""
    holder: dict[str, Vault] = {}
    bound = {k: v for k, v in (("agent_id", agent_id), ("workspace_hash", workspace_hash)) if v is not None}

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        own = vault is None
        holder["vault"] = vault if vault is not None else Vault(path)
        try:
            yield
        finally:
            if own:
                holder.pop("vault").close()

    server = VaultServer(name="perseus-vault", instructions=(
        "Long-term memory: remember facts, decisions and notes, and recall them by keyword, meaning, graph, "
        "time or triggers. Start a turn with perseus_vault_context; answer questions with perseus_vault_recall."),
        lifespan=lifespan, log_level="WARNING")
    aliases: set[str] = set()
    seed = {verb: alias for alias, verb in SEED_ALIASES.items()}
    for spec in SPECS:
        if spec.global_ and bound:
            continue
        method = getattr(Vault, spec.method)
        fn = _tool(spec, method, holder, bound)
        annotations = ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                                      idempotent_hint=spec.idempotent, open_world_hint=False)
        names = [PREFIX + spec.verb, LEGACY_PREFIX + spec.verb] + ([seed[spec.verb]] if spec.verb in seed else [])
        for n, name in enumerate(names):
            text = spec.description if n == 0 else f"Legacy name of {PREFIX + spec.verb}. " + spec.description
            server.add_tool(fn, name=name, description=text, annotations=annotations)
            if _direct(method):
                _trust_output(server, name)
            if n:
                aliases.add(name)
    server.aliases = frozenset(aliases)
    return server


def _trust_output(server: MCPServer, name: str) -> None:
    """Keep the tool's output schema advertised, but skip the SDK's re-validation of each result
    against it: the engine built the result as that very model, and re-checking a recall page
    costs more than the rest of the server's work on the call."""
    tool = server._tool_manager.get_tool(name)
    if tool is not None and tool.fn_metadata.output_schema is not None:
        tool.fn_metadata.output_model = None


def _tool(spec: Spec, method: Callable[..., Any], holder: dict[str, Vault], bound: dict[str, str]) -> Callable[..., Any]:
    params = _parameters(method, spec)
    names = {p.name for p in params}

    async def call(**kwargs: Any) -> Any:
        for name, value in bound.items():
            if name in names:
                given = kwargs.get(name)
                if given is not None and given != value:
                    raise ToolError(f"{name}: this server is bound to {name}={value!r}")
                kwargs[name] = value
        if bound and "items" in kwargs:  # remember_many: each memory carries its own scope
            items = []
            for n, item in enumerate(kwargs["items"]):
                item = dict(item) if isinstance(item, dict) else item.model_dump(exclude_unset=True)
                for name, value in bound.items():
                    if item.get(name) is not None and item[name] != value:
                        raise ToolError(f"items.{n}.{name}: this server is bound to {name}={value!r}")
                    item[name] = value
                items.append(item)
            kwargs["items"] = items
        if spec.filters:  # **filters: pass only those given, so the engine applies its own defaults
            kwargs = {k: v for k, v in kwargs.items()
                      if k not in spec.filters or k in bound or v != m.Filters.model_fields[k].get_default()}
        args = [kwargs.pop(n) for n in spec.positional if n in kwargs]
        if spec.params is not None:  # pass only what the caller gave, so the engine applies its own defaults
            defaults = {p.name: p.default for p in params}
            kwargs = {k: v for k, v in kwargs.items() if k in spec.positional or v != defaults.get(k) or k in bound}
        try:
            result = await anyio.to_thread.run_sync(partial(getattr(holder["vault"], spec.method), *args, **kwargs))
        except VaultError as exc:
            raise ToolError(str(exc)) from exc
        if direct:  # the text block is the same JSON (for clients that read only text)
            return CallToolResult(content=[TextContent(type="text", text=result.model_dump_json())],
                                  structured_content=result.model_dump(mode="json"))
        return result

    returns = _result(method)
    direct = _direct(method)
    call.__name__ = spec.verb
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        params, return_annotation=Annotated[CallToolResult, returns] if direct else returns)
    return call


def serve_stdio(vault: Vault, *, agent_id: str | None = None, workspace_hash: str | None = None) -> None:
    """Serve over stdin/stdout until the client closes them (see mcp_stdio.py for the transport)."""
    from .mcp_stdio import stdio_streams

    lowlevel = build_server(vault=vault, agent_id=agent_id, workspace_hash=workspace_hash)._lowlevel_server

    async def main() -> None:
        async with stdio_streams() as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(main)


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def http_app(vault: Vault, host: str, token: str | None, *, agent_id: str | None = None,
             workspace_hash: str | None = None) -> Any:
    """The streamable-HTTP app (path ``/mcp``) over one open vault, behind the token check."""
    from perseus_vault_core import SetupError

    if not is_loopback(host) and not token:
        raise SetupError(f"refusing to serve on {host} without a bearer token (set {TOKEN_ENV} or pass --token)")
    server = build_server(vault=vault, agent_id=agent_id, workspace_hash=workspace_hash)
    from mcp.server.transport_security import TransportSecuritySettings

    security = None if is_loopback(host) else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(host=host, transport_security=security)
    return BearerAuth(app, token) if token else app


def serve_http(vault: Vault, host: str, port: int, token: str | None, *, agent_id: str | None = None,
               workspace_hash: str | None = None) -> None:
    import uvicorn

    app = http_app(vault, host, token, agent_id=agent_id, workspace_hash=workspace_hash)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")).run()


def _type(schema: dict[str, Any]) -> str:
    """A short type name for a JSON-schema property."""
    if "anyOf" in schema:
        return " | ".join(dict.fromkeys(_type(s) for s in schema["anyOf"]))
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_type(schema.get('items', {}))}]"
    if "enum" in schema:
        return " | ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    return str(kind)


def reference() -> str:
    """The tool reference (docs/mcp-tools.md), generated from the tools' own schemas."""

    async def tools() -> list[Any]:
        with_aliases = os.environ.pop(ALIASES_ENV, None)
        try:
            server = build_server(vault=None)
            return list(await server.list_tools())
        finally:
            if with_aliases is not None:
                os.environ[ALIASES_ENV] = with_aliases

    lines = ["# MCP tool reference", "",
             "Generated from the server's schemas by `python -m perseus_vault_integrations.mcp_server` "
             "(a test checks it is current). Every tool returns the engine's result model as structured content.",
             ""]
    for tool in sorted(anyio.run(tools), key=lambda t: t.name):
        a = tool.annotations
        hints = [h for h, on in (("read-only", a.read_only_hint), ("destructive", a.destructive_hint),
                                 ("idempotent", a.idempotent_hint)) if on]
        lines += [f"## {tool.name}", "", tool.description or "", "", f"Annotations: {', '.join(hints) or 'writes'}; closed-world.", ""]
        props = tool.input_schema.get("properties", {})
        required = set(tool.input_schema.get("required", []))
        if props:
            lines += ["| argument | type | required / default | meaning |", "|---|---|---|---|"]
            for name, schema in props.items():
                default = "required" if name in required else f"default `{schema.get('default')!r}`"
                meaning = str(schema.get("description", "")).replace("|", "&#124;")
                lines.append(f"| `{name}` | {_type(schema).replace('|', '&#124;')} | {default} | {meaning} |")
            lines.append("")
    aliases = ", ".join([f"`{LEGACY_PREFIX}<verb>` for every verb"] + [f"`{k}`" for k in SEED_ALIASES])
    lines += ["## Legacy names", "",
              f"Callable but listed only with `{ALIASES_ENV}=all`: {aliases}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference(), end="")
