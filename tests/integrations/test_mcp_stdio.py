"""The native stdio transport: frames survive stray prints, large messages and a closed client."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

SERVER = textwrap.dedent("""
    import os, sys
    import anyio
    from mcp.server.mcpserver import MCPServer
    from perseus_vault_integrations.mcp_stdio import stdio_streams

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
            params = StdioServerParameters(command=sys.executable, args=[str(script)])
            async with Client(stdio_client(params, errlog=err)) as client:
                for size in (10, 300_000):  # a line far beyond asyncio's default 64 KiB limit
                    result = await client.call_tool("noisy", {"text": "x" * (size - 5) + "tail!"})
                    assert not result.is_error, result
                    out.append(result.content[0].text)  # type: ignore[union-attr]
        return out

    assert anyio.run(session) == ["10:tail!", "300000:tail!"]
    stray = errors.read_text(encoding="utf-8")
    assert stray.count("stray output from a tool") == 2 and stray.count("stray bytes on fd 1") == 2
