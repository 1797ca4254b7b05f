"""What recall's walk reads of the current heads, kept in memory by version id.

An index ranks candidates; before they become hits, the walk (:func:`hits.visible_hits`) checks each
against the caller's view and reads the columns the knobs weigh (:data:`hits.POOL_COLUMNS`). By SQL
that is one statement over ~130 random rows per recall: about 0.4 ms at 100k, a third of a warm keyword
recall. A long-running process keeps those columns (and :data:`filters.RULE_COLUMNS`) here instead,
filled by one pass over the heads in the background once an index is ready, and by the walk itself
for anything newer; the view's rule (:attr:`filters.View.rule`) then decides in memory.

Sound because none of it changes once a version is written: the engine updates only a version's
``recorded_to_ms`` (when it is closed; this memory never holds it, since whether a version is the head
is the index's to say, for the snapshot being read) and an entity's usage counters (a test holds every
UPDATE statement to those; the schema's trigger refuses the texts, status and type outright). An
entity's scope, category and creation time are fixed; ids are never reused (AUTOINCREMENT). What a
purge deletes is never a candidate again. Bounded: past :attr:`Heads.LIMIT` versions it starts over.

For the same reason it remembers, per where filter (:mod:`where`), which versions the filter keeps
(:meth:`Heads.matching`): a filter on body fields costs SQL a pass over the JSON of every head (65 ms at
100k); once known for a version, the answer holds for good, so a filter asked again costs a lookup, and
a write costs asking about the new heads alone.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any

import numpy as np

from ..primitives.background import Background
from ..primitives.dbapi import Connection
from ..primitives.filters import FROM_VERSIONS_FIRST, RULE_COLUMNS, from_vids, id_list
from ..primitives.forking import GATE, in_child
from ..primitives.hits import POOL_COLUMNS, HeadColumns, ask

_COLUMNS = ", ".join(POOL_COLUMNS + RULE_COLUMNS)
_CUT = len(POOL_COLUMNS) + 1
_ALL: weakref.WeakSet[Heads] = weakref.WeakSet()
_FILL_BATCH = 4_096  # rows per step of the background pass: a fork waits for one step at most


@in_child
def _forget_fills() -> None:
    """In a forked child the filling thread does not exist: let a later recall start one."""
    for heads in list(_ALL):
        heads._filling = False
        heads._lock = threading.Lock()  # a thread that is gone here may have held it


class Heads:
    """Versions' pool and rule columns by vid. Thread-safe: readers and the filling pass touch the dict
    by single operations only."""

    LIMIT = 262_144  # about 60 MB of tuples
    FILTERS = 8  # where filters whose answers are kept, the most recently asked
    WHOLE = 0.2  # asked about more unknown versions than this share of the heads, read every head at once

    def __init__(self) -> None:
        self._rows: dict[int, HeadColumns] = {}
        self._lock = threading.Lock()
        self._filling = False
        self.filled = False
        # where filter (its SQL and parameters) -> (versions asked about, ascending; whether each is kept)
        self._matches: OrderedDict[str, tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self.background = Background()  # the engine lends its own, which Vault.close ends
        _ALL.add(self)

    def matching(
        self, conn: Connection, condition: tuple[str, dict[str, Any]], vids: np.ndarray, heads: int
    ) -> np.ndarray:
        """Whether the where filter ``condition`` (its SQL over ``v``/``e`` and parameters) keeps each of
        ``vids`` (current heads), as booleans. Answers are remembered per filter; those not known are asked
        in one statement, over every head when they are more than :attr:`WHOLE` of the ``heads``."""
        key = condition[0] + "\0" + repr(sorted(condition[1].items()))
        vids = np.asarray(vids, dtype=np.int64)
        asked, kept = self._matches.get(key, (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)))
        missing = vids[~_held(asked, vids)]
        if len(missing):
            new, flags = ask(conn, condition, missing, len(missing) > self.WHOLE * heads)
            fresh = ~_held(asked, new)  # a pass over every head answers some known ones again
            new, flags = new[fresh], flags[fresh]
            if len(asked) + len(new) <= 2 * self.LIMIT:  # else start over with the new answers
                new, flags = np.concatenate([asked, new]), np.concatenate([kept, flags])
            order = np.argsort(new, kind="stable")
            asked, kept = new[order], flags[order]
            self._matches[key] = (asked, kept)  # one assignment: a reader sees the old pair or the new one
        try:
            self._matches.move_to_end(key)
            while len(self._matches) > self.FILTERS:
                self._matches.popitem(last=False)
        except (KeyError, RuntimeError):  # another thread changed the dict meanwhile: it is only a cache
            pass
        out = np.zeros(len(vids), dtype=bool)
        if len(asked):
            at = np.minimum(np.searchsorted(asked, vids), len(asked) - 1)
            hit = asked[at] == vids
            out[hit] = kept[at[hit]]
        return out

    def rows(self, conn: Connection, vids: Sequence[int]) -> list[HeadColumns | None]:
        """(pool columns, rule columns) of each version; ``None`` for one that does not exist. Versions not
        held yet are read in one statement and kept."""
        known = self._rows
        out = list(map(known.get, vids))
        if None not in out:
            return out
        missing = [vid for vid, got in zip(vids, out) if got is None]
        sql = f"SELECT v.vid, {_COLUMNS} FROM {from_vids(conn)}"
        fetched = {row[0]: _known(row) for row in conn.execute(sql, {"vids": id_list(missing)})}
        if len(known) + len(fetched) > self.LIMIT:
            self._evict(len(known) + len(fetched) - self.LIMIT + self.LIMIT // 8)
        known.update(list(fetched.items())[: self.LIMIT])
        return [got if got is not None else fetched.get(vid) for vid, got in zip(vids, out)]

    def fill_in_background(self, connect: Callable[[], Any]) -> None:
        """Read every head's columns on a thread of its own (its own connection), once: the newest first,
        up to :attr:`LIMIT`."""
        with self._lock:
            if self.filled or self._filling:
                return
            self._filling = True

        def run() -> None:
            with GATE.inside():
                conn = None
                try:
                    conn = connect()
                    last = None
                    while len(self._rows) < self.LIMIT:
                        after = "" if last is None else "AND v.vid < :last "
                        rows = conn.execute(
                            f"SELECT v.vid, {_COLUMNS} FROM {FROM_VERSIONS_FIRST} "
                            f"WHERE v.recorded_to_ms IS NULL {after}ORDER BY v.vid DESC LIMIT :n",
                            {"last": last, "n": min(_FILL_BATCH, self.LIMIT - len(self._rows))},
                        ).fetchall()
                        for row in rows:
                            self._rows.setdefault(row[0], _known(row))
                        if len(rows) < _FILL_BATCH:
                            break
                        last = rows[-1][0]
                        GATE.checkpoint()  # between two statements: a fork may happen now
                        self.background.check()  # or the vault may close
                    self.filled = True
                except Exception:  # best effort: the walk reads what it misses
                    pass
                finally:
                    self._filling = False
                    if conn is not None:
                        conn.close()

        if not self.background.start("perseus-vault-heads", run):
            self._filling = False  # the vault is closing

    def _evict(self, count: int) -> None:
        """Drop the ``count`` versions held longest (a dict keeps insertion order)."""
        try:
            for vid in list(islice(self._rows, count)):
                self._rows.pop(vid, None)
        except RuntimeError:  # another thread changed the dict meanwhile: start over instead
            self._rows.clear()

    def clear(self) -> None:
        self._rows.clear()
        self._matches.clear()
        self.filled = False

    def __len__(self) -> int:
        return len(self._rows)


def _held(asked: np.ndarray, vids: np.ndarray) -> np.ndarray:
    """Which of ``vids`` are in ``asked`` (ascending)."""
    if not len(asked):
        return np.zeros(len(vids), dtype=bool)
    at = np.minimum(np.searchsorted(asked, vids), len(asked) - 1)
    return np.asarray(asked[at] == vids)


def _known(row: Sequence[Any]) -> HeadColumns:
    return tuple(_shared(x) for x in row[1:_CUT]), tuple(_shared(x) for x in row[_CUT:])


def _shared(value: Any) -> Any:
    """One copy of each repeated text (status, category, scope ...) however many rows hold it."""
    return sys.intern(value) if type(value) is str and len(value) <= 64 else value
