"""The relations curation acts on, held in memory for an open vault (:class:`KeptRelations`), so that a warm
recall reads none of them from the file.

Curation (curated.py) needs the open links of the kinds it acts on (``curated.KEPT``) among a recall's first
places. Read from the file, that is about half a millisecond a recall, more than the rest of curation; held here,
it is a dictionary look-up per memory. What is held is, for each memory met so far, every open link of those kinds
from or to it, read the first time a recall meets it.

Each recall first reads three numbers, each through an index: the highest number a link was ever given, the
change log's position, and how many links were closed at or after the latest closing seen. When one moved, what
changed since is read and the memories it touches are forgotten here, to be read again when met:

- a link opened (numbered in the order written, a number never used twice): both its ends. Someone's ``link``
  over an inferred relation closes that one in the same write, and a re-weighted link is closed and opened anew;
- a version written (the change log): its memory, whose inferred links the version it replaces had closed;
- a link closed (``unlink``, and the above): both its ends, found by the closing time's index (``links_closed``);
- a link deleted (``purge``): only ever with its memory, gone for good (a memory's number is never used again).
  A purge's versions are gone from the change log's reading too, which is how it is known: everything held is
  forgotten, since the closed links it deleted would hide an ``unlink`` stamped back from the recount below.

An ``unlink`` stamped before the latest closing seen (the clock stepped back) is found by a recount: every
:data:`RECOUNT_S` seconds the links closed before that closing are counted (each one this module read as it passed is
known), and one more forgets everything held. A recall whose snapshot is older than what is held (a long read beside
a writer) reads the file, as without this module.

What is held fills as recalls meet memories, and :meth:`KeptRelations.load` (the engine runs it in the background
after a recall) reads every open link of those kinds at once; from then on a memory not held has none, until a
change touches it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..storage import Connection
from ..storage.base import ChangeLog

T = TypeVar("T")
Row = tuple[int, int, str, str | None]  # (from id, to id, relation, source)
RECOUNT_S = 5.0  # how often every closed link is counted (a closing stamped before the latest seen)
CHUNK = 2_000  # memories whose current versions load() reads in one statement
MOST = 200_000  # memories held at most: past it, everything is forgotten and read again as met
Near = dict[int, list[Row]]  # a memory's links held: the other end -> the links between the two
Stamp = tuple[
    int, int, int
]  # the highest link number, the change log's position, the closings at or after the latest


def listed(ids: Iterable[int]) -> str:
    """Integers written into a statement's ``IN (...)``: one index look-up each, no JSON to read."""
    return ", ".join(str(int(i)) for i in ids)


def named(names: Iterable[str]) -> str:
    """Relation names (the code's own constants) written into a statement's ``IN (...)``."""
    return ", ".join(f"'{name}'" for name in names)


def order(row: Row) -> tuple[int, int, str, str]:
    """The order kept links are given in (curation's first pair of an older memory names its newer)."""
    return row[0], row[1], row[2], row[3] or ""


