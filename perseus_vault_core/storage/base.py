"""What a storage backend provides: the seam between the engine and one database (docs/architecture.md).

The layers above (records, recall and the features: graph, time, GraphRAG, memory files, ...) issue their own SQL
over the vault's shared tables (``entities``, ``entity_versions``, ``links``, ``version_vectors``,
``trigger_vectors``) in the subset docs/architecture.md lists. What is specific to one database
sits behind these protocols, in the backend's own subpackage (:mod:`.sqlite` for the embedded file):

- connections, read snapshots, write transactions and their retries (:class:`Backend`);
- the schema and its migrations;
- keyword search: an inverted index, BM25 scores and the query's ceiling (:class:`KeywordStore`);
- vectors: their storage, the model they belong to, and nearest-neighbour search (:class:`VectorStore`);
- the change log that in-memory indexes follow (:class:`ChangeLog`);
- looking after the file: stats, check, reindex, backup, rekey.

A second backend implements the same protocols in a sibling subpackage; recall, ranking, fusion
and the verbs do not change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

import numpy as np

from ..contract.models import CheckReport, Stats
from ..contract.params import Expansion
from ..primitives.bm25 import Terms
from ..primitives.dbapi import Connection as Connection  # re-exported: the backend hands these out
from ..primitives.dbapi import Cursor as Cursor
from ..primitives.filters import View
from ..primitives.hits import Hit, Ranking

T = TypeVar("T")

# Change-log operations (see :class:`ChangeLog`).
OP_HEAD = 1  # a version became current
OP_GONE = -1  # a version stopped being current
OP_REBUILT = 0  # the indexes were rebuilt: followers rebuild too
OP_VECTOR = 2  # a current version's vector was (re)written
OP_VECTORS_RESET = 3  # every vector was dropped for a re-embed: vector followers rebuild
# The change log keeps this many entries (trimmed each time it crosses a multiple of 10,000); a mirror
# further behind rebuilds.
CHANGE_LOG_KEEP = 200_000


class Tokenizer(Protocol):
    """The keyword index's own tokenizing, for text the pure-Python path does not cover."""

    def terms(self, columns: Sequence[str | None]) -> tuple[Terms, int]: ...


class KeywordStore(Protocol):
    """Keyword search: the persistent inverted index, written in the writer's transaction."""

    def index_versions(
        self, conn: Connection, rows: list[tuple[int, str, str | None, str]], heads: bool
    ) -> None:
        """Index versions (vid, content, summary, tags); ``heads``: they are current versions."""

    def unindex_head(self, conn: Connection, vid: int, content: str, summary: str | None, tags: str) -> None:
        """A version stopped being current (it stays in the all-versions index)."""

    def unindex_versions(self, conn: Connection, entity_id: int) -> None:
        """Every version of a purged entity leaves both indexes."""

    def log_changes(self, conn: Connection, vids: list[int], op: int) -> None:
        """Append to the change log (see :class:`ChangeLog`), in the writer's transaction."""

    def rebuild(self, conn: Connection) -> None:
        """Rebuild the keyword index from the rows (and log a rebuild)."""

    def search(self, conn: Connection, words: list[str], view: View, pool: int) -> tuple[list[Hit], float]:
        """The ``pool`` best visible matches for the OR of ``words`` (BM25, best first, ties by id),
        and the query's ceiling: the most its words could score under the same statistics. (Recall asks
        its in-memory index first, when that can answer: storage knows none.)"""

    def variants(self, conn: Connection, stems: tuple[str, ...], config: Expansion, view: View) -> list[str]:
        """Index terms that extend the query's stems (query expansion)."""

    def tokenizer(self, conn: Connection) -> Tokenizer:
        """The index's own tokenizer on ``conn`` (the in-memory mirror scores exactly as the index)."""

    def totals(self, conn: Connection) -> tuple[int, int]:
        """(rows, tokens) of the current-versions index, as its BM25 counts them."""


class VectorStore(Protocol):
    """Vectors: one per version, all of one model, and nearest-neighbour search over them."""

    TABLE: str

    def model(self, conn: Connection) -> tuple[str, int] | None: ...

    def check_model(self, conn: Connection, identity: str, dimension: int) -> None: ...

    def claim(self, conn: Connection, identity: str, dimension: int, defer_index: bool = False) -> bool: ...

    def build_index(self, conn: Connection) -> None: ...

    def index_missing(self, conn: Connection) -> bool: ...

    def forget_model(self, conn: Connection) -> None: ...

    def write(
        self, conn: Connection, rows: Sequence[tuple[int, np.ndarray]], heads: Sequence[int] = ()
    ) -> None: ...

    def copy(self, conn: Connection, from_vid: int, to_vid: int) -> None: ...

    def delete(self, conn: Connection, vids: Sequence[int]) -> None: ...

    def existing(self, conn: Connection, vids: Sequence[int]) -> set[int]: ...

    def coverage(self, conn: Connection) -> tuple[int, int]: ...

    def missing_count(self, conn: Connection) -> int: ...

    def missing(self, conn: Connection, limit: int) -> list[tuple[int, str, str | None, bool]]: ...

    def candidates(
        self,
        conn: Connection,
        query: np.ndarray,
        depth: int,
        agent_id: str | None,
        workspace_hash: str | None,
        keep: int | None = None,
    ) -> tuple[Ranking, bool]: ...

    def search(
        self, conn: Connection, query: np.ndarray, view: View, pool: int
    ) -> tuple[list[Hit], dict[int, np.ndarray]]: ...

    def rescore(self, hits: list[Hit], found: dict[int, np.ndarray], query: np.ndarray) -> list[Hit]: ...

    def cosines(self, conn: Connection, vids: Sequence[int], query: np.ndarray) -> dict[int, float]: ...

    def vectors(self, conn: Connection, vids: Sequence[int]) -> dict[int, np.ndarray]: ...

    def head_vectors(self, conn: Connection, entity_ids: Sequence[int]) -> dict[int, np.ndarray]: ...

    def phrase_vectors(
        self, conn: Connection, model: str, wanted: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], np.ndarray]:
        """The stored vectors of trigger phrases for ``model``, by (scope key, phrase): each scope keeps its own, so
        that what one stores never changes what another's ``remember`` costs or its triggers match by. Pairs
        without one are absent."""

    def write_phrase_vectors(
        self, conn: Connection, model: str, vectors: dict[tuple[str, str], np.ndarray]
    ) -> None:
        """Keep these phrase vectors, by (scope key, phrase), replacing the scope's own."""

    def forget_phrases(self, conn: Connection, scope: str, phrases: Sequence[str]) -> None:
        """After a purge in the scope ``scope`` (its key): drop its vectors of those of ``phrases`` that none of its
        versions uses any more."""


