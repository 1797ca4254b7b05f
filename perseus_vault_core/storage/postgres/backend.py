"""The PostgreSQL backend's class (:class:`PostgresBackend`): one connection per thread (as the SQLite backend
holds), and the database's clock: every host stamps its versions with the server's time, not its own."""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar, cast

from ...contract.errors import InvalidInput, NotSupported, SetupError, StorageError
from ...contract.models import CheckReport, Stats
from ...primitives.forking import in_child
from ..base import ChangeLog, Connection, KeywordStore, VectorStore
from ..meta import get_meta as read_setting
from ..meta import set_meta as write_setting
from ..urls import redact, scrub
from . import changes, keyword, maintenance, pool, schema, vectors
from .connection import WRITE_LOCK, PgConnection, connect, write_transaction

T = TypeVar("T")

CLOCK_REFRESH_S = 60.0  # how often a process measures its offset from the database's clock again


VAULT_ID = "vault_id"  # vault_meta: a random name for this database's vault, for the snapshot cache
HIGH_WATER = "high_water:"  # vault_meta: a table's largest id before a purge (store.keep_high_water)
CACHE_VARIABLE = "PERSEUS_VAULT_CACHE"


def cache_folder() -> str | None:
    """Where processes save the in-memory indexes of PostgreSQL vaults, so that the next process on this host
    opens them instead of loading every row (their position in the change log is checked before one is
    used): ``$PERSEUS_VAULT_CACHE``, else ``$XDG_CACHE_HOME/perseus-vault`` or ``~/.cache/perseus-vault``
    (made private, 0700); an empty ``PERSEUS_VAULT_CACHE`` turns it off."""
    value = os.environ.get(CACHE_VARIABLE)
    if value is not None:
        return value or None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "perseus-vault")


def driver_errors() -> tuple[type[BaseException], ...]:
    """What psycopg raises (empty when it is not installed: no Postgres vault can be open then)."""
    try:
        import psycopg
    except ImportError:
        return ()
    return (psycopg.Error,)


class DatabaseClock:
    """The database server's clock, read locally: the offset between the server's time and this host's is
    measured at open (half the round trip taken off) and again every :data:`CLOCK_REFRESH_S`; readings
    never go backwards within a process."""

    def __init__(self, conn: Callable[[], Connection]) -> None:
        self._conn = conn
        self._offset = 0.0
        self._measured = -CLOCK_REFRESH_S
        self._last = 0
        self._lock = threading.Lock()

    def _measure(self) -> None:
        conn = self._conn()
        if conn.in_transaction:  # a reading inside someone's transaction would be that transaction's
            return
        before = time.time_ns() / 1e6
        server = float(conn.execute("SELECT extract(epoch FROM clock_timestamp()) * 1000").fetchone()[0])
        after = time.time_ns() / 1e6
        self._offset = server - (before + after) / 2
        self._measured = time.monotonic()

    def __call__(self) -> int:
        with self._lock:
            if time.monotonic() - self._measured >= CLOCK_REFRESH_S:
                self._measure()
            now = max(self._last, int(time.time_ns() / 1e6 + self._offset))
            self._last = now
            return now


