"""The commands the integrations add (commands.py): ``serve`` and ``ui``'s options, ``--http HOST:PORT``
read or refused, a token never taken from the command line, HTTP-only options refused without --http,
and what each command starts (stdio, MCP alone, MCP beside the inspector, the inspector alone). The
servers themselves run in tests/integrations/inspector/test_serving.py and mcp/test_server.py."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, SetupError, Vault, VaultError
from perseus_vault_integrations import commands
from perseus_vault_integrations.inspector import Beside
from perseus_vault_integrations.mcp import http as mcp_http
from perseus_vault_integrations.mcp import server as mcp_server

TOKEN = "s3cret-token-0123456789"


def parsed(adder: Any, *argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="perseus-vault")
    adder(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        (":9000", ("127.0.0.1", 9000)),
        ("0.0.0.0:1", ("0.0.0.0", 1)),
        ("[::1]:65535", ("[::1]", 65535)),
        ("example.com:443", ("example.com", 443)),
    ],
)
def test_an_http_address_is_host_and_port(text: str, address: tuple[str, int]) -> None:
    assert commands.http_address(text) == address


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("127.0.0.1", "a port from 1 to 65535"),
        ("127.0.0.1:0", "a port from 1 to 65535"),
        ("127.0.0.1:65536", "a port from 1 to 65535"),
        ("127.0.0.1:-1", "a port from 1 to 65535"),
        ("127.0.0.1:http", "a port from 1 to 65535"),
        ("::1:8765", "IPv6 address in brackets, e.g. [::1]:8765"),
    ],
)
def test_a_bad_http_address_is_refused_saying_what_to_write(text: str, says: str) -> None:
    with pytest.raises(VaultError, match="^--http: ") as caught:
        commands.http_address(text)
    assert says in str(caught.value) and repr(text) in str(caught.value)


def test_ui_may_ask_for_port_0() -> None:
    assert commands.http_address("127.0.0.1:0", allow_any_port=True) == ("127.0.0.1", 0)
    assert parsed(commands.ui_arguments).http == "127.0.0.1:8765"  # loopback by default


@pytest.mark.parametrize("adder", [commands.arguments, commands.ui_arguments])
def test_a_token_on_the_command_line_is_refused(adder: Any, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        parsed(adder, "--token", TOKEN)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--token is no longer accepted" in err and "--token-file" in err and TOKEN not in err


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Vault]:
    with Vault(tmp_path / "c.db", embedder=False) as v:
        yield v


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """What a command starts, recorded instead of served."""
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    for module, name in ((mcp_server, "serve_stdio"), (mcp_http, "serve_http"), (mcp_http, "serve_app")):
        monkeypatch.setattr(module, name, lambda *a, _n=name, **kw: calls.append((_n, a, kw)))
    monkeypatch.setenv(mcp_server.TOOLS_ENV, "core")  # recorded, so that what serve sets is undone
    monkeypatch.delenv(mcp_server.TOOLS_ENV)
    monkeypatch.delenv(mcp_http.TOKEN_ENV, raising=False)
    monkeypatch.delenv(mcp_http.TOKEN_FILE_ENV, raising=False)
    return calls


@pytest.mark.parametrize("flag", ["--token-file", "--tls-cert", "--tls-key"])
def test_http_options_without_http_are_refused_before_serving(vault: Vault, started: list, flag: str) -> None:
    with pytest.raises(VaultError, match=f"^{flag}: this is for HTTP; add --http HOST:PORT$"):
        commands.serve(vault, parsed(commands.arguments, flag, "x"))
    assert started == []


def test_an_unknown_tool_profile_is_refused_before_serving(vault: Vault, started: list) -> None:
    with pytest.raises(InvalidInput) as caught:
        commands.serve(vault, parsed(commands.arguments, "--tools", "recall,nope"))
    assert caught.value.field == "tools" and "nope" in caught.value.message and started == []


def test_serve_without_http_is_stdio_in_the_scope_with_the_tools_asked(vault: Vault, started: list) -> None:
    commands.serve(vault, parsed(commands.arguments, "--agent", "ops", "--tools", "all"))
    assert started == [("serve_stdio", (vault,), {"agent_id": "ops", "workspace_hash": None})]
    assert os.environ[mcp_server.TOOLS_ENV] == "all"


def test_serve_over_http_puts_the_inspector_beside_mcp_unless_no_ui(
    vault: Vault, started: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(mcp_http.TOKEN_ENV, TOKEN)
    commands.serve(vault, parsed(commands.arguments, "--http", "0.0.0.0:8765", "--workspace", "crm"))
    ((name, args, kw),) = started
    assert name == "serve_app" and isinstance(args[0], Beside) and args[1:3] == ("0.0.0.0", 8765)
    assert args[3] == [
        "MCP over streamable HTTP at http://0.0.0.0:8765/mcp",
        "the web inspector at http://0.0.0.0:8765/",
    ]
    assert kw == {"tls": None}
    started.clear()
    commands.serve(vault, parsed(commands.arguments, "--http", "[::1]:9000", "--no-ui"))
    assert started == [
        ("serve_http", (vault, "[::1]", 9000, TOKEN), {"tls": None, "agent_id": None, "workspace_hash": None})
    ]


def test_serve_off_loopback_without_a_token_refuses_to_start(vault: Vault, started: list) -> None:
    with pytest.raises(SetupError, match="without a bearer token"):
        commands.serve(vault, parsed(commands.arguments, "--http", "0.0.0.0:8765"))
    assert started == []
