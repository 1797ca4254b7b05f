"""The argument parser: a subcommand per entry of the command table, and the plugins' commands.

Every subcommand takes ``--db`` and ``--json`` before or after its name. Abbreviated options are
refused (``--lim`` is a misspelling, as an MCP tool would refuse it), and a parse error is one line
and exit status 1, like every other failure. The MCP tools' spelling of a command (``recall_when``)
and a verb's aliases (``context``) are accepted but not listed.
"""

from __future__ import annotations

import argparse
import difflib
from functools import partial
from typing import Any, NoReturn

from .. import __version__
from ..facade.plugins import Plugin, discover
from . import commands
from .commands import COMMANDS, GROUPS, Command
from .flags import add_fields

PROG = "perseus-vault"


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{"allow_abbrev": False, **kwargs})

    def error(self, message: str) -> NoReturn:  # one line, exit 1, like every other failure
        self.exit(1, f"error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """As argparse's, but an unrecognized option is named with the nearest one the command takes
        (``--limt``: did you mean ``--limit``?), as a misspelled argument is over MCP and in Python."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            options = _options(self, parsed)
            near = {
                word: found[0]
                for word in extras
                if word.startswith("-")
                for found in [difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.6)]
                if found
            }
            hint = (
                f" (did you mean {next(iter(near.values()))}?)"
                if len(near) == 1
                else " (did you mean " + ", ".join(f"{n} for {w}" for w, n in near.items()) + "?)"
                if near
                else ""
            )
            self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed


def _options(parser: argparse.ArgumentParser, parsed: argparse.Namespace) -> list[str]:
    """The option strings of the (sub)command ``parsed`` ran: the parser it names, at every level."""
    while True:
        chosen = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
        if chosen is None:
            return [o for o in parser._option_string_actions if o.startswith("--")]
        parser = chosen


class Commands:
    """The parser under construction: the top level, its subcommands and the options all share."""

    def __init__(self) -> None:
        self.common = Parser(add_help=False)
        self.common.add_argument(
            "--db",
            default=argparse.SUPPRESS,
            help="vault file or postgresql:// URL (default: $PERSEUS_VAULT_DB or perseus_vault.db)",
        )
        self.common.add_argument(
            "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
        )
        self.parser = Parser(
            prog=PROG, description="Long-term memory for AI agents in one SQLite file.", parents=[self.common]
        )
        self.parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
        self.sub: Any = self.parser.add_subparsers(
            dest="command", required=True, parser_class=Parser, metavar="command"
        )
        self.groups: dict[str, Any] = {}
        self.plugins: list[Plugin] = []

    def knows(self, word: str) -> bool:
        return word in self.sub.choices

    def add(self, command: Command, *, arguments: bool = True) -> None:
        """The command's parser; with ``arguments`` off, only its name and help (enough to list it,
        and all a call naming another command needs: generating arguments costs every call time)."""
        *group, word = command.name.split()
        spec = command.spec
        summary = command.summary or (spec.summary if spec is not None else "")
        about = command.about or (spec.description if spec is not None else summary)
        p: argparse.ArgumentParser = self._under(group).add_parser(
            word, parents=[self.common], help=summary, description=about
        )
        if arguments and spec is not None:
            add_fields(
                p,
                spec.params,
                command.fields,
                positional=command.positional,
                aliases=command.option_aliases(),
                optional=command.optional,
                piped=command.stdin,
            )
        if arguments and command.flags is not None:
            command.flags(p)
        p.set_defaults(func=partial(commands.invoke, command), creates=command.creates, serves=command.serves)
        if not group:
            for alias in command.called[1:]:
                self.sub._name_parser_map[alias] = p  # accepted, not listed

    def _under(self, group: list[str]) -> Any:
        if not group:
            return self.sub
        (name,) = group
        if name not in self.groups:
            summary, about = GROUPS[name]
            p = self.sub.add_parser(name, parents=[self.common], help=summary, description=about)
            self.groups[name] = p.add_subparsers(dest=f"{name}_action", required=True, parser_class=Parser)
        return self.groups[name]

    def add_plugins(self) -> None:
        for plugin in discover():
            if self.knows(plugin.name):
                continue  # a built-in command is never replaced
            p = self.sub.add_parser(
                plugin.name, parents=[self.common], help=plugin.summary, description=plugin.about
            )
            plugin.arguments(p)
            p.set_defaults(func=plugin.run, creates=plugin.creates, serves=plugin.serves)
            self.plugins.append(plugin)


def builtins(word: str | None = None, *, only: bool = False) -> Commands:
    """The built-in commands; given the command ``word`` a call names, only that command's
    arguments are generated (``None``: every command's). With ``only``, a ``word`` that names a
    built-in command (or group) gets that command's parser alone: all a call naming it needs, where
    building every command's parser (about forty) costs each one-shot call ~20 ms."""
    built = Commands()
    named = [command for command in COMMANDS if word in command.called] if only else []
    for command in named or COMMANDS:
        built.add(command, arguments=word is None or word in command.called)
    return built


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the built-in commands and every installed plugin's."""
    built = builtins()
    built.add_plugins()
    return built.parser


def listed(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every listed command by its words (``recall``, ``memory get``), hidden names left out."""
    out: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                sub = action.choices[choice.dest]
                words = sub.prog.removeprefix(PROG + " ")
                inner = listed(sub)
                out |= inner if inner else {words: sub}
    return out
