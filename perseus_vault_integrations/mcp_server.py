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

Transports: stdio (``serve_stdio``, over :mod:`mcp_stdio`), and streamable HTTP (:mod:`mcp_http`).
"""

from __future__ import annotations

import inspect
import os
import time
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
# Each result model's ``_meta`` carries the engine's own time for the call, so a client can tell the
# vault's work from the protocol's (the MCP benchmark subtracts it).
ENGINE_MS_META = "perseus-vault/engine_ms"


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
    Spec("recall", "recall", "Find stored memories (facts, decisions, notes) about a topic, best first. Use it to answer "
         "'what do we know about X' before guessing or asking the user. Words are OR'd; mode fts5 matches keywords, "
         "dense matches meaning, hybrid (the default when the vault has vectors) fuses both. Prefer "
         "perseus_vault_scan to list everything, perseus_vault_get_entity to read one memory whole.", m.RecallParams,
         ("query",), idempotent=False),
    Spec("scan", "scan", "List every memory in scope exactly once, by ascending id, page by page: pass next_cursor "
         "back until has_more is false. Use it to enumerate or export a category, not to search (perseus_vault_recall "
         "ranks by relevance).", m.ScanParams),
    Spec("get_entity", "get_entity", "Fetch one memory whole by its id (recall and scan give ids; a preview_cap "
         "footer points here). Use it to read the full content of a hit."),
    Spec("history", "history", "Every version of a fact (category, key), newest first. Use it to see how a decision "
         "or fact changed and when."),
    Spec("as_of", "as_of", "The version of a fact the vault believed at an instant (unix ms); null if it had none "
         "then. Use it for 'what did we think on date D'."),
    Spec("valid_at", "valid_at", "The version of a fact that was true in the world at an instant (unix ms), by its "
         "valid_from/valid_to. Use it for 'what was true on date D'."),
    Spec("bitemporal", "bitemporal", "The version the vault believed at one instant (as_of) to be true at another "
         "(valid_at). Use it to audit what was known when."),
    Spec("remember", "remember", "Store a fact, decision or note under (category, key); the same key again makes a "
         "new version (history kept), the same content again changes nothing. Use it whenever the user states a "
         "preference, a decision is made or something worth keeping is learned. recall_when phrases make it come "
         "back unasked when a later context matches.", m.RememberInput, ("category", "key", "content"),
         read_only=False),
    Spec("remember_many", "remember_many", "Store a batch of memories in one transaction: all are written, or none. "
         "Use it for imports and for several related facts at once.", read_only=False, idempotent=False),
    Spec("forget", "forget", "Archive a memory by id (reversible: remembering it again restores it; history kept). "
         "Use it when a memory is wrong or no longer wanted.", read_only=False),
    Spec("purge", "purge", "Delete an archived memory, its history and its links for good (forget it first). Use it "
         "only when the data must be gone, e.g. on a deletion request.", read_only=False, destructive=True),
    Spec("supersede", "supersede", "Mark an old memory as replaced by a newer one (old_id -> new_id); recall then "
         "prefers the new one. Use it when a decision is revised under a different key.", read_only=False),
    Spec("link", "link", "Link two memories of one scope with a typed, weighted, directed edge (e.g. 'depends_on', "
         "'caused_by'). Use it to record how facts relate, for traverse and communities.", read_only=False),
    Spec("unlink", "unlink", "Close the link(s) from one memory to another (one relation, or all); the graph's "
         "history keeps them. Use it when a recorded relation no longer holds.", read_only=False, destructive=True),
    Spec("traverse", "traverse", "Walk the link graph breadth-first from a memory, up to depth hops; scope and time "
         "rules apply on every hop. Use it to gather what a memory is connected to.",
         filters=tuple(m.Filters.model_fields)),
    Spec("communities", "communities", "Clusters (communities) of the link graph, largest first, with their most "
         "central members: the themes of the store. Use it to survey what the memory is about.",
         m.CommunitiesParams),
    Spec("community_summary", "community_summary", "The extractive summary of one community (written once as a "
         "memory linked to its members). Use it to read a theme found by perseus_vault_communities.",
         m.CommunitySummaryParams, ("community_id",), read_only=False),
    Spec("global_recall", "global_recall", "Answer a broad question that spans many memories ('what are the main "
         "risks', 'summarize our infra decisions'): the best communities by their summaries, evidence from their "
         "members, and an answer context. Prefer perseus_vault_recall for a specific fact.",
         m.GlobalRecallParams, ("query",), read_only=False, idempotent=False),
    Spec("recall_when", "recall_when", "Memories whose recall_when trigger phrases match the given context: what "
         "should come back unasked. Use it on the user's message to surface warnings and standing instructions.",
         m.RecallWhenParams, ("context",)),
    Spec("context", "prepare", "The markdown block to read before acting on a turn: triggered memories first, then "
         "the most relevant others, within a character budget. Call it at the start of each turn with the user's "
         "message.", m.PrepareParams, ("context",)),
    Spec("hygiene", "hygiene", "Read-only report of vague, duplicate, expired and unused memories, with the reason "
         "for each. Use it to tidy the store (then forget or supersede what it flags).",
         filters=("type", "category", "topic_path", "agent_id", "workspace_hash")),
    Spec("embed", "embed", "Give every memory a vector with the configured model (backfill), or re-embed all after "
         "a model change (reembed=true). Use it once after a keyword-only import, or when stats shows "
         "embedding coverage below 1.", read_only=False, destructive=False, idempotent=True, global_=True),
    Spec("stats", "stats", "Counts, sizes, versions, embedding coverage and model of the vault. Use it to check the "
         "vault's health or whether meaning recall is available.", global_=True),
    Spec("memory_recall", "memory_recall", "Recall memory-file entries about a topic across all files and dates, "
         "oldest first, so the evolution of a preference, opinion or fact is visible. Use it for 'what does my "
         "memory say about X' or 'how has my view on Y changed'. Prefer perseus_vault_get_memory to read a known "
         "file or section verbatim, perseus_vault_search for notes outside the memory layer."),
    Spec("get_memory", "get_memory", "A memory file, or one of its sections, verbatim. Use it when you know the file "
         "(perseus_vault_list_memory_files names them)."),
    Spec("list_memory_files", "list_memory_files", "The memory files, their entry counts and sections. Use it to "
         "discover valid file and section names."),
    Spec("add_memory", "add_memory", "Add a dated entry to a section of a memory file (both created if missing). Use "
         "it to record a new preference, opinion or fact about the user; older entries stay, so the evolution is "
         "kept.", read_only=False, idempotent=False),
    Spec("delete_memory", "delete_memory", "Delete exactly one entry of a memory file, chosen by date and/or text "
         "(refused when none or several match; kept in history). Use it when the user asks to remove an entry.",
         read_only=False, destructive=True),
    Spec("search", "search", "Recall over an imported folder's notes (outside the memory layer), with recall's "
         "modes and knobs. Use it for the user's notes; perseus_vault_memory_recall covers the memory files.",
         m.RecallParams, ("query",), exclude=("type",)),
)

# What an argument means, for parameters whose model field or signature carries no description.
# ``(verb, name)`` entries override ``name`` entries for one tool.
ARGUMENT_DOCS: dict[str | tuple[str, str], str] = {
    "agent_id": "Agent scope: only this agent's memories (omit for the shared scope)",
    "workspace_hash": "Workspace scope: only this workspace's memories (omit for the shared scope)",
    "id": "The memory's id (from recall, scan or remember)",
    "category": "The memory's category, e.g. 'decision', 'preference', 'architecture'",
    "key": "The memory's key within its category (stable name of the fact, e.g. 'db-engine')",
    "content": "The memory's text: what to remember, in a sentence or a few",
    "summary": "A one-line summary (searched and shown with the content)",
    "type": "The memory's type, e.g. 'note', 'insight', 'reference'",
    "topic_path": "Slash-separated topic, e.g. 'architecture/storage' (filters match by prefix)",
    "body": "Structured data kept with the memory (a JSON object)",
    "source": "Where this came from (a URL, file, person or tool)",
    "verified": "True when a person or a trusted source confirmed it (recall ranks it higher)",
    "certainty": "How sure the writer is, 0 to 1 (recall's trust boost scales with it)",
    "provenance_class": "The kind of source, e.g. 'human', 'ai_draft', 'document'",
    "recall_when": "Trigger phrases: when a later context matches one, this memory comes back unasked",
    "valid_from_ms": "When this became true in the world (unix ms)",
    "valid_to_ms": "When this stopped being true in the world (unix ms)",
    "expires_at_ms": "When the vault should stop recalling it (unix ms)",
    "items": "The memories to store, each with remember's fields (category, key, content, ...)",
    "as_of_unix_ms": "The instant of the vault's belief (unix ms)",
    "valid_at_unix_ms": "The instant in the world (unix ms)",
    "old_id": "The memory being replaced",
    "new_id": "The memory that replaces it",
    "from_id": "The memory the link starts from",
    "to_id": "The memory the link points to",
    "relation": "The link's type, e.g. 'related', 'depends_on', 'caused_by'",
    ("unlink", "relation"): "Close only links of this type (omit for every link between the two)",
    "weight": "The link's strength (used by communities and traverse ordering)",
    "start": "The memory to walk from",
    "depth": "How many hops to walk",
    "relations": "Follow only links of these types (omit for all)",
    "direction": "Follow links out of, into, or both ways from each memory",
    "cursor": "next_cursor of the previous page (omit for the first page)",
    "limit": "Most results to return",
    "offset": "Results to skip",
    "query": "What to find, in natural language or keywords",
    ("memory_recall", "query"): ("Topic to recall; content words about the topic ('testing philosophy') rank better "
                                 "than meta framing ('opinions on testing')"),
    ("memory_recall", "file"): "Only this memory file (name without .md, exact case); omit to recall across all files",
    ("memory_recall", "limit"): "Most entries to return (the least relevant are dropped, never a date range)",
    "file": "The memory file's name, without .md (perseus_vault_list_memory_files names them)",
    "section": "The section's heading text (without ##)",
    ("get_memory", "section"): "One section's heading text (without ##); omit for the whole file",
    "date": "The entry's date, YYYY-MM-DD",
    ("add_memory", "date"): "The entry's date, YYYY-MM-DD (default today, UTC)",
    "text": "The entry's text",
    ("delete_memory", "text"): "The entry's text, or a part of it that only that entry contains",
    "context": "The agent's coming turn: the user's message and what the agent is about to do",
    "mode": "fts5 (keyword), dense (meaning) or hybrid (both); omit for the vault's best",
    "semantic": "Also match trigger phrases by meaning (default: when the vault has vectors)",
    "min_similarity": "Cosine similarity a meaning match needs (-1 to 1)",
    "query_time_unix_ms": "The 'now' that expiry and decay are judged at (replay)",
    "reinforce": "Count this retrieval (retrieval_count, last_accessed_ms)",
    "max_chars": "Character budget of the returned text",
    "triggered": "Most triggered memories in the block",
    "related": "Most relevant other memories in the block",
    "method": "Clustering: label_propagation (fast, incremental) or modularity (Louvain)",
    "min_size": "Smallest community to report",
    "central": "Most central members listed per community",
    "community_id": "A community's id, from perseus_vault_communities",
    "refresh": "Rewrite the summary even if a current one exists",
    "communities": "How many communities to open",
    "per_community": "Most evidence items per community",
    "min_age_days": "Flag unused memories only when at least this old",
    "reembed": "Re-embed every memory (after a model change), not only those without a vector",
}


def _parameters(vault_method: Callable[..., Any], spec: Spec) -> list[inspect.Parameter]:
    """The tool's parameters: the input model's fields, or the method's own keyword-able parameters,
    each with its description."""
    kind = inspect.Parameter.KEYWORD_ONLY
    if spec.params is not None:
        out = []
        for name, field in spec.params.model_fields.items():
            if name in spec.exclude:
                continue
            default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
            out.append(inspect.Parameter(name, kind, default=default, annotation=_annotated(spec.verb, name, field)))
        return out
    signature = inspect.signature(vault_method, eval_str=True)
    out = []
    for p in signature.parameters.values():
        if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL) or p.name in ("self", "progress", "polish"):
            continue
        doc = _doc(spec.verb, p.name)
        annotation = Annotated[p.annotation, Field(description=doc)] if doc else p.annotation
        out.append(p.replace(kind=kind, annotation=annotation))
    for name in spec.filters:  # the method's **filters, as the engine's Filters model defines them
        field = m.Filters.model_fields[name]
        out.append(inspect.Parameter(name, kind, default=field.get_default(call_default_factory=True),
                                     annotation=_annotated(spec.verb, name, field)))
    return out


def _doc(verb: str, name: str) -> str | None:
    return ARGUMENT_DOCS.get((verb, name)) or ARGUMENT_DOCS.get(name)


def _annotated(verb: str, name: str, field: Any) -> Any:
    """A model field as a parameter annotation with its description (the model's own, else the
    table's). Its constraints stay with the engine, which checks every call against the model
    itself and names the argument in one line."""
    doc = field.description or _doc(verb, name)
    if not doc:
        return field.annotation
    return Annotated[field.annotation, Field(description=doc)]


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
        trusted = _direct(method)
        annotations = ToolAnnotations(read_only_hint=spec.read_only, destructive_hint=spec.destructive,
                                      idempotent_hint=spec.idempotent, open_world_hint=False)
        names = [PREFIX + spec.verb, LEGACY_PREFIX + spec.verb] + ([seed[spec.verb]] if spec.verb in seed else [])
        for n, name in enumerate(names):
            text = spec.description if n == 0 else f"Legacy name of {PREFIX + spec.verb}. " + spec.description
            server.add_tool(fn, name=name, description=text, annotations=annotations)
            if trusted:
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
            result, engine_ms = await anyio.to_thread.run_sync(
                _timed, partial(getattr(holder["vault"], spec.method), *args, **kwargs))
        except VaultError as exc:
            raise ToolError(str(exc)) from exc
        if direct:  # the text block is the same JSON (for clients that read only text)
            return CallToolResult(content=[TextContent(type="text", text=result.model_dump_json())],
                                  structured_content=result.model_dump(mode="json"),
                                  _meta={ENGINE_MS_META: round(engine_ms, 3)})
        return result

    returns = _result(method)
    direct = _direct(method)
    call.__name__ = spec.verb
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        params, return_annotation=Annotated[CallToolResult, returns] if direct else returns)
    return call


def _timed(work: Callable[[], Any]) -> tuple[Any, float]:
    """The engine's answer and its own time in ms (measured where it runs, in the worker thread)."""
    started = time.perf_counter()
    result = work()
    return result, (time.perf_counter() - started) * 1000


def serve_stdio(vault: Vault, *, agent_id: str | None = None, workspace_hash: str | None = None) -> None:
    """Serve over stdin/stdout until the client closes them (see mcp_stdio.py for the transport)."""
    from .mcp_stdio import stdio_streams

    lowlevel = build_server(vault=vault, agent_id=agent_id, workspace_hash=workspace_hash)._lowlevel_server

    async def main() -> None:
        async with stdio_streams() as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(main)


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
