"""The saved indexes brought current when a process that wrote closes its vault.

A snapshot (:mod:`.snapshot`) is saved by a process that built or loaded an index and lived long enough
to save it: a process that imports 100,000 memories and exits never recalls, so it left none, and every
one-shot process after it (a CLI recall, ``prepare`` in a hook) answered by SQL, and a server's first
query paid a build. So a vault that wrote closes by settling its indexes (``Engine.close``): for each
index it was opened with, when the saved one is missing or far behind the change log, it is brought to
the log's end and saved, once, however many writes the process made.

"Far behind" is what a reader would replay at great cost: :data:`.mirror.SAVE_AFTER` entries, or a
hundredth of the rows, the threshold a reading process re-saves at. Nearer than that, the next process
replays the log from the snapshot (cheap), so a one-memory ``remember`` costs nothing more. A vault of
fewer than :data:`MIN_HEADS` memories is left alone: the SQL path answers those as fast as a snapshot.

Bringing an index current takes the cheapest way there: an index this process holds is followed to the
log's end; else the saved one is opened and the log replayed; else (none saved, or the replay too long)
it is built from the file, but only by a bulk writer, one whose writes moved the log by
:data:`.mirror.SAVE_AFTER` entries or more (an import, ``remember_many``, ``embed``, a ``migrate``
target): a build of 100,000 memories takes seconds, which a single ``remember`` or ``purge`` (which
deletes the saved files) should not pay. Each is done on a connection of its own, after the vault's
background threads have stopped, and never raises: the vault still closes, and the next reader still
answers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..primitives.background import Background
from ..primitives.dbapi import Connection
from ..storage.base import Backend
from . import snapshot
from .mirror import SAVE_AFTER, HeadMirror, NotYet

MIN_HEADS = 1_000  # below this a new process's SQL path is as fast as opening a snapshot


@dataclass
class Settled:
    """What closing did for one index: ``current`` (nothing to do), ``followed`` (this process's index,
    saved), ``replayed`` (the saved one plus the log), ``built``, ``left`` (a build, not worth it after a
    few writes), ``small`` (too few memories to bother), ``none`` (nothing to index yet) or ``failed: ...``."""

    name: str
    how: str
    seconds: float


def far_behind(position: int, saved: tuple[int, int] | None) -> bool:
    """Whether a snapshot at ``saved`` (its ``(seq, rows)``, or ``None``) is too far behind ``position`` for
    a reader to replay cheaply."""
    if saved is None:
        return True
    seq, rows = saved
    return seq > position or position - seq >= max(SAVE_AFTER, rows // 100)


def settle(backend: Backend, mirrors: Sequence[HeadMirror], since: int) -> list[Settled]:
    """Bring each of ``mirrors``' saved snapshots current where a reader would otherwise pay for it;
    ``since``: the log's end before this process first wrote."""
    done = []
    for mirror in mirrors:
        path = mirror.snapshot_path
        if path is None:
            continue
        started = time.perf_counter()
        try:
            how = _settle_one(backend, mirror, path, since)
        except Exception as exc:  # the vault must still close; the next reader answers by SQL or builds
            how = f"failed: {type(exc).__name__}: {exc}"
        done.append(Settled(mirror.NAME, how, time.perf_counter() - started))
    return done


def _settle_one(backend: Backend, mirror: HeadMirror, path: str, since: int) -> str:
    conn = backend.connect()
    try:
        with backend.read_snapshot(conn):
            position = backend.changes.position(conn)
            heads = backend.keyword.totals(conn)[0]
        if heads < MIN_HEADS:
            return "small"
        if not far_behind(position, snapshot.peek(path) if os.path.exists(path) else None):
            return "current"
        if mirror.ready and (saved := _follow(backend, mirror, conn)) is not None:
            return "followed" if saved else f"failed: {mirror.save_note}"
        fresh = _fresh(backend, mirror, path)
        if fresh.load_snapshot(conn) and (saved := _follow(backend, fresh, conn)) is not None:
            return "replayed" if saved else f"failed: {fresh.save_note}"
        if position - since < SAVE_AFTER:
            return "left"  # a few writes: a server builds it, a one-shot reader answers by SQL meanwhile
        fresh = _fresh(backend, mirror, path)
        try:
            fresh.build(conn)  # saves what it built
        except NotYet:
            return "none"
        if not fresh.ready:
            return f"failed: {fresh.disabled}"
        return "built" if fresh._saved_seq == fresh.seq else f"failed: {fresh.save_note}"
    finally:
        conn.close()


def _fresh(backend: Backend, mirror: HeadMirror, path: str) -> HeadMirror:
    """A new mirror of ``mirror``'s kind that saves to ``path``, on threads that are not closing (the
    vault's own stopped before this runs)."""
    fresh = type(mirror)(backend)
    fresh.snapshot_path, fresh.background = path, Background()
    fresh._purged_at = mirror._purged_at  # a purge by this process: nothing older may be saved
    return fresh


def _follow(backend: Backend, mirror: HeadMirror, conn: Connection) -> bool | None:
    """Bring a ready ``mirror`` to the end of the log and save it: whether it was saved, or ``None`` when
    the log is too long to replay (a build is then the cheaper way)."""
    with backend.read_snapshot(conn):
        with mirror._lock:
            if not mirror.ready or not mirror._sync(conn):
                return None
            seq = mirror.seq
            # Nothing else runs on this vault now (it is closing): the arrays are written as they are.
            state = mirror._state(private=True)
        marker = backend.changes.marker(conn, seq)
    return marker is not None and mirror._save(state, seq, marker)
