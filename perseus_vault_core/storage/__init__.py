"""Storage backends behind one seam (:mod:`.base` says what a backend provides; docs/architecture.md).

:mod:`.sqlite` is the embedded file, the default and today the only backend that opens a vault;
:mod:`.postgres` (PostgreSQL with pgvector) is being built beside it.
"""

from .base import Backend, ChangeLog, Connection, Cursor, KeywordMirror, KeywordStore, Tokenizer, VectorStore
from .sqlite import SQLITE_ERRORS, SQLiteBackend

# What the backends' drivers raise: the API edge turns these into StorageError.
DRIVER_ERRORS: tuple[type[BaseException], ...] = SQLITE_ERRORS


def open_backend(path: str, *, key: str | bytes | None, synchronous: str) -> Backend:
    """The backend for ``path``. Every path is an embedded SQLite file today."""
    return SQLiteBackend(path, key=key, synchronous=synchronous)


__all__ = ["DRIVER_ERRORS", "Backend", "ChangeLog", "Connection", "Cursor", "KeywordMirror", "KeywordStore", "Tokenizer", "VectorStore", "open_backend"]
