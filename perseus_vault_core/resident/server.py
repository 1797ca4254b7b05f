"""The helper's side: ``perseus-vault resident`` serves one open vault, for one scope, to the CLI's later
calls, until it has been idle for ``--idle`` seconds (see the package's docstring).

It loads what a call would otherwise load (the model, the saved indexes, or builds them) before it
listens, then answers one call at a time: it checks that the call is for its vault (the same file, not
replaced since), its scope, its settings and its version, runs the command line through the CLI's own
``main`` on its open vault with the output captured, and sends back the exit status and the output.
Anything else gets a refusal, and the CLI answers alone.

Who can reach it: the socket is made in the user's private folder (0700), is itself 0600, and on Linux
each caller's user id is checked (``SO_PEERCRED``) before a byte is read.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..contract.errors import SetupError
from . import DEFAULT_IDLE_S, PROTOCOL, SERVED, Refused, identity, private_dir, socket_path

if TYPE_CHECKING:
    from ..facade.vault import Vault

Main = Callable[..., int]
MAX_REQUEST = 16 << 20
READ_WAIT_S = 5.0  # a caller that connects and sends nothing is dropped after this long
INDEX_WAIT_S = 5.0  # how long start-up waits for an index to load or build before listening anyway


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent-id", help="serve only calls for this agent_id (as their --agent-id)")
    p.add_argument("--workspace-hash", help="serve only calls for this workspace_hash")
    p.add_argument("--idle", type=float, default=DEFAULT_IDLE_S, metavar="SECONDS",
                   help=f"exit after this long without a call (default {DEFAULT_IDLE_S:g})")
    p.add_argument("--stop", action="store_true", help="stop the helper serving this vault and scope, if one runs")


def serve(vault: Vault, args: argparse.Namespace, main: Main) -> None:
    """Serve ``vault`` (opened by the CLI for ``args.db``) until idle, stopped or replaced."""
    db = str(args.db)
    if "://" in db or db.startswith(("file:", ":memory:")) or vault.encrypted:
        raise SetupError("a resident helper serves only a plaintext SQLite file (a PostgreSQL URL or an "
                         "encrypted vault is answered by each CLI call alone)")
    if not 0 < args.idle < float("inf"):  # NaN fails this too
        raise SetupError("--idle must be a positive number of seconds")
    folder = private_dir(create=True)
    if folder is None:
        raise SetupError("no private folder for the helper's socket (set PERSEUS_VAULT_RUNTIME_DIR to a folder "
                         "only you can reach, mode 0700)")
    ident = identity(os.path.realpath(db), args.agent_id, args.workspace_hash)
    path = socket_path(folder, ident)
    if args.stop:
        print(_stop(path))
        return
    with _lock(path) as held:
        if not held:
            print(f"a helper already serves {ident['db']} for this scope")
            return
        Helper(vault, ident, path, main, args.idle).run()


def _stop(path: str) -> str:
    from .client import Failed, ask

    try:
        reply = ask(path, {"protocol": PROTOCOL, "stop": True})
    except Failed as exc:
        return f"the helper did not answer: {exc}"
    return "stopped" if reply is not None and reply.get("stopped") else "no helper runs for this vault and scope"


@contextlib.contextmanager
def _lock(path: str) -> Any:
    """One helper per socket: an exclusive lock on ``<socket>.lock`` for as long as it serves."""
    import fcntl

    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class Helper:
    def __init__(self, vault: Vault, ident: dict[str, Any], path: str, main: Main, idle: float) -> None:
        self.vault, self.ident, self.path, self.main, self.idle = vault, ident, path, main, idle
        self.file = _file_id(ident["db"])
        self.cwd = "."  # the folder of the call being answered (a relative --db is the caller's)
        self.bound = 0

    def run(self) -> None:
        started = time.perf_counter()
        self.warm()
        listener = self.listen()
        log(f"serving {self.ident['db']} (scope {self.ident['scope']}) at {self.path}; ready in "
            f"{time.perf_counter() - started:.2f} s; exits after {self.idle:g} s idle")
        previous = signal.signal(signal.SIGTERM, _exit) if _main_thread() else None
        last = time.monotonic()
        try:
            while time.monotonic() - last < self.idle:
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    continue
                with conn:
                    if not self.handle(conn):
                        break
                last = time.monotonic()
            else:
                log(f"idle for {self.idle:g} s: exiting")
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self.unlisten(listener)

    def warm(self) -> None:
        """Load what the first call would: the saved indexes (or start building them) and the model."""
        engine = self.vault._engine
        self.vault.wait_for_keyword_index(INDEX_WAIT_S)
        if engine.read(engine.backend.vectors.model) is not None:
            self.vault.wait_for_vector_index(INDEX_WAIT_S)
        if engine.embedder is not None:
            engine.embed_query("")  # loads the model and runs it once

    def listen(self) -> socket.socket:
        """Listen at ``self.path``: bound under a temporary name with 0600, then renamed, so that the
        name appears only once a call can be answered."""
        temporary = f"{self.path}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)
        try:
            listener.bind(temporary)
        finally:
            os.umask(mask)
        os.chmod(temporary, 0o600)
        listener.listen(16)
        listener.settimeout(1.0)
        os.replace(temporary, self.path)  # over a socket left by a helper that died (we hold the lock)
        self.bound = os.stat(self.path).st_ino
        return listener

    def unlisten(self, listener: socket.socket) -> None:
        listener.close()
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.bound:  # ours still (not one a later helper made)
                os.unlink(self.path)

    def handle(self, conn: socket.socket) -> bool:
        """Answer one caller; False when the helper should stop."""
        if not _same_user(conn):
            return True
        conn.settimeout(READ_WAIT_S)
        try:
            request = _read(conn)
        except (OSError, ValueError):
            return True
        if request.get("stop") is True and request.get("protocol") == PROTOCOL:
            _send(conn, {"stopped": True})
            log("stopped")
            return False
        started = time.perf_counter()
        try:
            self.check(request)
            self.cwd = str(request.get("cwd") or ".")
            reply = self.run_command([str(a) for a in request["argv"]])
        except Refused as refused:
            log(f"refused: {refused}")
            _send(conn, {"refused": str(refused)})
            return _file_id(self.ident["db"]) == self.file  # a replaced vault: exit, a new helper opens the new one
        _send(conn, reply)
        log(f"answered {request['command']} ({reply['code']}) in {(time.perf_counter() - started) * 1000:.1f} ms")
        return True

    def check(self, request: dict[str, Any]) -> None:
        """Refuse a call this helper must not answer."""
        if request.get("protocol") != PROTOCOL or request.get("version") != __version__:
            raise Refused(f"another version (protocol {request.get('protocol')}, {request.get('version')})")
        for field in ("db", "scope", "env"):
            if request.get(field) != self.ident[field]:
                raise Refused(f"another {field}: {request.get(field)!r}")
        if request.get("command") not in SERVED or not isinstance(request.get("argv"), list):
            raise Refused(f"not a command it answers: {request.get('command')!r}")
        if _file_id(self.ident["db"]) != self.file:
            raise Refused("the vault file was replaced or removed since the helper opened it")

    def run_command(self, argv: list[str]) -> dict[str, Any]:
        """``argv`` through the CLI's ``main`` on this vault, its output captured."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = self.main(argv, vault=self.vault, accept=self.accept)
            except SystemExit as exit_:  # the parser's errors and --help, as the CLI exits on them
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
                if isinstance(exit_.code, str):
                    print(exit_.code, file=sys.stderr)
        return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

    def accept(self, args: argparse.Namespace) -> None:
        """The call as the CLI's parser reads it must be the one the request named: its scope and, when
        it names one, its vault (a relative --db is the caller's, in the caller's folder). Without
        --db the caller's environment chose the vault: the request's db, checked already."""
        scope = [getattr(args, "agent_id", None), getattr(args, "workspace_hash", None)]
        if scope != self.ident["scope"]:
            raise Refused(f"another scope: {scope!r}")
        db = getattr(args, "db", None)
        if db is not None and os.path.realpath(os.path.join(self.cwd, str(db))) != self.ident["db"]:
            raise Refused(f"another vault: {db!r}")


def log(message: str) -> None:
    print(f"perseus-vault resident: {message}", file=sys.__stderr__, flush=True)


def _exit(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # SIGTERM: leave through run()'s cleanup (the socket goes)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def _same_user(conn: socket.socket) -> bool:
    """Whether the caller runs as this user (Linux tells; elsewhere the socket's 0600 in a 0700 folder)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return bool(uid == os.geteuid())


def _read(conn: socket.socket) -> dict[str, Any]:
    chunks, size = [], 0
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("request too large")
    request = json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
    if not isinstance(request, dict):
        raise ValueError("not a request")
    return request


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the caller gave up (it answers alone)
        conn.sendall(json.dumps(reply).encode("utf-8", "surrogatepass"))

