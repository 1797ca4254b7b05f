"""Answers too slow to compute for every page: kept until the store's next write (docs/ui.md).

:class:`Kept` keeps reads that take a noticeable part of a page's time on a large store (the ``counts``
of 100,000 memories: about a tenth of a second) for the pages that ask them again, for as long as the
store's latest write is the one they were read after, and a minute at most (time alone moves memories
from active to expired).

A hygiene report weighs every memory of a tenant against the others: seconds at 100,000 memories (see
docs/benchmarks.md), far past what a page may take. So a page asks :class:`Reports` for it: a report
already computed for the same parameters after the store's latest write is served at once; otherwise
one is computed in a background thread, the page waits a moment for it, and if it is not ready shows
that it is being computed (reloading itself) instead of holding the request. One report is computed at a
time, a few more wait their turn, and one that no page asks about any more is given up; the last few
are kept.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import CancelledError as CancelledFuture
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as Pending
from dataclasses import dataclass, field
from typing import Any

from perseus_vault_core import Cancelled, cancellable

KEPT = 16
KEPT_S = 60.0
PENDING = 4  # reports being computed or waiting their turn, per queue
ABANDON_S = 10.0  # a report no page asked about for this long is given up (a waiting page asks every 2 s)
RETRY_AFTER_S = 5  # what a page refused for a full queue is told (Retry-After)


class Kept:
    """Answers by key, each kept while the stamp it was read under (the store's latest write) holds."""

    def __init__(self, seconds: float = KEPT_S) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._answers: OrderedDict[Hashable, tuple[Hashable, float, Any]] = OrderedDict()

    def get(self, key: Hashable, stamp: Hashable, read: Callable[[], Any]) -> Any:
        now = time.monotonic()
        with self._lock:
            kept = self._answers.get(key)
        if kept is not None and kept[0] == stamp and now - kept[1] < self.seconds:
            return kept[2]
        answer = read()
        with self._lock:
            self._answers[key] = (stamp, now, answer)
            self._answers.move_to_end(key)
            while len(self._answers) > KEPT * 4:
                self._answers.popitem(last=False)
        return answer


class Busy(Exception):
    """As many reports as a queue takes are being computed or wait their turn: the page is answered 503 and
    asked to come back after ``retry_after_s`` seconds."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"{PENDING} reports are being computed for other pages; try again in a few seconds")
        self.retry_after_s = retry_after_s


@dataclass
class Job:
    """One report: what it was computed after (``stamp``), when it started, when a page last asked for it,
    and its future."""

    stamp: Hashable
    abandon_s: float
    future: Future[Any] = field(init=False)
    started: float = field(default_factory=time.monotonic)
    asked: float = field(default_factory=time.monotonic)
    finished: float | None = None
    dropped: bool = False

    def finish(self, _: Future[Any]) -> None:
        self.finished = time.monotonic()

    def seconds(self) -> float:
        return (self.finished if self.finished is not None else time.monotonic()) - self.started

    def given_up(self) -> bool:
        """Whether nobody waits for it any more: dropped from the queue, or no page asked for it lately."""
        return self.dropped or time.monotonic() - self.asked > self.abandon_s

    def drop(self) -> None:
        """Give it up: a report not started never starts, one being computed stops at its next checkpoint."""
        self.dropped = True
        self.future.cancel()

    def gone(self) -> bool:
        """Whether it ended given up (a page asking again starts it anew)."""
        return self.future.cancelled() or (
            self.future.done() and isinstance(self.future.exception(), Cancelled)
        )


class Reports:
    """A queue of reports computed one at a time in a background thread, for pages that poll for them.

    At most ``pending`` reports are computed or wait their turn; a page that asks for another meanwhile gets
    :class:`Busy`. A report no page has asked about for ``abandon_s`` (a page polls every two seconds while it
    waits) is given up: it never starts, or stops at its next checkpoint (:func:`perseus_vault_core.cancellable`;
    the hygiene report checks every 1,024 memories). So closed pages, or a page of another site firing many
    distinct queries, cannot keep the worker busy for long.
    """

    def __init__(self, wait_s: float = 0.2, *, pending: int = PENDING, abandon_s: float = ABANDON_S) -> None:
        self.wait_s, self.pending, self.abandon_s = wait_s, pending, abandon_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perseus-vault-report")
        self._lock = threading.Lock()
        self._jobs: OrderedDict[Hashable, Job] = OrderedDict()

    def job(self, key: Hashable, stamp: Hashable, compute: Callable[[], Any], *, fresh: bool = False) -> Job:
        """The report for ``key`` computed after ``stamp`` (the store's latest write): the kept one, or a new
        one started now (also when ``fresh``, unless one is still being computed). :class:`Busy` when a new
        one is needed and the queue is full."""
        with self._lock:
            self._sweep()
            kept = self._jobs.get(key)
            running = kept is not None and not kept.future.done()
            if kept is None or kept.gone() or (not running and (kept.stamp != stamp or fresh)):
                if sum(not j.future.done() for j in self._jobs.values()) >= self.pending:
                    raise Busy(RETRY_AFTER_S)
                kept = self._start(stamp, compute)
                self._jobs[key] = kept
            kept.asked = time.monotonic()
            self._jobs.move_to_end(key)
            while len(self._jobs) > KEPT:
                self._jobs.popitem(last=False)[1].drop()  # a finished one loses nothing
            return kept

    def _start(self, stamp: Hashable, compute: Callable[[], Any]) -> Job:
        job = Job(stamp, self.abandon_s)

        def run() -> Any:
            if job.given_up():  # its page went away while it waited its turn
                raise Cancelled("nobody waits for this report any more")
            with cancellable(job.given_up):
                return compute()

        job.future = self._pool.submit(run)
        job.future.add_done_callback(job.finish)
        return job

    def _sweep(self) -> None:
        """Give up the unfinished reports no page asked about lately, so that they free their place at once."""
        for key, job in list(self._jobs.items()):
            if not job.future.done() and job.given_up():
                job.drop()
                del self._jobs[key]

    def wait(self, job: Job) -> bool:
        """Wait up to ``wait_s`` for ``job``; whether it is done (and not given up)."""
        job.asked = time.monotonic()
        try:
            job.future.result(timeout=self.wait_s)
        except Pending:
            return False
        except CancelledFuture:
            return False
        except Exception:  # its error is shown by the page that reads it
            pass
        return not job.gone()

    def close(self) -> None:
        for job in list(self._jobs.values()):
            job.drop()
        self._pool.shutdown(wait=False, cancel_futures=True)
