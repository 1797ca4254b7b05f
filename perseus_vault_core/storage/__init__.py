"""Storage backends behind one seam (:mod:`.base` says what a backend provides; docs/architecture.md).

:mod:`.sqlite` is the embedded file, the default; :mod:`.postgres` is PostgreSQL with pgvector, chosen by
a ``postgresql://`` URL in place of the file's path (docs/postgres.md).
"""

from .base import Backend, ChangeLog, Connection, Cursor, KeywordMirror, KeywordStore, Tokenizer, VectorStore
from .postgres import PostgresBackend, driver_errors, is_url
from .sqlite import SQLITE_ERRORS, SQLiteBackend

# What the backends' drivers raise: the API edge turns these into StorageError.
DRIVER_ERRORS: tuple[type[BaseException], ...] = SQLITE_ERRORS + driver_errors()


def open_backend(path: str, *, key: str | bytes | None, synchronous: str) -> Backend:
    """The backend for ``path``: a PostgreSQL database for a ``postgresql://`` URL, else an embedded SQLite file."""
    if is_url(path):
        return PostgresBackend(path, key=key, synchronous=synchronous)
    return SQLiteBackend(path, key=key, synchronous=synchronous)


__all__ = ["DRIVER_ERRORS", "Backend", "ChangeLog", "Connection", "Cursor", "KeywordMirror", "KeywordStore", "Tokenizer",
           "VectorStore", "is_url", "open_backend"]
