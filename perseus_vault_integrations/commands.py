"""Commands the integrations add to ``perseus-vault``: ``serve``, the vault as an MCP server (with the web
inspector at ``/`` over HTTP), and ``ui``, the web inspector alone (docs/ui.md).

The core's command line finds it through the entry point group ``perseus_vault.commands``
(pyproject.toml), so that the core never imports an integration. The MCP SDK is imported only
when the command runs: listing the commands (``--help``) stays fast, and without the ``mcp``
extra ``serve`` says what to install in one line.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from perseus_vault_core import INSTALL_HINTS, Plugin, SetupError, Vault, VaultError

ABOUT = (
    "Serve the vault over MCP: stdio by default, streamable HTTP with --http (loopback unless told otherwise; an "
    "IPv6 address in brackets, [::1]:8765). Elsewhere than loopback a bearer token is required: from "
    "PERSEUS_VAULT_HTTP_TOKEN, or a file only you can read (--token-file PATH, or PERSEUS_VAULT_HTTP_TOKEN_FILE), "
    "at least 16 characters; never on the command line, where ps shows it. --agent / --workspace bind the server "
    "to a scope. --tls-cert / --tls-key serve HTTPS (off loopback, without them the token crosses the network in clear "
    "text: use them, or a TLS proxy in front). --tools chooses which tools it offers: core (the default, a compact set), all, or a "
    "comma-separated list of verbs. Over HTTP the web inspector is served at / beside MCP at /mcp, under the same "
    "token and rules (--no-ui leaves it out; --allow-edits lets it forget, restore and verify memories). See "
    "docs/mcp.md and docs/ui.md."
)
UI_ABOUT = (
    "Serve the web inspector alone and print its URL: browse, search, every version on a timeline, links and "
    "communities, the recall playground, time travel, hygiene and memory files, in any browser, with nothing "
    "loaded from the network. Loopback (127.0.0.1:8765) unless --http says otherwise (port 0: a free port); "
    "elsewhere than loopback a bearer token is required, as for serve (PERSEUS_VAULT_HTTP_TOKEN, or --token-file "
    "PATH), and the browser signs in with it once (for 12 hours, or until it signs out); --tls-cert / --tls-key "
    "serve HTTPS. Read-only unless --allow-edits (forget, restore, verify). "
    "--agent / --workspace bind it to a scope. See docs/ui.md."
)


class _TokenOnCommandLine(argparse.Action):
    """``--token`` is gone: any user on the machine can read a process's arguments (``ps``)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        parser.error(
            "--token is no longer accepted, since the command line is visible to every user (ps); "
            "set PERSEUS_VAULT_HTTP_TOKEN, or put the token in a file and pass --token-file PATH"
        )


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tools", help="tool profile: core (default), all, or a comma-separated list of verbs")
    p.add_argument(
        "--http", metavar="HOST:PORT", help="streamable HTTP instead of stdio (loopback by default)"
    )
    p.add_argument(
        "--token-file",
        dest="token_file",
        metavar="PATH",
        help="file holding the bearer token HTTP clients must send (default: $PERSEUS_VAULT_HTTP_TOKEN, "
        "or the file $PERSEUS_VAULT_HTTP_TOKEN_FILE names)",
    )
    p.add_argument("--token", action=_TokenOnCommandLine, help=argparse.SUPPRESS)
    _tls_arguments(p)
    p.add_argument("--agent", help="bind the server to this agent_id (no argument can escape it)")
    p.add_argument("--workspace", help="bind the server to this workspace_hash")
    p.add_argument(
        "--no-ui",
        dest="no_ui",
        action="store_true",
        help="over HTTP, serve MCP alone (by default the web inspector is at / beside it)",
    )
    p.add_argument(
        "--allow-edits",
        dest="allow_edits",
        action="store_true",
        help="let the web inspector forget, restore and verify memories (read-only by default)",
    )


def ui_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        default="127.0.0.1:8765",
        help="where to listen (default 127.0.0.1:8765; port 0 picks a free one)",
    )
    p.add_argument(
        "--token-file",
        dest="token_file",
        metavar="PATH",
        help="file holding the bearer token (default: $PERSEUS_VAULT_HTTP_TOKEN, or the file "
        "$PERSEUS_VAULT_HTTP_TOKEN_FILE names); required elsewhere than loopback",
    )
    p.add_argument("--token", action=_TokenOnCommandLine, help=argparse.SUPPRESS)
    _tls_arguments(p)
    p.add_argument(
        "--allow-edits",
        dest="allow_edits",
        action="store_true",
        help="allow forget, restore and verify from the pages (read-only by default)",
    )
    p.add_argument("--agent", help="bind the inspector to this agent_id")
    p.add_argument("--workspace", help="bind the inspector to this workspace_hash")


