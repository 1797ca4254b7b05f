"""The HTTP server, probed as an attacker would: no remote binding without a token, a token never on
the command line and never short, a constant-time token check, Host and Origin checked on every
loopback address (DNS rebinding), a request size limit, stalled connections closed, and no stack
trace or source path in any response, whatever a client sends.

Real server processes on loopback (``conftest.start_server``, or ``perseus-vault serve`` itself),
spoken to with raw HTTP so that malformed and stalled requests reach them as sent.
``tests/integrations/mcp/test_server.py`` covers the happy path, the 401 for a missing or wrong token
and ``http_app``'s refusal to bind remotely without one.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from perseus_vault_core import Vault

from ..conftest import FakeEmbedder, wait_for_port
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
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
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
    wrong: list[str | bytes | None] = [
        None,
        "",
        "Bearer",
        f"Bearer {TOKEN[:-1]}",
        f"Bearer {TOKEN}x",
        f"bearer {TOKEN}",
        f"Basic {TOKEN}",
        TOKEN,
        f"Bearer  {TOKEN}",
        f"Bearer {TOKEN}".encode() + b"\xc3\xa9",
    ]
    with httpx.Client(timeout=30) as client:
        for header in wrong:
            for method, url in (
                ("POST", server),
                ("GET", server),
                ("DELETE", server),
                ("POST", base + "/other"),
            ):
                headers = (
                    {}
                    if header is None
                    else {b"Authorization": header if isinstance(header, bytes) else header.encode()}
                )
                r = client.request(method, url, headers=headers, content=b"{}")
                assert r.status_code == 401, (header, method, url, r.status_code)
                assert r.headers.get("www-authenticate") == "Bearer"
                _clean(r)


def test_the_token_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The check goes through hmac.compare_digest (time independent of where the bytes differ), on
    the whole header, for right and wrong tokens alike."""
    import anyio

    from perseus_vault_integrations.mcp import http as mcp_http

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

    statuses = [
        anyio.run(request, h)
        for h in (f"Bearer {TOKEN}".encode(), b"Bearer x", None, b"Bearer " + b"r" * 10_000)
    ]
    assert statuses == [204, 401, 401, 401]
    assert reached == ["/mcp"]
    assert len(compared) == 4 and all(b == f"Bearer {TOKEN}".encode() for _, b in compared)


def test_a_remote_bind_without_a_token_refuses_to_start(tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "PERSEUS_VAULT_HTTP_TOKEN"}
    env["PERSEUS_VAULT_EMBEDDER"] = "none"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "serve",
            "--db",
            str(tmp_path / "r.db"),
            "--http",
            f"0.0.0.0:{port}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
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
        near = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {
                    "name": "perseus_vault_remember",
                    "arguments": {"category": "n", "key": "big", "content": content},
                },
            }
        )
        text = _call(client, server, headers, near)
        assert '"isError":true' in text.replace(" ", "") and "limit" in text
        # The server still serves.
        ok = _call(client, server, headers, json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}))
        assert "perseus_vault_recall" in ok


MALFORMED: list[bytes | str] = [
    b"",
    b"{",
    b"not json at all",
    b"[]",
    b"[1, 2]",
    b"null",
    b'"just a string"',
    b"\xff\xfe\x00garbage",
    b'{"jsonrpc": "2.0"}',
    b'{"jsonrpc": "2.0", "id": 1}',
    b'{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}',
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
    b'"arguments": {"category": "c", "key": "k", "content": "x", "body": '
    + b'{"d":' * 200
    + b"1"
    + b"}" * 200
    + b"}}}",
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
        for content_type in (
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "",
            "application/xml",
        ):
            r = client.post(
                server,
                content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                headers={**headers, "Content-Type": content_type},
            )
            _clean(r)
        for accept in ("text/html", "", "*/*;q=0"):
            _clean(
                client.post(
                    server,
                    content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                    headers={**headers, "Accept": accept},
                )
            )
        for method in ("PUT", "PATCH", "OPTIONS", "HEAD", "TRACE"):
            _clean(client.request(method, server, headers=headers))
        _clean(client.post(server, content=b"{}", headers={**headers, "mcp-session-id": "not-a-session"}))
        _clean(client.post(server.rsplit("/", 1)[0] + "/../../etc/passwd", headers=headers))
        ok = _call(
            client,
            server,
            headers,
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 9,
                    "method": "tools/call",
                    "params": {
                        "name": "perseus_vault_recall",
                        "arguments": {"query": "sqlite", "mode": "fts5"},
                    },
                }
            ),
        )
        assert "We chose SQLite" in ok  # and it still answers


