"""Reports: computed in the background, served again until the store changes, one at a time, a few queued at
most, and given up when no page asks for them any more."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest

from perseus_vault_core import Cancelled, Vault
from perseus_vault_core.primitives.cancel import checkpoint
from perseus_vault_integrations.inspector import Inspector
from perseus_vault_integrations.inspector import reports as reports_module
from perseus_vault_integrations.inspector.reports import RETRY_AFTER_S, Busy, Reports
from perseus_vault_integrations.mcp.http import listen

from .conftest import Server


def test_a_report_is_kept_for_its_stamp_and_computed_again_after_a_write() -> None:
    reports, calls = Reports(wait_s=5), []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    first = reports.job("k", stamp=1, compute=compute)
    assert reports.wait(first) and first.future.result() == 1
    assert reports.job("k", stamp=1, compute=compute) is first  # the store did not change
    again = reports.job("k", stamp=2, compute=compute)  # it did
    assert reports.wait(again) and again.future.result() == 2
    fresh = reports.job("k", stamp=2, compute=compute, fresh=True)
    assert reports.wait(fresh) and fresh.future.result() == 3 and fresh.seconds() >= 0
    reports.close()


def test_a_slow_report_does_not_hold_the_page_and_is_not_started_twice() -> None:
    reports, release = Reports(wait_s=0.05), threading.Event()
    job = reports.job("slow", stamp=1, compute=lambda: release.wait(30))
    assert not reports.wait(job)  # the page shows "being computed" instead of waiting
    assert reports.job("slow", stamp=2, compute=lambda: 0, fresh=True) is job  # still running: no second one
    release.set()
    assert reports.wait(job) and job.future.result() is True
    reports.close()


def test_an_error_is_kept_for_the_page_to_show() -> None:
    reports = Reports(wait_s=5)

    def broken() -> None:
        raise ValueError("no")

    job = reports.job("bad", stamp=1, compute=broken)
    assert reports.wait(job) and isinstance(job.future.exception(), ValueError)
    reports.close()


def test_a_kept_answer_holds_until_the_stamp_changes_or_it_is_too_old() -> None:
    from perseus_vault_integrations.inspector.reports import Kept

    kept, reads = Kept(seconds=60), []

    def read() -> int:
        reads.append(1)
        return len(reads)

    assert kept.get("k", 1, read) == 1 and kept.get("k", 1, read) == 1  # read once
    assert kept.get("other", 1, read) == 2  # by key
    assert kept.get("k", 2, read) == 3  # a write since: read again
    old = Kept(seconds=0)
    assert old.get("k", 1, read) == 4 and old.get("k", 1, read) == 5  # past its age: read again


def _checking(release: threading.Event, started: threading.Event | None = None) -> Callable[[], str]:
    """A report that checks for cancellation between chunks (as hygiene does) until ``release`` is set."""

    def compute() -> str:
        if started is not None:
            started.set()
        while not release.wait(0.01):
            checkpoint()
        return "done"

    return compute


def test_the_queue_is_bounded_and_a_full_one_answers_busy() -> None:
    reports, release = Reports(wait_s=0.01, pending=2), threading.Event()
    running = reports.job("a", stamp=1, compute=_checking(release))
    waiting = reports.job("b", stamp=1, compute=_checking(release))
    with pytest.raises(Busy) as busy:
        reports.job("c", stamp=1, compute=lambda: "c")
    assert busy.value.retry_after_s > 0
    assert (
        reports.job("a", stamp=1, compute=lambda: "again") is running
    )  # asking for a queued one is no new job
    release.set()
    assert reports.wait(running) and reports.wait(waiting)
    third = reports.job("c", stamp=1, compute=lambda: "c")  # done ones leave the queue: room again
    assert reports.wait(third) and third.future.result() == "c"
    reports.close()


def test_a_report_nobody_asks_about_is_given_up() -> None:
    reports, release, started = (
        Reports(wait_s=0.01, pending=2, abandon_s=0.3),
        threading.Event(),
        threading.Event(),
    )
    calls: list[str] = []
    running = reports.job("a", stamp=1, compute=_checking(release, started))
    queued = reports.job("b", stamp=1, compute=lambda: calls.append("b"))
    assert started.wait(10)
    with pytest.raises(Busy):
        reports.job("c", stamp=1, compute=lambda: "c")
    time.sleep(0.5)  # no page asks about a or b
    fresh = reports.job("c", stamp=1, compute=lambda: "c")  # their places are free again
    assert reports.wait(fresh) and fresh.future.result() == "c"
    with pytest.raises(Cancelled):
        running.future.result(timeout=10)  # stopped at a checkpoint, never released
    assert queued.gone() and calls == []  # never started (cancelled, or gave up when its turn came)
    again = reports.job("a", stamp=1, compute=lambda: "anew")  # a page that comes back starts it anew
    assert reports.wait(again) and again.future.result() == "anew"
    reports.close()


def test_a_report_a_page_keeps_asking_about_is_not_given_up() -> None:
    reports, release = Reports(wait_s=0.05, abandon_s=0.3), threading.Event()
    job = reports.job("a", stamp=1, compute=_checking(release))
    for _ in range(12):  # 0.6 s of polling, twice abandon_s
        assert not reports.wait(job)
    release.set()
    assert reports.wait(job) and job.future.result() == "done"
    reports.close()


def test_a_report_that_falls_off_the_kept_list_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reports_module, "KEPT", 1)
    reports, release, started = Reports(wait_s=0.01, pending=2), threading.Event(), threading.Event()
    first = reports.job("a", stamp=1, compute=_checking(release, started))
    assert started.wait(10)
    reports.job("b", stamp=1, compute=lambda: "b")  # a is pushed off the list
    with pytest.raises(Cancelled):
        first.future.result(timeout=10)
    reports.close()


# --- over HTTP, on a store whose report takes a while ---------------------------------------------


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Vault]:
    """24,000 memories of one agent: a hygiene report takes about 3 s of a core. Imported (no relations
    judged on the way in: ``remember_many`` would spend over a minute judging them, and the report reads none)."""
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(3000)]
    with Vault(tmp_path_factory.mktemp("reports") / "large.db", embedder=False) as vault:
        vault.import_jsonl(
            json.dumps(
                {
                    "category": "note",
                    "key": f"k{i}",
                    "content": " ".join(rng.choices(vocab, k=12)),
                    "agent_id": "a",
                }
            )
            for i in range(24_000)
        )
        yield vault


@contextmanager
def inspecting(vault: Vault, reports: Reports) -> Iterator[tuple[Inspector, Server]]:
    """The inspector served with ``reports`` as its hygiene queue."""
    sock = listen("127.0.0.1", 0)
    app = Inspector(vault, "127.0.0.1", sock.getsockname()[1], None)
    app.reports = reports
    with Server(app, sock) as server:
        yield app, server


def test_over_http_a_full_queue_answers_503_and_closed_pages_free_it(large: Vault) -> None:
    # Two places, given up after a second unasked; pages that do not wait, so that the first report is
    # still being computed when the queue is full, and when it is given up.
    with inspecting(large, Reports(wait_s=0, pending=2, abandon_s=1.0)) as (app, server):
        for days in (1, 2):  # distinct queries: a report each
            page = httpx.get(f"{server.url}/hygiene?agent_id=a&min_age_days={days}", timeout=30)
            assert page.status_code == 200 and "Computing the report" in page.text
        first = app.reports._jobs[next(iter(app.reports._jobs))]
        busy = httpx.get(f"{server.url}/hygiene?agent_id=a&min_age_days=99", timeout=30)
        assert busy.status_code == 503 and busy.headers["retry-after"] == str(RETRY_AFTER_S)
        assert "reports are being computed" in busy.text
        time.sleep(1.5)  # every page went away
        page = httpx.get(f"{server.url}/hygiene?agent_id=a&min_age_days=99", timeout=30)
        assert page.status_code == 200  # their places are free
        with pytest.raises(Cancelled):  # and the report being computed stopped midway
            first.future.result(timeout=30)


def test_a_waiting_page_reloads_without_fresh(large: Vault) -> None:
    """fresh=1 in the reload would start the report again each time it is done: a page that never settles."""
    with inspecting(large, Reports(abandon_s=0.5)) as (_, server):
        page = httpx.get(f"{server.url}/hygiene?agent_id=a&min_age_days=3&fresh=1", timeout=30)
        assert "Computing the report" in page.text
        refresh = re.search(r'http-equiv="refresh" content="([^"]*)"', page.text)
        assert refresh is not None and "fresh" not in refresh.group(1)
        assert refresh.group(1) == "2; url=/hygiene?agent_id=a&amp;limit=100&amp;min_age_days=3"
