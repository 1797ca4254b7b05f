"""The helper's side: ``perseus-vault resident`` serves one open vault, for one scope, to the CLI's later
calls, until it has been idle for ``--idle`` seconds (see the package's docstring).

It loads what a call would otherwise load (the model, the saved indexes, or builds them) before it
listens. Each caller is read on a thread of its own, within :data:`REQUEST_DEADLINE_S` for the whole
request, so a slow or silent caller holds nobody else; the commands then run one at a time: it checks
that the call is for its vault (the same file, not replaced since), its scope, its settings and its
version, and that the command line runs the command the request names, runs it through the CLI's own
``main`` on its open vault with the output captured (and the caller's standard input, for a ``-``
argument), and sends back the exit status and the output. Anything else, a malformed request included,
gets a refusal, and the CLI answers alone.

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
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..contract.errors import SetupError
from . import DEFAULT_IDLE_S, PROTOCOL, SERVED, Refused, identity, private_dir, socket_path
from .client import scan

if TYPE_CHECKING:
    from ..facade.vault import Vault

Main = Callable[..., int]
MAX_REQUEST = (
    4 << 20
)  # a command line, however long the operating system lets it be (standard input is not in it)
REQUEST_DEADLINE_S = 5.0  # a caller's whole request must arrive within this (a byte at a time holds nobody)
STDIN_DEADLINE_S = 10.0  # and the standard input a "-" argument reads, once the command asks for it
MAX_CALLERS = 16  # callers read at once; one more is closed at once (it answers alone)
INDEX_WAIT_S = 5.0  # how long start-up waits for an index to load or build before listening anyway


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agent-id", help="serve only calls for this agent_id (as their --agent-id)")
    p.add_argument("--workspace-hash", help="serve only calls for this workspace_hash")
    p.add_argument(
        "--idle",
        type=float,
        default=DEFAULT_IDLE_S,
        metavar="SECONDS",
        help=f"exit after this long without a call (default {DEFAULT_IDLE_S:g})",
    )
    p.add_argument(
        "--stop", action="store_true", help="stop the helper serving this vault and scope, if one runs"
    )


def serve(vault: Vault, args: argparse.Namespace, main: Main) -> None:
    """Serve ``vault`` (opened by the CLI for ``args.db``) until idle, stopped or replaced."""
    db = str(args.db)
    if "://" in db or db.startswith(("file:", ":memory:")) or vault.encrypted:
        raise SetupError(
            "a resident helper serves only a plaintext SQLite file (a PostgreSQL URL or an "
            "encrypted vault is answered by each CLI call alone)"
        )
    if not 0 < args.idle < float("inf"):  # NaN fails this too
        raise SetupError("--idle must be a positive number of seconds")
    folder = private_dir(create=True)
    if folder is None:
        raise SetupError(
            "no private folder for the helper's socket (set PERSEUS_VAULT_RUNTIME_DIR to a folder "
            "only you can reach, mode 0700)"
        )
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
    return (
        "stopped" if reply is not None and reply.get("stopped") else "no helper runs for this vault and scope"
    )


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
        self.command = ""  # the command the call being answered names
        self.bound = 0
        self.stopping = threading.Event()
        self.running = threading.Lock()  # one command at a time: each prints through the process's stdout
        self.callers = threading.BoundedSemaphore(MAX_CALLERS)
        self.busy = 0  # callers being read or answered: the helper is not idle while any is
        self.last = time.monotonic()
        self._state = threading.Lock()

    def run(self) -> None:
        started = time.perf_counter()
        self.warm()
        listener = self.listen()
        log(
            f"serving {self.ident['db']} (scope {self.ident['scope']}) at {self.path}; ready in "
            f"{time.perf_counter() - started:.2f} s; exits after {self.idle:g} s idle"
        )
        previous = signal.signal(signal.SIGTERM, _exit) if _main_thread() else None
        try:
            while not self.stopping.is_set():
                if self.idle_for() >= self.idle:
                    log(f"idle for {self.idle:g} s: exiting")
                    break
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                if not self.callers.acquire(blocking=False):
                    conn.close()  # too many callers at once: this one answers alone
                    continue
                self.arrived()
                threading.Thread(target=self.serve_one, args=(conn,), daemon=True).start()
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self.unlisten(listener)
            with self.running:  # a command still running finishes before the vault closes
                self.stopping.set()

    def idle_for(self) -> float:
        with self._state:
            return 0.0 if self.busy else time.monotonic() - self.last

    def arrived(self) -> None:
        with self._state:
            self.busy += 1

    def left(self) -> None:
        with self._state:
            self.busy -= 1
            self.last = time.monotonic()

    def serve_one(self, conn: socket.socket) -> None:
        try:
            with conn:
                if not self.handle(conn):
                    self.stopping.set()
        except Exception as exc:  # a caller must never take the helper down
            log(f"a call failed: {type(exc).__name__}: {exc}")
        finally:
            self.callers.release()
            self.left()

    def warm(self) -> None:
        """Load what the first call would: the saved indexes (or start building them) and the model."""
        engine = self.vault.engine
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
        listener.listen(MAX_CALLERS)
        listener.settimeout(0.25)
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
        stdin: list[int] = []
        try:
            request = _read(conn, time.monotonic() + REQUEST_DEADLINE_S, stdin)
        except OSError:
            _close_all(stdin)
            return True  # gone, or too slow: nothing to answer
        except ValueError as exc:
            _close_all(stdin)
            log(f"refused: {exc}")
            _send(conn, {"refused": str(exc)})
            return True
        try:
            return self.answer(conn, request, stdin[0] if len(stdin) == 1 else None)
        finally:
            _close_all(stdin)

    def answer(self, conn: socket.socket, request: dict[str, Any], stdin: int | None) -> bool:
        """Run a request that arrived whole; False when the helper should stop."""
        if request.get("stop") is True and request.get("protocol") == PROTOCOL:
            _send(conn, {"stopped": True})
            log("stopped")
            return False
        started = time.perf_counter()
        try:
            self.check(request)
            with self.running:
                if self.stopping.is_set():
                    raise Refused("the helper is stopping")
                if _gave_up(conn):  # its caller answered alone meanwhile: running it would do it twice
                    log(f"dropped {request['command']}: its caller left")
                    return True
                reply = self.run_command(request, stdin)
        except Refused as refused:
            log(f"refused: {refused}")
            _send(conn, {"refused": str(refused)})
            return (
                _file_id(self.ident["db"]) == self.file
            )  # a replaced vault: exit, a new helper opens the new one
        _send(conn, reply)
        log(
            f"answered {request['command']} ({reply['code']}) in {(time.perf_counter() - started) * 1000:.1f} ms"
        )
        return True

    def check(self, request: dict[str, Any]) -> None:
        """Refuse a call this helper must not answer."""
        if request.get("protocol") != PROTOCOL or request.get("version") != __version__:
            raise Refused(f"another version (protocol {request.get('protocol')}, {request.get('version')})")
        for field in ("db", "scope", "env"):
            if request.get(field) != self.ident[field]:
                raise Refused(f"another {field}: {request.get(field)!r}")
        argv, command = request.get("argv"), request.get("command")
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise Refused("argv is not a list of words")
        if not isinstance(request.get("cwd", "."), str):
            raise Refused("cwd must be text")
        if command not in SERVED:
            raise Refused(f"not a command it answers: {command!r}")
        if scan(argv)[0] != command:
            raise Refused(f"the command line does not run {command!r}")
        if _file_id(self.ident["db"]) != self.file:
            raise Refused("the vault file was replaced or removed since the helper opened it")

    def run_command(self, request: dict[str, Any], piped: int | None = None) -> dict[str, Any]:
        """The request's command line through the CLI's ``main`` on this vault, its output captured and its
        standard input the caller's (``piped``: the descriptor it handed over, read only by a ``-`` argument;
        none, an empty input)."""
        self.cwd, self.command = str(request.get("cwd") or "."), str(request["command"])
        out, err = io.StringIO(), io.StringIO()
        given: Any = io.StringIO("") if piped is None else Piped(piped, time.monotonic() + STDIN_DEADLINE_S)
        stdin, sys.stdin = sys.stdin, given
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = self.main(list(request["argv"]), vault=self.vault, accept=self.accept)
                except SystemExit as exit_:  # the parser's errors and --help, as the CLI exits on them
                    code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
                    if isinstance(exit_.code, str):
                        print(exit_.code, file=sys.stderr)
        finally:
            sys.stdin = stdin
            given.close()
        return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}

    def accept(self, args: argparse.Namespace) -> None:
        """The call as the CLI's parser reads it must be the one the request named: its command, its scope
        and, when it names one, its vault (a relative --db is the caller's, in the caller's folder). Without
        --db the caller's environment chose the vault: the request's db, checked already."""
        if getattr(args, "command", None) != self.command:
            raise Refused(f"the command line runs {getattr(args, 'command', None)!r}, not {self.command!r}")
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


def _read(conn: socket.socket, deadline: float, fds: list[int]) -> dict[str, Any]:
    """The caller's request, whole by ``deadline`` (OSError past it); ValueError for one too large or malformed
    (not JSON, nested past the parser's depth, not an object). The descriptors passed with it go in ``fds``."""
    chunks, size = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        conn.settimeout(left)
        chunk, passed, _, _ = socket.recv_fds(conn, 1 << 16, 2)
        fds.extend(passed)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_REQUEST:
            raise ValueError("request too large")
    try:
        request = json.loads(b"".join(chunks).decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError) as exc:  # RecursionError: brackets nested past the parser's depth
        raise ValueError(f"malformed request ({type(exc).__name__})") from None
    if not isinstance(request, dict):
        raise ValueError("malformed request (not an object)")
    return request


class Piped(io.TextIOBase):
    """A caller's standard input, handed over with its request: read whole, as UTF-8 (bytes that are not arrive
    as surrogates, which the command refuses as the CLI alone does), by ``deadline`` (an input that does not
    end by then is an error, so that it holds the helper's other callers no longer)."""

    def __init__(self, fd: int, deadline: float) -> None:
        self.fd, self.deadline = fd, deadline

    def read(self, size: int | None = -1) -> str:
        import select

        chunks: list[bytes] = []
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise OSError(f"standard input did not end within {STDIN_DEADLINE_S:g} s")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return b"".join(chunks).decode("utf-8", "surrogateescape")
            chunks.append(chunk)

    def readable(self) -> bool:
        return True


def _gave_up(conn: socket.socket) -> bool:
    """Whether the caller closed its end (it waited its time out and answers alone)."""
    import select

    poll = select.poll()
    poll.register(conn, select.POLLHUP | select.POLLERR)
    return any(events & (select.POLLHUP | select.POLLERR) for _, events in poll.poll(0))


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the caller gave up (it answers alone)
        conn.sendall(json.dumps(reply).encode("utf-8", "surrogatepass"))
