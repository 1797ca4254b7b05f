"""What is looked at before SQLite opens a vault's file, so that a wrong file or key is refused untouched.

- :func:`check_header`: a missing or superfluous key, or a file that is not SQLite at all, told apart by the
  file's first bytes before SQLite would say only "not a database";
- :func:`prove_key`: a wrong key refused before SQLite opens a file that has a ``-wal`` (see its docstring);
- :func:`not_a_vault`: another application's SQLite database, refused before it is switched to WAL mode;
- :func:`beside`: a connection that cannot stand beside this process's open ones to the same file.

The first two read the file outside SQLite, which :func:`..connection.connect` allows only while no
connection of this process holds the file (:mod:`...primitives.file_locks`: closing that descriptor would
drop their locks); the last tells from those connections what the bytes would have told.
"""

from __future__ import annotations

import os
import tempfile
from types import ModuleType
from typing import Any

from ...contract.errors import SetupError, StorageError
from ...primitives import file_locks
from ...primitives.keys import KEY_ENV, KEY_FILE_ENV

SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every plaintext SQLite file


_PAGE_ONE_BYTES = 65_536  # covers page 1 at any page size SQLite allows


def prove_key(path: str, module: ModuleType, key: str) -> None:
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
            if _key_opens_page_one(path, size, module, key):
                return
        except OSError as exc:  # never skip the check: without it a wrong key could write
            raise StorageError(f"cannot check the key for {path!r}: {exc.strerror or exc}") from None
    raise wrong_key(path)


def _key_opens_page_one(path: str, size: int, module: ModuleType, key: str) -> bool:
    """Whether ``key`` decrypts page 1 of ``path``, tried on a copy in a private temporary folder."""
    with tempfile.TemporaryDirectory(prefix="perseus-vault-key-") as folder:
        copy = os.path.join(folder, "page1.db")
        with open(path, "rb") as source, open(copy, "wb") as target:
            target.write(source.read(_PAGE_ONE_BYTES))
            target.truncate(size)  # sparse: the header's page count must fit in the file
        conn = module.connect(copy, isolation_level=None)
        try:
            conn.set_key(key)
            conn.execute("PRAGMA cipher_log_level = NONE")
            conn.execute("PRAGMA schema_version").fetchone()  # reads page 1 only
        except module.Error as exc:
            return "not a database" not in str(
                exc
            )  # anything else is not about the key: the real open says it
        finally:
            conn.close()
    return True


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


def check_header(path: str, keyed: bool) -> None:
    """Tell a missing or superfluous key apart from a wrong one before SQLite says "not a database"."""
    if path == ":memory:" or path.startswith("file:"):
        return
    head = _header(path)
    if head is None:
        return
    plaintext = head == SQLITE_HEADER
    if not plaintext and not _could_be_encrypted(path, head):
        raise SetupError(
            f"{path!r} is not a vault: it is neither a SQLite file nor an encrypted one (is --db, or "
            "the path given, the right file?)"
        )
    if not keyed and not plaintext:
        raise SetupError(
            f"{path!r} is encrypted (or is not a SQLite file): set {KEY_ENV} or {KEY_FILE_ENV} to its key"
        )
    if keyed and plaintext:
        raise not_encrypted(path)


def one_name(path: str, held: file_locks.Holding | None) -> None:
    """Refuse a vault file known by two names: SQLite names the ``-wal`` after the name a file was opened by,
    so two names (a hard link, or one file opened by two names in one process) keep two logs of one file,
    and each reader misses the other's writes, or replays a stale one over them."""
    if held is not None and held.path != os.path.realpath(path):
        raise SetupError(
            f"{path!r} is open in this process under another name ({held.path!r}); open it by "
            "one name (SQLite keeps a -wal per name)"
        )
    try:
        links = os.stat(path).st_nlink
    except OSError:
        return
    if links > 1:
        raise SetupError(
            f"{path!r} has {links} names (hard links): SQLite keeps a -wal per name, so writes made "
            "through one name are not seen through another; keep one and remove the others"
        )


def beside(path: str, held: file_locks.Holding, library: str, keyed: bool) -> None:
    """Refuse a connection that cannot stand beside this process's open ones to the same file: the file's
    header was read when the first opened, so a key's absence or presence is told from theirs, and another
    SQLite library would keep locks of its own, which closing its descriptor would drop for theirs."""
    if held.keyed and not keyed:
        raise SetupError(
            f"{path!r} is encrypted (or is not a SQLite file): set {KEY_ENV} or {KEY_FILE_ENV} to its key"
        )
    if keyed and not held.keyed:
        raise not_encrypted(path)
    if held.library != library:
        raise SetupError(
            f"{path!r} is open in this process through the {held.library} SQLite driver; a "
            f"connection through {library} beside it would drop its locks (set "
            f"PERSEUS_VAULT_SQLITE={held.library}, or close the other vault first)"
        )


def not_encrypted(path: str) -> SetupError:
    return SetupError(
        f"{path!r} is not encrypted, but an encryption key is set: unset {KEY_ENV} / "
        f"{KEY_FILE_ENV} to open it (docs/encryption.md shows how to make an encrypted copy)"
    )


def wrong_key(path: str) -> SetupError:
    return SetupError(f"wrong encryption key for {path!r} (check {KEY_ENV} / {KEY_FILE_ENV})")


def not_a_vault(conn: Any) -> str | None:
    """What a database that is not a vault holds (its tables, or else its other schema entries or its schema
    version), or ``None`` for a vault: another application's SQLite file given by mistake, which opening would
    switch to WAL mode and the migrations fill with the vault's tables (whatever its ``user_version``, which
    many applications set for themselves). A vault holds ``_migrations`` and ``vault_meta`` (its first
    migration step commits both, so one that another process is creating at this moment has them too); a
    new vault's file holds nothing and is at version 0."""
    marks = int(
        conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
            "name IN ('_migrations', 'vault_meta')"
        ).fetchone()[0]
    )
    if marks == 2:
        return None
    entries = conn.execute(
        "SELECT type, name FROM sqlite_master ORDER BY type = 'table' DESC, name"
    ).fetchall()
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
