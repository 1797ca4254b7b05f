"""primitives/background.py: a vault's background threads: each task on a named daemon thread, stopped at
its next safe point (``check``) when the vault closes, waited for, and none started once closing."""

from __future__ import annotations

import threading
import time

from perseus_vault_core.primitives.background import Background, Stopped


def test_a_task_runs_on_a_named_daemon_thread_and_close_waits_for_it() -> None:
    bg = Background()
    seen: list[tuple[str, bool]] = []
    release = threading.Event()

    def task() -> None:
        release.wait(10)
        time.sleep(0.05)
        seen.append((threading.current_thread().name, threading.current_thread().daemon))

    assert bg.start("perseus-vault-test", task) is True
    assert seen == [] and len(bg._threads) == 1
    release.set()
    bg.close()
    assert seen == [("perseus-vault-test", True)]  # close returned only once the task had finished
    assert bg._threads == set()  # a finished thread is forgotten


def test_a_looping_task_stops_at_its_next_check_and_its_cleanup_runs() -> None:
    bg = Background()
    started, cleaned, failed = threading.Event(), threading.Event(), []

    def task() -> None:
        try:
            while True:
                try:
                    bg.check()
                except Exception:  # a task's own failure handling does not swallow the stop
                    failed.append("caught")
                    raise
                started.set()
                time.sleep(0.001)
        finally:
            cleaned.set()

    bg.start("loop", task)
    assert started.wait(10)
    assert not bg.stopping
    bg.close(timeout=10)
    assert bg.stopping and cleaned.is_set() and failed == []
    assert not issubclass(Stopped, Exception)


def test_once_closing_no_task_starts() -> None:
    bg = Background()
    bg.close()
    ran: list[int] = []
    assert bg.start("late", lambda: ran.append(1)) is False
    time.sleep(0.05)
    assert ran == [] and bg._threads == set()
    bg.close()  # closing twice is fine


def test_a_task_may_close_its_own_vault_without_waiting_for_itself() -> None:
    bg = Background()
    done = threading.Event()

    def task() -> None:
        bg.close(timeout=30)  # would wait 30 s if it waited for its own thread
        done.set()

    began = time.monotonic()
    bg.start("self-closing", task)
    assert done.wait(10) and time.monotonic() - began < 5


def test_close_waits_no_longer_than_its_timeout_for_a_task_that_never_checks() -> None:
    bg = Background()
    hold = threading.Event()
    bg.start("stubborn", lambda: hold.wait(10))
    began = time.monotonic()
    bg.close(timeout=0.1)
    assert time.monotonic() - began < 2
    hold.set()
