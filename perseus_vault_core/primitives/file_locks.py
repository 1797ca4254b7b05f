"""The files this process holds open through SQLite, and the rule that keeps their locks: no descriptor of
one of them (or of its ``-wal``, ``-shm`` or ``-journal``) is opened and closed outside SQLite while any
connection holds it.

SQLite coordinates processes with POSIX advisory locks, and POSIX drops *every* lock a process holds on
a file when the process closes *any* descriptor of that file, however it was opened ("How To Corrupt An
SQLite Database File", section 2.2). A vault that read its file's first bytes with ``open()`` while
another of its connections was open lost that connection's shared lock; the next process to close the
file then took itself for the last user, checkpointed, and deleted the ``-wal`` and ``-shm`` the first
process went on writing into: acknowledged writes lost and the file damaged. SQLite avoids this among
its own connections (it shares one descriptor per file within a library), so the vault's rule is:

- a connection is opened under :func:`opening` (one at a time in the process), which says whether the
  file is held already; only a file nobody here holds is looked at outside SQLite (its header, a copy of
  its first page for a key check), and the new connection is registered (:func:`hold`) before it takes
  any lock;
- every other read or write of a file a user names (an import's source, an export's target, a key file,
  memory files) passes :func:`refuse_held` first, which refuses a path that is, or is beside, a held file;
- all connections to one file in a process go through one SQLite library (two libraries keep two sets
  of locks, and one closing its descriptor drops the other's): :func:`opening` tells which holds it.

Pure but for ``os.stat`` and the process-wide registry (reset in a forked child, which holds no lock).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..contract.errors import InvalidInput
from .forking import in_child

FileId = tuple[int, int]  # (device, inode)
SIDE_FILES = ("-wal", "-shm", "-journal")  # what SQLite keeps beside a database file, by its name


@dataclass(frozen=True)
class Holding:
    """How this process holds a file: the SQLite library its connections use, whether they were opened
    with an encryption key, and the path it was first opened by (to name it in an error)."""

    library: str
    keyed: bool
    path: str


_lock = threading.Lock()
_opening = threading.Lock()  # one connection opened at a time: a look at the file and the registration
_held: dict[FileId, tuple[Holding, set[int]]] = {}
_tickets = iter(range(1, 1 << 62))


@in_child
def _fresh_after_fork() -> None:
    """A forked child holds no POSIX lock of its parent's (fcntl locks are not inherited)."""
    global _lock, _opening
    _lock, _opening = threading.Lock(), threading.Lock()
    _held.clear()


def file_id(path: str) -> FileId | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def holding(path: str) -> Holding | None:
    """How this process holds the file at ``path`` through SQLite, or ``None`` when it does not."""
    ident = file_id(path)
    if ident is None:
        return None
    with _lock:
        entry = _held.get(ident)
    return entry[0] if entry else None


@contextmanager
def opening() -> Iterator[None]:
    """Held while a connection is opened: from the look at its file to its :func:`hold`."""
    with _opening:
        yield


def hold(path: str, holder: object, library: str, keyed: bool) -> Callable[[], None]:
    """Register ``holder`` (a connection just opened to ``path``, before it takes any lock) and return what
    releases it, callable many times; it is also released when ``holder`` is collected unclosed."""
    ident = file_id(path)
    if ident is None:  # an in-memory database, or one SQLite will say it cannot open
        return lambda: None
    ticket = next(_tickets)
    with _lock:
        entry = _held.setdefault(ident, (Holding(library, keyed, os.path.realpath(path)), set()))
        entry[1].add(ticket)
    return weakref.finalize(holder, _release, ident, ticket)


def _release(ident: FileId, ticket: int) -> None:
    with _lock:
        entry = _held.get(ident)
        if entry is not None:
            entry[1].discard(ticket)
            if not entry[1]:
                del _held[ident]


def held_files() -> list[str]:
    """The paths of every file this process holds open through SQLite (for tests and diagnostics)."""
    with _lock:
        return [holding.path for holding, _ in _held.values()]


def refuse_held(path: str | os.PathLike[str], field: str) -> None:
    """Refuse ``path`` (named by the caller as ``field``) when it is a database file this process holds open
    through SQLite, or one of the files SQLite keeps beside it: reading or writing it outside SQLite
    would drop the locks that keep the vault whole (and writing would overwrite it)."""
    text = os.fspath(path)
    ident = file_id(text)
    real = os.path.realpath(text)
    # What SQLite keeps beside a database is named after it: the name less its suffix is the database, under
    # whatever name its folder has now (one renamed since the vault opened it, say).
    base = next((file_id(text[: -len(s)]) for s in SIDE_FILES if text.endswith(s)), None)
    with _lock:
        held = [(found, entry[0].path) for found, entry in _held.items()]
    for found, database in held:
        beside = {database + suffix for suffix in SIDE_FILES}
        if (
            ident == found
            or base == found
            or real in beside
            or (ident is not None and ident in {file_id(p) for p in beside})
        ):
            raise InvalidInput(
                field,
                f"{text!r} is the vault's own database file (or one SQLite keeps beside it, "
                f"{database!r}): choose another file",
            )
