"""Fork safety: a child forked while the engine's own background threads run never hangs.

``os.fork`` copies only the forking thread. Any lock another thread held at that instant stays
held in the child forever, with no thread to release it: SQLite's global mutexes (its allocator,
its page cache) while a background index build is inside a SQLite call, or a Python lock while a
build publishes its result. The child's first SQLite call, or first recall, would then wait forever.

The engine's background threads (the index builds, :mod:`indexes.mirror`) therefore run inside
:data:`GATE`: a shared section that a fork waits to be empty. A long task calls
:meth:`Gate.checkpoint` at points where it holds no lock and is in no SQLite call (between batches of
rows), so a fork waits for one batch, not for a whole build. Other modules register what to reset
in a child (fresh locks, a thread pool, inherited connections never to be used again) with
:func:`in_child`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager


class Gate:
    """Any number of background tasks inside at once; a fork waits until none is, and no task enters
    (or leaves a checkpoint) until the fork is done."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._inside = 0
        self._forking = False
        self._depth = threading.local()

    @contextmanager
    def inside(self) -> Iterator[None]:
        depth = getattr(self._depth, "n", 0)
        if depth == 0:
            with self._cond:
                while self._forking:
                    self._cond.wait()
                self._inside += 1
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            if depth == 0:
                with self._cond:
                    self._inside -= 1
                    self._cond.notify_all()

    def checkpoint(self) -> None:
        """Let a waiting fork happen now (the caller holds no lock and is in no SQLite call). A no-op
        outside the gate: a caller's own thread is not the engine's to pause."""
        if not getattr(self._depth, "n", 0):
            return
        with self._cond:
            if not self._forking:
                return
            self._inside -= 1
            self._cond.notify_all()
            while self._forking:
                self._cond.wait()
            self._inside += 1

    @property
    def busy(self) -> int:
        """How many tasks are inside now."""
        with self._cond:
            return self._inside

    def _before_fork(self) -> None:
        own = 1 if getattr(self._depth, "n", 0) else 0  # a task that forks itself does not wait for itself
        with self._cond:
            self._forking = True
            while self._inside > own:
                self._cond.wait()

    def _after_fork_in_parent(self) -> None:
        with self._cond:
            self._forking = False
            self._cond.notify_all()

    def _after_fork_in_child(self) -> None:
        # The tasks that were inside do not exist here; their condition's lock may be held by one.
        self._cond = threading.Condition(threading.Lock())
        self._inside = 0
        self._forking = False
        self._depth = threading.local()


GATE = Gate()

_CHILD_HOOKS: list[Callable[[], None]] = []


def in_child(hook: Callable[[], None]) -> Callable[[], None]:
    """Run ``hook`` in every forked child, after the gate is reset (usable as a decorator)."""
    _CHILD_HOOKS.append(hook)
    return hook


class Pool:
    """A thread pool started on first use; a forked child, which has none of its threads, starts anew."""

    def __init__(self, workers: int, name: str) -> None:
        self.workers, self.name = workers, name
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        in_child(self._forget)

    def get(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix=self.name)
            return self._executor

    def _forget(self) -> None:
        self._executor, self._lock = None, threading.Lock()


def _after_fork_in_child() -> None:
    GATE._after_fork_in_child()
    for hook in _CHILD_HOOKS:
        hook()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(
        before=GATE._before_fork,
        after_in_parent=GATE._after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )
