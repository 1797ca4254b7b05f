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

import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..primitives.background import Background
from ..primitives.dbapi import Connection
from ..primitives.forking import GATE, in_child
from ..storage.base import OP_GONE, OP_HEAD, OP_REBUILT, OP_VECTOR, Backend
from . import snapshot
from .heads import Heads
from .snapshot import Saved

CHECKPOINT_ROWS = 1024  # a fork waits for at most this many rows of a build
SAVE_AFTER = 1_000  # log entries past the saved snapshot (or a hundredth of the rows) before saving again

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

    def reserve(self, capacity: int) -> None:
        """Room for ``capacity`` rows at once (a build that knows its size grows nothing)."""
        if capacity > len(self.vids):
            for name in ("vids", "entities", "agents", "workspaces", "alive"):
                old = getattr(self, name)
                grown = np.zeros(capacity, dtype=old.dtype)
                grown[: len(old)] = old
                setattr(self, name, grown)

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


class SlotMap:
    """The slot of each live head's version id.

    After a load it starts from the saved rows as two sorted arrays (a binary search per lookup), so
    a new process does not build a dict of every row before its first answer; heads that come and go
    afterwards live in a small dict and a set beside them."""

    def __init__(self, rows: Rows | None = None) -> None:
        self._keys = np.zeros(0, dtype=np.int64)
        self._slots = np.zeros(0, dtype=np.int64)
        if rows is not None:
            live = np.flatnonzero(rows.alive[: rows.n])
            keys = np.asarray(rows.vids[live])
            if len(keys) > 1 and not bool(np.all(keys[1:] > keys[:-1])):
                order = np.argsort(keys, kind="stable")
                keys, live = keys[order], live[order]
            self._keys, self._slots = keys, live
        self._added: dict[int, int] = {}
        self._removed: set[int] = set()

    def get(self, vid: int) -> int | None:
        slot = self._added.get(vid)
        if slot is not None or vid in self._removed:
            return slot
        i = int(np.searchsorted(self._keys, vid))
        return int(self._slots[i]) if i < len(self._keys) and self._keys[i] == vid else None

    def __contains__(self, vid: int) -> bool:
        return self.get(vid) is not None

    def many(self, vids: Sequence[int]) -> np.ndarray:
        """The slot of each of ``vids`` (-1 where none), one binary search for them all."""
        keys = np.asarray(vids, dtype=np.int64)
        out = np.full(len(keys), -1, dtype=np.int64)
        if len(self._keys) and len(keys):
            i = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
            hit = self._keys[i] == keys
            out[hit] = self._slots[i[hit]]
        if self._added or self._removed:
            for j, vid in enumerate(keys.tolist()):
                if vid in self._added or vid in self._removed:
                    slot = self._added.get(vid)
                    out[j] = -1 if slot is None else slot
        return out

    def __setitem__(self, vid: int, slot: int) -> None:
        self._added[vid] = slot
        self._removed.discard(vid)

    def pop(self, vid: int) -> int | None:
        slot = self.get(vid)
        if slot is not None:
            self._added.pop(vid, None)
            self._removed.add(vid)
        return slot


