"""The engine's background threads, ended before a vault closes.

An open vault builds and saves its in-memory indexes on threads of their own (:mod:`indexes`), each with
a connection of its own. A thread still holding a connection when the process ends keeps SQLite from
checkpointing the WAL into the main file and deleting it, and a save cut short leaves a temporary file:
the vault would then be its ``-wal`` beside a stub of a main file, and a copy of the main file alone
would lose every memory. So every such thread is started here, and :meth:`Background.close` (run by
``Vault.close`` and at interpreter exit) asks them to stop at their next safe point, then waits for them.

A task calls :meth:`Background.check` between batches (where it holds no lock and is in no SQLite
call); once the vault is closing, that raises :class:`Stopped`, which the task's own ``finally`` blocks
unwind (ending its read snapshot, closing its connection, deleting its temporary file).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

from .forking import in_child

STOP_WAIT_S = 60.0  # the longest close() waits for one thread (a save of a million memories takes seconds)


class Stopped(BaseException):
    """The vault is closing: a background task ends at its next safe point. Not an ``Exception``: the
    tasks' own ``except Exception`` (a failed build, a best-effort save) must not take it for a failure."""


_ALL: weakref.WeakSet[Background] = weakref.WeakSet()


@in_child
def _forget_threads() -> None:
    """In a forked child: none of the parent's threads exist, and one may have held the lock."""
    for background in list(_ALL):
        background._lock = threading.Lock()
        background._threads = set()


class Background:
    """The background threads of one open vault."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._stopping = threading.Event()
        _ALL.add(self)

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def start(self, name: str, task: Callable[[], None]) -> bool:
        """Run ``task`` on a daemon thread of its own; False (nothing started) once the vault is closing."""

        def run() -> None:
            try:
                task()
            except Stopped:
                pass
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())

        with self._lock:
            if self._stopping.is_set():
                return False
            thread = threading.Thread(target=run, name=name, daemon=True)
            self._threads.add(thread)
            thread.start()
        return True

    def check(self) -> None:
        """Raise :class:`Stopped` when the vault is closing (call it only where stopping is safe)."""
        if self._stopping.is_set():
            raise Stopped

    def close(self, timeout: float = STOP_WAIT_S) -> None:
        """Start no more tasks, ask the running ones to stop, and wait for each (the caller's own
        thread excepted: a task cannot wait for itself)."""
        self._stopping.set()
        with self._lock:
            threads = [t for t in self._threads if t is not threading.current_thread()]
        for thread in threads:
            thread.join(timeout)
