"""Giving up on a long read: a caller that no longer wants its answer says so, and the work stops early.

A hygiene report weighs every memory against the others (seconds on a large store). The web inspector
computes one in the background for a page that may be closed meanwhile; it runs the verb inside
:func:`cancellable` with a test of whether anyone still waits, and the long loops call :func:`checkpoint`
between chunks, which raises :class:`Cancelled` once the test holds. Nothing is written by the verbs
that check, so stopping midway leaves nothing behind. Outside :func:`cancellable` a checkpoint costs
one context-variable read and never raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_given_up: ContextVar[Callable[[], bool] | None] = ContextVar("perseus_vault_given_up", default=None)


class Cancelled(Exception):
    """The caller of :func:`cancellable` gave up on the work; raised only inside it."""


@contextmanager
def cancellable(given_up: Callable[[], bool]) -> Iterator[None]:
    """Within the block (in this thread or task), work that checks stops with :class:`Cancelled` once
    ``given_up()`` is true."""
    token = _given_up.set(given_up)
    try:
        yield
    finally:
        _given_up.reset(token)


def checkpoint() -> None:
    """Raise :class:`Cancelled` if the caller gave up (see :func:`cancellable`)."""
    given_up = _given_up.get()
    if given_up is not None and given_up():
        raise Cancelled("the work was given up: nobody waits for its answer")
