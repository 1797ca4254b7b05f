"""The CLI's side of the resident helper: hand a command line to the helper of its vault and scope, and
print its answer; ``None`` whenever the CLI must answer alone (see the package's docstring).

This runs in every CLI process before anything else is imported, so it reads the command line by hand
(the command word, ``--db``, ``--agent-id``, ``--workspace-hash``, as the parser reads them: abbreviated
options are refused there, so an exact word is the only spelling) and imports only the standard library;
the helper checks every claim against its own before it answers.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any

from .. import __version__
from . import (
    ALONE_ENV,
    DEFAULT_IDLE_S,
    DEFAULT_PATH,
    ENV,
    IDLE_ENV,
    PROTOCOL,
    SERVED,
    identity,
    private_dir,
    socket_path,
)

REPLY_WAIT_S = 30.0  # the longest a call waits for the helper's answer before answering alone
START_WAIT_S = 20.0  # the longest a call waits for a helper it started to listen
MAX_REPLY = 64 << 20


class Failed(Exception):
    """The helper was reached but gave no whole answer (it died, or is stuck): answer alone."""


def scan(argv: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """The command word of ``argv`` and the values of the options the helper is chosen by (the last of
    each, as argparse keeps), read up to ``--``."""
    command: str | None = None
    options: dict[str, str] = {}
    wanted = ("--db", "--agent-id", "--workspace-hash")
    words = iter(argv)
    for token in words:
        if token == "--":
            break
        name, eq, value = token.partition("=")
        if name in wanted:
            found = value if eq else next(words, None)
            if found is None:
                return None, {}  # the parser will say what is missing
            options[name] = found
        elif command is None and not token.startswith("-"):
            command = token
    return command, options


def answer(argv: Sequence[str]) -> int | None:
    """Run ``argv`` in the helper of its vault and scope and print what it printed; its exit status, or
    ``None`` when the CLI must answer alone (no helper, not allowed, or one that could not answer)."""
    mode = os.environ.get(ENV, "")
    if mode == "0" or any(os.environ.get(name) for name in ALONE_ENV):
        return None
    command, options = scan(argv)
    if command not in SERVED or "-h" in argv or "--help" in argv:
        return None
    db = options.get("--db") or os.environ.get("PERSEUS_VAULT_DB") or DEFAULT_PATH
    if "://" in db or db.startswith(("file:", ":memory:")):
        return None  # PostgreSQL, or an SQLite URI: answered alone
    real = os.path.realpath(db)
    if not os.path.isfile(real):
        return None  # the CLI says there is no vault
    folder = private_dir(create=mode == "1")
    if folder is None:
        return None
    ident = identity(real, options.get("--agent-id"), options.get("--workspace-hash"))
    path = socket_path(folder, ident)
    request = {
        "protocol": PROTOCOL,
        "version": __version__,
        **ident,
        "command": command,
        "argv": list(argv),
        "cwd": os.getcwd(),
    }
    stdin = _stdin() if "-" in argv else None  # what a "-" argument reads, handed over unread
    try:
        reply = ask(path, request, stdin)
        if reply is None and mode == "1" and start(path, ident):
            reply = ask(path, request, stdin)
    except Failed:
        return None
    if reply is None or "code" not in reply:
        return None  # refused: not this helper's vault, scope, settings or version
    try:  # answered: whatever happens now, the command is not run again alone
        for stream, text in ((sys.stdout, reply.get("stdout", "")), (sys.stderr, reply.get("stderr", ""))):
            if text:
                stream.write(text)
                stream.flush()
    except BrokenPipeError:  # a reader that stopped early (| head), as the CLI alone takes it
        return 0
    return int(reply["code"])


def _stdin() -> int | None:
    """This process's standard input, as a descriptor to hand to the helper with the request (``None`` when
    it has none): the helper reads it only if the command reads a ``-`` argument, and when the helper does not
    answer, it is still unread for the CLI alone."""
    if sys.stdin is None:
        return None
    try:
        return sys.stdin.fileno()
    except (OSError, ValueError):
        return None


def ask(path: str, request: dict[str, Any], stdin: int | None = None) -> dict[str, Any] | None:
    """Send ``request`` (and the descriptor ``stdin``, passed over the socket) to the helper at ``path``; its
    reply, ``None`` when none listens there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            return None  # none, or one that exited and left its socket
        except OSError as exc:  # too long a path, no permission: not a helper this call can use
            raise Failed(str(exc)) from None
        sock.settimeout(float(os.environ.get("PERSEUS_VAULT_RESIDENT_TIMEOUT") or REPLY_WAIT_S))
        try:
            data = json.dumps(request).encode("utf-8", "surrogatepass") + b"\n"
            if stdin is not None:
                sent = socket.send_fds(sock, [data[:1]], [stdin])  # the descriptor rides with the first byte
                data = data[sent:]
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            chunks, size = [], 0
            while chunk := sock.recv(1 << 16):
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY:
                    raise Failed("reply too large")
            reply = json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
        except (OSError, ValueError) as exc:  # reset, timed out, cut short: the helper died or is stuck
            raise Failed(str(exc)) from None
        if not isinstance(reply, dict):
            raise Failed("not a reply")
        return reply
    finally:
        sock.close()


def start(path: str, ident: dict[str, Any]) -> bool:
    """Start a helper for ``ident`` (``perseus-vault resident``, in a session of its own, so that it
    outlives this call and no hook waits for it) and wait for it to listen; False when it did not."""
    import subprocess

    scope: list[str] = []
    for flag, value in zip(("--agent-id", "--workspace-hash"), ident["scope"]):
        if value is not None:
            scope += [flag, value]
    idle = os.environ.get(IDLE_ENV) or str(DEFAULT_IDLE_S)
    command = [
        sys.executable,
        "-m",
        "perseus_vault_core.cli",
        "resident",
        "--db",
        ident["db"],
        *scope,
        "--idle",
        idle,
    ]
    log = os.open(path + ".log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        helper = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return False
    finally:
        os.close(log)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True  # listening: a helper shows its socket under this name only once it listens
        if helper.poll() not in (None, 0):
            return False  # it could not start (its log says why); 0: another call's helper is starting
        time.sleep(0.01)
    return False