class PostgresBackend:
    """One PostgreSQL database: a connection per thread, and the Postgres implementations of the protocols."""

    name = "postgres"
    keyword: KeywordStore = keyword
    vectors: VectorStore = vectors
    changes: ChangeLog = changes
    encrypted = False  # encryption at rest is the server's (docs/postgres.md)
    read_only = False  # a streaming replica (or default_transaction_read_only): found when the vault opens
    next_ids_only = False  # connected as a role bound to one scope (tenancy.py): found when the vault opens

    def __init__(self, url: str, *, key: str | bytes | None = None, synchronous: str = "FULL") -> None:
        if key is not None:
            raise InvalidInput(
                "key",
                "a PostgreSQL vault is encrypted at rest by its server, not by a key "
                "(docs/postgres.md); drop the key or PERSEUS_VAULT_KEY",
            )
        self.url, options = pool.split_url(url)
        self.path = redact(url)
        self.errors = driver_errors()
        # SQLite's OFF and NORMAL may lose the last writes to a power cut; Postgres's asynchronous commit may too.
        self.synchronous_commit = "off" if synchronous in ("OFF", "NORMAL") else "on"
        self.pool_size, self.pool_timeout = int(options["pool_size"]), options["pool_timeout"]
        self._connections = self._pool()
        self.clock = DatabaseClock(self.conn)
        self._identity: str | None = None  # names this vault's index snapshots in the cache folder
        _backends.add(self)

    def _pool(self) -> pool.Connections:
        try:
            import psycopg_pool  # noqa: F401
        except ImportError:
            raise SetupError(
                "PostgreSQL needs psycopg and psycopg-pool: pip install 'perseus-vault[postgres]'"
            ) from None
        return pool.Connections(
            self.url, size=self.pool_size, timeout=self.pool_timeout, setup=self._setup(), describe=self.path
        )

    def _setup(self) -> list[str]:
        """Statements every new connection runs first."""
        return ["SET synchronous_commit = off"] if self.synchronous_commit == "off" else []

    def conn(self) -> Connection:
        """This thread's connection, leased from the pool until the verb it serves returns (:meth:`lease`)."""
        try:
            return self._connections.conn()
        except self.errors as error:
            raise StorageError(f"cannot connect to {self.path}: {self._reason(error)}") from error

    def _reason(self, error: BaseException) -> str:
        """The first line of a driver's error, without a credential of the URL in it."""
        lines = str(error).strip().splitlines()
        return scrub(lines[0] if lines else type(error).__name__, self.url)

    def lease(self) -> AbstractContextManager[None]:
        """Within (a verb): this thread keeps its connection; the outermost lease gives it back to the pool."""
        return self._connections.lease()

    def connect(self) -> Connection:
        """A connection of its own, outside the pool (a background index load holds it for seconds). Its user
        closes it: :meth:`close` never does, since closing a connection while another thread's query runs on it
        crashes the driver (psycopg's C layer), and a load may still be running when the vault closes."""
        if self._connections.closed:
            raise StorageError("the vault is closed")
        try:
            conn = connect(self.url)
        except self.errors as error:
            raise StorageError(f"cannot connect to {self.path}: {self._reason(error)}") from error
        for statement in self._setup():
            conn.execute(statement)
        return conn

    def mirror_file(self, name: str) -> str | None:
        """In this user's cache folder (:func:`cache_folder`), named for this database's vault and the role
        connected (a role bound to one scope indexes that scope only); None when caching is off."""
        folder = cache_folder()
        if folder is None:
            return None
        if self._identity is None:
            conn = self.conn()
            vault_id = read_setting(conn, VAULT_ID)
            role = conn.execute("SELECT current_user").fetchone()[0]
            self._identity = hashlib.sha256(f"{vault_id}\0{role}".encode()).hexdigest()[:32]
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return os.path.join(folder, f"{self._identity}-{name}.pvidx")

    def file_mode(self) -> int:
        return 0o600

    def read_snapshot(self, conn: Connection) -> AbstractContextManager[Connection]:
        return _snapshot(conn)

    def write(self, conn: Connection, work: Callable[[Connection], T]) -> T:
        self._writable()
        return _write(conn, work, synced=True)

    def write_unsynced(self, conn: Connection, work: Callable[[Connection], T]) -> T:
        self._writable()
        return _write(conn, work, synced=False)

    def _writable(self) -> None:
        if self.read_only:
            raise NotSupported(
                f"{self.path} is read-only (a streaming replica, or default_transaction_read_only): "
                "write through the primary's URL (docs/postgres.md, read replicas)"
            )

    def get_meta(self, conn: Connection, key: str) -> str | None:
        return read_setting(conn, key)

    def set_meta(self, conn: Connection, key: str, value: str | None) -> None:
        """As on SQLite, except a purge's high-water mark (``high_water:<table>``), which the schema's function
        records from the table itself (the value given is what it reads, the largest id so far): a role bound to
        a scope may not write the vault's settings, whose marks every tenant's ids are counted from."""
        if key.startswith(HIGH_WATER):
            conn.execute("SELECT pv_keep_high_water(?)", (key[len(HIGH_WATER) :],))
            return
        write_setting(conn, key, value)

    def next_id(self, conn: Connection, table: str, column: str = "id") -> int:
        return schema.next_id(conn, table, column)  # type: ignore[arg-type]

    def exists(self) -> bool:
        """True when the database holds a vault (the schema has been created)."""
        return schema.current_version(self.conn()) > 0  # type: ignore[arg-type]

    def migrate(self, now_ms: int) -> None:
        conn = self.conn()
        server = int(conn.execute("SHOW server_version_num").fetchone()[0])
        if server < 150000:
            raise SetupError(f"{self.path} runs PostgreSQL {server // 10000}; the vault needs 15 or later")
        self.read_only = bool(
            conn.execute(
                "SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'"
            ).fetchone()[0]
        )
        if self.read_only:  # a replica reads the primary's schema; it can neither make nor change one
            version = schema.current_version(conn)  # type: ignore[arg-type]
            if version != schema.LATEST:
                raise SetupError(
                    f"{self.path} is read-only (a replica?) and its vault schema is version {version}, "
                    f"this package's {schema.LATEST}: open it once through the primary first"
                )
            return
        schema.migrate(conn, now_ms)  # type: ignore[arg-type]
        self.next_ids_only = bool(conn.execute("SELECT pv_bound_scope() IS NOT NULL").fetchone()[0])
        # the first host to open it names it; the others read that name
        if read_setting(conn, VAULT_ID) is None:
            write_transaction(
                conn,  # type: ignore[arg-type]
                lambda c: c.execute(
                    "INSERT INTO vault_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                    (VAULT_ID, uuid.uuid4().hex),
                ),
            )
        (version,) = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if tuple(int(p) for p in re.findall(r"\d+", version)[:2]) < (0, 8):
            raise SetupError(
                f"{self.path} has pgvector {version}; the vault needs 0.8 or later "
                "(ALTER EXTENSION vector UPDATE)"
            )

    def stats(self, conn: Connection, keyword_index: str, vector_index: str) -> Stats:
        return maintenance.stats(conn, self.path, keyword_index, vector_index)

    def check(self) -> CheckReport:
        conn = self.conn()
        with self.read_snapshot(conn):
            return maintenance.check(conn)

    def reindex(self) -> None:
        write_transaction(self.conn(), maintenance.reindex)  # type: ignore[arg-type]

    def refresh_statistics(self, conn: Connection) -> None:
        maintenance.analyze(conn)

    def backup(self, target: str) -> str:
        raise NotSupported(
            "backup copies a SQLite file; a PostgreSQL vault is backed up by its server (pg_dump, or "
            "the managed service's snapshots: docs/postgres.md), or exported with `export`"
        )

    def rekey(self, new_key: str | bytes) -> None:
        raise NotSupported(
            "rekey re-encrypts a SQLite file; a PostgreSQL vault's encryption at rest is the "
            "server's (docs/postgres.md)"
        )

    def close(self) -> None:
        self._connections.close()


