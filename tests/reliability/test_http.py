"""The HTTP server (docs/mcp.md): no remote binding without a token, a constant-time token check, a request
size limit, and no stack trace or source path in any response, whatever a client sends.

A real server process on loopback (see ``conftest.start_server``), spoken to with raw HTTP so that
malformed requests reach it as sent. ``tests/integrations/test_mcp_server.py`` covers the happy
path, the 401 for a missing or wrong token and ``http_app``'s refusal to bind remotely without one.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from perseus_vault_core import Vault

from ..conftest import FakeEmbedder
from .conftest import ROOT, TOKEN, StartServer, _free_port

LEAKS = re.compile(r'Traceback|File "|\.py[":]|site-packages|/perseus_vault_|/work/|/home/|/root/')
BODY_LIMIT = 4 * 1024 * 1024  # the MCP SDK's streamable-HTTP default, documented in docs/limits.md
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _clean(response: httpx.Response) -> str:
    text = response.text
    assert not LEAKS.search(text), f"{response.status_code}: {text[:500]}"
    assert response.status_code < 500, f"{response.status_code}: {text[:300]}"
    return text


@pytest.fixture
def server(tmp_path: Path, start_server: StartServer) -> Iterator[str]:
    db = tmp_path / "http.db"
    with Vault(db, embedder=FakeEmbedder()) as vault:
        vault.remember("note", "db", "We chose SQLite for storage")
    yield start_server(db)


def _session(client: httpx.Client, url: str) -> dict[str, str]:
    """Initialize an MCP session; returns the headers every later request carries."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    r = client.post(url, json=init, headers={**AUTH, **ACCEPT})
    assert r.status_code == 200, r.text
    headers = {**AUTH, **ACCEPT, "mcp-session-id": r.headers["mcp-session-id"]}
    version = r.headers.get("mcp-protocol-version")
    if version:
        headers["mcp-protocol-version"] = version
    client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return headers


def _call(client: httpx.Client, url: str, headers: dict[str, str], raw: bytes | str) -> str:
    r = client.post(url, content=raw, headers=headers)
    return _clean(r)


def test_the_token_is_checked_on_every_method_and_path(server: str) -> None:
    base = server.rsplit("/", 1)[0]
    wrong: list[str | bytes | None] = [None, "", "Bearer", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"bearer {TOKEN}",
             f"Basic {TOKEN}", TOKEN, f"Bearer  {TOKEN}", f"Bearer {TOKEN}".encode() + b"\xc3\xa9"]
    with httpx.Client(timeout=30) as client:
        for header in wrong:
            for method, url in (("POST", server), ("GET", server), ("DELETE", server), ("POST", base + "/other")):
                headers = {} if header is None else {b"Authorization": header if isinstance(header, bytes) else header.encode()}
                r = client.request(method, url, headers=headers, content=b"{}")
                assert r.status_code == 401, (header, method, url, r.status_code)
                assert r.headers.get("www-authenticate") == "Bearer"
                _clean(r)


