"""The DB-API shapes the vault relies on: a :class:`Connection` and its :class:`Cursor`.

Every module that reads or writes takes a ``Connection``; a storage backend hands them out
(:mod:`storage`), each thread its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol


class Cursor(Protocol):
    """A DB-API cursor, as far as the vault uses one."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    @property
    def rowcount(self) -> int: ...


class Connection(Protocol):
    """A DB-API connection, as far as the vault uses one (one per thread; see :class:`Backend`)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor: ...

    def close(self) -> None: ...

    @property
    def in_transaction(self) -> bool: ...
