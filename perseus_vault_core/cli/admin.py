"""The commands that do more than hand their flags to the vault: standard input or a file of
messages in, standard output or a progress bar out, a key from a file, an exit status from a check.

Each handler takes the vault, the parsed arguments and the verb's arguments as given (``given``),
and returns what to print, or :data:`PRINTED` when it has printed already.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..contract.errors import InvalidInput
from ..facade.vault import Vault
from ..primitives import file_locks
from ..primitives.keys import read_key_file
from . import format

PRINTED = object()  # a handler's answer when it has printed its output itself
NEW_KEY_ENV = "PERSEUS_VAULT_NEW_KEY"


# --- flags of the command line's own ---------------------------------------------------------------


def progress_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--progress", action="store_true", help="show progress even when stderr is not a terminal")


def scan_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--all", action="store_true", help="follow the cursor to the end: one line (or JSON object) a memory"
    )


def rekey_flags(p: argparse.ArgumentParser) -> None:
    # Keys come from a file or the environment only: a key on the command line lands in shell
    # history and in every process listing.
    p.add_argument(
        "--new-key-file",
        dest="new_key_file",
        metavar="PATH",
        help=f"file holding the new key (default: ${NEW_KEY_ENV})",
    )


def messages_file(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        help="the messages as a JSON array or JSON Lines ({speaker, text, time, role, id}), "
        "or - for standard input",
    )


# --- handlers --------------------------------------------------------------------------------------


@contextmanager
def _progress_bar(args: argparse.Namespace, unit: str, desc: str) -> Iterator[Callable[[int, int], None]]:
    """A progress callback drawing on stderr (on a terminal, or with --progress; never with --quiet)."""
    from tqdm import tqdm

    bar = tqdm(
        total=0, unit=unit, desc=desc, disable=args.quiet or not sys.stderr.isatty() and not args.progress
    )

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield progress
    finally:
        bar.close()


def migrate_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("db", metavar="SRC", help="the vault to copy: a file, or a postgresql:// URL")
    p.add_argument(
        "target", metavar="DST", help="where to copy it: a new file, or an empty PostgreSQL database's URL"
    )


def migrate(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    from ..facade.migrate import migrate as copy

    return copy(vault, args.target)


def bind_role_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("role", help="an existing database role (CREATE ROLE name LOGIN PASSWORD '...')")
    p.add_argument(
        "--agent-id", dest="agent_id", metavar="AGENT", help="the agent it is bound to (default: none)"
    )
    p.add_argument(
        "--workspace-hash",
        dest="workspace_hash",
        metavar="WORKSPACE",
        help="the workspace it is bound to (default: none)",
    )


def bind_role(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    from ..facade.roles import bind_role as bind

    return bind(vault, args.role, agent_id=args.agent_id, workspace_hash=args.workspace_hash)


def resident_flags(p: argparse.ArgumentParser) -> None:
    from ..resident import server

    server.arguments(p)


def resident(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    """Serve the vault to later command lines (resident/server.py), through the CLI's own main."""
    from ..resident import server

    server.serve(vault, args, args.main)
    return PRINTED


def init(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    return vault.stats()  # opening it created it


def import_jsonl(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    source = given["source"]
    with _progress_bar(args, "rec", "import") as progress:
        return vault.import_jsonl(sys.stdin if source == "-" else source, progress=progress)


def export_jsonl(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    target = given.pop("target")
    if target == "-":
        vault.export_jsonl(sys.stdout, **given)
        return PRINTED
    return {"file": target, "lines": vault.export_jsonl(target, **given)}


def embed(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    with _progress_bar(args, "vec", "embed") as progress:
        return vault.embed(**given, progress=progress)


def scan(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    if not args.all:
        return vault.scan(**given)
    given.pop("cursor", None)
    cursor = None
    while True:  # --all streams every page: one JSON object (or line) per memory
        page = vault.scan(cursor=cursor, **given)
        for e in page.items:
            format.emit(args, e, lambda e, _: format.entity_line(e))
        if not page.has_more:
            return PRINTED
        cursor = page.next_cursor


def check(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    return _exit_1_unless_ok(args, vault.check(), format.check)


def reindex(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    with _progress_bar(args, "memory", "relations") as progress:
        report = vault.reindex(progress=progress)
    return _exit_1_unless_ok(args, report, format.reindex)


def _exit_1_unless_ok(args: argparse.Namespace, report: Any, show: format.Show) -> Any:
    format.emit(args, report, show)
    if not report.ok:
        raise SystemExit(1)
    return PRINTED


def backup(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    return {"backup": vault.backup(**given)}


def unlink(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    return {"closed": vault.unlink(**given)}


def rekey(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    if args.new_key_file:
        new_key = read_key_file(args.new_key_file, "--new-key-file")
    elif os.environ.get(NEW_KEY_ENV):
        new_key = os.environ[NEW_KEY_ENV]
    else:
        raise InvalidInput("new key", f"set {NEW_KEY_ENV} or pass --new-key-file PATH")
    vault.rekey(new_key)
    return {"rekeyed": vault.path}


def remember_conversation(vault: Vault, args: argparse.Namespace, given: dict[str, Any]) -> Any:
    return vault.remember_conversation(messages=read_messages(args.file), **given)


def standard_input(field: str) -> str:
    """What a ``-`` argument stands for: standard input, whole, less one final line break. A hook pipes the
    prompt so: an argument is capped by the operating system (about 128 KiB on Linux)."""
    if sys.stdin is None:  # no standard input at all (closed): nothing piped
        return ""
    try:
        text = sys.stdin.read()
        text.encode("utf-8")  # through the resident helper, bytes that were not UTF-8 arrive as surrogates
    except UnicodeError:
        raise InvalidInput(field, "standard input is not UTF-8 text") from None
    except OSError as exc:
        raise InvalidInput(field, f"cannot read standard input ({exc})") from None
    return text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text


def read_messages(source: str) -> list[Any]:
    """Messages from a file (or ``-``, standard input): a JSON array, or JSON Lines (one object a line)."""
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            file_locks.refuse_held(source, "file")  # never a descriptor of the vault's own file (its locks)
            with open(source, encoding="utf-8") as handle:
                text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("file", f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}") from None
    if text.lstrip().startswith("["):
        try:
            messages: list[Any] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                "messages", f"is not a valid JSON array ({exc.msg}, line {exc.lineno})"
            ) from None
        return messages
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput("messages", f"line {number} is not valid JSON ({exc.msg})") from None
    return out
