"""``VaultClient`` (mcp/client.py): a verb's arguments by their wire names, the advanced knobs grouped into
``options`` for it, typed results, a failed tool raised as VaultError with the server's words, ``scan``
walking every page (or paged recall without a scan tool), and its transports: in process, a stdio
subprocess and streamable HTTP with a bearer token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from perseus_vault_core import BY_NAME, Entity, PrepareResult, RecallResult, Vault, VaultError
from perseus_vault_integrations.mcp import VaultClient, build_server
from perseus_vault_integrations.mcp.client import _grouped

from ...conftest import FakeEmbedder, wait_for_port


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(fn)


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Vault]:
    with Vault(tmp_path / "mcp.db", embedder=FakeEmbedder()) as v:
        yield v


def test_advanced_knobs_go_inside_options_and_the_rest_stay_flat() -> None:
    recall = BY_NAME["recall"]
    given = {"query": "db", "limit": 3, "startup": True, "reinforce": False, "options": {"fusion": "rrf"}}
    assert _grouped(recall, dict(given)) == {
        "query": "db",
        "limit": 3,
        "options": {"fusion": "rrf", "startup": True, "reinforce": False},
    }
    assert _grouped(recall, {"query": "db", "limit": 3}) == {"query": "db", "limit": 3}  # no empty options
    assert _grouped(recall, {"query": "db", "options": None}) == {"query": "db"}
    assert _grouped(recall, {"query": "db", "bogus": 1}) == {
        "query": "db",
        "bogus": 1,
    }  # the server refuses it


def test_calls_return_typed_results_and_failures_raise_the_server_s_words(vault: Vault) -> None:
    async def main() -> None:
        async with VaultClient(build_server(vault=vault, tools="all")) as c:
            saved = await c.remember("decision", "db", "We chose SQLite for storage.", type="decision")
            assert isinstance(saved, Entity) and saved.key == "db" and c.engine_ms is not None
            found = await c.recall("sqlite", limit=5, reinforce=False)  # reinforce goes inside options
            assert isinstance(found, RecallResult) and [i.id for i in found.items] == [saved.id]
            assert vault.get_entity(saved.id).retrieval_count == 0  # the grouped knob reached the engine
            same = await c.call(
                "perseus_vault_get_entity", id=saved.id, agent_id=None
            )  # a full name; None left out
            assert same["id"] == saved.id
            assert isinstance(await c.context("storage"), PrepareResult)  # prepare's other name
            many = await c.call("remember_many", items=[{"category": "n", "key": "k", "content": "x"}])
            assert isinstance(many, list) and many[0]["key"] == "k"  # a list comes back unwrapped
            with pytest.raises(VaultError, match="^no entity with id 999999 in this scope$"):
                await c.get_entity(999_999)
            with pytest.raises(VaultError, match="limit"):
                await c.recall("x", limit=5000)

    run(main)


def test_scan_walks_every_page_of_the_scan_tool(vault: Vault) -> None:
    for i in range(25):
        vault.remember("bulk", f"k{i}", f"memory {i}")
    vault.remember("other", "o", "not bulk")

    async def main() -> None:
        async with VaultClient(build_server(vault=vault)) as c:
            assert "perseus_vault_scan" in await c.tools()
            every = await c.scan(category="bulk", page=10)  # three pages
            assert sorted(e.key for e in every) == sorted(f"k{i}" for i in range(25))
            assert len(await c.scan(page=7)) == 26
            assert await c.scan(category="none") == []

    run(main)


def test_client_scan_falls_back_to_paged_recall_without_a_scan_tool(vault: Vault) -> None:
    for i in range(25):
        vault.remember("bulk", f"k{i}", f"memory {i}")
    server = build_server(vault=vault)
    server.remove_tool("perseus_vault_scan")

    async def main() -> None:
        async with VaultClient(server) as c:
            assert "perseus_vault_scan" not in await c.tools()
            every = await c.scan(category="bulk", page=10)
            assert sorted(e.key for e in every) == sorted(f"k{i}" for i in range(25))

    run(main)


# --- real transports -------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PERSEUS_VAULT_EMBEDDER"] = "none"
    return env


def test_stdio_subprocess(tmp_path: Path) -> None:
    async def main() -> None:
        async with VaultClient.stdio(str(tmp_path / "stdio.db"), env=_env()) as c:
            assert "perseus_vault_recall" in await c.tools()
            saved = await c.remember("decision", "db", "We chose SQLite.")
            found = await c.recall("sqlite")
            assert [i.id for i in found.items] == [saved.id] and found.search_mode == "fts5"
            with pytest.raises(VaultError, match="limit"):
                await c.recall("x", limit=5000)

    run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    port, token, db = _free_port(), "s3cret-token-0123456789", str(tmp_path / "http.db")
    proc = subprocess.Popen(
        [sys.executable, "-m", "perseus_vault_core.cli", "serve", "--db", db, "--http", f"127.0.0.1:{port}"],
        env=dict(_env(), PERSEUS_VAULT_HTTP_TOKEN=token),
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", token, db
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_http_with_a_token_and_concurrent_clients(http_server: tuple[str, str, str]) -> None:
    import httpx2

    url, token, db = http_server
    refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401
    wrong = httpx2.post(url, json={}, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401

    async def writer(n: int) -> None:
        async with VaultClient.http(url, token) as c:
            for i in range(15):
                await c.remember("load", f"w{n}-{i}", f"memory {i} from writer {n}")
                await c.recall(f"writer {n}", limit=5)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for n in range(4):
                group.start_soon(writer, n)
        async with VaultClient.http(url, token) as c:
            every = await c.scan(category="load")
            assert sorted(e.key for e in every) == sorted(f"w{n}-{i}" for n in range(4) for i in range(15))

    run(main)
