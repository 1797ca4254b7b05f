"""Commands other packages add to ``perseus-vault``'s command line, found through an entry point group.

The integrations add ``serve`` (the MCP server) and ``ui`` (the web inspector) this way: their ``pyproject.toml`` names a
:class:`Plugin` under ``[project.entry-points."perseus_vault.commands"]``, and the core finds it
without ever importing an integration. Entry points are read only when the command line needs
them (a command it does not know itself, ``--help``, the reference page), so a one-shot ``recall``
or ``prepare`` pays nothing for them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points

from .vault import Vault

GROUP = "perseus_vault.commands"
# The commands this distribution's own packages add, and what to install when one is missing.
INSTALL_HINTS = {
    "serve": 'serve needs the MCP server: pip install "perseus-vault[mcp]" (installed? reinstall it: its '
    "commands register when the package is installed)",
    "ui": 'ui needs the HTTP server the MCP extra brings: pip install "perseus-vault[mcp]" (installed? '
    "reinstall it: its commands register when the package is installed)",
}


@dataclass(frozen=True)
class Plugin:
    """A command another package adds: its arguments and what it does with the open vault."""

    name: str
    summary: str  # one line, for the list of commands
    about: str  # for --help and docs/cli.md
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[Vault, argparse.Namespace], None]
    creates: bool = False  # it may create the vault
    serves: bool = False  # long-lived: the vault builds its in-memory indexes (a one-shot command skips them)


def discover() -> list[Plugin]:
    """The plugins installed, by name; a package whose own dependencies are missing offers none."""
    found: dict[str, Plugin] = {}
    for point in entry_points(group=GROUP):
        try:
            plugin = point.load()
        except ImportError:
            continue
        if isinstance(plugin, Plugin):
            found.setdefault(plugin.name, plugin)
    return [found[name] for name in sorted(found)]
