"""Who may use the inspector, and how its responses defend themselves (docs/ui.md).

The rules are the MCP endpoint's beside it, applied by the same code (:mod:`..mcp.http`):

- **Other sites.** A request a browser made for another site's page, or another port's on this host
  (``Sec-Fetch-Site`` ``cross-site`` or ``same-site``), is refused on every route, reads included: a
  plain ``<img>`` GET carries no Origin, and a read can start seconds of work (a hygiene report).
- **Host and Origin.** On loopback, the MCP SDK's check as :func:`transport_security` configures it for
  this host and port: a page whose name an attacker re-points at 127.0.0.1 (DNS rebinding) is refused.
- **The token.** When the server has one (it must, off loopback), every request carries it: as MCP
  clients do (``Authorization: Bearer``), or from a browser as the session cookie that ``/login`` sets
  once the token was typed there (:mod:`.sessions`: signed, never the token, twelve hours, named for
  this port, revoked by ``/logout``), ``HttpOnly``, ``SameSite=Strict``, and ``Secure`` over HTTPS.
  Only the sign-in page and the static files are served without it.
- **Writes** (``--allow-edits``, signing in and out) are POSTs that carry the CSRF token of the page that
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

from ..mcp.http import bearer, carries, foreign_site, require_token, transport_security
from .markup import Child, Markup, el, join, url
from .sessions import Sessions

OPEN_PATHS = ("/login", "/static/", "/favicon.ico")  # served without the token (nothing of the vault in them)
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = [
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (
        b"referrer-policy",
        b"same-origin",
    ),  # not no-referrer: Chromium would then send "Origin: null" on a POST
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

    def __init__(self, app: Any, host: str, port: int, token: str | None, *, https: bool = False) -> None:
        require_token(host, token)  # off loopback without a token: refused before anything is served
        self.app, self.https = app, https
        self.security = TransportSecurityMiddleware(transport_security(host, port, https))
        self.expected = bearer(token) if token is not None else None
        self.sessions = Sessions(token, port) if token is not None else None
        self._csrf_key = secrets.token_bytes(32)  # this process's: a restart invalidates open forms

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        started = time.perf_counter()

        async def secured(message: MutableMapping[str, Any]) -> None:
            if (
                message["type"] == "http.response.start"
            ):  # a page is whole before it starts: its time is known
                took = f"app;dur={(time.perf_counter() - started) * 1000:.1f}".encode()
                names = {name for name, _ in HEADERS}
                message["headers"] = (
                    [h for h in message.get("headers", []) if h[0] not in names]
                    + HEADERS
                    + [(b"server-timing", took)]
                )
            await send(message)

        request = Request(scope)
        site = foreign_site(scope)
        refused = (
            page(
                403,
                "Refused",
                f"This inspector answers its own pages only, not another site's "
                f"(Sec-Fetch-Site: {site}): open its address yourself.",
            )
            if site is not None
            else await self.security.validate_request(request, is_post=False)
        )
        if refused is None and not self.admits(request) and not request.url.path.startswith(OPEN_PATHS):
            refused = sign_in_first(request)
        await (refused or self.app)(scope, receive, secured)

    @property
    def signs_in(self) -> bool:
        return self.sessions is not None

    def session(self, request: Request) -> str | None:
        """The request's session, when its cookie holds a valid one."""
        if self.sessions is None:
            return None
        value = request.cookies.get(self.sessions.name)
        return value if self.sessions.valid(value) else None

    def admits(self, request: Request) -> bool:
        """Whether the request carries the token (header or session cookie); always, without a token."""
        if self.expected is None or self.sessions is None:
            return True
        return carries(request.scope, self.expected) or self.session(request) is not None

    def token_matches(self, typed: str) -> bool:
        return self.expected is not None and hmac.compare_digest(bearer(typed), self.expected)

    def csrf(self, request: Request) -> str:
        """The CSRF token of the pages this client is served (bound to its session, if any)."""
        who = request.cookies.get(self.sessions.name, "-") if self.sessions is not None else "-"
        return hmac.new(self._csrf_key, who.encode(), hashlib.sha256).hexdigest()

    def check_write(self, request: Request, form_csrf: str) -> None:
        """Refuse a POST from another site: its Origin must be this server's, its CSRF token this client's."""
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin is None or origin != own:
            raise Refused(403, "refused: a change must come from this inspector's own pages (Origin)")
        if not hmac.compare_digest(form_csrf.encode(), self.csrf(request).encode()):
            raise Refused(
                403, "refused: the form's CSRF token is missing or stale; reload the page and try again"
            )


def sign_in_first(request: Request) -> Response:
    """401, as the MCP endpoint answers; for a browser, a page with the way to sign in."""
    target = url("/login", next=request.url.path + (f"?{request.url.query}" if request.url.query else ""))
    return page(
        401,
        "Sign in",
        ["This inspector needs its bearer token. ", el("a", "Sign in with it", href=target), "."],
        headers={"www-authenticate": "Bearer"},
    )


def page(status: int, title: str, text: Child, headers: dict[str, str] | None = None) -> Response:
    """A page of one paragraph, for a request the guard answers itself (nothing of the vault in it)."""
    body = join(
        Markup("<!doctype html>"),
        el(
            "html",
            el(
                "head",
                el("meta", charset="utf-8"),
                el("title", f"{title}: Perseus Vault"),
                el("link", rel="stylesheet", href="/static/app.css"),
            ),
            el("body", el("main", el("h1", title), el("p", text)), class_="signin"),
            lang="en",
        ),
    )
    return HTMLResponse(body, status_code=status, headers=headers)
