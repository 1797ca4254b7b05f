"""Reports: computed in the background, served again until the store changes, one at a time."""

from __future__ import annotations

import threading

from perseus_vault_integrations.inspector.reports import Reports


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
