"""The stdio transport of the MCP server, on native async pipe I/O.

The SDK's own stdio transport reads stdin and writes stdout through anyio's thread-wrapped files, so
each message crosses threads three times (a read, a write and a flush), and on a busy two-core
machine that is most of a recall's round trip. Here the pipes are registered with the event loop
instead, and a message costs no thread hop at all. Framing is the SDK's (one JSON-RPC message per
line), but read here, so that a bad line is answered instead of dropped or fatal:

- a line longer than ``max_message_bytes()`` is discarded unread and answered with an Invalid
  Request error (-32600) naming the limit, under the request's id when it leads the line;
- a line that is not JSON gets a Parse error (-32700), and JSON that is no JSON-RPC message an
  Invalid Request error (-32600, with its id when it has one);
- either way the server reads on.

As the SDK does, the wire moves onto private descriptors while serving: fd 0 reads the null device
and fd 1 writes to stderr, so a stray ``print`` (ours, a library's, a child's) cannot corrupt a
frame. Where the standard streams are not pipes or sockets (a regular file, Windows), the SDK's
transport is used unchanged.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter

from perseus_vault_core import SetupError

# One MCP message, on either transport: the MCP SDK's HTTP request-body limit, so that what one
# transport accepts the other does too. remember_many sends the largest messages (docs/limits.md).
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MAX_MESSAGE_ENV = "PERSEUS_VAULT_MAX_MESSAGE_BYTES"
# A request's id is sought in this much of the start of an over-limit line (the SDK writes it second).
_HEAD_BYTES = 1024
_LEADING_ID = re.compile(
    rb'\s*\{(?:\s*"(?:jsonrpc|method)"\s*:\s*"[^"\\]*"\s*,)*'
    rb'\s*"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,256}")\s*[,}]'
)


def max_message_bytes() -> int:
    """``MAX_MESSAGE_BYTES``, or the byte count in ``PERSEUS_VAULT_MAX_MESSAGE_BYTES`` (tests set a small one)."""
    raw = os.environ.get(MAX_MESSAGE_ENV)
    if not raw:
        return MAX_MESSAGE_BYTES
    value = int(raw) if raw.isdigit() else 0
    if value < 1:
        raise SetupError(f"{MAX_MESSAGE_ENV}: expected a positive number of bytes, got {raw!r}")
    return value


class _Wire:
    """The outgoing pipe: one whole line per write, so concurrent writers never interleave frames."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, message: Any) -> None:
        self._writer.write(message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n")
        await self._writer.drain()

    async def refuse(self, request_id: int | str | None, code: int, text: str) -> None:
        await self.send(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=text)))


def _leading_id(head: bytes) -> int | str | None:
    """The id of a message cut off after ``head``, when it comes before any other member but
    ``jsonrpc`` and ``method`` (so it cannot be a nested object's); else None."""
    found = _LEADING_ID.match(head)
    if not found:
        return None
    token = found.group(1)
    return token[1:-1].decode("utf-8", errors="replace") if token.startswith(b'"') else int(token)


def _refusal(line: bytes) -> tuple[int | str | None, int, str]:
    """Why ``line``, which is no valid message, is refused: (id if any, JSON-RPC code, message)."""
    try:
        data = json.loads(line)
    except RecursionError:  # a few kilobytes of brackets: refused, never a crash
        return _leading_id(line[:_HEAD_BYTES]), PARSE_ERROR, "Parse error: the message is nested too deeply"
    except ValueError:
        return None, PARSE_ERROR, "Parse error: the message is not valid UTF-8 JSON"
    request_id = data.get("id") if isinstance(data, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)):
        request_id = None
    return (
        request_id,
        INVALID_REQUEST,
        (
            "Invalid Request: not a JSON-RPC 2.0 request, notification or response "
            "(or nested deeper than the server reads)"
        ),
    )


async def _skip_line(reader: asyncio.StreamReader) -> None:
    """Drop the rest of the current line, holding at most about the limit of it in memory."""
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


async def _read_messages(
    reader: asyncio.StreamReader,
    limit: int,
    wire: _Wire,
    sink: MemoryObjectSendStream[SessionMessage | Exception],
) -> None:
    async with sink:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # end of input; a last line may lack its newline
                if not exc.partial.strip():
                    return
                line = exc.partial
            except asyncio.LimitOverrunError:
                head = await reader.read(_HEAD_BYTES)
                await _skip_line(reader)
                await wire.refuse(
                    _leading_id(head),
                    INVALID_REQUEST,
                    f"Invalid Request: the message is over the {limit}-byte limit and was discarded",
                )
                continue
            if not line.strip():
                continue
            try:
                message = jsonrpc_message_adapter.validate_json(line, by_name=False)
            except (ValueError, RecursionError):
                await wire.refuse(*_refusal(line))
                continue
            await sink.send(SessionMessage(message))


async def _write_messages(wire: _Wire, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
    async with source:
        async for session_message in source:
            await wire.send(session_message.message)


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
    limit = max_message_bytes()
    loop = asyncio.get_running_loop()
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=limit)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), os.fdopen(wire_out, "wb", buffering=0)
    )
    wire = _Wire(asyncio.StreamWriter(write_transport, protocol, None, loop))
    incoming_sink, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_source = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_read_messages, reader, limit, wire, incoming_sink)
            group.start_soon(_write_messages, wire, outgoing_source)
            yield incoming, outgoing
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
