"""primitives/cancel.py: a checkpoint stops the work once its caller gave up, and only inside
``cancellable``."""

from __future__ import annotations

import threading

import pytest

from perseus_vault_core.primitives.cancel import Cancelled, cancellable, checkpoint


def test_a_checkpoint_outside_cancellable_never_raises() -> None:
    checkpoint()


def test_a_checkpoint_raises_once_the_caller_gives_up() -> None:
    waiting = [True]
    with cancellable(lambda: not waiting[0]):
        checkpoint()
        waiting[0] = False
        with pytest.raises(Cancelled):
            checkpoint()
    checkpoint()  # the test is gone with the block


def test_the_test_is_this_thread_s_own() -> None:
    seen: list[BaseException | None] = []

    def other() -> None:
        try:
            checkpoint()
            seen.append(None)
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertion
            seen.append(exc)

    with cancellable(lambda: True):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == [None]