def _tls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tls-cert",
        dest="tls_cert",
        metavar="PATH",
        help="serve HTTPS with this certificate (PEM, the chain after it); with --tls-key",
    )
    p.add_argument(
        "--tls-key",
        dest="tls_key",
        metavar="PATH",
        help="the certificate's private key (PEM, unencrypted, not readable by other users)",
    )


def serve(vault: Vault, args: argparse.Namespace) -> None:
    try:
        from .mcp import http as mcp_http  # the MCP SDK: only when serving
        from .mcp import server as mcp_server
    except ImportError as exc:
        raise SetupError(f"{INSTALL_HINTS['serve']} ({exc})") from None
    scope = {"agent_id": args.agent, "workspace_hash": args.workspace}
    if args.tools:  # the tool profile; an unknown one is refused before serving
        mcp_server.served(args.tools, {})
        os.environ[mcp_server.TOOLS_ENV] = args.tools
    for flag, value in (
        ("--token-file", args.token_file),
        ("--tls-cert", args.tls_cert),
        ("--tls-key", args.tls_key),
    ):
        if args.http is None and value is not None:
            raise VaultError(f"{flag}: this is for HTTP; add --http HOST:PORT")
    address, token, tls = None, None, None
    if args.http is not None:  # checked before the indexes start building in the background
        address, token = http_address(args.http), mcp_http.resolve_token(args.token_file)
        tls = mcp_http.tls_files(args.tls_cert, args.tls_key)
    # A server is long-lived: build the in-memory indexes now, in the background (SQL answers meanwhile).
    vault.wait_for_keyword_index(timeout=0)
    vault.wait_for_vector_index(timeout=0)
    if address is None:
        mcp_server.serve_stdio(vault, **scope)
        return
    host, port = address
    if args.no_ui:
        mcp_http.serve_http(vault, host, port, token, tls=tls, **scope)
        return
    from .inspector import Beside, Inspector

    https = tls is not None
    app = Beside(
        mcp_http.http_app(vault, host, port, token, https=https, **scope),  # refuses a bad token first
        Inspector(vault, host, port, token, allow_edits=args.allow_edits, https=https, **scope),
    )
    url = mcp_http.base_url(host, port, https)
    mcp_http.serve_app(
        app, host, port, [f"MCP over streamable HTTP at {url}/mcp", f"the web inspector at {url}/"], tls=tls
    )


def ui(vault: Vault, args: argparse.Namespace) -> None:
    try:
        from .inspector import serve_alone
        from .mcp import http as mcp_http
    except ImportError as exc:
        raise SetupError(f"{INSTALL_HINTS['ui']} ({exc})") from None
    host, port = http_address(args.http, allow_any_port=True)
    token, tls = mcp_http.resolve_token(args.token_file), mcp_http.tls_files(args.tls_cert, args.tls_key)
    vault.wait_for_keyword_index(timeout=0)  # long-lived: build the in-memory indexes in the background
    vault.wait_for_vector_index(timeout=0)
    serve_alone(
        vault,
        host,
        port,
        token,
        allow_edits=args.allow_edits,
        agent_id=args.agent,
        workspace_hash=args.workspace,
        tls=tls,
    )


def http_address(text: str, *, allow_any_port: bool = False) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets, ``[::1]:8765``; no host means 127.0.0.1). ``allow_any_port``:
    port 0 too (the system picks a free one)."""
    host, _, port = text.rpartition(":")
    low = 0 if allow_any_port else 1
    if not port.isdigit() or not low <= int(port) < 65536:
        raise VaultError(f"--http: expected HOST:PORT with a port from {low} to 65535, got {text!r}")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise VaultError(f"--http: write an IPv6 address in brackets, e.g. [::1]:{port}, got {text!r}")
    return host or "127.0.0.1", int(port)


SERVE = Plugin(
    "serve",
    "serve the vault over MCP (stdio, or streamable HTTP with the web inspector)",
    ABOUT,
    arguments,
    serve,
    creates=True,
    serves=True,
)
UI = Plugin("ui", "serve the web inspector alone and print its URL", UI_ABOUT, ui_arguments, ui, serves=True)
