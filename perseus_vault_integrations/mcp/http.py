"""The MCP server over streamable HTTP (path ``/mcp``, ``serve_http``), hardened as if every client were hostile.

- **Token.** Bound anywhere but loopback, the server refuses to start without a bearer token; with a
  token, every request must carry it (compared in constant time). The token comes from the
  environment or a file, never the command line (where ``ps`` shows it), and is at least
  ``MIN_TOKEN_CHARS`` long.
- **DNS rebinding.** Bound to any loopback address, the Host header must name a loopback host with
  the server's port, and an Origin header must be that same origin: a web page whose name an
  attacker re-points at 127.0.0.1 cannot talk to the server through the victim's browser.
- **Other sites.** A browser says where each request comes from (Fetch Metadata, ``Sec-Fetch-Site``):
  one from another site, or from another port of this host (``same-site``), is refused on every route,
  reads included, before anything else is looked at (:class:`FetchMetadata`). Only the server's own
  pages (``same-origin``) and an address the user opened (``none``) pass; a client that sends no such
  header (curl, MCP clients, older browsers) meets the token and Host/Origin checks alone.
- **TLS.** With a certificate and its key (:func:`tls_files`) the server speaks HTTPS only. Off loopback
  without them the token crosses the network in clear text: the server says so when it starts.
- **Size.** A request body over ``MAX_MESSAGE_BYTES`` (shared with stdio) is answered 413 unread.
- **Stalls.** uvicorn closes an idle keep-alive connection but sets no deadline before a request's
  headers are complete, nor while its body trickles in; ``DeadlineH11Protocol`` adds both, so a
  client cannot hold connections open by sending nothing, or a byte now and then.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import ipaddress
import os
import socket
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from uvicorn.protocols.http.h11_impl import H11Protocol

from perseus_vault_core import SetupError, read_secret_file

from ..arguments import VaultLike
from .interrupts import interruptible
from .server import build_server
from .stdio import max_message_bytes

TOKEN_ENV = "PERSEUS_VAULT_HTTP_TOKEN"
TOKEN_FILE_ENV = "PERSEUS_VAULT_HTTP_TOKEN_FILE"
# 16 characters of a random URL-safe token are 96 bits: out of reach of guessing over the network.
# Shorter tokens are refused, since they are most likely a word someone typed.
MIN_TOKEN_CHARS = 16

# Deadlines for a client that stalls (seconds). A response in progress has none: a tool call may
# run long, and an open SSE stream of a live session may stay open for hours.
HEADERS_TIMEOUT_S = 10.0  # a request's headers complete, from the connection's opening or the last response
BODY_TIMEOUT_S = 10.0  # the longest pause while a request body arrives
KEEP_ALIVE_TIMEOUT_S = 5  # an idle connection between requests (uvicorn's own timer)

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
# Sec-Fetch-Site values admitted: this server's own pages, and the user's own navigation (typed, bookmarked,
# opened by another program). A GET from another page, even an <img> that carries no Origin, is refused: a
# read can start seconds of work (the inspector's hygiene report).
SAME_ORIGIN_SITES = (b"same-origin", b"none")


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_token(token: str, source: str) -> str:
    """A usable bearer token: long enough not to be guessed, and printable ASCII (it travels in a header)."""
    if len(token) < MIN_TOKEN_CHARS:
        raise SetupError(
            f"{source}: the bearer token has {len(token)} characters, at least {MIN_TOKEN_CHARS} "
            "are needed (make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if not all("!" <= c <= "~" for c in token):
        raise SetupError(f"{source}: the bearer token must be printable ASCII without spaces")
    return token


def read_token_file(path: str, source: str) -> str:
    """The token held in the file at ``path`` (one trailing newline dropped); refused when others can read it."""
    return check_token(read_secret_file(path, source, "token"), source)


def resolve_token(token_file: str | None = None) -> str | None:
    """The bearer token: from ``token_file`` when given, else ``PERSEUS_VAULT_HTTP_TOKEN`` or the file
    ``PERSEUS_VAULT_HTTP_TOKEN_FILE`` names; ``None`` when none is configured. A variable that is set
    but empty is refused, not read as "no token": it is most likely a secret that failed to arrive."""
    if token_file is not None:
        return read_token_file(token_file, "--token-file")
    value, file = os.environ.get(TOKEN_ENV), os.environ.get(TOKEN_FILE_ENV)
    if value is not None and file:
        raise SetupError(f"both {TOKEN_ENV} and {TOKEN_FILE_ENV} are set; set only one")
    if file:
        return read_token_file(file, TOKEN_FILE_ENV)
    return None if value is None else check_token(value, TOKEN_ENV)


@dataclass(frozen=True)
class Tls:
    """The certificate (chain) and private key, PEM files, that HTTPS is served with."""

    cert: str
    key: str


def tls_files(cert: str | None, key: str | None) -> Tls | None:
    """The certificate and key files given (``None``: plain HTTP), refused now, before anything is served, when
    one is missing, the key is readable by other users, or the two cannot be loaded together."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise SetupError(
            "--tls-cert and --tls-key go together: the certificate (chain) and its private key, PEM files"
        )
    read_secret_file(key, "--tls-key", "private key")  # a key other users can read is no secret: refused

    def no_passphrase() -> bytes:  # else OpenSSL would ask for one on the terminal
        raise SetupError(
            f"--tls-key: {key!r} is encrypted; give the key without a passphrase "
            "(openssl pkey -in KEY -out PLAIN, readable by you only)"
        )

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key, password=no_passphrase)
    except (OSError, ssl.SSLError) as error:
        raise SetupError(
            f"--tls-cert/--tls-key: cannot serve HTTPS with {cert!r} and {key!r} ({error})"
        ) from None
    return Tls(cert, key)


