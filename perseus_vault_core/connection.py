"""The one SQLite connection factory.

Every connection the vault opens comes from here, so every connection has the same
driver, the sqlite-vec extension, WAL, a busy timeout, foreign keys and the vault's SQL
functions. Writes go through :func:`write_transaction`: ``BEGIN IMMEDIATE`` with a
bounded retry, so a busy database is waited out inside the engine, never surfaced
to a caller unless it stays busy past the retry budget.

Driver choice: the standard library's ``sqlite3`` when it can load extensions; else
the drop-in builds ``sqlean`` (package ``sqlean-py``) or ``pysqlite3``
(``pysqlite3-binary``); else a :class:`SetupError` that names the fix.
``PERSEUS_VAULT_SQLITE`` (``stdlib`` | ``sqlean`` | ``pysqlite3``) pins one.
"""

from __future__ import annotations

import importlib
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from .errors import InvalidInput, SetupError, StorageError

T = TypeVar("T")

_CANDIDATES = {"stdlib": "sqlite3", "sqlean": "sqlean", "pysqlite3": "pysqlite3.dbapi2"}
_FIX = (
    "this Python's sqlite3 cannot load extensions; install a drop-in build with "
    "`pip install sqlean-py` (or `pip install pysqlite3-binary`)"
)

BUSY_TIMEOUT_MS = 5_000
WRITE_RETRIES = 8


@dataclass(frozen=True)
class Driver:
    """The DB-API module in use and what it was chosen as."""

    name: str
    module: ModuleType

    @property
    def sqlite_version(self) -> str:
        return str(self.module.sqlite_version)


def _usable(module: ModuleType) -> str | None:
    """Return why ``module`` cannot serve the vault, or ``None`` when it can."""
    if not hasattr(module.Connection, "enable_load_extension"):
        return "cannot load extensions"
    try:
        import sqlite_vec

        conn = module.connect(":memory:")
        try:
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.execute("CREATE VIRTUAL TABLE temp.probe USING fts5(x)")
        finally:
            conn.close()
    except Exception as exc:  # any failure here means "not this driver"
        return f"{type(exc).__name__}: {exc}"
    return None


_driver_lock = threading.Lock()
_driver: Driver | None = None


def choose_driver(preference: str | None = None) -> Driver:
    """Pick the first SQLite module that can load sqlite-vec and has FTS5."""
    global _driver
    preference = preference or os.environ.get("PERSEUS_VAULT_SQLITE") or None
    if preference is None and _driver is not None:
        return _driver
    if preference is not None and preference not in _CANDIDATES:
        raise SetupError(
            f"PERSEUS_VAULT_SQLITE={preference!r} is not one of {', '.join(_CANDIDATES)}"
        )
    names = [preference] if preference else list(_CANDIDATES)
    reasons = []
    for name in names:
        try:
            module = importlib.import_module(_CANDIDATES[name])
        except ImportError:
            reasons.append(f"{name}: not installed")
            continue
        why = _usable(module)
        if why is None:
            driver = Driver(name, module)
            if preference is None:
                with _driver_lock:
                    _driver = driver
            return driver
        reasons.append(f"{name}: {why}")
    raise SetupError(f"no usable SQLite driver ({'; '.join(reasons)}); {_FIX}")


def decay_sql(now_ms: int | None, last_ms: int | None, updated_ms: int | None, count: int | None) -> float:
    """SQL function ``pv_decay``: the documented decay of :mod:`ranking`, callable inside queries."""
    from .ranking import decay

    return decay(now_ms or 0, last_ms, updated_ms or 0, count or 0)


SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def connect(path: str, driver: Driver | None = None, *, synchronous: str = "FULL") -> Any:
    """Open one configured connection to ``path`` (autocommit; transactions are explicit)."""
    if synchronous not in SYNCHRONOUS:  # SQLite would silently read a typo as NORMAL
        raise InvalidInput("synchronous", f"must be one of {', '.join(SYNCHRONOUS)}")
    driver = driver or choose_driver()
    mod = driver.module
    try:
        conn = mod.connect(
            path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
    except mod.Error as exc:
        raise StorageError(f"cannot open database {path!r}: {exc}") from exc
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal" and path != ":memory:":
            raise StorageError(f"cannot switch {path!r} to WAL mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.create_function("pv_decay", 4, decay_sql, deterministic=True)
    except mod.Error as exc:
        conn.close()
        raise StorageError(f"cannot configure database {path!r}: {exc}") from exc
    return conn


def _driver_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = []
    for name in _CANDIDATES.values():
        try:
            errors.append(importlib.import_module(name).Error)
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


# The DB-API error classes of every driver the factory may pick: the one boundary where SQLite
# errors become the vault's (StorageError), see vault._edge.
SQLITE_ERRORS = _driver_errors()


def is_busy(exc: BaseException) -> bool:
    """True for SQLite's transient lock errors, which a retry can cure (never for the vault's own)."""
    if not isinstance(exc, SQLITE_ERRORS):
        return False
    text = str(exc).lower()
    return "database is locked" in text or "database is busy" in text or "database table is locked" in text


@contextmanager
def read_snapshot(conn: Any) -> Iterator[Any]:
    """A deferred read transaction: every SELECT inside sees one consistent snapshot."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def write_transaction(conn: Any, work: Callable[[Any], T], *, retries: int = WRITE_RETRIES) -> T:
    """Run ``work(conn)`` inside ``BEGIN IMMEDIATE``; retry the whole unit while SQLite is busy.

    Nothing is committed until ``work`` returns, so a retry never repeats a partial write,
    and any exception rolls back everything ``work`` did.
    """
    delay = 0.01
    for attempt in range(retries + 1):
        try:
            conn.execute("BEGIN IMMEDIATE")
        except Exception as exc:
            if is_busy(exc) and attempt < retries:
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)
                continue
            raise StorageError(f"database stayed busy after {attempt + 1} attempts: {exc}") from exc
        try:
            result = work(conn)
            conn.execute("COMMIT")
            return result
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if is_busy(exc) and attempt < retries:
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)
                continue
            raise
    raise StorageError("database stayed busy")  # pragma: no cover - loop always returns or raises


class ConnectionPool:
    """One connection per thread for a database file, all closed together.

    SQLite connections are cheap but not shareable mid-transaction across threads;
    a connection per thread lets readers run beside a writer under WAL.
    """

    def __init__(self, path: str, driver: Driver | None = None, *, synchronous: str = "FULL") -> None:
        self.path = path
        self.driver = driver or choose_driver()
        self.synchronous = synchronous
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False

    def get(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StorageError("the vault is closed")
            conn = connect(self.path, self.driver, synchronous=self.synchronous)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
            # A server that runs each request on a new thread must not leak a connection (two file
            # descriptors) per thread: close it when its thread is gone.
            weakref.finalize(threading.current_thread(), self._release, conn)
        return conn

    def _release(self, conn: Any) -> None:
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)
                _close_quietly(conn)

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._all)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for conn in self._all:
                _close_quietly(conn)
            self._all.clear()
        self._local = threading.local()


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception:  # closing is best effort; the process may be exiting
        pass