def test_an_unexpected_engine_failure_is_answered_without_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verb that fails in a way the engine did not foresee (here: a bug that raises a plain
    RuntimeError naming a source file) reaches the client as an error, with no stack trace."""
    import uvicorn

    from perseus_vault_integrations.mcp.http import http_app, server_config

    def broken(self: Vault, verb: str, *args: Any, **kwargs: Any) -> Any:
        if verb == "scan":
            return 1 / 0
        raise RuntimeError("boom")

    with Vault(tmp_path / "broken.db", embedder=FakeEmbedder()) as vault:
        monkeypatch.setattr(Vault, "call", broken)  # the one way the server reaches a verb
        port = _free_port()
        server = uvicorn.Server(server_config(http_app(vault, "127.0.0.1", port, TOKEN), "127.0.0.1", port))
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
                    text = _call(
                        client,
                        url,
                        headers,
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": 1,
                                "method": "tools/call",
                                "params": {"name": name, "arguments": arguments},
                            }
                        ),
                    )
                    assert '"isError":true' in text.replace(" ", ""), text
        finally:
            server.should_exit = True
            thread.join(30)


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def _port_on(address: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


TOKEN_VARS = ("PERSEUS_VAULT_HTTP_TOKEN", "PERSEUS_VAULT_HTTP_TOKEN_FILE")


def _cli_env(**overrides: str) -> dict[str, str]:
    """The environment of a ``perseus-vault serve``: no token but the ones given, no embedding model."""
    env = {k: v for k, v in os.environ.items() if k not in TOKEN_VARS}
    return {**env, "PERSEUS_VAULT_EMBEDDER": "none", **overrides}


@contextmanager
def _cli_server(
    tmp_path: Path, address: str, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[int, int]]:
    """``perseus-vault serve --http ADDRESS:PORT`` (the bearer ``TOKEN`` from the environment unless
    ``env`` says otherwise) until the block ends; yields (port, pid)."""
    port = _port_on("127.0.0.1" if address == "localhost" else address)
    named = f"[{address}]" if ":" in address else address
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "serve",
            "--db",
            str(tmp_path / "s.db"),
            "--http",
            f"{named}:{port}",
            *args,
        ],
        cwd=ROOT,
        env=_cli_env(PERSEUS_VAULT_HTTP_TOKEN=TOKEN) if env is None else env,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc, host="127.0.0.1" if address == "localhost" else address)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _connect(address: str, port: int) -> socket.socket:
    return socket.create_connection((address, port), timeout=30)


def _status(address: str, port: int, host: str, origin: str | None = None, token: str | None = TOKEN) -> int:
    """The status of an MCP initialize sent with these Host and Origin headers (the token, when given, is right)."""
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
    ).encode()
    head = [
        "POST /mcp HTTP/1.1",
        f"Host: {host}",
        "Accept: application/json, text/event-stream",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    head += [f"Authorization: Bearer {token}"] if token else []
    head += [f"Origin: {origin}"] if origin is not None else []
    with _connect(address, port) as sock:
        sock.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + body)
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            assert chunk, f"closed without an answer: {answer!r}"
            answer += chunk
    return int(answer.split(b" ", 2)[1])


@pytest.mark.parametrize("address", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "0:0:0:0:0:0:0:1"])
def test_host_and_origin_are_checked_on_every_loopback_address(tmp_path: Path, address: str) -> None:
    """A page on a name the attacker re-points at loopback (DNS rebinding) sends its own name as the
    Host, and its own origin; the server answers neither, whichever loopback address it is bound to."""
    if ":" in address and not _has_ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback (::1)")
    connect_to = "127.0.0.1" if address == "localhost" else address
    with _cli_server(tmp_path, address) as (port, _):
        own = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        for host, origin in (
            (own, None),
            (own, f"http://{own}"),
            (f"localhost:{port}", f"http://localhost:{port}"),
            (f"127.0.0.1:{port}", f"http://{own}"),
        ):
            assert _status(connect_to, port, host, origin) == 200, (host, origin)
        for host in (f"evil.example:{port}", "evil.example", f"{own.rsplit(':', 1)[0]}:{port + 1}", ""):
            assert _status(connect_to, port, host) == 421, host  # the SDK's answer on 127.0.0.1
        for origin in (
            "http://evil.example",
            f"http://evil.example:{port}",
            f"http://localhost:{port + 1}",
            f"https://{own}",
            "null",
        ):
            assert _status(connect_to, port, own, origin) == 403, origin
        assert _status(connect_to, port, "evil.example", token=None) == 401  # the token is asked for first


def test_an_ipv6_loopback_address_is_written_in_brackets(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "serve",
            "--db",
            str(tmp_path / "b.db"),
            "--http",
            "::1:8765",
        ],
        cwd=ROOT,
        env=_cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "[::1]:8765" in done.stderr, done.stderr


def _refusal(tmp_path: Path, *args: str, **env: str) -> str:
    """The one line ``perseus-vault serve`` prints when it refuses to start (exit 1)."""
    done = subprocess.run(
        [sys.executable, "-m", "perseus_vault_core.cli", "serve", "--db", str(tmp_path / "t.db"), *args],
        cwd=ROOT,
        env=_cli_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, (args, env, done.stderr)
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


@pytest.mark.parametrize("command", [["serve", "--http"], ["serve", "--no-ui", "--http"], ["ui", "--http"]])
def test_a_port_in_use_is_one_error_line_and_exit_1(tmp_path: Path, command: list[str]) -> None:
    subprocess.run(
        [sys.executable, "-m", "perseus_vault_core.cli", "init", "--db", str(tmp_path / "p.db")],
        cwd=ROOT,
        env=_cli_env(),
        check=True,
        capture_output=True,
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "perseus_vault_core.cli",
                command[0],
                "--db",
                str(tmp_path / "p.db"),
                *command[1:],
                f"localhost:{port}",
            ],
            cwd=ROOT,
            env=_cli_env(PERSEUS_VAULT_HTTP_TOKEN=TOKEN),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"error: cannot listen on http://localhost:{port}: the port is in use\n"


def test_the_token_never_comes_from_the_command_line_and_is_never_short(tmp_path: Path) -> None:
    port = _port_on("127.0.0.1")
    line = _refusal(tmp_path, "--http", f"127.0.0.1:{port}", "--token", TOKEN)
    assert "PERSEUS_VAULT_HTTP_TOKEN" in line and "--token-file" in line and TOKEN not in line
    for address, token in (("127.0.0.1", ""), ("0.0.0.0", "short"), ("127.0.0.1", TOKEN[:15])):
        assert "at least 16" in _refusal(
            tmp_path, "--http", f"{address}:{port}", PERSEUS_VAULT_HTTP_TOKEN=token
        )
    assert "printable ASCII" in _refusal(
        tmp_path, "--http", f"127.0.0.1:{port}", PERSEUS_VAULT_HTTP_TOKEN=TOKEN + " x"
    )
    loose = tmp_path / "loose-token"
    loose.write_text(TOKEN + "\n", encoding="utf-8")
    loose.chmod(0o644)
    assert "accessible to other users" in _refusal(
        tmp_path, "--http", f"127.0.0.1:{port}", "--token-file", str(loose)
    )
    assert "accessible to other users" in _refusal(
        tmp_path, "--http", f"127.0.0.1:{port}", PERSEUS_VAULT_HTTP_TOKEN_FILE=str(loose)
    )
    assert "cannot read" in _refusal(
        tmp_path, "--http", f"127.0.0.1:{port}", "--token-file", str(tmp_path / "none")
    )
    assert "only one" in _refusal(
        tmp_path,
        "--http",
        f"127.0.0.1:{port}",
        PERSEUS_VAULT_HTTP_TOKEN=TOKEN,
        PERSEUS_VAULT_HTTP_TOKEN_FILE=str(loose),
    )
    assert "--http" in _refusal(tmp_path, "--token-file", str(loose))


def test_the_token_can_come_from_a_private_file(tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n", encoding="utf-8")
    secret.chmod(stat.S_IRUSR | stat.S_IWUSR)
    for args, env in (
        (("--token-file", str(secret)), _cli_env()),
        ((), _cli_env(PERSEUS_VAULT_HTTP_TOKEN_FILE=str(secret))),
    ):
        with _cli_server(tmp_path, "127.0.0.1", *args, env=env) as (port, pid):
            own = f"127.0.0.1:{port}"
            assert _status("127.0.0.1", port, own) == 200
            assert _status("127.0.0.1", port, own, token=None) == 401
            assert _status("127.0.0.1", port, own, token=TOKEN + "x") == 401
            cmdline = Path(f"/proc/{pid}/cmdline")
            if cmdline.exists():
                assert TOKEN.encode() not in cmdline.read_bytes()


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (what it sent meanwhile is read and dropped)."""
    sock.setblocking(False)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True


