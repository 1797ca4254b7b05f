"""In-memory mirrors of the current heads, kept true to the file through the ``head_changes`` log.

The keyword index (:mod:`.keyword`) and the vector index (:mod:`.vector`) are both
mirrors: answers computed in memory for speed, about data whose source of truth is the SQLite
file. This module is what they share:

- rows: per-head arrays (version id, entity id, scope codes, alive) that grow in place;
- building from one read snapshot, on a background thread of its own;
- following the log: every change to the set of heads (and every vector written for a head)
  is logged by the writing transaction; before answering, a mirror applies the entries up to
  the reader's own snapshot, under one lock with the ranking, so it answers for exactly the
  data that reader sees, whichever process wrote it. A reader behind the mirror, or a mirror
  that cannot catch up, gets ``None`` and the SQL path answers instead;
- scope: each row's agent and workspace as codes, so a scoped search ranks only its tenant.

Log ops: ``+1`` a version became a head, ``-1`` it stopped being one, ``0`` the indexes were
rebuilt (mirrors rebuild too), ``2`` a head's vector was (re)written, ``3`` every vector was
dropped for a re-embed (vector mirrors rebuild).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..dbapi import Connection
from ..forking import GATE, in_child
from ..storage.base import OP_GONE, OP_HEAD, OP_REBUILT, OP_VECTOR, Backend


CHECKPOINT_ROWS = 1024  # a fork waits for at most this many rows of a build

_MIRRORS: weakref.WeakSet[HeadMirror] = weakref.WeakSet()


@in_child
def _forget_builds() -> None:
    """In a forked child: no build thread exists, and a lock may have been held by a thread that is
    gone (a query following the log). Every mirror starts over: the SQL path answers, then a build."""
    for mirror in list(_MIRRORS):
        mirror._lock = threading.Lock()
        mirror._building = False
        mirror.ready = False


class NotYet(Exception):
    """A mirror has nothing to build from yet (e.g. no vectors): not a failure, try again later."""


class Rows:
    """Per-row arrays that grow in place (capacity doubling), so a write costs O(1), not O(rows)."""

    def __init__(self, capacity: int = 1024) -> None:
        self.n = 0
        self.vids = np.zeros(capacity, dtype=np.int64)
        self.entities = np.zeros(capacity, dtype=np.int64)
        self.agents = np.zeros(capacity, dtype=np.int32)
        self.workspaces = np.zeros(capacity, dtype=np.int32)
        self.alive = np.zeros(capacity, dtype=bool)

    def append(self, vid: int, entity: int, agent: int, workspace: int) -> int:
        if self.n == len(self.vids):
            for name in ("vids", "entities", "agents", "workspaces", "alive"):
                old = getattr(self, name)
                grown = np.zeros(2 * len(old), dtype=old.dtype)
                grown[: len(old)] = old
                setattr(self, name, grown)
        slot = self.n
        self.vids[slot], self.entities[slot], self.agents[slot] = vid, entity, agent
        self.workspaces[slot], self.alive[slot] = workspace, True
        self.n += 1
        return slot


def grow(array: np.ndarray, needed: int) -> np.ndarray:
    """``array`` with room for ``needed`` rows along axis 0 (doubling), contents kept."""
    if needed <= len(array):
        return array
    grown = np.zeros((max(needed, 2 * len(array)), *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class HeadMirror:
    """Base of the mirrors. Subclasses say which columns they need and how to index a row.

    Subclass hooks (all called with the lock held, or before the mirror is published):

    - ``FEED``: which columns each head comes with (the change log's ``text`` or ``vector`` feed);
    - ``_clear()``: set up empty indexed state (the constructor calls it);
    - ``_index(slot, values)``: index one new head (``values`` are the ``COLUMNS`` values);
    - ``_forget(slot)``: a head stopped being one (its ``alive`` flag is already cleared);
    - ``_finish(conn, seq)``: after a build; return a reason to refuse serving, or ``None``;
    - ``_vector_written(slot, values)``: a head's vector changed (op 2); default ignores it.
    """

    FEED = "text"
    NAME = "mirror"
    HANDLES_VECTORS = False  # whether op 2 concerns this mirror
    REBUILD_ON: tuple[int, ...] = (OP_REBUILT,)

    def __init__(self, backend: Backend) -> None:
        _MIRRORS.add(self)
        self.backend = backend
        self._lock = threading.Lock()
        self.ready = False
        self.disabled: str | None = None
        self._disabled_at: int | None = None  # log position when the mirror gave up
        self._building = False
        self.seq = 0
        self.rows = Rows()
        self._slot_of: dict[int, int] = {}
        self._agent_code: dict[str, int] = {}
        self._workspace_code: dict[str, int] = {}
        self.dead = 0

    # -- hooks --

    def _clear(self) -> None:
        raise NotImplementedError

    def _index(self, slot: int, values: Sequence[Any]) -> None:
        raise NotImplementedError

    def _forget(self, slot: int) -> None:
        pass

    def _finish(self, conn: Connection, seq: int) -> str | None:
        return None

    def _vector_written(self, slot: int, values: Sequence[Any]) -> None:
        pass

    def _prepare(self, conn: Connection) -> None:
        """Anything to set up on the building connection before its snapshot starts."""

    # -- building --

    def start_background_build(self, connect: Callable[[], Any]) -> None:
        """Build on a thread of its own (its own connection), once."""
        with self._lock:
            if self.ready or self._building or self.disabled:
                return
            self._building = True

        def run() -> None:
            with GATE.inside():  # a fork waits for this build to reach a checkpoint (forking.py)
                conn = None
                try:
                    conn = connect()
                    self.build(conn)
                except NotYet:
                    pass  # nothing to mirror yet; a later recall tries again
                except Exception as exc:  # the SQL path keeps answering; stats() shows why
                    with self._lock:
                        self.disabled = f"build failed: {type(exc).__name__}: {exc}"
                        self._disabled_at = 0  # retry after the next reindex
                finally:
                    self._building = False
                    if conn is not None:
                        conn.close()

        threading.Thread(target=run, name=f"perseus-vault-{self.NAME}", daemon=True).start()

    def build(self, conn: Connection) -> None:
        """Read every head in one snapshot and index it, into a fresh object (queries keep being
        answered meanwhile, by SQL); publish it only if the subclass vouches for it."""
        fresh = type(self)(self.backend)
        fresh._prepare(conn)
        changes = self.backend.changes
        with self.backend.read_snapshot(conn):
            seq = changes.position(conn)
            for n, row in enumerate(changes.heads(conn, fresh.FEED), 1):
                fresh._add(row)
                if n % CHECKPOINT_ROWS == 0:
                    GATE.checkpoint()  # between two rows: no SQLite call in progress, no lock held
            problem = fresh._finish(conn, seq)
        with self._lock:
            state = {k: v for k, v in fresh.__dict__.items() if k not in ("_lock", "_building")}
            self.__dict__.update(state)
            self.seq = seq
            if problem is not None:
                self.disabled, self._disabled_at, self.ready = problem, seq, False
                return
            self.ready = True

    def _add(self, row: Sequence[Any]) -> int:
        vid, entity, agent, workspace = row[:4]
        slot = self.rows.append(
            vid, entity,
            self._agent_code.setdefault(agent, len(self._agent_code)),
            self._workspace_code.setdefault(workspace, len(self._workspace_code)),
        )
        self._slot_of[vid] = slot
        self._index(slot, row[4:])
        return slot

    # -- following the log --

    def _apply(self, conn: Connection, upto: int) -> bool:
        """Apply logged changes in (seq, upto]. False when a rebuild is the better way."""
        log = self.backend.changes
        first = log.first(conn)
        if first is not None and first > self.seq + 1:
            return False  # the log was trimmed past our position
        if log.pending(conn, self.seq, upto, self.HANDLES_VECTORS) > max(10_000, self.rows.n // 5):
            return False  # cheaper to rebuild than to replay
        for vid, op in log.entries(conn, self.seq, upto, self.HANDLES_VECTORS):
            if op in self.REBUILD_ON:
                return False
            if op == OP_GONE:
                slot = self._slot_of.pop(vid, None)
                if slot is not None and self.rows.alive[slot]:
                    self.rows.alive[slot] = False
                    self.dead += 1
                    self._forget(slot)
            elif op == OP_HEAD and vid not in self._slot_of:
                row = log.head(conn, self.FEED, vid)
                if row is not None:  # None: added and purged again within this window
                    self._add(row)
            elif op == OP_VECTOR and vid in self._slot_of:
                row = log.head(conn, self.FEED, vid)
                if row is not None:
                    self._vector_written(self._slot_of[vid], row[4:])
        self.seq = upto
        # Dead rows still cost in every scan: past a quarter, rebuild.
        return not (self.dead > 1000 and self.dead > self.rows.n // 4)

    def _sync(self, conn: Connection) -> bool:
        """Bring the mirror to the snapshot ``conn`` reads (lock held, ``conn`` in a transaction)."""
        upto = self.backend.changes.position(conn)
        if upto == self.seq:
            return True
        if upto < self.seq or not self._apply(conn, upto):
            if upto > self.seq:
                self.ready = False  # rebuild (the caller starts it); the SQL path answers meanwhile
            return False
        return True

    def answer(self, conn: Connection, compute: Callable[[], Any]) -> Any:
        """``compute()`` for the snapshot ``conn`` reads, or ``None`` when the mirror cannot vouch for it.

        Following the log and computing happen under one lock, so another thread cannot move
        the mirror to a newer snapshot in between.
        """
        if self.disabled:
            self._retry_after_rebuild(conn)
            return None
        with self._lock:
            if not self.ready or not self._sync(conn):
                return None
            return compute()

    def reset(self) -> None:
        """Forget everything (after this process rebuilt the indexes); the next build starts fresh."""
        with self._lock:
            self.ready = False
            self.disabled = None
            self._disabled_at = None

    def _retry_after_rebuild(self, conn: Connection) -> None:
        """A mirror that gave up may try again once someone has rebuilt the indexes."""
        if self._disabled_at is None or self._building:
            return
        if self.backend.changes.rebuilt_since(conn, self._disabled_at):
            with self._lock:
                self.disabled = None
                self._disabled_at = None

    # -- scope --

    def in_scope(self, agent_id: str | None, workspace_hash: str | None) -> np.ndarray:
        """Boolean mask over the rows: alive and in the given scope (omitted = no filter)."""
        n = self.rows.n
        mask = self.rows.alive[:n].copy()
        for value, codes, column in (
            (agent_id, self._agent_code, self.rows.agents[:n]),
            (workspace_hash, self._workspace_code, self.rows.workspaces[:n]),
        ):
            if value is not None:
                code = codes.get(value)
                if code is None:
                    mask[:] = False
                else:
                    mask &= column == code
        return mask

    def describe(self) -> str:
        if self.disabled:
            return f"disabled: {self.disabled}"
        if self.ready:
            return f"ready ({self.rows.n - self.dead} rows)"
        return "building" if self._building else "not built"
