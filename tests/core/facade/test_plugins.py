"""Commands other packages add through the entry point group perseus_vault.commands: the
integrations' serve, and what the command line says when it is missing
(perseus_vault_core/facade/plugins.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.cli import parser as cli_parser
from perseus_vault_core.facade.plugins import GROUP, Plugin, discover

from ..cli.test_main import _clean_env, assert_ok, assert_one_line_error, cli, db, keyword_only  # noqa: F401

INSTALL = 'pip install "perseus-vault[mcp]"'


def test_the_integrations_register_serve() -> None:
    names = [p.name for p in discover()]
    assert "serve" in names, f"no {GROUP} entry point: run pip install -e . (pyproject.toml registers it)"


def test_serve_is_listed_and_takes_its_flags(cli: Any) -> None:  # noqa: F811
    listed = assert_ok(cli("--help")).out
    assert "serve" in listed
    usage = assert_ok(cli("serve", "--help")).out
    for flag in ("--http", "--tools", "--agent", "--workspace", "--token-file"):
        assert flag in usage
    assert "--token " not in usage  # refused, never listed


def test_without_the_plugin_serve_names_what_to_install(
    cli: Any,
    db: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli_parser, "discover", lambda: [])
    line = assert_one_line_error(cli("--db", db, "serve", "--http", "127.0.0.1:8765"))
    assert INSTALL in line
    assert not Path(db).exists()
    assert "serve" not in assert_ok(cli("--help")).out


def test_without_the_mcp_extra_serve_names_what_to_install(
    cli: Any,
    db: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import perseus_vault_integrations

    # as if the mcp SDK were not installed: the package that needs it cannot be imported
    monkeypatch.setitem(sys.modules, "perseus_vault_integrations.mcp", None)
    monkeypatch.delattr(perseus_vault_integrations, "mcp", raising=False)
    assert INSTALL in assert_one_line_error(cli("--db", db, "serve"))


def test_a_one_shot_command_never_reads_entry_points(
    cli: Any,
    db: str,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse() -> list[Plugin]:
        raise AssertionError("entry points read for a built-in command")

    monkeypatch.setattr(cli_parser, "discover", refuse)
    assert_ok(cli("--db", db, "remember", "note", "k", "serve is a word, not the command"))
    assert_ok(cli("--db", "serve", "--db", db, "recall", "word"))  # --db's value is not the command


def test_a_plugin_adds_a_command(cli: Any, db: str, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    def count(vault: Vault, args: argparse.Namespace) -> None:
        print(f"{args.greeting}: {vault.stats().entities} memories")

    def arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("--greeting", default="hello")

    plugin = Plugin("count", "count the memories", "Counts the memories.", arguments, count)
    recall = Plugin("recall", "a plugin cannot replace a built-in command", "", arguments, count)
    monkeypatch.setattr(cli_parser, "discover", lambda: [plugin, recall])
    assert_ok(cli("--db", db, "init"))
    assert assert_ok(cli("--db", db, "count", "--greeting", "hi")).out == "hi: 0 memories\n"
    assert assert_ok(cli("--db", db, "recall", "x")).out == "no matches (fts5)\n"
    assert "count the memories" in assert_ok(cli("--help")).out
