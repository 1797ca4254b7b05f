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

import importlib
import os
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, TypeVar

from ...contract.errors import InvalidInput, SetupError, StorageError
from ...primitives.forking import in_child
from ...primitives.keys import KEY_ENV, KEY_FILE_ENV, check_key
from ...primitives.decay import decay
from ..retry import FIRST_PAUSE, WRITE_RETRIES, pause, transaction

T = TypeVar("T")

# Auto-choice tries these in order; ``sqlcipher`` last (without a key it is a plain SQLite build).
_CANDIDATES = {"stdlib": "sqlite3", "sqlean": "sqlean", "pysqlite3": "pysqlite3.dbapi2", "sqlcipher": "sqlcipher3.dbapi2"}
_CIPHER_FIX = "encryption needs SQLCipher: pip install 'perseus-vault[encryption]' (package sqlcipher3)"
_SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every plaintext SQLite file
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
        raise SetupError(f"an encryption key is set, which needs the sqlcipher driver, "
                         f"but PERSEUS_VAULT_SQLITE={preference!r}; unset one of them")
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
    """SQL function ``pv_decay``: the documented decay (:mod:`...primitives.decay`), callable inside queries."""
    return decay(now_ms or 0, last_ms, updated_ms or 0, count or 0)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower_sql(text: object) -> object:
    """SQL function ``pv_ascii_lower``: text with ASCII capitals made small, nothing else changed (what
    Postgres's ``translate`` does for ``$isubstring``; SQLite's own ``lower()`` folds more or less
    depending on its build). Three times cheaper per row than SQL's 26 nested ``replace`` calls."""
    return text.translate(_ASCII_LOWER) if isinstance(text, str) else text


SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def connect(path: str, driver: Driver | None = None, *, synchronous: str = "FULL", vault: bool = False) -> Any:
    """Open one configured connection to ``path`` (autocommit; transactions are explicit).

    A new file is created private (0600, less under a stricter umask); an existing one keeps its mode.
    With a key, a wrong key is refused before SQLite touches the files (see :func:`_prove_key`). ``vault``:
    the file is to be a vault, so another application's database is refused untouched (:func:`_not_a_vault`).
    """
    if synchronous not in SYNCHRONOUS:  # SQLite would silently read a typo as NORMAL
        raise InvalidInput("synchronous", f"must be one of {', '.join(SYNCHRONOUS)}")
    driver = driver or choose_driver()
    mod = driver.module
    _check_header(path, driver)
    if driver.key is not None and not _key_proven(path, driver.key):
        _prove_key(path, driver)
    _create_private(path)
    try:
        conn = mod.connect(
            path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
    except mod.Error as exc:
        raise StorageError(f"cannot open database {path!r}: {exc}") from exc
    if driver.key is not None:
        _unlock(conn, path, driver.key)
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        foreign = _not_a_vault(conn) if vault else None
        if foreign is not None:
            conn.close()
            raise SetupError(f"{path!r} is not a vault: it is a SQLite database of another application ({foreign}); "
                             "the vault wrote nothing to it. Give a new file's path, or an existing vault's")
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


def _not_a_vault(conn: Any) -> str | None:
    """What a database that is not a vault holds (its tables, or else its other schema entries or its schema
    version), or ``None`` for a vault: another application's SQLite file given by mistake, which opening would
    switch to WAL mode and the migrations fill with the vault's tables (whatever its ``user_version``, which
    many applications set for themselves). A vault holds ``_migrations`` and ``vault_meta`` (its first
    migration step commits both, so one that another process is creating at this moment has them too); a
    new vault's file holds nothing and is at version 0."""
    marks = int(conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                             "name IN ('_migrations', 'vault_meta')").fetchone()[0])
    if marks == 2:
        return None
    entries = conn.execute("SELECT type, name FROM sqlite_master ORDER BY type = 'table' DESC, name").fetchall()
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if not entries and version == 0:
        return None
    if not entries:
        return f"no tables, schema version {version}"
    tables = [str(name) for kind, name in entries if kind == "table" and not str(name).startswith("sqlite_")]
    named = tables or [str(name) for _, name in entries]
    shown = ", ".join(_quoted(name) for name in named[:5])
    more = f" and {len(named) - 5} more" if len(named) > 5 else ""
    return f"{'tables' if tables else 'schema entries'} {shown}{more}"


def _quoted(name: str, most: int = 60) -> str:
    """A schema name as the error shows it: quoted, its control and invisible characters escaped (repr
    writes them so), at most ``most`` characters of it: a name cannot break or forge the message."""
    return repr(name if len(name) <= most else name[:most] + "...")


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


def _wrong_key(path: str) -> SetupError:
    return SetupError(f"wrong encryption key for {path!r} (check {KEY_ENV} / {KEY_FILE_ENV})")


_PAGE_ONE_BYTES = 65_536  # covers page 1 at any page size SQLite allows


def _prove_key(path: str, driver: Driver) -> None:
    """Refuse a wrong key before SQLite opens a vault that has a -wal file.

    With a -wal file (the vault open elsewhere, or left by a crash) SQLite opens the WAL before it reads
    page 1: it recovers the WAL index into -shm, and the last connection to close checkpoints the WAL
    into the main file and deletes -wal and -shm, whatever the key check then says. So the key
    is first tried on a private copy of page 1 in a temporary folder. Without a -wal file SQLite learns
    the file is in WAL mode only from page 1, which a wrong key cannot read, and writes nothing.
    """
    if not os.path.exists(path + "-wal"):
        return
    try:
        size = os.path.getsize(path)
    except OSError:
        return  # SQLite will report it
    if size == 0:
        return
    for _attempt in range(2):  # a second copy, in case a checkpoint was rewriting page 1 as we read it
        try:
            if _key_opens_page_one(path, size, driver):
                return
        except OSError as exc:  # never skip the check: without it a wrong key could write
            raise StorageError(f"cannot check the key for {path!r}: {exc.strerror or exc}") from None
    raise _wrong_key(path)


def _key_opens_page_one(path: str, size: int, driver: Driver) -> bool:
    """Whether ``driver.key`` decrypts page 1 of ``path``, tried on a copy in a private temporary folder."""
    with tempfile.TemporaryDirectory(prefix="perseus-vault-key-") as folder:
        copy = os.path.join(folder, "page1.db")
        with open(path, "rb") as source, open(copy, "wb") as target:
            target.write(source.read(_PAGE_ONE_BYTES))
            target.truncate(size)  # sparse: the header's page count must fit in the file
        conn = driver.module.connect(copy, isolation_level=None)
        try:
            conn.set_key(driver.key)
            conn.execute("PRAGMA cipher_log_level = NONE")
            conn.execute("PRAGMA schema_version").fetchone()  # reads page 1 only
        except driver.module.Error as exc:
            return "not a database" not in str(exc)  # anything else is not about the key: the real open says it
        finally:
            conn.close()
    return True


# Pools with an open connection, by file: a new connection with the same key to the same file needs no
# private key check (the open one proves the key, and a rekey cannot happen while it is open).
_pools_lock = threading.Lock()
_pools: weakref.WeakSet[ConnectionPool] = weakref.WeakSet()
_pools_all: weakref.WeakSet[ConnectionPool] = weakref.WeakSet()  # every open pool (a forked child resets them)


def _key_proven(path: str, key: str) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False
    with _pools_lock:
        pools = list(_pools)
    return any(pool.proves(info, key) for pool in pools)


def _header(path: str) -> bytes | None:
    """The first 16 bytes of an existing, non-empty file; ``None`` for a new or empty one."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(16)
    except OSError:
        return None  # new (or unreadable: SQLite will say so)
    return head or None


def _could_be_encrypted(path: str, head: bytes) -> bool:
    """Whether a file that is not plain SQLite may be an encrypted vault: SQLCipher writes whole pages
    (512 to 65,536 bytes, a power of two) and begins with a random salt, where a text file (JSON,
    markdown, a key file given by mistake) begins with printable text (16 random bytes are all printable
    text about once in ten million files)."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return True  # SQLite will say what is wrong
    if size < 512 or size % 512:
        return False
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return not all(c.isprintable() or c in "\t\r\n" for c in text)


def _check_header(path: str, driver: Driver) -> None:
    """Tell a missing or superfluous key apart from a wrong one before SQLite says "not a database"."""
    if path == ":memory:" or path.startswith("file:"):
        return
    head = _header(path)
    if head is None:
        return
    plaintext = head == _SQLITE_HEADER
    if not plaintext and not _could_be_encrypted(path, head):
        raise SetupError(f"{path!r} is not a vault: it is neither a SQLite file nor an encrypted one (is --db, or "
                         "the path given, the right file?)")
    if driver.key is None and not plaintext:
        raise SetupError(f"{path!r} is encrypted (or is not a SQLite file): set {KEY_ENV} or {KEY_FILE_ENV} "
                         f"to its key")
    if driver.key is not None and plaintext:
        raise SetupError(f"{path!r} is not encrypted, but an encryption key is set: unset {KEY_ENV} / "
                         f"{KEY_FILE_ENV} to open it (docs/encryption.md shows how to make an encrypted copy)")


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
            raise _wrong_key(path) from None
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
    return transaction(conn, work, begin="BEGIN IMMEDIATE", retryable=is_busy,
                       gave_up="database stayed busy", retries=retries)


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
        self._file: tuple[int, int] | None = None  # (device, inode) of the file its connections hold open
        _pools_all.add(self)

    def get(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            if self._closed:
                raise StorageError("the vault is closed")
            conn = connect(self.path, self.driver, synchronous=self.synchronous, vault=True)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
                if self._file is None and self.driver.key is not None:
                    info = os.stat(self.path)
                    self._file = (info.st_dev, info.st_ino)
                    with _pools_lock:
                        _pools.add(self)
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

    def proves(self, info: os.stat_result, key: str) -> bool:
        """True while a connection of this pool, opened with ``key``, holds the file ``info`` describes."""
        with self._lock:
            return bool(self._all) and self.driver.key == key and self._file == (info.st_dev, info.st_ino)

    def close(self) -> None:
        """Close every connection, after a last checkpoint: when another process still has the file open,
        SQLite leaves the WAL in place (its last connection checkpoints and deletes it), but the main
        file already holds everything written through this pool."""
        with self._lock:
            self._closed = True
            idle = [conn for conn in self._all if not conn.in_transaction]
            if idle:
                checkpoint(idle[0])
            for conn in self._all:
                _close_quietly(conn)
            self._all.clear()
        self._local = threading.local()


# Connections a forked child inherited: never used there, and never closed either (closing one could
# checkpoint and remove the WAL under the parent: "carrying an open connection across a fork" is
# the way SQLite's own documentation lists to corrupt a database).
_INHERITED: list[Any] = []


@in_child
def _fresh_after_fork() -> None:
    """In a forked child: fresh module locks, and every pool opens new connections."""
    global _driver_lock, _cipher_lock, _pools_lock
    _driver_lock, _cipher_lock, _pools_lock = threading.Lock(), threading.Lock(), threading.Lock()
    for pool in list(_pools_all):
        _INHERITED.extend(pool._all)
        pool._all = []
        pool._local = threading.local()
        pool._lock = threading.Lock()


def _close_quietly(conn: Any) -> None:
    try:
        conn.close()
    except Exception:  # closing is best effort; the process may be exiting
        pass
