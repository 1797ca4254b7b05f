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
time; the last few are kept.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as Pending
from dataclasses import dataclass, field
from typing import Any

KEPT = 16
KEPT_S = 60.0


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


@dataclass
class Job:
    """One report: what it was computed after (``stamp``), when it started, and its future."""

    stamp: Hashable
    future: Future[Any]
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None

    def finish(self, _: Future[Any]) -> None:
        self.finished = time.monotonic()

    def seconds(self) -> float:
        return (self.finished if self.finished is not None else time.monotonic()) - self.started


class Reports:
    def __init__(self, wait_s: float = 0.2) -> None:
        self.wait_s = wait_s
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="perseus-vault-report")
        self._lock = threading.Lock()
        self._jobs: OrderedDict[Hashable, Job] = OrderedDict()

    def job(self, key: Hashable, stamp: Hashable, compute: Callable[[], Any], *, fresh: bool = False) -> Job:
        """The report for ``key`` computed after ``stamp`` (the store's latest write): the kept one, or a new
        one started now (also when ``fresh``, unless one is still being computed)."""
        with self._lock:
            kept = self._jobs.get(key)
            running = kept is not None and not kept.future.done()
            if kept is None or (kept.stamp != stamp and not running) or (fresh and not running):
                kept = Job(stamp, self._pool.submit(compute))
                kept.future.add_done_callback(kept.finish)
                self._jobs[key] = kept
            self._jobs.move_to_end(key)
            while len(self._jobs) > KEPT:
                self._jobs.popitem(last=False)
            return kept

    def wait(self, job: Job) -> bool:
        """Wait up to ``wait_s`` for ``job``; whether it is done."""
        try:
            job.future.result(timeout=self.wait_s)
        except Pending:
            return False
        except Exception:  # its error is shown by the page that reads it
            pass
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