def clear_text_warning(host: str, tls: Tls | None) -> list[str]:
    """What a server off loopback without TLS says when it starts: its token travels in clear text."""
    if tls is not None or is_loopback(host):
        return []
    return [
        f"warning: plain HTTP on {host}: the bearer token and the inspector's session cookie cross the network "
        "in clear text; serve HTTPS with --tls-cert and --tls-key, or put a TLS proxy in front (docs/mcp.md)"
    ]


def transport_security(host: str, port: int, https: bool = False) -> TransportSecuritySettings:
    """The SDK's Host/Origin check for a server bound to ``host``:``port``.

    The SDK turns it on by itself only for a host spelled exactly ``127.0.0.1``, ``localhost`` or
    ``::1``, and then for any port; here it holds for every loopback address, for this port only.
    Off loopback the check stays off: clients reach such a server under names we cannot know, and
    the required token is what keeps a browser out.
    """
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = set(LOOPBACK_NAMES)
    bare = host.strip("[]")
    if bare not in ("", "localhost"):
        address = ipaddress.ip_address(bare)
        for spelling in {bare, address.compressed}:
            names.add(f"[{spelling}]" if address.version == 6 else spelling)
    default = 443 if https else 80  # the port a browser leaves out of Host and Origin
    hosts = sorted(f"{name}:{port}" for name in names) + (sorted(names) if port == default else [])
    scheme = "https" if https else "http"
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{h}" for h in hosts],
    )


def bearer(token: str) -> bytes:
    """The ``Authorization`` header that carries ``token``."""
    return f"Bearer {token}".encode()


def carries(scope: Mapping[str, Any], expected: bytes) -> bool:
    """Whether the request's ``Authorization`` header is ``expected`` (compared in constant time)."""
    given = dict(scope.get("headers") or []).get(b"authorization", b"")
    return hmac.compare_digest(given, expected)


def foreign_site(scope: Mapping[str, Any]) -> str | None:
    """The ``Sec-Fetch-Site`` of a request a browser sent for another site's page (``cross-site``, or
    ``same-site``: another port or subdomain), ``None`` for one it may make (or that names none)."""
    site: bytes | None = dict(scope.get("headers") or []).get(b"sec-fetch-site")
    if site is None or site.lower() in SAME_ORIGIN_SITES:
        return None
    return site[:40].decode("latin-1")


