"""The native stdio transport: frames survive stray prints, large messages and a closed client, and a
message over the size limit or not JSON-RPC at all gets an error answer while the server serves on."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE  # noqa: E402

SERVER = textwrap.dedent("""
    import os, sys
    import anyio
    from mcp.server.mcpserver import MCPServer
    from perseus_vault_integrations.mcp.stdio import stdio_streams

    server = MCPServer(name="noisy")

    @server.tool()
    def noisy(text: str) -> str:
        print("stray output from a tool")            # would corrupt a frame on the real stdout
        os.write(1, b"stray bytes on fd 1\\n")
        return f"{len(text)}:{text[-5:]}"

    async def main():
        low = server._lowlevel_server
        async with stdio_streams() as (read, write):
            await low.run(read, write, low.create_initialization_options())

    anyio.run(main)
""")


def test_stray_output_and_large_messages_do_not_break_frames(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    errors = tmp_path / "stderr.txt"

    async def session() -> list[str]:
        out = []
        with errors.open("w") as err:
            # the SDK hands a child only a few "safe" variables: PYTHONPATH too, to find this checkout
            params = StdioServerParameters(command=sys.executable, args=[str(script)], env=dict(os.environ))
            async with Client(stdio_client(params, errlog=err)) as client:
                for size in (10, 300_000):  # a line far beyond asyncio's default 64 KiB limit
                    result = await client.call_tool("noisy", {"text": "x" * (size - 5) + "tail!"})
                    assert not result.is_error, result
                    out.append(result.content[0].text)  # type: ignore[union-attr]
        return out

    assert anyio.run(session) == ["10:tail!", "300000:tail!"]
    stray = errors.read_text(encoding="utf-8")
    assert stray.count("stray output from a tool") == 2 and stray.count("stray bytes on fd 1") == 2


class _Pipe:
    """``perseus-vault serve`` over stdio, spoken to a raw line at a time."""

    def __init__(self, db: Path, limit: int) -> None:
        env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none", PERSEUS_VAULT_MAX_MESSAGE_BYTES=str(limit))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "perseus_vault_core.cli", "serve", "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(
            target=lambda: [self.lines.put(line) for line in self.proc.stdout or ()], daemon=True
        ).start()
        self.send(
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
        )
        assert "result" in self.answer()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 60) -> dict[str, Any]:
        try:
            return dict(json.loads(self.lines.get(timeout=timeout)))
        except queue.Empty:
            raise AssertionError(
                f"no answer; the server {'runs' if self.proc.poll() is None else 'exited'}"
            ) from None

    def call(self, request_id: int, name: str, **arguments: Any) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        )
        return self.answer()

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0
        return self.proc.stderr.read().decode("utf-8", errors="replace")


def test_an_over_limit_message_is_answered_and_the_server_serves_on(tmp_path: Path) -> None:
    limit = 4096
    pipe = _Pipe(tmp_path / "limit.db", limit)
    # Far over the limit (the server holds at most about twice the limit of it while discarding).
    huge = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "perseus_vault_remember",
            "arguments": {"category": "n", "key": "huge", "content": "x" * 50_000},
        },
    }
    pipe.send(huge)
    refused = pipe.answer()
    assert refused["id"] == 7 and refused["error"]["code"] == -32600
    assert f"{limit}-byte limit" in refused["error"]["message"]
    # Where the id does not lead the line, the answer has none (JSON-RPC's null id).
    pipe.send(
        b'{"params": {"pad": "' + b"y" * limit + b'"}, "jsonrpc": "2.0", "id": 8, "method": "tools/list"}\n'
    )
    assert pipe.answer() == {"jsonrpc": "2.0", "id": None, "error": refused["error"]}
    # A message of exactly the limit is read.
    exact = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {
            "name": "perseus_vault_remember",
            "arguments": {"category": "n", "key": "exact", "content": ""},
        },
    }
    exact["params"]["arguments"]["content"] = "z" * (limit - len(json.dumps(exact)))  # type: ignore[index]
    assert len(json.dumps(exact)) == limit
    pipe.send(exact)
    saved = pipe.answer()
    assert saved["id"] == 9 and saved["result"]["isError"] is False, saved
    found = pipe.call(10, "perseus_vault_scan", category="n")
    assert [e["key"] for e in found["result"]["structuredContent"]["items"]] == ["exact"]
    stderr = pipe.close()
    assert "Traceback" not in stderr, stderr


def test_malformed_lines_get_json_rpc_errors_and_the_server_serves_on(tmp_path: Path) -> None:
    pipe = _Pipe(tmp_path / "malformed.db", 4 * 1024 * 1024)
    cases: list[tuple[bytes, int | str | None, int]] = [
        (b"not json at all", None, -32700),
        (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"', None, -32700),  # cut short
        (b'{"jsonrpc": "2.0", "id": 4, "method": "tools/list", "x": "\xff\xfe"}', None, -32700),  # not UTF-8
        (b'{"jsonrpc": "2.0", "id": 5}', 5, -32600),
        (b'{"jsonrpc": "2.0", "id": "five", "method": "tools/call", "params": "nope"}', "five", -32600),
        (b'{"jsonrpc": "1.0", "id": 6, "method": "tools/list"}', 6, -32600),
        (b"[1, 2]", None, -32600),
        (b"null", None, -32600),
        # a few kilobytes of brackets: deeper than any parser here reads, refused rather than a crash
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
            + b"[" * 5000
            + b"]" * 5000
            + b"}",
            7,
            -32700,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": '
            + b"[" * 300
            + b"]" * 300
            + b"}",
            8,
            -32600,
        ),
    ]
    for line, request_id, code in cases:
        pipe.send(b"\n" + line + b"\n")  # a blank line is no message, and is not answered
        answer = pipe.answer()
        assert (answer["id"], answer["error"]["code"]) == (request_id, code), (line, answer)
    listed = pipe.call(11, "perseus_vault_recall", query="anything")
    assert listed["id"] == 11 and listed["result"]["isError"] is False
    stderr = pipe.close()
    assert "Traceback" not in stderr, stderr


def test_the_message_limit_is_one_setting_for_both_transports(monkeypatch: pytest.MonkeyPatch) -> None:
    from perseus_vault_core import SetupError
    from perseus_vault_integrations.mcp import stdio as mcp_stdio

    assert mcp_stdio.max_message_bytes() == mcp_stdio.MAX_MESSAGE_BYTES == DEFAULT_MAX_REQUEST_BODY_SIZE
    monkeypatch.setenv("PERSEUS_VAULT_MAX_MESSAGE_BYTES", "1000")
    assert mcp_stdio.max_message_bytes() == 1000
    for bad in ("0", "-5", "4MiB"):
        monkeypatch.setenv("PERSEUS_VAULT_MAX_MESSAGE_BYTES", bad)
        with pytest.raises(SetupError, match="PERSEUS_VAULT_MAX_MESSAGE_BYTES"):
            mcp_stdio.max_message_bytes()
