"""The MCP round trip's cost over the direct Python call, on stdio and streamable HTTP.

A keyword-only store of 10,000 synthetic memories (see synthetic.py); the same agent-style queries are
recalled directly through ``Vault.recall`` and through ``perseus-vault serve`` (a subprocess) over
stdio and over HTTP, via ``VaultClient``. Each path is warmed first (its in-memory keyword index
built). Reported: the p50 of the MCP call minus the p50 of the direct call, and per call the round
trip minus the engine's own time in the server (which it reports in each result's ``_meta``).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import anyio

from perseus_vault_core import Vault

from .speed import percentiles, timed
from .synthetic import memories, queries


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _client_times(client: Any, qs: list[str]) -> dict[str, dict[str, float]]:
    """Round trips, and per call the round trip minus the engine's own time in the server (which
    the server reports in the result's ``_meta``)."""
    for q in qs[:20]:
        await client.recall(q, reinforce=False)
    await anyio.sleep(2)  # the server builds its in-memory index at start; let it finish
    samples, overheads = [], []
    for q in qs:
        started = time.perf_counter()
        await client.recall(q, reinforce=False)
        samples.append((time.perf_counter() - started) * 1000)
        overheads.append(samples[-1] - client.engine_ms)
    return {"round_trip": percentiles(samples), "over_engine": percentiles(overheads)}


# What tools/list cost before the tool profiles and the grouped options (29 tools, every knob flat):
# measured on the server as it was then, in the same way (json.dumps of each input schema).
FLAT_SURFACE_BEFORE = {"tools": 29, "chars": 49_672}
# The default profile before it served every documented way to recall (11 tools, every knob's JSON schema).
CORE_BEFORE = {"tools": 11, "chars": 15_792}


def surface() -> dict[str, Any]:
    """What a model reads in every session: characters of names, descriptions and input schemas of
    the listed tools (``tool_size``), per profile, and per tool in the default one."""
    from perseus_vault_integrations.mcp import build_server, tool_size

    out: dict[str, Any] = {"before": FLAT_SURFACE_BEFORE, "core_before": CORE_BEFORE}
    for profile in ("core", "all"):
        tools = anyio.run(build_server(vault=None, tools=profile).list_tools)
        out[profile] = {
            "tools": len(tools),
            "chars": sum(map(tool_size, tools)),
            "per_tool": {t.name: tool_size(t) for t in tools},
        }
    return out


def run(n: int = 10_000, n_queries: int = 200) -> dict[str, Any]:
    from perseus_vault_integrations.mcp import VaultClient

    out: dict[str, Any] = {"entities": n, "surface": surface()}
    qs = queries(n_queries, seed=53)
    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "mcp.db")
        with Vault(db, embedder=False) as vault:
            vault.import_jsonl([json.dumps(m) for m in memories(n)])
            vault.wait_for_keyword_index()
            out["direct_ms"] = timed([lambda q=q: vault.recall(q, reinforce=False) for q in qs], warmup=20)

        async def stdio() -> dict[str, dict[str, float]]:
            async with VaultClient.stdio(db, env=env) as c:
                return await _client_times(c, qs)

        stdio_times = anyio.run(stdio)
        out["stdio_ms"], out["stdio_over_engine_ms"] = stdio_times["round_trip"], stdio_times["over_engine"]
        port, token = _free_port(), secrets.token_urlsafe(24)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "perseus_vault_core.cli",
                "serve",
                "--db",
                db,
                "--http",
                f"127.0.0.1:{port}",
            ],
            env=dict(env, PERSEUS_VAULT_HTTP_TOKEN=token),
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)

            async def http() -> dict[str, dict[str, float]]:
                async with VaultClient.http(f"http://127.0.0.1:{port}/mcp", token) as c:
                    return await _client_times(c, qs)

            http_times = anyio.run(http)
            out["http_ms"], out["http_over_engine_ms"] = http_times["round_trip"], http_times["over_engine"]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    out["stdio_overhead_ms"] = out["stdio_ms"]["p50"] - out["direct_ms"]["p50"]
    out["http_overhead_ms"] = out["http_ms"]["p50"] - out["direct_ms"]["p50"]
    return out