def _write(conn: Connection, work: Callable[[Connection], T], *, synced: bool) -> T:
    """``work`` in one write transaction, writers taking turns as on SQLite: each first takes
    :data:`WRITE_LOCK` (transaction-scoped), then runs READ COMMITTED, so every statement sees what the
    writer before it committed. One writer at a time keeps what the engine relies on: ids ascend in commit
    order (``scan`` reads them so, exactly once), a new id is the largest plus one, and an update reads the
    head it replaces. Readers never wait: they read their own snapshots. ``synced=False``: a commit that
    need not reach the disk before it returns (usage counters)."""

    def locked(c: PgConnection) -> T:
        c.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK,))
        if not synced:
            c.execute("SET LOCAL synchronous_commit = off")
        return work(c)

    return write_transaction(conn, locked, isolation="READ COMMITTED")  # type: ignore[arg-type]


@contextmanager
def _snapshot(conn: Connection) -> Iterator[Connection]:
    """Every read inside sees one snapshot (REPEATABLE READ: Postgres's snapshot isolation)."""
    pg = cast(PgConnection, conn)
    pg.begin_snapshot()
    try:
        yield conn
    finally:
        pg.end_snapshot()


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception:  # closing is best effort; the process may be exiting
        pass


_backends: weakref.WeakSet[PostgresBackend] = weakref.WeakSet()
# Connections and pools a forked child inherited: never used there, and never closed or collected either
# (closing one would tell the server to end the parent's session on the socket they share).
_INHERITED: list[Any] = []


@in_child
def _fresh_after_fork() -> None:
    """In a forked child: the parent's connections are its own (a socket shared by two processes mixes their
    messages), so every backend makes a new pool; the inherited connections are dropped unclosed."""
    for backend in list(_backends):
        backend._connections.abandon()
        _INHERITED.append(backend._connections)
        backend.clock._lock = threading.Lock()
        backend._connections = backend._pool()
