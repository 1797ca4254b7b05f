"""Who may use the inspector, and how its responses defend themselves (docs/ui.md).

The rules are the MCP endpoint's beside it, applied by the same code (:mod:`..mcp.http`):

- **Host and Origin.** On loopback, the MCP SDK's check as :func:`transport_security` configures it for
  this host and port: a page whose name an attacker re-points at 127.0.0.1 (DNS rebinding) is refused.
- **The token.** When the server has one (it must, off loopback), every request carries it: as MCP
  clients do (``Authorization: Bearer``), or from a browser as the session cookie that ``/login`` sets
  once the token was typed there. The cookie holds an HMAC of the token, never the token itself, and is
  ``HttpOnly`` and ``SameSite=Strict``. Only the sign-in page and the static files are served without it.
- **Writes** (``--allow-edits``, and signing in) are POSTs that carry the CSRF token of the page that
  offered them and an ``Origin`` naming this very server.
- **Every response** carries a strict Content-Security-Policy (scripts and styles from this server's
  files only, never inline; nothing framed; forms post here only), ``nosniff`` and ``no-store``; and a
  ``Server-Timing`` header saying how long the server took to answer (what docs/benchmarks.md measures).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import MutableMapping
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ..mcp.http import bearer, carries, require_token, transport_security
from .markup import Markup, el, join, url

COOKIE = "perseus_vault_inspector"
OPEN_PATHS = ("/login", "/static/", "/favicon.ico")  # served without the token (nothing of the vault in them)
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
          "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = [
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # not no-referrer: Chromium would then send "Origin: null" on a POST
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


class Refused(Exception):
    """A request the guard turns away: its status and one line saying why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class Guard:
    """ASGI middleware in front of the inspector's app (see the module's docstring)."""

    def __init__(self, app: Any, host: str, port: int, token: str | None) -> None:
        require_token(host, token)  # off loopback without a token: refused before anything is served
        self.app = app
        self.security = TransportSecurityMiddleware(transport_security(host, port))
        self.expected = bearer(token) if token is not None else None
        self.session = (hmac.new(token.encode(), b"perseus-vault inspector session", hashlib.sha256).hexdigest()
                        if token is not None else None)
        self._csrf_key = secrets.token_bytes(32)  # this process's: a restart invalidates open forms

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = time.perf_counter()

        async def secured(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":  # a page is whole before it starts: its time is known
                took = f"app;dur={(time.perf_counter() - started) * 1000:.1f}".encode()
                names = {name for name, _ in HEADERS}
                message["headers"] = [h for h in message.get("headers", []) if h[0] not in names] + HEADERS + [
                    (b"server-timing", took)]
            await send(message)

        request = Request(scope)
        refused = await self.security.validate_request(request, is_post=False)
        if refused is None and not self.admits(request) and not request.url.path.startswith(OPEN_PATHS):
            refused = sign_in_first(request)
        await (refused or self.app)(scope, receive, secured)

    @property
    def signs_in(self) -> bool:
        return self.session is not None

    def admits(self, request: Request) -> bool:
        """Whether the request carries the token (header or session cookie); always, without a token."""
        if self.expected is None or self.session is None:
            return True
        if carries(request.scope, self.expected):
            return True
        return hmac.compare_digest(request.cookies.get(COOKIE, "").encode(), self.session.encode())

    def token_matches(self, typed: str) -> bool:
        return self.expected is not None and hmac.compare_digest(bearer(typed), self.expected)

    def csrf(self, request: Request) -> str:
        """The CSRF token of the pages this client is served (bound to its session, if any)."""
        who = request.cookies.get(COOKIE, "-") if self.session is not None else "-"
        return hmac.new(self._csrf_key, who.encode(), hashlib.sha256).hexdigest()

    def check_write(self, request: Request, form_csrf: str) -> None:
        """Refuse a POST from another site: its Origin must be this server's, its CSRF token this client's."""
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin is None or origin != own:
            raise Refused(403, "refused: a change must come from this inspector's own pages (Origin)")
        if not hmac.compare_digest(form_csrf.encode(), self.csrf(request).encode()):
            raise Refused(403, "refused: the form's CSRF token is missing or stale; reload the page and try again")


def sign_in_first(request: Request) -> Response:
    """401, as the MCP endpoint answers; for a browser, a page with the way to sign in."""
    target = url("/login", next=request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    body = join(Markup("<!doctype html>"), el("html", el("head", el("meta", charset="utf-8"),
                                                   el("title", "Sign in: Perseus Vault"),
                                                   el("link", rel="stylesheet", href="/static/app.css")),
                                      el("body", el("main", el("h1", "Sign in"),
                                                    el("p", "This inspector needs its bearer token. ",
                                                       el("a", "Sign in with it", href=target), ".")),
                                         class_="signin"), lang="en"))
    return HTMLResponse(body, status_code=401, headers={"www-authenticate": "Bearer"})