def test_stalled_connections_are_closed_and_live_streams_are_not(tmp_path: Path) -> None:
    """A client that connects and says nothing, trickles its headers, stops mid-body or idles
    between requests loses its connection; an open SSE stream of a live session keeps its own."""
    with _cli_server(tmp_path, "127.0.0.1") as (port, _):
        url, host = f"http://127.0.0.1:{port}/mcp", f"Host: 127.0.0.1:{port}\r\n".encode()
        with httpx.Client(timeout=30) as client:
            session = _session(client, url)
        stream = _connect("127.0.0.1", port)
        stream.sendall(
            b"GET /mcp HTTP/1.1\r\n"
            + host
            + b"Accept: text/event-stream\r\n"
            + "".join(
                f"{k}: {v}\r\n" for k, v in session.items() if k.lower() not in ("accept", "content-type")
            ).encode()
            + b"\r\n"
        )
        opened = stream.recv(4096)
        assert opened.startswith(b"HTTP/1.1 200"), opened

        stalled = {
            name: _connect("127.0.0.1", port)
            for name in ("silent", "trickled headers", "stalled body", "idle")
        }
        stalled["trickled headers"].sendall(b"POST /mcp HTTP/1.1\r\n" + host)
        stalled["stalled body"].sendall(
            b"POST /mcp HTTP/1.1\r\n"
            + host
            + f"Authorization: Bearer {TOKEN}\r\n"
            'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"'.encode()
        )
        stalled["idle"].sendall(
            b"GET /elsewhere HTTP/1.1\r\n" + host + b"\r\n"
        )  # answered 401, then kept alive
        assert stalled["idle"].recv(4096).startswith(b"HTTP/1.1 401")

        started, closed = time.monotonic(), {}
        while len(closed) < len(stalled) and time.monotonic() - started < 120:
            time.sleep(0.5)
            for name, sock in stalled.items():
                if name in closed:
                    continue
                if name == "trickled headers":
                    try:
                        sock.send(b"X")  # one more byte of a header line that never ends
                    except OSError:
                        pass
                if _closed(sock):
                    closed[name] = round(time.monotonic() - started, 1)
        assert set(closed) == set(stalled), f"still open after 120 s: {set(stalled) - set(closed)} ({closed})"
        print(f"closed after (s): {closed}")
        assert not _closed(stream), "the live SSE stream was cut"
        stream.close()
        for sock in stalled.values():
            sock.close()
        with httpx.Client(timeout=30) as client:  # and the server serves on
            assert "perseus_vault_recall" in _call(
                client,
                url,
                _session(client, url),
                json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            )