class ChangeLog(Protocol):
    """The log of changes to the set of current versions, which in-memory indexes follow.

    Every write appends, in its own transaction, one entry per version that became current (+1) or
    stopped being current (-1), per vector written for a current version (2), per index rebuild (0)
    and per model switch (3). Positions only grow; old entries may be trimmed."""

    def position(self, conn: Connection) -> int: ...

    def first(self, conn: Connection) -> int | None: ...

    def pending(self, conn: Connection, after: int, upto: int, vectors: bool) -> int: ...

    def entries(self, conn: Connection, after: int, upto: int, vectors: bool) -> list[tuple[int, int]]: ...

    def rebuilt_since(self, conn: Connection, after: int) -> bool: ...

    def marker(self, conn: Connection, seq: int) -> str | None: ...

    def heads(self, conn: Connection, feed: str) -> Iterable[Sequence[Any]]:
        """Every current version as (vid, entity id, agent, workspace, *the feed's columns), by vid.
        ``feed``: ``text`` (content, summary, tags) or ``vector`` (the stored vector, or null)."""

    def rows(self, conn: Connection, feed: str, vids: Sequence[int]) -> dict[int, Sequence[Any]]: ...


class Backend(Protocol):
    """One open database: what the engine holds (see the module docstring)."""

    name: str
    path: str
    keyword: KeywordStore
    vectors: VectorStore
    changes: ChangeLog
    errors: tuple[
        type[BaseException], ...
    ]  # what the driver raises (the API edge turns them into StorageError)

    @property
    def encrypted(self) -> bool: ...

    @property
    def read_only(self) -> bool:
        """True for a database that takes no writes (a PostgreSQL replica): writes are refused, and recall
        does not count retrievals."""

    @property
    def next_ids_only(self) -> bool:
        """True where every new row must take :meth:`next_id`'s id, never one its writer chose (a PostgreSQL role
        bound to one scope): an import then gives a file's entities and links new ids rather than keeping theirs."""

    @property
    def clock(self) -> Callable[[], int] | None:
        """The database's clock in unix ms, when versions take its time; None: the host's."""

    def conn(self) -> Connection:
        """This thread's connection (opened on first use)."""

    def lease(self) -> AbstractContextManager[None]:
        """Held around each verb: the thread keeps the connection :meth:`conn` gives it until the outermost
        lease ends, when a pooling backend may take it back (PostgreSQL's pool; SQLite keeps it)."""

    def mirror_file(self, name: str) -> str | None:
        """Where the in-memory index ``name`` may save its snapshot, or ``None`` to keep it in memory
        only (an encrypted vault: a snapshot would be plaintext)."""
        ...

    def file_mode(self) -> int:
        """Permission bits for files saved beside the data (those of the data file)."""
        ...

    def connect(self) -> Connection:
        """A new connection of its own (for a background index build); the caller closes it."""

    def read_snapshot(self, conn: Connection) -> AbstractContextManager[Connection]:
        """Every read inside sees one consistent snapshot."""

    def write(self, conn: Connection, work: Callable[[Connection], T]) -> T:
        """``work`` in one write transaction, retried while the database is busy; all or nothing."""

    def write_unsynced(self, conn: Connection, work: Callable[[Connection], T]) -> T:
        """A write that need not survive a power loss (usage counters)."""

    def get_meta(self, conn: Connection, key: str) -> str | None:
        """A vault-wide setting (``vault_meta``), or None."""

    def set_meta(self, conn: Connection, key: str, value: str | None) -> None:
        """Set a vault-wide setting in the caller's write (None removes it)."""

    def next_id(self, conn: Connection, table: str, column: str = "id") -> int:
        """The id the table's next row gets: never one a purged row had."""

    def exists(self) -> bool:
        """True when the database already holds a vault."""

    def migrate(self, now_ms: int) -> None: ...

    def stats(self, conn: Connection, keyword_index: str, vector_index: str) -> Stats: ...

    def check(self) -> CheckReport: ...

    def reindex(self) -> None: ...

    def refresh_statistics(self, conn: Connection) -> None:
        """Inside a long write that grows the tables (an import, ``migrate``'s copy): let the query planner
        see their sizes now, not after the commit (statements planned while they were small would go on
        scanning them whole)."""

    def backup(self, target: str) -> str: ...

    def rekey(self, new_key: str | bytes) -> None: ...

    def close(self) -> None: ...
