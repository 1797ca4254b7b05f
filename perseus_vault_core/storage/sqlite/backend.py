"""The SQLite backend's class (:class:`SQLiteBackend`): one file, a connection per thread, and the SQLite
implementations of the storage protocols (the package's docstring lists its modules)."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

from ...contract.models import CheckReport, Stats
from ...primitives.keys import resolve_key
from ..base import ChangeLog, Connection, KeywordStore, VectorStore
from ..meta import get_meta as read_setting
from ..meta import set_meta as write_setting
from . import changes, keyword, maintenance, schema, vectors
from .connection import (
    SQLITE_ERRORS,
    ConnectionPool,
    checkpoint,
    choose_driver,
    connect,
    read_snapshot,
    write_transaction,
)
from .connection import rekey as _rekey

T = TypeVar("T")


class SQLiteBackend:
    """One SQLite file: a connection per thread, and the SQLite implementations of the storage protocols."""

    name = "sqlite"
    keyword: KeywordStore = keyword
    vectors: VectorStore = vectors
    changes: ChangeLog = changes
    errors = SQLITE_ERRORS
    clock: Callable[[], int] | None = None  # versions take the host's time: one file, one machine
    read_only = False  # the file is opened for writing (WAL mode writes beside it even to read)
    next_ids_only = False  # an import may keep a file's ids above every id here (an export restored whole)

    def __init__(self, path: str, *, key: str | bytes | None = None, synchronous: str = "FULL") -> None:
        self.path = path
        self.driver = choose_driver(key=resolve_key(key))
        self.pool = ConnectionPool(path, self.driver, synchronous=synchronous)

    @property
    def encrypted(self) -> bool:
        return self.driver.encrypted

    def conn(self) -> Connection:
        conn: Connection = self.pool.get()
        return conn

    def lease(self) -> AbstractContextManager[None]:
        """A thread keeps its connection to the file for good: there is nothing to give back."""
        return nullcontext()

    def connect(self) -> Connection:
        """A connection of its own (an index build, the settling at close), to this vault's file only: once
        the path names another file (moved over, or removed), nothing of this vault reaches it."""
        self.pool.refuse_replaced()
        conn: Connection = connect(self.path, self.driver, vault=True)
        return conn

    def mirror_file(self, name: str) -> str | None:
        if self.encrypted or self.path == ":memory:" or self.path.startswith("file:"):
            return None
        return f"{self.path}-{name}.pvidx"

    def file_mode(self) -> int:
        try:
            return os.stat(self.path).st_mode & 0o666
        except OSError:
            return 0o600

    def read_snapshot(self, conn: Connection) -> AbstractContextManager[Connection]:
        self.pool.refuse_replaced()  # one stat: an answer from a file no longer at the path would be stale
        return read_snapshot(conn)

    def write(self, conn: Connection, work: Callable[[Connection], T]) -> T:
        """``work`` in one transaction, then its pages copied into the main file (:func:`.connection.checkpoint`):
        an acknowledged write is in the one file, not only in the WAL beside it, should the process die. A
        file replaced or removed since the vault opened it is written no more (the write would be lost
        with it)."""
        self.pool.refuse_replaced()
        result = write_transaction(conn, work)
        checkpoint(conn)
        self.pool.wrote()
        return result

    def write_unsynced(self, conn: Connection, work: Callable[[Connection], T]) -> T:
        self.pool.refuse_replaced()
        conn.execute("PRAGMA synchronous = NORMAL")  # no fsync for this one
        try:
            return write_transaction(conn, work)
        finally:
            conn.execute(f"PRAGMA synchronous = {self.pool.synchronous}")

    def get_meta(self, conn: Connection, key: str) -> str | None:
        return read_setting(conn, key)

    def set_meta(self, conn: Connection, key: str, value: str | None) -> None:
        write_setting(conn, key, value)

    def next_id(self, conn: Connection, table: str, column: str = "id") -> int:
        return schema.next_id(conn, table, column)

    def exists(self) -> bool:
        return os.path.isfile(self.path) and os.path.getsize(self.path) > 0

    def migrate(self, now_ms: int) -> None:
        schema.migrate(self.conn(), now_ms)

    def stats(self, conn: Connection, keyword_index: str, vector_index: str) -> Stats:
        return maintenance.stats(
            conn, self.path, self.driver.name, self.driver.sqlite_version, keyword_index, vector_index
        ).model_copy(update={"encrypted": self.driver.encrypted})

    def check(self) -> CheckReport:
        # No snapshot: FTS5's integrity-check is issued as a write statement.
        return maintenance.check(self.conn())

    def reindex(self) -> None:
        self.write(self.conn(), maintenance.reindex)

    def refresh_statistics(self, conn: Connection) -> None:
        """Nothing to do: SQLite plans every statement it prepares against the file as it is."""

    def backup(self, target: str) -> str:
        return maintenance.backup(self.conn(), target)

    def rekey(self, new_key: str | bytes) -> None:
        """Re-encrypt under ``new_key``. The rekey needs the file to itself, and every open connection
        holds the old key: close them all, rekey on a connection of its own, then start afresh (under
        the old key if it failed)."""
        key = resolve_key(new_key)
        assert key is not None
        synchronous = self.pool.synchronous
        self.pool.close()
        conn = connect(self.path, self.driver)
        try:
            _rekey(conn, key)
            self.driver = choose_driver(key=key)
        finally:
            conn.close()
            self.pool = ConnectionPool(self.path, self.driver, synchronous=synchronous)

    def close(self) -> None:
        self.pool.close()
