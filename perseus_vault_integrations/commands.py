"""Commands the integrations add to ``perseus-vault``: ``serve``, the vault as an MCP server.

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
    "to a scope. --tools chooses which tools it offers: core (the default, a compact set), all, or a "
    "comma-separated list of verbs. See docs/mcp.md.")


class _TokenOnCommandLine(argparse.Action):
    """``--token`` is gone: any user on the machine can read a process's arguments (``ps``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        parser.error("--token is no longer accepted, since the command line is visible to every user (ps); "
                     "set PERSEUS_VAULT_HTTP_TOKEN, or put the token in a file and pass --token-file PATH")


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tools", help="tool profile: core (default), all, or a comma-separated list of verbs")
    p.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP instead of stdio (loopback by default)")
    p.add_argument("--token-file", dest="token_file", metavar="PATH",
                   help="file holding the bearer token HTTP clients must send (default: $PERSEUS_VAULT_HTTP_TOKEN, "
                        "or the file $PERSEUS_VAULT_HTTP_TOKEN_FILE names)")
    p.add_argument("--token", action=_TokenOnCommandLine, help=argparse.SUPPRESS)
    p.add_argument("--agent", help="bind the server to this agent_id (no argument can escape it)")
    p.add_argument("--workspace", help="bind the server to this workspace_hash")


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
    if args.http is None and args.token_file is not None:
        raise VaultError("--token-file: a token is for HTTP; add --http HOST:PORT")
    address, token = None, None
    if args.http is not None:  # checked before the indexes start building in the background
        address, token = http_address(args.http), mcp_http.resolve_token(args.token_file)
    # A server is long-lived: build the in-memory indexes now, in the background (SQL answers meanwhile).
    vault.wait_for_keyword_index(timeout=0)
    vault.wait_for_vector_index(timeout=0)
    if address is None:
        mcp_server.serve_stdio(vault, **scope)
        return
    host, port = address
    mcp_http.serve_http(vault, host, port, token, **scope)


def http_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets, ``[::1]:8765``; no host means 127.0.0.1)."""
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise VaultError(f"--http: expected HOST:PORT with a port from 1 to 65535, got {text!r}")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise VaultError(f"--http: write an IPv6 address in brackets, e.g. [::1]:{port}, got {text!r}")
    return host or "127.0.0.1", int(port)


SERVE = Plugin("serve", "serve the vault over MCP (stdio, or streamable HTTP)", ABOUT, arguments, serve,
               creates=True, serves=True)
