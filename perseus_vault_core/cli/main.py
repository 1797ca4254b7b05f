"""The command line's entry: :func:`run` (the console script, ``perseus-vault``, and ``python -m
perseus_vault_core.cli``), :func:`main` (one command line, its exit status) and :func:`build_parser`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, NoReturn

from ..resident import client as resident

if TYPE_CHECKING:  # loaded by main(): a call the resident helper answers needs none of it (resident/)
    import argparse

    from ..facade.vault import Vault

__all__ = ["build_parser", "main", "run"]


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the built-in commands and every installed plugin's."""
    from .parser import build_parser as built

    return built()


def _error_line(text: str) -> str:
    """Messages may quote user text; keep the promise of one line per error, with no control character
    a terminal would act on."""
    from ..contract.text import escape_breaks, for_terminal

    return for_terminal(escape_breaks(text))


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
    from ..contract.errors import SetupError
    from ..facade.plugins import INSTALL_HINTS
    from .parser import Commands, builtins

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


def main(
    argv: Sequence[str] | None = None,
    *,
    vault: Vault | None = None,
    accept: Callable[[argparse.Namespace], None] | None = None,
) -> int:
    """Run one command line; its exit status. ``vault``: answer with this open vault instead of opening
    ``--db`` (the resident helper's, resident/server.py), after ``accept`` has seen the parsed call."""
    from ..contract.errors import VaultError
    from ..facade.vault import Vault, default_path

    argv = list(sys.argv[1:] if argv is None else argv)
    serving = False
    try:
        args = _parser_for(argv).parse_args(argv)
        serving = bool(getattr(args, "serves", False))
        if accept is not None:
            accept(args)  # raises resident.Refused (not an Exception): the call is answered elsewhere
        args.db = getattr(args, "db", None) or default_path()
        args.main = main  # the resident command answers later command lines with its vault
        args.json = getattr(args, "json", False)
        # A one-shot command answers with SQL; building the in-memory indexes would be wasted work.
        # A server is long-lived: it builds them. Only a write (or init, import, serve) creates a
        # vault; a read of a missing one is an error.
        # A server builds and saves its indexes; a one-shot call opens the saved ones, if any (a build
        # would die with the process, and a snapshot cut short by its exit would be wasted work).
        indexes: bool | Literal["saved"] = True if args.serves else "saved"
        if vault is not None:
            args.func(vault, args)
        else:
            with Vault(args.db, keyword_index=indexes, vector_index=indexes, create=args.creates) as opened:
                args.func(opened, args)
    except VaultError as exc:
        print(f"error: {_error_line(str(exc))}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # Ctrl-C: how a server is stopped, and how a person gives up on a command
        if os.environ.get("PERSEUS_VAULT_DEBUG"):
            raise
        print("perseus-vault: stopped" if serving else "perseus-vault: interrupted", file=sys.stderr)
        return 0 if serving else 130
    except Exception as exc:  # the CLI never shows a traceback unless asked
        if os.environ.get("PERSEUS_VAULT_DEBUG"):
            raise
        print(f"error: {type(exc).__name__}: {_error_line(str(exc))}", file=sys.stderr)
        return 1
    return 0


def run() -> NoReturn:
    """The console script: ``main``, then exit at once. The vault is closed by then and every
    write committed; skipping the interpreter's teardown (unloading the model runtime, collecting
    modules) saves about a tenth of a second per call, which ``prepare`` pays before every turn.
    A command the vault's resident helper can answer goes to it first (resident/client.py): the
    interpreter's start and a round trip, where answering alone loads the package, the model and the
    indexes."""
    try:
        answered = resident.answer(sys.argv[1:])
    except KeyboardInterrupt:  # Ctrl-C while the helper answers: nothing printed yet, nothing written
        os._exit(130)
    except Exception:  # the helper only saves time: anything unforeseen there, and the call answers alone
        answered = None
    code = main() if answered is None else answered
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass
    os._exit(code)
