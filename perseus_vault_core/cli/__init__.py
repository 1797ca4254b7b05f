"""``perseus-vault``: the command line. A thin layer over :class:`Vault`.

Each command runs one verb of the registry (:mod:`perseus_vault_core.verbs`), and its arguments are
generated from that verb's params model (:mod:`.flags`): names, types, choices, defaults and help,
as the MCP tools' schemas are. Written by hand are only what a person reads: each command's output
(:mod:`.format`) and the paragraph its ``--help`` shows (:mod:`.commands`). Other packages add
commands through an entry point group (:mod:`.plugins`): the integrations add ``serve``.

Output is for people by default and JSON with ``--json``. Every failure is one line on stderr and
exit status 1, never a traceback (set ``PERSEUS_VAULT_DEBUG=1`` to see one). docs/cli.md is
generated from the parser (:mod:`.reference`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Literal, NoReturn

from ..errors import SetupError, VaultError
from ..vault import Vault, default_path
from .parser import Commands, build_parser, builtins
from ..plugins import INSTALL_HINTS
from ..text import escape_breaks

__all__ = ["build_parser", "main", "run"]


def _one_line(text: str) -> str:
    """Messages may quote user text; keep the promise of one line per error."""
    return escape_breaks(text)


def _command_word(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` (the first word that is not an option or ``--db``'s value)."""
    words = iter(argv)
    for token in words:
        if token == "--db":
            next(words, None)
        elif not token.startswith("-"):
            return token
    return None


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser ``argv`` needs: the built-in command it names, or every built-in command and the
    plugins' when it names none of those (reading entry points costs every one-shot call time)."""
    word = _command_word(argv)
    # A call naming a built-in command gets that command's parser alone, unless it first asks the
    # top level for its help (``-h recall`` lists every command).
    head = argv[: argv.index(word)] if word is not None else []
    built: Commands = builtins(word or "", only=not {"-h", "--help"} & set(head))
    if word is None or not built.knows(word):
        built.add_plugins()
        if word in INSTALL_HINTS and not built.knows(word):
            raise SetupError(INSTALL_HINTS[word])
    return built.parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser_for(argv).parse_args(argv)
        args.db = getattr(args, "db", None) or default_path()
        args.json = getattr(args, "json", False)
        # A one-shot command answers with SQL; building the in-memory indexes would be wasted work.
        # A server is long-lived: it builds them. Only a write (or init, import, serve) creates a
        # vault; a read of a missing one is an error.
        # A server builds and saves its indexes; a one-shot call opens the saved ones, if any (a build
        # would die with the process, and a snapshot cut short by its exit would be wasted work).
        indexes: bool | Literal["saved"] = True if args.serves else "saved"
        with Vault(args.db, keyword_index=indexes, vector_index=indexes, create=args.creates) as vault:
            args.func(vault, args)
    except VaultError as exc:
        print(f"error: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the CLI never shows a traceback unless asked
        if os.environ.get("PERSEUS_VAULT_DEBUG"):
            raise
        print(f"error: {type(exc).__name__}: {_one_line(str(exc))}", file=sys.stderr)
        return 1
    return 0


def run() -> NoReturn:
    """The console script: ``main``, then exit at once. The vault is closed by then and every
    write committed; skipping the interpreter's teardown (unloading the model runtime, collecting
    modules) saves about a tenth of a second per call, which ``prepare`` pays before every turn."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    os._exit(code)