class KeptRelations:
    """The open links of the relations in ``names`` from or to each memory met, kept current with the file.
    ``last_link``: the highest number the store ever gave a link, as a snapshot sees it (``Backend.next_id``
    less one: a purge that deletes the latest link does not lower it, so a lower one means an older snapshot);
    ``changes``: the store's change log (a version written, or purged); ``current``: what :meth:`versions` gives of
    the current versions of some memories, by version number, which :meth:`load` holds for the memories it holds
    links of."""

    def __init__(
        self,
        names: Sequence[str],
        last_link: Callable[[Connection], int],
        changes: ChangeLog,
        clock: Callable[[], float] = time.monotonic,
        current: Callable[[Connection, list[int]], dict[int, Any]] | None = None,
    ) -> None:
        self._names = named(names)
        self._current = current
        self._last_link = last_link
        self._changes = changes
        self._clock = clock
        self._lock = threading.Lock()
        self._versions: dict[int, Any] = {}  # a version's number -> what curation read of it
        self.loading = False  # a load() is running
        self._forget()

    def _forget(self) -> None:
        self._held: dict[int, Near] = {}
        self._stamp: Stamp = (-1, -1, 0)  # what was seen; -1: nothing yet
        self._closed_ms = 0  # the latest closing seen
        self._below = 0  # the links closed before it, as this module counted them
        self._recounted = self._clock()
        self.complete = False  # every memory's links held (load()): one not held has none, unless stale
        self._stale: set[int] = set()  # when complete: memories a change touched, read again when met

    def among(self, conn: Connection, ids: Sequence[int]) -> list[Row] | None:
        """The open links among ``ids`` (both ends in it) of the kept relations, as ``conn`` sees them, in
        order; ``None`` when ``conn`` reads an older snapshot than what is held (the caller reads the file).
        ``conn`` reads one snapshot throughout (recall's)."""
        with self._lock:
            if self._clock() - self._recounted >= RECOUNT_S or len(self._held) > MOST:
                self._recount(conn)
            if self._stamp[0] < 0:  # nothing held yet (or forgotten): start from this snapshot
                self._restart(conn)
            else:
                stamp = self._stamp_of(conn, self._closed_ms)
                if stamp[0] < self._stamp[0] or stamp[1] < self._stamp[1]:
                    return None
                if stamp != self._stamp:
                    self._catch_up(conn, stamp)
            missing = (
                [
                    i
                    for i in dict.fromkeys(ids)
                    if i not in self._held and (not self.complete or i in self._stale)
                ]
                if not self.complete or self._stale
                else []  # every memory's links held, none touched since
            )
            if missing:
                self._read(conn, missing)
            held, wanted = self._held, set(ids)
            found: set[Row] = set()
            for i in wanted:
                near = held.get(i)
                if not near:  # most hold none
                    continue
                # the smaller side looked up in the other: a memory of many links costs no more than one of few
                ends = [o for o in wanted if o in near] if len(near) > len(wanted) else near.keys() & wanted
                for other in ends:
                    if other < i:  # each pair once, from its lower end
                        continue
                    # both ends hold it: a memory forgotten and read again holds only what is open now, where the
                    # other end may still hold a link closed since (a version of that memory closed it)
                    back = held.get(other, {}).get(i, ())
                    found.update(row for row in near[other] if row in back)
        return sorted(found, key=order)  # as curated.kept gives them

    def load(self, conn: Connection, check: Callable[[], None] = lambda: None) -> None:
        """Hold every open link of the kept relations, read in ``conn``'s one snapshot (the caller opens it), and
        what ``current`` reads of those memories' current versions; nothing when they are more than :data:`MOST`
        memories' (what is met is then read as met). ``check`` is called every 10,000 links and every
        :data:`CHUNK` memories (it raises to stop: the vault is closing)."""
        try:
            stamp, closed_ms, below = self._start(conn)
            held: dict[int, Near] = {}
            checked = 0
            for a, b, name, source in conn.execute(
                f"SELECT from_id, to_id, relation, source FROM links WHERE recorded_to_ms IS NULL AND "
                f"relation IN ({self._names})"
            ):
                row = (int(a), int(b), str(name), source)
                _hold(held.setdefault(row[0], {}), row[1], row)
                _hold(held.setdefault(row[1], {}), row[0], row)
                if len(held) >= checked + 10_000:  # a link may add two memories: never step over a mark
                    checked = len(held)
                    check()
                    if len(held) > MOST:
                        return
            facts: dict[int, Any] = {}
            current, ids = self._current, sorted(held)
            if current is not None:
                for k in range(0, len(ids), CHUNK):
                    check()
                    facts.update(current(conn, ids[k : k + CHUNK]))
            with self._lock:
                self._forget()
                self._held, self._stamp, self._closed_ms, self._below = held, stamp, closed_ms, below
                self.complete = True
                if len(self._versions) + len(facts) > MOST:
                    self._versions.clear()
                self._versions.update(facts)
        finally:
            self.loading = False

    def versions(self, vids: Sequence[int], read: Callable[[list[int]], dict[int, T]]) -> dict[int, T]:
        """What ``read`` gives for each version of ``vids`` (a version never changes once written, and its number
        is never used again: what was read of it holds for good), reading only those not held yet."""
        with self._lock:
            try:  # most often every one is held
                return {v: self._versions[v] for v in vids}
            except KeyError:
                pass
            if len(self._versions) > MOST:
                self._versions.clear()
            missing = [v for v in vids if v not in self._versions]
        found = read(missing) if missing else {}
        with self._lock:
            self._versions.update(found)
            return {v: self._versions[v] for v in vids if v in self._versions}

    def _stamp_of(self, conn: Connection, closed_ms: int) -> Stamp:
        """What ``conn`` sees: the highest link number, the change log's position, the links closed at or after
        ``closed_ms``."""
        (since,) = conn.execute(
            "SELECT count(*) FROM links WHERE recorded_to_ms >= ?", (closed_ms,)
        ).fetchone()
        return self._last_link(conn), self._changes.position(conn), int(since)

    def _start(self, conn: Connection) -> tuple[Stamp, int, int]:
        """Where holding starts in ``conn``'s snapshot: its stamp counted from its own latest closing, that
        closing's time, and how many links were closed before it."""
        (latest,) = conn.execute(
            "SELECT coalesce(max(recorded_to_ms), 0) FROM links WHERE recorded_to_ms IS NOT NULL"
        ).fetchone()
        (below,) = conn.execute(
            "SELECT count(*) FROM links WHERE recorded_to_ms < ?", (int(latest),)
        ).fetchone()
        return self._stamp_of(conn, int(latest)), int(latest), int(below)

    def _restart(self, conn: Connection) -> None:
        """Forget everything held and hold anew from ``conn``'s snapshot: at first, and after a purge, whose closed
        links it deleted lower the count of closings a recount compares (an ``unlink`` stamped back raises it
        again, and the two would cancel out)."""
        self._forget()
        self._stamp, self._closed_ms, self._below = self._start(conn)

    def _recount(self, conn: Connection) -> None:
        """Forget everything held when a link was closed before the latest closing seen, unseen (a clock stepped
        back), or a purge deleted one (nothing else lowers the count), or too many memories are held."""
        (below,) = conn.execute(
            "SELECT count(*) FROM links WHERE recorded_to_ms < ?", (self._closed_ms,)
        ).fetchone()
        if int(below) != self._below or len(self._held) > MOST:
            self._forget()
        self._recounted = self._clock()

    def _catch_up(self, conn: Connection, stamp: Stamp) -> None:
        """Bring what is held to ``conn``'s snapshot (``stamp``): forget the memories at either end of a link
        opened or closed since, and those a new version of was written since (it closed their inferred links,
        whatever time it was stamped)."""
        last_id, position, _ = stamp
        touched: set[int] = set()
        if last_id > self._stamp[0]:
            touched.update(
                int(x)
                for row in conn.execute(
                    "SELECT from_id, to_id FROM links WHERE id > ? AND id <= ?", (self._stamp[0], last_id)
                )
                for x in row
            )
        if position > self._stamp[1]:
            vids = [vid for vid, _ in self._changes.entries(conn, self._stamp[1], position, False)]
            if (
                vids
            ):  # two reads, not a join (a distributed database keeps the log apart: storage/changelog.py)
                written = [
                    int(e)
                    for (e,) in conn.execute(
                        f"SELECT entity_id FROM entity_versions WHERE vid IN ({listed(sorted(set(vids)))})"
                    )
                ]
                if len(written) < len(set(vids)):  # a memory purged, its closed links with it: start again
                    self._restart(conn)
                    return
                touched.update(written)
        closings = [
            (int(a), int(b), int(ms))
            for a, b, ms in conn.execute(
                "SELECT from_id, to_id, recorded_to_ms FROM links WHERE recorded_to_ms >= ?",
                (self._closed_ms,),
            )
        ]
        touched.update(x for a, b, _ in closings for x in (a, b))
        for i in touched:
            self._held.pop(i, None)
        if self.complete:
            self._stale |= touched
        latest = max((ms for _, _, ms in closings), default=self._closed_ms)
        self._below += sum(1 for _, _, ms in closings if ms < latest)  # now before the latest: as counted
        self._closed_ms = latest
        self._stamp = (last_id, position, sum(1 for _, _, ms in closings if ms >= latest))

    def _read(self, conn: Connection, ids: list[int]) -> None:
        """Hold every open link of the kept relations from or to each of ``ids``."""
        ids_in = listed(ids)
        held = {i: self._held.setdefault(i, {}) for i in ids}
        self._stale.difference_update(ids)
        for a, b, name, source in conn.execute(
            f"SELECT from_id, to_id, relation, source FROM links WHERE from_id IN ({ids_in}) AND "
            f"recorded_to_ms IS NULL AND relation IN ({self._names}) UNION ALL "
            f"SELECT from_id, to_id, relation, source FROM links WHERE to_id IN ({ids_in}) AND "
            f"recorded_to_ms IS NULL AND relation IN ({self._names})"
        ):
            row = (int(a), int(b), str(name), source)
            for end, other in ((row[0], row[1]), (row[1], row[0])):
                if end in held:
                    _hold(held[end], other, row)


def _hold(near: Near, other: int, row: Row) -> None:
    """Hold ``row`` among a memory's links to ``other`` (once: a link read from both its ends is one)."""
    rows = near.setdefault(other, [])
    if row not in rows:
        rows.append(row)
