"""Serving the inspector: alone (``perseus-vault ui``) or at ``/`` beside MCP at ``/mcp`` (``perseus-vault
serve --http``), with the same server settings, stall deadlines and token (:mod:`..mcp.http`)."""

from __future__ import annotations

from typing import Any

from ..mcp.http import Tls, base_url, is_loopback, listen, require_token, serve_app
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


def serve_alone(
    vault: Any,
    host: str,
    port: int,
    token: str | None,
    *,
    allow_edits: bool = False,
    agent_id: str | None = None,
    workspace_hash: str | None = None,
    tls: Tls | None = None,
) -> None:
    """``perseus-vault ui``: the inspector alone (over HTTPS with ``tls``) until stopped; its URL printed on
    stdout once its lines on stderr are out."""
    require_token(host, token)  # refused before listening
    sock = listen(host, port)
    port = int(sock.getsockname()[1])
    app = Inspector(
        vault,
        host,
        port,
        token,
        allow_edits=allow_edits,
        agent_id=agent_id,
        workspace_hash=workspace_hash,
        https=tls is not None,
    )
    url = base_url(host, port, tls is not None)
    note = " (sign in with the bearer token)" if token else ""
    where = "" if is_loopback(host) else ", reachable from other machines"
    serve_app(
        app,
        host,
        port,
        [f"the web inspector at {url}/{note}{where}; Ctrl-C to stop"],
        sock=sock,
        tls=tls,
        stdout=f"{url}/",
    )
