"""Storage backends behind one seam (:mod:`.base` says what a backend provides; docs/architecture.md).

:mod:`.sqlite` is the embedded file, the default; :mod:`.postgres` is PostgreSQL with pgvector, chosen by
a ``postgresql://`` URL in place of the file's path (:mod:`.urls`; docs/postgres.md).
"""

import sys

from .base import Backend, ChangeLog, Connection, Cursor, KeywordStore, Tokenizer, VectorStore
from .postgres.backend import PostgresBackend
from .sqlite.backend import SQLiteBackend
from .sqlite.connection import SQLITE_ERRORS
from .urls import is_url


def driver_errors() -> tuple[type[BaseException], ...]:
    """What the backends' drivers raise, for the API edge to turn into StorageError. psycopg's only once
    it is loaded (a PostgreSQL vault loads it): importing it for every SQLite vault cost each new process
    about a fifth of a second, and before it is loaded nothing can raise its errors."""
    psycopg = sys.modules.get("psycopg")
    return SQLITE_ERRORS + ((psycopg.Error,) if psycopg is not None else ())


def open_backend(path: str, *, key: str | bytes | None, synchronous: str) -> Backend:
    """The backend for ``path``: a PostgreSQL database for a ``postgresql://`` URL, else an embedded SQLite file."""
    if is_url(path):
        return PostgresBackend(path, key=key, synchronous=synchronous)
    return SQLiteBackend(path, key=key, synchronous=synchronous)


__all__ = [
    "Backend",
    "ChangeLog",
    "Connection",
    "Cursor",
    "KeywordStore",
    "Tokenizer",
    "VectorStore",
    "driver_errors",
    "open_backend",
]
