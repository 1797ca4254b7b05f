"""The MCP server over streamable HTTP (path ``/mcp``).

It binds to loopback unless told otherwise and, bound anywhere else, refuses to start without a
bearer token; with a token, every request must carry it (compared in constant time).
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from perseus_vault_core import Vault

from .mcp_server import build_server

TOKEN_ENV = "PERSEUS_VAULT_HTTP_TOKEN"


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)


def http_app(vault: Vault, host: str, token: str | None, *, agent_id: str | None = None,
             workspace_hash: str | None = None) -> Any:
    """The streamable-HTTP app (path ``/mcp``) over one open vault, behind the token check."""
    from perseus_vault_core import SetupError

    if not is_loopback(host) and not token:
        raise SetupError(f"refusing to serve on {host} without a bearer token (set {TOKEN_ENV} or pass --token)")
    server = build_server(vault=vault, agent_id=agent_id, workspace_hash=workspace_hash)
    from mcp.server.transport_security import TransportSecuritySettings

    security = None if is_loopback(host) else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(host=host, transport_security=security)
    return BearerAuth(app, token) if token else app


def serve_http(vault: Vault, host: str, port: int, token: str | None, *, agent_id: str | None = None,
               workspace_hash: str | None = None) -> None:
    import uvicorn

    app = http_app(vault, host, token, agent_id=agent_id, workspace_hash=workspace_hash)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")).run()
