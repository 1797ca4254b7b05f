"""The stdio transport of the MCP server, on native async pipe I/O.

The SDK's own stdio transport reads stdin and writes stdout through anyio's thread-wrapped files, so
each message crosses threads three times (a read, a write and a flush), and on a busy two-core
machine that is most of a recall's round trip. Here the pipes are registered with the event loop
instead, and a message costs no thread hop at all. Framing is the SDK's: one JSON-RPC message per
line, parsed and written by the SDK's ``stdio_server`` around these two streams.

As the SDK does, the wire moves onto private descriptors while serving: fd 0 reads the null device
and fd 1 writes to stderr, so a stray ``print`` (ours, a library's, a child's) cannot corrupt a
frame. Where the standard streams are not pipes or sockets (a regular file, Windows), the SDK's
transport is used unchanged.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.stdio import stdio_server

# A line is one JSON-RPC message; remember_many can send a large one (the default limit is 64 KiB).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class _Lines:
    """Incoming messages, a decoded line at a time (what ``stdio_server`` iterates over)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Out:
    """Outgoing messages (``stdio_server`` writes a line, then flushes)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _pollable(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) message streams of the SDK's ``stdio_server``, over native pipe I/O."""
    if sys.platform == "win32" or not (_pollable(0) and _pollable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0))
    write_transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(wire_out, "wb", buffering=0))
    writer = asyncio.StreamWriter(write_transport, protocol, None, loop)
    try:
        async with stdio_server(_Lines(reader), _Out(writer)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        read_transport.close()
        write_transport.close()
        try:
            sys.stdout.flush()  # what was printed while serving belongs to stderr, not the wire
        except (OSError, ValueError):
            pass
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
