"""Serving the inspector: alone (``perseus-vault ui``) or at ``/`` beside MCP at ``/mcp`` (``perseus-vault
serve --http``), with the same server settings, stall deadlines and token (:mod:`..mcp.http`)."""

from __future__ import annotations

import socket
import sys
from typing import Any

from perseus_vault_core import SetupError

from ..mcp.http import base_url, is_loopback, require_token, serve_app
from .app import Inspector


class Beside:
    """One ASGI app: MCP's at ``/mcp`` (and its lifespan, which runs its session manager), the inspector's
    everywhere else. Each keeps its own checks: MCP's bearer token and the SDK's Host/Origin check, the
    inspector's :class:`Guard` (the same token and check, plus the session cookie a browser needs)."""

    def __init__(self, mcp: Any, inspector: Inspector) -> None:
        self.mcp, self.inspector = mcp, inspector

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "lifespan" or path == "/mcp" or path.startswith("/mcp/"):
            await self.mcp(scope, receive, send)
        else:
            await self.inspector(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket at ``host``:``port`` (port 0: a free one, which the printed URL then names)."""
    bare = host.strip("[]") or "127.0.0.1"
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
    except OSError as error:
        sock.close()
        raise SetupError(f"cannot listen on {base_url(host, port)}: {error.strerror or error}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve_alone(vault: Any, host: str, port: int, token: str | None, *, allow_edits: bool = False,
                agent_id: str | None = None, workspace_hash: str | None = None) -> None:
    """``perseus-vault ui``: the inspector alone until stopped; its URL printed on stdout first."""
    require_token(host, token)  # refused before listening
    sock = bind(host, port)
    port = int(sock.getsockname()[1])
    app = Inspector(vault, host, port, token, allow_edits=allow_edits, agent_id=agent_id, workspace_hash=workspace_hash)
    print(f"{base_url(host, port)}/", flush=True)
    note = " (sign in with the bearer token)" if token else ""
    where = "" if is_loopback(host) else ", reachable from other machines"
    print(f"perseus-vault: the web inspector at {base_url(host, port)}/{note}{where}; Ctrl-C to stop",
          file=sys.stderr, flush=True)
    serve_app(app, host, port, [], sock=sock)