def fit(array: np.ndarray, room: int) -> np.ndarray:
    """``array`` (its first rows) padded with zeros to ``room`` rows along axis 0."""
    out = np.zeros((room, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def padded(array: np.ndarray, room: int, private: bool) -> Saved:
    """``array`` padded with zeros to ``room`` rows, for a snapshot: a copy (:func:`fit`) unless ``private``,
    when the file is written from the array itself (:class:`snapshot.Padded`)."""
    return snapshot.Padded(array, room) if private else fit(array, room)


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
    # Fields that belong to this object, never taken from a fresh build or a loaded snapshot.
    LOCAL: tuple[str, ...] = (
        "_lock",
        "_building",
        "snapshot_path",
        "_snapshot_tried",
        "_saving",
        "_purged_at",
        "load_note",
        "save_note",
        "heads",
        "background",
    )

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
        self._slot_of: SlotMap | None = SlotMap()  # None: made from the rows when first needed
        self._agent_code: dict[str, int] = {}
        self._workspace_code: dict[str, int] = {}
        self.dead = 0
        # Snapshots on disk (snapshot.py): where, whether this process tried loading one, what it holds.
        self.snapshot_path: str | None = None
        self.origin = "built"
        self.load_note: str | None = None  # why this process did not take the saved snapshot
        self.save_note: str | None = None  # why the last save did not happen (cleared by one that did)
        self._snapshot_tried = False
        self._saved_seq = -1
        self._saving = False
        self._purged_at = 0  # log position of this process's last purge: no older state may be saved
        self.saved_only = False  # use a saved snapshot when there is one; never build or save (engine.warm)
        # What the walk reads of the heads this mirror ranks, remembered by vid (hits.Heads); the engine
        # lends its keyword and vector mirrors one between them. None: none kept (the walk asks the file).
        self.heads: Heads | None = Heads()
        # Where this mirror's threads run: the engine lends its own, which Vault.close ends (background.py).
        self.background = Background()

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

    def _replaying(self, entries: int) -> None:
        """A replay of ``entries`` log entries is about to be applied."""

    def _reserve(self, rows: int) -> None:
        """Room for about ``rows`` heads before a build reads them (a build at a million rows then copies
        no array to grow it: the vector matrix alone is 1.5 GB there)."""
        self.rows.reserve(rows + 1024)

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
                    if not self.load_snapshot(
                        conn
                    ):  # a saved one not tried yet (a query the index could not answer)
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

        if not self.background.start(f"perseus-vault-{self.NAME}", run):
            self._building = False  # the vault is closing

    def build(self, conn: Connection) -> None:
        """Read every head in one snapshot and index it, into a fresh object (queries keep being
        answered meanwhile, by SQL); publish it only if the subclass vouches for it."""
        fresh = type(self)(self.backend)
        fresh._prepare(conn)
        changes = self.backend.changes
        with self.backend.read_snapshot(conn):
            seq = changes.position(conn)
            fresh._reserve(self.backend.keyword.totals(conn)[0])  # the number of heads, as FTS5 counts them
            for n, row in enumerate(changes.heads(conn, fresh.FEED), 1):
                fresh._add(row)
                if n % CHECKPOINT_ROWS == 0:  # between two rows: no SQLite call in progress, no lock held
                    GATE.checkpoint()
                    self.background.check()  # the vault is closing: end here
            problem = fresh._finish(conn, seq)
            marker = changes.marker(conn, seq) if self.snapshot_path and problem is None else None
        fresh.seq = seq
        if marker is not None and self._save(
            fresh._state(private=True), seq, marker
        ):  # ``fresh`` is private still
            fresh._saved_seq = seq
        with self._lock:
            self._take(fresh)
            if problem is not None:
                self.disabled, self._disabled_at, self.ready = problem, seq, False
                return
            self.ready = True

    # -- snapshots on disk (snapshot.py) --

    def _slot_map(self) -> SlotMap:
        """Slot of each live head's version id (after a load, made when the log first needs it)."""
        if self._slot_of is None:
            self._slot_of = SlotMap(self.rows)
        return self._slot_of

    def _state(self, private: bool = False) -> tuple[dict[str, Any], dict[str, Saved]]:
        """What a snapshot holds: the rows with room to grow (appending after a load then writes into
        the mapping, not a copy of it), the scope codes, and the subclass's own state. ``private``: no
        other thread can change this object (a build not yet published), so its arrays are written as
        they are, not copied first."""
        n = self.rows.n
        room = n + max(1024, n // 8)
        meta = {
            "name": self.NAME,
            "seq": self.seq,
            "n": n,
            "dead": self.dead,
            "agents": sorted(self._agent_code, key=self._agent_code.__getitem__),
            "workspaces": sorted(self._workspace_code, key=self._workspace_code.__getitem__),
        }
        arrays = {
            name: padded(getattr(self.rows, name)[:n], room, private)
            for name in ("vids", "entities", "agents", "workspaces", "alive")
        }
        extra_meta, extra_arrays = self._own_state(room, private)
        return {**meta, **extra_meta}, {**arrays, **extra_arrays}

    def _own_state(self, room: int, private: bool) -> tuple[dict[str, Any], dict[str, Saved]]:
        """The subclass's state; arrays that change in place are returned as copies (``padded``) unless
        ``private``."""
        raise NotImplementedError

    def _restore(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        rows = Rows(0)
        rows.n = int(meta["n"])
        for name in ("vids", "entities", "agents", "workspaces", "alive"):
            setattr(rows, name, arrays[name])
        self.rows, self.seq, self.dead = rows, int(meta["seq"]), int(meta["dead"])
        self._agent_code = {value: code for code, value in enumerate(meta["agents"])}
        self._workspace_code = {value: code for code, value in enumerate(meta["workspaces"])}
        self._slot_of = None
        self._restore_own(meta, arrays)

    def _restore_own(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        raise NotImplementedError

    def _save(self, state: tuple[dict[str, Any], dict[str, Saved]], seq: int, marker: str) -> bool:
        """Save ``state`` (the mirror at log position ``seq``) unless this process purged a memory since."""
        meta, arrays = state
        path = self.snapshot_path
        if path is None:
            return False
        try:
            temporary = snapshot.write(path, {**meta, "marker": marker}, arrays, self.backend.file_mode())
        except OSError as exc:  # a read-only folder, a full disk: the mirror still serves, unsaved
            self.save_note = f"not saved: {type(exc).__name__}: {exc}"
            return False
        with self._lock:
            if seq < self._purged_at:  # it may hold what a purge removed: a later save replaces it
                snapshot.discard(temporary)
                return False
            snapshot.commit(temporary, path)
            self.save_note = None
        return True

    def load_snapshot(self, conn: Connection) -> bool:
        """Once per process, before its first build: take the saved snapshot when it is one of this
        vault's log (its position still logged, with the same entry) and not ahead of ``conn``'s view."""
        if self._snapshot_tried or self.snapshot_path is None or self.ready or self.disabled:
            return False
        self._snapshot_tried = True
        found = snapshot.load(self.snapshot_path)
        if found is None:
            return False
        meta, arrays = found
        log = self.backend.changes
        seq = int(meta.get("seq", -1))
        if (
            meta.get("name") != self.NAME
            or not 0 <= seq <= log.position(conn)
            or meta.get("marker") != log.marker(conn, seq)
            or not self._compatible(conn, meta)
        ):
            self.load_note = "snapshot not used: it belongs to another state of this file"
            return False
        fresh = type(self)(self.backend)
        try:
            fresh._restore(meta, arrays)
        except (KeyError, IndexError, TypeError, ValueError) as exc:  # not a snapshot this code wrote
            self.load_note = f"snapshot not used: {type(exc).__name__}: {exc}"
            return False
        fresh.origin, fresh._saved_seq = "snapshot", seq
        with self._lock:
            if self.ready:  # a build finished meanwhile: keep it
                return False
            self._take(fresh)
            self.ready = True
        return True

    def _take(self, fresh: HeadMirror) -> None:
        """Publish a built or loaded state (lock held): everything but this object's own fields."""
        self.__dict__.update({k: v for k, v in fresh.__dict__.items() if k not in self.LOCAL})

    def _compatible(self, conn: Connection, meta: dict[str, Any]) -> bool:
        return True

    def forget_snapshot(self, position: int) -> None:
        """A purge committed at log ``position``: delete the saved snapshot, and save no state older."""
        with self._lock:
            self._purged_at = max(self._purged_at, position)
            self._saved_seq = -1
            if self.snapshot_path is not None:
                snapshot.remove(self.snapshot_path)

    def save_if_behind(self, connect: Callable[[], Any]) -> None:
        """When the mirror has moved far past its saved snapshot, save it again on a background thread
        (a copy taken under the lock, written outside it), so new processes replay little of the log."""
        if self.snapshot_path is None or not self.ready or self._saving:
            return
        if self.seq - self._saved_seq < max(SAVE_AFTER, self.rows.n // 100):
            return
        self._saving = True

        def run() -> None:
            with GATE.inside():
                conn = None
                try:
                    with self._lock:  # _state copies what changes in place: written outside the lock
                        if not self.ready or self.seq < self._purged_at:
                            return  # a purge this mirror has not applied yet: after the next query
                        state, seq = self._state(), self.seq
                    conn = connect()
                    with self.backend.read_snapshot(conn):
                        marker = self.backend.changes.marker(conn, seq)
                    if marker is not None and self._save(state, seq, marker):
                        with self._lock:
                            self._saved_seq = max(self._saved_seq, seq)
                except Exception as exc:  # saving is best effort: the mirror keeps serving
                    self.save_note = f"not saved: {type(exc).__name__}: {exc}"
                finally:
                    self._saving = False
                    if conn is not None:
                        conn.close()

        if not self.background.start(f"perseus-vault-{self.NAME}-save", run):
            self._saving = False  # the vault is closing

    def _add(self, row: Sequence[Any]) -> int:
        vid, entity, agent, workspace = row[:4]
        slot = self.rows.append(
            vid,
            entity,
            self._agent_code.setdefault(agent, len(self._agent_code)),
            self._workspace_code.setdefault(workspace, len(self._workspace_code)),
        )
        self._slot_map()[vid] = slot
        self._index(slot, row[4:])
        return slot

    # -- following the log --

    def _apply(self, conn: Connection, upto: int) -> bool:
        """Apply logged changes in (seq, upto]. False when a rebuild is the better way."""
        log = self.backend.changes
        first = log.first(conn)
        if first is not None and first > self.seq + 1:
            return False  # the log was trimmed past our position
        count = log.pending(conn, self.seq, upto, self.HANDLES_VECTORS)
        if count > max(10_000, self.rows.n // 5):
            return False  # cheaper to rebuild than to replay
        self._replaying(count)
        entries = log.entries(conn, self.seq, upto, self.HANDLES_VECTORS)
        if any(op in self.REBUILD_ON for _, op in entries):
            return False
        # The rows the entries need, read in one statement (a new process replays thousands at once).
        fetched = log.rows(
            conn, self.FEED, sorted({vid for vid, op in entries if op in (OP_HEAD, OP_VECTOR)})
        )
        for vid, op in entries:
            if op == OP_GONE:
                slot = self._slot_map().pop(vid)
                if slot is not None and self.rows.alive[slot]:
                    self.rows.alive[slot] = False
                    self.dead += 1
                    self._forget(slot)
            elif op == OP_HEAD and vid not in self._slot_map():
                row = fetched.get(vid)
                if row is not None:  # None: added and purged again within this window
                    self._add(row)
            elif op == OP_VECTOR and (slot := self._slot_map().get(vid)) is not None:
                row = fetched.get(vid)
                if row is not None:
                    self._vector_written(slot, row[4:])
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
        if not self.ready and not self._snapshot_tried:
            self.load_snapshot(conn)  # a new process: open the saved index instead of building one
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
            notes = (
                [f"{self.rows.n - self.dead} rows"]
                + (["from a snapshot"] if self.origin == "snapshot" else [])
                + [note for note in (self.load_note, self.save_note) if note]
            )
            return f"ready ({', '.join(notes)})"
        if self.saved_only:  # a one-shot process: it opens a saved index at its first recall, or uses SQL
            saved = self.snapshot_path is not None and os.path.exists(self.snapshot_path)
            return f"not loaded ({'saved beside the vault' if saved else 'none saved'})"
        return "building" if self._building else "not built"
