"""The vault as an MCP server, and a client for one (docs/mcp.md); install with ``pip install "perseus-vault[mcp]"``.

- ``server``: :func:`build_server`, one tool per verb of the core's registry, validated strictly,
  and :func:`serve_stdio`, over the native stdio transport of ``stdio``.
- ``http``: :func:`serve_http`, streamable HTTP behind a bearer token, DNS-rebinding and size checks,
  and stall deadlines.
- ``client``: :class:`VaultClient`, a typed async client for a running server.
- ``reference``: the tool reference page, ``python -m perseus_vault_integrations.mcp.reference``.

The server takes the vault first, as a :class:`~perseus_vault_core.Vault` or a path, and refuses an
unknown argument with :class:`~perseus_vault_core.InvalidInput`.
"""

from __future__ import annotations

from ..extras import require

# First, so that a missing SDK is named once, here, before the modules below import it.
require("mcp", "the MCP server and client", "mcp", "uvicorn")

from .client import VaultClient
from .http import http_app, resolve_token, serve_http
from .server import TOOLS_ENV, build_server, serve_stdio, served, tool_size
from .stdio import stdio_streams

__all__ = [
    "TOOLS_ENV",
    "VaultClient",
    "build_server",
    "http_app",
    "resolve_token",
    "serve_http",
    "serve_stdio",
    "served",
    "stdio_streams",
    "tool_size",
]
