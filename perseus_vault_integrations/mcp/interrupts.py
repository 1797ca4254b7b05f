"""Ctrl-C while serving: a server stops on it with ``KeyboardInterrupt``, every time (the CLI prints one line).

Since Python 3.11, ``asyncio.run`` answers Ctrl-C by cancelling its main task and raises ``KeyboardInterrupt`` only
if that task then ends cancelled; a server that shuts down cleanly on the cancellation (the MCP stdio session, or
uvicorn re-raising the signal it caught as it finished) returns normally instead, now and then, by a race, and the
CLI could not tell a Ctrl-C from a client that hung up. While serving, Ctrl-C raises ``KeyboardInterrupt`` where
the main thread is, as before 3.11: asyncio leaves a handler that is not Python's default alone, and its runner
still cancels the other tasks and closes the loop on the way out.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


@contextmanager
def interruptible() -> Iterator[None]:
    """Within the block, Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` in the main thread (elsewhere: nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