class FetchMetadata:
    """ASGI middleware: a request a browser made for another site's page is answered 403 (see the module)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        site = foreign_site(scope) if scope["type"] == "http" else None
        if site is not None:
            await send(
                {"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]}
            )
            await send(
                {
                    "type": "http.response.body",
                    "body": f"refused: a request from another site's page (Sec-Fetch-Site: {site})\n".encode(),
                }
            )
            return
        await self.app(scope, receive, send)


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, bearer(token)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not carries(scope, self.expected):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
            return
        await self.app(scope, receive, send)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with deadlines on the client's side of each exchange.

    While the server waits for a request's headers, they must be complete within
    ``HEADERS_TIMEOUT_S`` of the wait's start (bytes trickling in do not extend it); while it
    reads a body, the client may pause at most ``BODY_TIMEOUT_S``. Past either, the connection is
    closed. Once a request is whole, nothing here limits the response.
    """

    _deadline: asyncio.TimerHandle | None = None
    _waiting_for: object = None  # h11.IDLE (headers) or h11.SEND_BODY

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._clear()
        super().connection_lost(exc)

    def _watch(self) -> None:
        state = self.conn.their_state
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            self._clear()
        elif state is h11.IDLE:
            if self._waiting_for is not h11.IDLE:  # a new wait for headers: its deadline starts now
                self._arm(h11.IDLE, HEADERS_TIMEOUT_S)
        elif state is h11.SEND_BODY:
            self._arm(h11.SEND_BODY, BODY_TIMEOUT_S)  # every read restarts the allowed pause
        else:
            self._clear()

    def _arm(self, waiting_for: object, seconds: float) -> None:
        self._clear()
        self._waiting_for = waiting_for
        self._deadline = self.loop.call_later(seconds, self._expire)

    def _clear(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self._waiting_for = None

    def _expire(self) -> None:
        self._deadline = None
        if self.flow.read_paused and self._waiting_for is h11.SEND_BODY:
            # We stopped reading (the app has not taken the body yet), not the client: wait on.
            self._deadline = self.loop.call_later(BODY_TIMEOUT_S, self._expire)
            return
        self._waiting_for = None
        if not self.transport.is_closing():
            self.transport.close()


def require_token(host: str, token: str | None) -> None:
    """Refuse a token that is unusable, and a server off loopback without one (before anything is served)."""
    if token is not None:
        check_token(token, "token")
    elif not is_loopback(host):
        raise SetupError(
            f"refusing to serve on {host} without a bearer token "
            f"(set {TOKEN_ENV}, or {TOKEN_FILE_ENV} or --token-file to a file holding it)"
        )


def http_app(
    vault: VaultLike,
    host: str,
    port: int,
    token: str | None,
    *,
    agent_id: str | None = None,
    workspace_hash: str | None = None,
    https: bool = False,
) -> Any:
    """The streamable-HTTP app (path ``/mcp``) for a server at ``host``:``port`` (over HTTPS when ``https``),
    behind the token check."""
    require_token(host, token)
    server = build_server(vault, agent_id=agent_id, workspace_hash=workspace_hash)
    app = server.streamable_http_app(
        host=host,
        transport_security=transport_security(host, port, https),
        max_request_body_size=max_message_bytes(),
    )
    return FetchMetadata(BearerAuth(app, token) if token else app)


def server_config(app: Any, host: str, port: int, tls: Tls | None = None) -> uvicorn.Config:
    """uvicorn's settings for ``app``: the stall deadlines, no WebSocket upgrades (MCP uses none), and HTTPS
    with ``tls``."""
    return uvicorn.Config(
        app,
        host=host.strip("[]") or "127.0.0.1",
        port=port,
        http=DeadlineH11Protocol,
        ws="none",
        timeout_keep_alive=KEEP_ALIVE_TIMEOUT_S,
        log_level="warning",
        lifespan="on",
        ssl_certfile=tls.cert if tls else None,
        ssl_keyfile=tls.key if tls else None,
    )


def base_url(host: str, port: int, https: bool = False) -> str:
    """``http://HOST:PORT`` (``https://`` when ``https``) as a browser or client writes it (an IPv6 host in
    brackets)."""
    bare, scheme = host.strip("[]"), "https" if https else "http"
    return f"{scheme}://[{bare}]:{port}" if ":" in bare else f"{scheme}://{bare or '127.0.0.1'}:{port}"


def listen(host: str, port: int) -> socket.socket:
    """A listening socket at ``host``:``port`` (port 0: a free one, which the caller then reads back). Bound
    here rather than by uvicorn, so that a port in use is one clear error (``SetupError``: one ``error:`` line
    and exit 1 on the command line) before anything is announced, not uvicorn's log line and exit 3."""
    bare = host.strip("[]") or "127.0.0.1"
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
    except OSError as error:
        sock.close()
        reason = "the port is in use" if error.errno == errno.EADDRINUSE else (error.strerror or str(error))
        raise SetupError(f"cannot listen on {base_url(host, port)}: {reason}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve_app(
    app: Any,
    host: str,
    port: int,
    announce: list[str],
    sock: socket.socket | None = None,
    tls: Tls | None = None,
    stdout: str | None = None,
) -> None:
    """Run ``app`` at ``host``:``port`` (or on ``sock``, already bound there; over HTTPS with ``tls``) until
    stopped, after printing ``announce`` to stderr, a line each, and the warning of :func:`clear_text_warning`,
    and then ``stdout`` (a line for a script to read) on stdout: a reader of that line has all the others."""
    if sock is None:
        sock = listen(host, port)
    for line in announce + clear_text_warning(host, tls):  # each line in one write: a Ctrl-C cannot split it
        sys.stderr.write(f"perseus-vault: {line}\n")
        sys.stderr.flush()
    if stdout is not None:
        sys.stdout.write(f"{stdout}\n")
        sys.stdout.flush()
    server = uvicorn.Server(server_config(app, host, port, tls))
    with interruptible():  # uvicorn catches Ctrl-C, shuts down, then raises it again here (interrupts.py)
        server.run(sockets=[sock])
    if server.should_exit:  # stopped by a signal whose second raising the event loop took for its own
        raise KeyboardInterrupt


def serve_http(
    vault: VaultLike,
    host: str,
    port: int,
    token: str | None,
    *,
    agent_id: str | None = None,
    workspace_hash: str | None = None,
    tls: Tls | None = None,
) -> None:
    app = http_app(
        vault, host, port, token, agent_id=agent_id, workspace_hash=workspace_hash, https=tls is not None
    )  # refuses first
    serve_app(
        app, host, port, [f"MCP over streamable HTTP at {base_url(host, port, tls is not None)}/mcp"], tls=tls
    )