def test_the_token_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The check goes through hmac.compare_digest (time independent of where the bytes differ), on
    the whole header, for right and wrong tokens alike."""
    import anyio

    from perseus_vault_integrations import mcp_http

    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return bool(real(a, b))

    monkeypatch.setattr(hmac, "compare_digest", spy)
    reached: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guarded = mcp_http.BearerAuth(app, TOKEN)

    async def request(header: bytes | None) -> int:
        sent: list[dict[str, Any]] = []
        scope = {"type": "http", "path": "/mcp", "headers": [(b"authorization", header)] if header else []}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b""}

        await guarded(scope, receive, send)
        return int(sent[0]["status"])

    statuses = [anyio.run(request, h) for h in (f"Bearer {TOKEN}".encode(), b"Bearer x", None, b"Bearer " + b"r" * 10_000)]
    assert statuses == [204, 401, 401, 401]
    assert reached == ["/mcp"]
    assert len(compared) == 4 and all(b == f"Bearer {TOKEN}".encode() for _, b in compared)


def test_a_remote_bind_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PERSEUS_VAULT_HTTP_TOKEN"}
    env["PERSEUS_VAULT_EMBEDDER"] = "none"
    done = subprocess.run([sys.executable, "-m", "perseus_vault_core.cli", "serve", "--db", str(tmp_path / "r.db"),
                           "--http", f"0.0.0.0:{port}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "token" in done.stderr and "Traceback" not in done.stderr


def test_request_bodies_over_the_limit_are_refused_before_parsing(server: str) -> None:
    with httpx.Client(timeout=60) as client:
        headers = _session(client, server)
        over = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","pad":"' + b"x" * BODY_LIMIT + b'"}'
        r = client.post(server, content=over, headers=headers)
        assert r.status_code == 413
        _clean(r)

        def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds on the streamed bytes too
            yield b'{"jsonrpc":"2.0","id":2,"method":"tools/list","pad":"'
            for _ in range(5):
                yield b"y" * (1024 * 1024)
            yield b'"}'

        r = client.post(server, content=chunks(), headers=headers)
        assert r.status_code == 413
        _clean(r)
        # A body just under the limit is read, and refused as a tool error for what it says (too big for a memory).
        content = "z" * (BODY_LIMIT - 4096)
        near = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "perseus_vault_remember", "arguments": {"category": "n", "key": "big", "content": content}}})
        text = _call(client, server, headers, near)
        assert '"isError":true' in text.replace(" ", "") and "limit" in text
        # The server still serves.
        ok = _call(client, server, headers, json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        assert "perseus_vault_recall" in ok


MALFORMED: list[bytes | str] = [
    b"", b"{", b"not json at all", b"[]", b"[1, 2]", b"null", b'"just a string"', b"\xff\xfe\x00garbage",
    b'{"jsonrpc": "2.0"}', b'{"jsonrpc": "2.0", "id": 1}', b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}',
    b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "nope"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_nope", "arguments": {}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_recall", "arguments": []}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_recall", '
    b'"arguments": {"query": "\\ud800 lone surrogate"}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_remember", '
    b'"arguments": {"category": "c", "key": "k", "content": "x", "body": {"n": NaN}}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_remember", '
    b'"arguments": {"category": "c", "key": "k", "content": "x", "body": ' + b'{"d":' * 200 + b"1" + b"}" * 200 + b"}}}",
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_get_entity", '
    b'"arguments": {"id": 99999}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_scan", '
    b'"arguments": {"cursor": "forged-cursor"}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_traverse", '
    b'"arguments": {"start": 1, "depth": 1e308}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_recall", '
    b'"arguments": {"query": "x", "limit": 99999999999999999999999999}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "perseus_vault_import_jsonl", '
    b'"arguments": {"source": "/etc/passwd"}}}',
]


def test_malformed_requests_get_clean_answers(server: str) -> None:
    with httpx.Client(timeout=60) as client:
        headers = _session(client, server)
        for raw in MALFORMED:
            _call(client, server, headers, raw)
        for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "", "application/xml"):
            r = client.post(server, content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                            headers={**headers, "Content-Type": content_type})
            _clean(r)
        for accept in ("text/html", "", "*/*;q=0"):
            _clean(client.post(server, content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                               headers={**headers, "Accept": accept}))
        for method in ("PUT", "PATCH", "OPTIONS", "HEAD", "TRACE"):
            _clean(client.request(method, server, headers=headers))
        _clean(client.post(server, content=b"{}", headers={**headers, "mcp-session-id": "not-a-session"}))
        _clean(client.post(server.rsplit("/", 1)[0] + "/../../etc/passwd", headers=headers))
        ok = _call(client, server, headers, json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "perseus_vault_recall", "arguments": {"query": "sqlite", "mode": "fts5"}}}))
        assert "We chose SQLite" in ok  # and it still answers


def test_an_unexpected_engine_failure_is_answered_without_a_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verb that fails in a way the engine did not foresee (here: a bug that raises a plain
    RuntimeError naming a source file) reaches the client as an error, with no stack trace."""
    import uvicorn

    from perseus_vault_integrations.mcp_http import http_app

    def broken(self: Vault, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    with Vault(tmp_path / "broken.db", embedder=FakeEmbedder()) as vault:
        monkeypatch.setattr(Vault, "recall", broken)
        monkeypatch.setattr(Vault, "scan", lambda *a, **k: 1 / 0)
        port = _free_port()
        server = uvicorn.Server(uvicorn.Config(http_app(vault, "127.0.0.1", TOKEN), host="127.0.0.1", port=port,
                                               log_level="critical", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 30
            while not server.started and time.monotonic() < deadline:
                time.sleep(0.05)
            url = f"http://127.0.0.1:{port}/mcp"
            with httpx.Client(timeout=30) as client:
                headers = _session(client, url)
                for name, arguments in (("perseus_vault_recall", {"query": "x"}), ("perseus_vault_scan", {})):
                    text = _call(client, url, headers, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                                   "params": {"name": name, "arguments": arguments}}))
                    assert '"isError":true' in text.replace(" ", ""), text
        finally:
            server.should_exit = True
            thread.join(30)
