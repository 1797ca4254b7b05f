"""The one SQLite connection factory.

Every connection the vault opens comes from here, so every connection has the same
driver, the sqlite-vec extension, WAL, a busy timeout, foreign keys and the vault's SQL
functions. Writes go through :func:`write_transaction`: ``BEGIN IMMEDIATE`` with a
bounded retry, so a busy database is waited out inside the engine, never surfaced
to a caller unless it stays busy past the retry budget.

Driver choice: the standard library's ``sqlite3`` when it can load extensions; else
the drop-in builds ``sqlean`` (package ``sqlean-py``) or ``pysqlite3``
(``pysqlite3-binary``); else a :class:`SetupError` that names the fix.
``PERSEUS_VAULT_SQLITE`` (``stdlib`` | ``sqlean`` | ``pysqlite3`` | ``sqlcipher``) pins one.

Encryption at rest: when a key is configured (``PERSEUS_VAULT_KEY``, ``PERSEUS_VAULT_KEY_FILE``, or
``Vault(path, key=...)``) the driver is SQLCipher (package ``sqlcipher3``), and the key is applied to
every connection before any other statement, so no page reaches the disk (file, WAL) in plaintext.
The cipher is SQLCipher's own (AES-256 with a per-page HMAC, PBKDF2 key derivation); nothing here
encrypts anything itself.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, TypeVar

from ...contract.errors import InvalidInput, SetupError, StorageError
from ...primitives import file_locks
from ...primitives.decay import decay
from ...primitives.forking import in_child
from ...primitives.keys import check_key
from ..retry import FIRST_PAUSE, WRITE_RETRIES, pause, transaction
from .file_checks import beside, check_header, not_a_vault, one_name, prove_key, wrong_key

T = TypeVar("T")

# Auto-choice tries these in order; ``sqlcipher`` last (without a key it is a plain SQLite build).
_CANDIDATES = {
    "stdlib": "sqlite3",
    "sqlean": "sqlean",
    "pysqlite3": "pysqlite3.dbapi2",
    "sqlcipher": "sqlcipher3.dbapi2",
}
_CIPHER_FIX = "encryption needs SQLCipher: pip install 'perseus-vault[encryption]' (package sqlcipher3)"
_FIX = (
    "this Python's sqlite3 cannot load extensions; install a drop-in build with "
    "`pip install sqlean-py` (or `pip install pysqlite3-binary`)"
)

BUSY_TIMEOUT_MS = 5_000


@dataclass(frozen=True)
class Driver:
    """The DB-API module in use and what it was chosen as; ``key`` (SQLCipher only) opens every connection."""

    name: str
    module: ModuleType
    key: str | None = field(default=None, repr=False, compare=False)  # never printed in a traceback

    @property
    def encrypted(self) -> bool:
        return self.key is not None

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


_cipher_lock = threading.Lock()
_cipher: Driver | None = None


def _cipher_driver(key: str, preference: str | None) -> Driver:
    global _cipher
    if preference not in (None, "sqlcipher"):
        raise SetupError(
            f"an encryption key is set, which needs the sqlcipher driver, "
            f"but PERSEUS_VAULT_SQLITE={preference!r}; unset one of them"
        )
    with _cipher_lock:
        if _cipher is None:
            try:
                module = importlib.import_module(_CANDIDATES["sqlcipher"])
            except ImportError:
                raise SetupError(f"an encryption key is set, but {_CIPHER_FIX}") from None
            why = _usable(module)
            if why is not None:
                raise SetupError(f"SQLCipher cannot serve the vault ({why}); {_CIPHER_FIX}")
            _cipher = Driver("sqlcipher", module)
        return replace(_cipher, key=key)


def choose_driver(preference: str | None = None, *, key: str | None = None) -> Driver:
    """Pick the first SQLite module that can load sqlite-vec and has FTS5 (SQLCipher when ``key`` is set)."""
    global _driver
    preference = preference or os.environ.get("PERSEUS_VAULT_SQLITE") or None
    if key is not None:
        return _cipher_driver(key, preference)
    if preference is None and _driver is not None:
        return _driver
    if preference is not None and preference not in _CANDIDATES:
        raise SetupError(f"PERSEUS_VAULT_SQLITE={preference!r} is not one of {', '.join(_CANDIDATES)}")
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
    """SQL function ``pv_decay``: the documented decay (:mod:`...primitives.decay`), callable inside queries."""
    return decay(now_ms or 0, last_ms, updated_ms or 0, count or 0)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower_sql(text: object) -> object:
    """SQL function ``pv_ascii_lower``: text with ASCII capitals made small, nothing else changed (what
    Postgres's ``translate`` does for ``$isubstring``; SQLite's own ``lower()`` folds more or less
    depending on its build). Three times cheaper per row than SQL's 26 nested ``replace`` calls."""
    return text.translate(_ASCII_LOWER) if isinstance(text, str) else text


SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def connect(
    path: str, driver: Driver | None = None, *, synchronous: str = "FULL", vault: bool = False
) -> Any:
    """Open one configured connection to ``path`` (autocommit; transactions are explicit).

    A new file is created private (0600, less under a stricter umask); an existing one keeps its mode.
    With a key, a wrong key is refused before SQLite touches the files (see :func:`.file_checks.prove_key`).
    ``vault``: the file is to be a vault, so another application's database is refused untouched
    (:func:`.file_checks.not_a_vault`).
    The file is read outside SQLite (its header, its first page) only while no connection of this process
    holds it: closing that descriptor would drop the locks of every connection here
    (:mod:`...primitives.file_locks`).
    """
    if synchronous not in SYNCHRONOUS:  # SQLite would silently read a typo as NORMAL
        raise InvalidInput("synchronous", f"must be one of {', '.join(SYNCHRONOUS)}")
    driver = driver or choose_driver()
    mod = driver.module
    with file_locks.opening():  # the look at the file and the registration, before any lock is taken
        held = file_locks.holding(path)
        if path != ":memory:" and not path.startswith("file:"):
            one_name(path, held)
        if held is None:  # no connection here holds it: its bytes may be read outside SQLite
            check_header(path, driver.key is not None)
            if driver.key is not None:
                prove_key(path, mod, driver.key)
        else:
            beside(path, held, driver.name, driver.key is not None)
        _create_private(path)
        try:
            conn = mod.connect(
                path,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,
                factory=_connection_class(mod),
            )
        except mod.Error as exc:
            raise StorageError(f"cannot open database {path!r}: {exc}") from exc
        conn.release = file_locks.hold(path, conn, driver.name, driver.key is not None)
    if driver.key is not None:
        _unlock(conn, path, driver.key)
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        foreign = not_a_vault(conn) if vault else None
        if foreign is not None:
            conn.close()
            raise SetupError(
                f"{path!r} is not a vault: it is a SQLite database of another application ({foreign}); "
                "the vault wrote nothing to it. Give a new file's path, or an existing vault's"
            )
        mode = _switch_to_wal(conn)
        if str(mode).lower() != "wal" and path != ":memory:":
            raise StorageError(f"cannot switch {path!r} to WAL mode (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.create_function("pv_decay", 4, decay_sql, deterministic=True)
        conn.create_function("pv_ascii_lower", 1, ascii_lower_sql, deterministic=True)
    except mod.Error as exc:
        conn.close()
        raise StorageError(f"cannot configure database {path!r}: {exc}") from exc
    return conn


def _switch_to_wal(conn: Any) -> str:
    """Put the file in WAL mode (it stays so: every later open finds it already there) and return the mode.

    Only a file's first opening switches it, and two first openings at once can deadlock: each holds a
    shared lock and wants the exclusive one, so SQLite answers one of them "database is locked" at once,
    without waiting out the busy timeout. That one tries again, paced as a busy write is (:func:`..retry.pause`).
    """
    mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    if mode.lower() == "wal":
        return mode
    delay = FIRST_PAUSE
    for attempt in range(WRITE_RETRIES + 1):
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except SQLITE_ERRORS as exc:
            if not is_busy(exc) or attempt == WRITE_RETRIES:
                raise
            delay = pause(delay)
    raise StorageError("database stayed busy")  # pragma: no cover - loop always returns or raises


def _create_private(path: str) -> None:
    """Create a new database file 0600 before SQLite does: SQLite would make it 0644 (less the umask),
    and it gives the -wal, -shm and -journal files the main file's mode, so they follow."""
    if path == ":memory:" or path.startswith("file:"):
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass  # it exists (its mode is its owner's choice), or SQLite will say why it cannot be created


_CLASSES: dict[str, type] = {}


def _connection_class(mod: ModuleType) -> type:
    """The driver's connection class with a ``close`` that also lets go of the file's registration
    (:func:`...primitives.file_locks.hold`; a connection collected unclosed lets go of it then)."""
    cls = _CLASSES.get(mod.__name__)
    if cls is None:

        def close(self: Any) -> None:
            try:
                mod.Connection.close(self)
            finally:
                self.release()

        cls = type(
            "VaultConnection",
            (mod.Connection,),
            {"close": close, "release": lambda self: None, "__module__": __name__},
        )
        _CLASSES[mod.__name__] = cls
    return cls


def _unlock(conn: Any, path: str, key: str) -> None:
    """Apply the key first (before any other statement), then prove it by reading page 1."""
    try:
        conn.set_key(key)
        # SQLCipher logs a failed HMAC to stderr itself; the error below says it better.
        conn.execute("PRAGMA cipher_log_level = NONE")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except Exception as exc:
        conn.close()
        if "not a database" in str(exc):
            raise wrong_key(path) from None
        raise StorageError(f"cannot open encrypted database {path!r}: {exc}") from exc


def rekey(conn: Any, new_key: str) -> None:
    """Re-encrypt the whole file under ``new_key`` on ``conn``: a SQLCipher connection opened with the
    current key, and the only one open on the file.

    The WAL is emptied first (its frames are under the old key), and the rekey itself runs in the
    rollback-journal mode, where SQLCipher rewrites every page in one transaction that a crash rolls
    back whole (the conservative path; encrypting SQLite builds disagree on rekeying in WAL mode).
    Leaving WAL needs the file to itself, so another process still using the vault is refused
    rather than left holding a key that no longer works.
    """
    new_key = check_key(new_key, "new key")
    busy_message = "another connection is using the vault; stop it (a server, another process) and try again"
    busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    try:
        mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
    except Exception as exc:
        if is_busy(exc):
            raise StorageError(busy_message) from None
        raise
    if busy or str(mode).lower() != "delete":
        conn.execute("PRAGMA journal_mode = WAL")
        raise StorageError(busy_message)
    try:
        conn.reset_key(new_key)
    finally:
        conn.execute("PRAGMA journal_mode = WAL")


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


def checkpoint(conn: Any) -> None:
    """Copy the WAL's committed pages into the main file, so that the file alone holds them (a copy of
    it, a backup tool that takes the one file). ``PASSIVE``: it waits for no reader or writer, and copies
    what no reader of an older snapshot still needs; whatever it leaves, the next checkpoint takes. Best
    effort: the write it follows is committed and durable in the WAL whatever happens here."""
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except SQLITE_ERRORS:
        pass


def write_transaction(conn: Any, work: Callable[[Any], T], *, retries: int = WRITE_RETRIES) -> T:
    """Run ``work(conn)`` inside ``BEGIN IMMEDIATE``; retry the whole unit while SQLite is busy
    (:func:`..retry.transaction`)."""
    return transaction(
        conn,
        work,
        begin="BEGIN IMMEDIATE",
        retryable=is_busy,
        gave_up="database stayed busy",
        retries=retries,
    )


_pools_all: weakref.WeakSet[ConnectionPool] = (
    weakref.WeakSet()
)  # every open pool (a forked child resets them)


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
        self._file: file_locks.FileId | None = None  # the file its first connection opened
        self._wal: file_locks.FileId | None = None  # ... and the -wal beside it then
        _pools_all.add(self)

    def get(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StorageError("the vault is closed")
            self.refuse_replaced()
            conn = connect(self.path, self.driver, synchronous=self.synchronous, vault=True)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
                if self._file is None:
                    self._file, self._wal = (
                        file_locks.file_id(self.path),
                        file_locks.file_id(self.path + "-wal"),
                    )
            # A server that runs each request on a new thread must not leak a connection (two file
            # descriptors) per thread: close it when its thread is gone.
            weakref.finalize(threading.current_thread(), self._release, conn)
        return conn

    @property
    def replaced(self) -> bool:
        """Whether the path now names another file than the one this pool's connections opened (moved over,
        or removed): a new connection would open that other file, and nothing of this vault may reach it."""
        if self._file is None or self.path == ":memory:" or self.path.startswith("file:"):
            return False
        return file_locks.file_id(self.path) != self._file

    def wrote(self) -> None:
        """After a write: the -wal beside the file exists now; note which it is, once (see :meth:`close`)."""
        if self._wal is None:
            self._wal = file_locks.file_id(self.path + "-wal")

    def refuse_replaced(self) -> None:
        if self.replaced:
            raise StorageError(
                f"{self.path!r} was replaced or removed since this vault opened it; open it again "
                "to use the file now there"
            )

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
        """Close every connection, after a last checkpoint: when another process still has the file open,
        SQLite leaves the WAL in place (its last connection checkpoints and deletes it), but the main
        file already holds everything written through this pool. A file replaced or removed meanwhile is
        left to SQLite, which neither checkpoints nor deletes the ``-wal`` and ``-shm`` of a moved file (those
        names may now be another file's), except that this vault's own ``-wal``, left under the name, is taken
        away when no process has it open (:func:`_stale_side_files`)."""
        with self._lock:
            self._closed = True
            replaced = self.replaced
            idle = [conn for conn in self._all if not conn.in_transaction]
            if idle and not replaced:
                checkpoint(idle[0])
            for conn in self._all:
                _close_quietly(conn)
            self._all.clear()
            if replaced and self._wal is not None and file_locks.file_id(self.path + "-wal") == self._wal:
                _stale_side_files(self.path)
        self._local = threading.local()


@in_child
def _fresh_after_fork() -> None:
    """In a forked child: fresh module locks, every pool opens new connections, and the connections the child
    inherited are closed. SQLite keeps, per process, which locks it holds on each file, and the child's copy
    says it holds the parent's, which POSIX did not give it: a connection the child opened beside them would
    take no lock of its own, and another process would take itself for the file's last user and delete the
    -wal under it. Closing them lets SQLite forget that record. It is safe because every verb and background
    task runs inside the fork gate (primitives/forking.py): at the fork no connection was inside SQLite, and
    in WAL mode closing one whose file another process (the parent) holds neither checkpoints nor deletes
    anything (it cannot take the file to itself)."""
    global _driver_lock, _cipher_lock
    _driver_lock, _cipher_lock = threading.Lock(), threading.Lock()
    inherited = []
    for pool in list(_pools_all):
        inherited.extend(pool._all)
        pool._all = []
        pool._local = threading.local()
        pool._lock = threading.Lock()
    for conn in inherited:
        _close_quietly(conn)


def _stale_side_files(path: str) -> None:
    """Remove the ``-wal`` and ``-shm`` a vault whose file was replaced left under its name, when no process
    has them open. They belong to the file that was there: a process opening the new file would read the old
    one's pages from them, over its own (a backup moved over a vault in use came back damaged). No process
    has them open when this one can take the lock on the ``-shm``'s dead-man byte, which every process that
    maps the WAL index holds shared; it is held while both go. Nothing is done while any connection of this
    process holds the file now at ``path`` (closing this descriptor would drop its locks)."""
    if file_locks.holding(path) is not None:
        return
    try:
        fd = os.open(path + "-shm", os.O_RDWR)
    except OSError:
        return
    try:
        import fcntl

        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128)  # SQLite's DMS byte: nobody maps it
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(path + suffix)
    except OSError:
        pass  # in use: the other process's (or the new file's) to keep
    finally:
        os.close(fd)


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception:  # closing is best effort; the process may be exiting
        pass
