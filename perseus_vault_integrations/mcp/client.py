"""``VaultClient``: a small async Python client for a running perseus-vault MCP server.

    async with VaultClient.http("http://127.0.0.1:8765/mcp", token="...") as vault:
        await vault.remember("decision", "db", "We chose SQLite.")
        result = await vault.recall("which database")          # a RecallResult

It speaks to any transport ``mcp.Client`` does (a stdio subprocess, streamable HTTP, or an in-process
server in tests), returns the engine's own typed models, and raises :class:`VaultError` with the
server's message when a tool fails.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from perseus_vault_core import (
    ALIASES,
    BY_NAME,
    ConversationResult,
    ConversationWrite,
    Entity,
    MemoryRecallResult,
    PrepareResult,
    RecallResult,
    ScanPage,
    VaultError,
    Verb,
    is_advanced,
)

from ..arguments import strict
from .server import ENGINE_MS_META, OPTIONS

PREFIX = "perseus_vault_"


def _grouped(v: Verb, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with the verb's advanced knobs moved inside ``options``, as its tool takes them."""
    fields = v.params.model_fields
    options = dict(arguments.pop(OPTIONS, None) or {})
    for name in [n for n in arguments if n in fields and is_advanced(fields[n])]:
        options[name] = arguments.pop(name)
    return {**arguments, OPTIONS: options} if options else arguments


async def _trust_schema(name: str, result: Any) -> None:
    return None


class VaultClient:
    @strict
    def __init__(self, server: Any) -> None:
        """``server``: what ``mcp.Client`` accepts (a URL, ``StdioServerParameters``, a transport, or an
        in-process server)."""
        self._client = Client(server)
        self._http: Any = (
            None  # an HTTP client made here: the transport leaves it open, so __aexit__ closes it
        )
        self._tools: set[str] | None = None
        self.engine_ms: float | None = None  # the server engine's own time for the last call, when it says

    @classmethod
    def stdio(
        cls,
        db: str,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        env: dict[str, str] | None = None,
    ) -> VaultClient:
        """Start ``perseus-vault serve --db DB`` as a subprocess and talk to it over stdio."""
        args = ["-m", "perseus_vault_core.cli", "serve", "--db", db]
        if agent_id is not None:
            args += ["--agent", agent_id]
        if workspace_hash is not None:
            args += ["--workspace", workspace_hash]
        return cls(StdioServerParameters(command=sys.executable, args=args, env=env))

    @classmethod
    def http(cls, url: str, token: str | None = None) -> VaultClient:
        """Connect to ``perseus-vault serve --http`` at ``url`` (``.../mcp``), sending ``token`` if given."""
        if token is None:
            return cls(url)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60.0)
        made = cls(streamable_http_client(url, http_client=client))
        made._http = client
        return made

    async def __aenter__(self) -> VaultClient:
        await self._client.__aenter__()
        # The SDK re-checks every structured result against the tool's JSON schema in pure Python
        # (about 20 ms for ten recall hits); this client validates results with the engine's own
        # pydantic models instead (the models the schemas were generated from), in well under 1 ms.
        self._client.session.validate_tool_result = _trust_schema  # type: ignore[method-assign]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self._client.__aexit__(*exc)
        finally:
            if self._http is not None:  # else its connections stay open (a server's SSE stream with them)
                await self._http.aclose()

    async def tools(self) -> set[str]:
        """The names of the tools the server lists."""
        if self._tools is None:
            self._tools = {t.name for t in (await self._client.list_tools()).tools}
        return self._tools

    async def call(self, verb: str, **arguments: Any) -> Any:
        """Call ``perseus_vault_<verb>`` (or a tool by its full name); the structured result, or VaultError.

        Arguments go by their wire names, as to ``Vault``; the knobs a tool takes inside its ``options``
        object are put there for you."""
        name = verb if verb.startswith((PREFIX, "mimir_", "vault_")) else PREFIX + verb
        arguments = {k: v for k, v in arguments.items() if v is not None}
        short = name.removeprefix(PREFIX)
        if name.startswith(PREFIX) and short in ALIASES | BY_NAME.keys():
            arguments = _grouped(BY_NAME[ALIASES.get(short, short)], arguments)
        result = await self._client.call_tool(name, arguments)
        engine_ms = (result.meta or {}).get(ENGINE_MS_META)
        self.engine_ms = float(engine_ms) if isinstance(engine_ms, (int, float)) else None
        if result.is_error:
            raise VaultError(" ".join(getattr(c, "text", "") for c in result.content))
        data = result.structured_content
        if isinstance(data, dict) and set(data) == {"result"}:
            return data["result"]
        return data

    async def remember(self, category: str, key: str, content: str, **fields: Any) -> Entity:
        return Entity.model_validate(
            await self.call("remember", category=category, key=key, content=content, **fields)
        )

    async def recall(self, query: str, **params: Any) -> RecallResult:
        return RecallResult.model_validate(await self.call("recall", query=query, **params))

    async def get_entity(self, id: int, **scope: Any) -> Entity:
        return Entity.model_validate(await self.call("get_entity", id=id, **scope))

    async def prepare(self, context: str, **params: Any) -> PrepareResult:
        return PrepareResult.model_validate(await self.call("prepare", context=context, **params))

    context = prepare  # the verb's other name

    async def memory_recall(self, query: str, file: str | None = None, limit: int = 50) -> MemoryRecallResult:
        return MemoryRecallResult.model_validate(
            await self.call("memory_recall", query=query, file=file, limit=limit)
        )

    async def remember_conversation(
        self, session: str, messages: list[dict[str, Any]], **scope: Any
    ) -> ConversationWrite:
        return ConversationWrite.model_validate(
            await self.call("remember_conversation", session=session, messages=messages, **scope)
        )

    async def conversation(self, session: str, **params: Any) -> ConversationResult:
        """The turns of ``session``: ``around=id`` (with ``before``, ``after``), or a page (``from_turn``, ``limit``)."""
        return ConversationResult.model_validate(await self.call("conversation", session=session, **params))

    async def scan(self, category: str | None = None, page: int = 100, **filters: Any) -> list[Entity]:
        """Every entity in scope (of ``category``), walking the scan tool's pages to the end; on a
        server without a scan tool, offset-paged recall of the empty query instead (which a server
        caps at its offset limit)."""
        out: list[Entity] = []
        if PREFIX + "scan" in await self.tools():
            cursor = None
            while True:
                p = ScanPage.model_validate(
                    await self.call("scan", category=category, cursor=cursor, limit=page, **filters)
                )
                out.extend(p.items)
                if not p.has_more:
                    return out
                cursor = p.next_cursor
        offset = 0
        while True:
            r = await self.recall(
                "", category=category, limit=page, offset=offset, reinforce=False, **filters
            )
            out.extend(r.items)
            if len(r.items) < page:
                return out
            offset += page
