"""psycopg 3 connections shaped as the vault's DB-API :class:`~perseus_vault_core.primitives.dbapi.Connection`.

The layers above the backend write their SQL with SQLite's parameter styles, ``?`` and ``:name``
(docs/architecture.md, the shared subset). psycopg takes ``%s`` and ``%(name)s`` and reads every ``%``
as the start of one, so :func:`translate` rewrites a statement once (and remembers it): parameters
become psycopg's, a literal ``%`` becomes ``%%``, and string literals, quoted identifiers and
Postgres's own ``::`` casts are left as they are. A statement that mixes the two styles, or whose
parameters do not match its style, is refused with an error that names the mismatch.

Connections run in autocommit mode, as the SQLite backend's do (``isolation_level=None``): the backend
opens its read snapshots and write transactions itself, with explicit ``BEGIN``. A write transaction
(:func:`write_transaction`) is SERIALIZABLE, and the whole unit is retried when Postgres cancels it for
a conflict with a concurrent one (SQLSTATE 40001, or 40P01 for a deadlock), as the SQLite backend retries
while the file is busy: nothing is committed until the work returns, so a retry never repeats half a write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal, TypeVar

from ...contract.errors import InvalidInput
from ...primitives.dialect import POSTGRES
from ..changelog import POSITION_SQL
from ..retry import WRITE_RETRIES, transaction
from ..vector_rows import MODEL_SQL

T = TypeVar("T")

_TOKEN = re.compile(
    r"""
      '(?:[^']|'')*'            # a string literal ('' is a quote inside it)
    | \$\$.*?\$\$              # a dollar-quoted body (a function's)
    | --[^\n]*                  # a comment to the end of the line
    | /\*.*?\*/                 # a block comment
    | "(?:[^"]|"")*"            # a quoted identifier
    | ::                        # a cast, Postgres's own syntax: never a parameter
    | :([A-Za-z_][A-Za-z0-9_]*) # a named parameter
    | \bCROSS\s+JOIN\b            # SQLite's pinned join order: a plain JOIN here (Postgres has no such pin)
    | \?                        # a positional parameter
    | %                         # psycopg's placeholder sign, meant literally here
""",
    re.VERBOSE | re.DOTALL | re.IGNORECASE,
)


@lru_cache(maxsize=1024)
def translate(sql: str, placeholders: bool = True) -> tuple[str, str | None]:
    """``sql`` with its parameters in psycopg's style, and that style: ``"named"``, ``"positional"``, or
    ``None`` for a statement with no parameters. A ``%`` anywhere (string literals included, since
    psycopg reads those too) is doubled. SQLite's ``CROSS JOIN ... ON`` (which pins the join order there)
    becomes a ``JOIN``. ``placeholders=False``: only that, for a statement psycopg runs without parameters
    (it then reads no placeholder, and a ``%`` stays as written)."""
    styles: set[str] = set()

    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        if token[0] in "Cc":
            return "JOIN"
        if not placeholders:
            return token
        if token[0] in "'$-/":  # literals and comments: psycopg still reads a % in them
            return token.replace("%", "%%")
        if token[0] == '"' or token == "::":
            return token
        if token == "%":
            return "%%"
        if token == "?":
            styles.add("positional")
            return "%s"
        styles.add("named")
        return f"%({match.group(1)})s"

    out = _TOKEN.sub(one, sql)
    if len(styles) > 1:
        raise InvalidInput("sql", f"a statement mixes ? and :name parameters: {sql[:200]}")
    return out, next(iter(styles), None)


def _bind(sql: str, parameters: Any) -> tuple[str, Any]:
    """The statement and parameters as psycopg takes them."""
    if parameters is None:  # without parameters psycopg reads no placeholder: the statement as written
        return translate(sql, placeholders=False)[0], None
    text, style = translate(sql)
    if style is None:
        if parameters not in ((), [], {}):
            raise InvalidInput("parameters", f"parameters given to a statement that takes none: {sql[:200]}")
        return translate(sql, placeholders=False)[0], None
    if style == "named" and not isinstance(parameters, Mapping):
        raise InvalidInput(
            "parameters",
            f"a statement with :name parameters needs a mapping, got {type(parameters).__name__}",
        )
    if style == "positional" and (
        isinstance(parameters, (Mapping, str, bytes)) or not isinstance(parameters, Sequence)
    ):
        raise InvalidInput(
            "parameters", f"a statement with ? parameters needs a sequence, got {type(parameters).__name__}"
        )
    return text, parameters


class PgCursor:
    """A psycopg cursor as the vault reads one (``dbapi.Cursor``). It has no ``lastrowid`` (Postgres has
    none): the shared SQL reads a new row's id with ``INSERT ... RETURNING``."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def fetchone(self) -> Any:
        return self._cursor.fetchone() if self._cursor.description is not None else None

    def fetchall(self) -> list[Any]:
        return list(self._cursor.fetchall()) if self._cursor.description is not None else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)


class PgConnection:
    """One psycopg connection (one per thread, as :class:`~perseus_vault_core.storage.base.Backend`
    hands them out), taking the shared SQL in SQLite's parameter styles."""

    dialect = POSTGRES  # what the shared SQL's dialect-specific forms are written in (perseus_vault_core/primitives/dialect.py)

    def __init__(self, raw: Any, renew: Callable[[Any], Any] | None = None) -> None:
        self.raw = raw
        self.memo: dict[str, Any] | None = (
            None  # a read snapshot's facts, read with its BEGIN (begin_snapshot)
        )
        self._renew = renew  # the pool's: a live connection in place of a dead one (pool.Connections.renew)
        self._fresh = renew is not None  # nothing has run yet on this lease

    def execute(self, sql: str, parameters: Any = None, /) -> PgCursor:
        head = sql.lstrip()[:6].upper()
        if self.memo is not None and head != "SELECT":
            self.memo = None  # anything but a read in the snapshot: its facts are read again
        text, bound = _bind(sql, parameters)
        repeatable = head == "SELECT" or head.startswith("BEGIN")
        return PgCursor(self._first(lambda: self.raw.execute(text, bound, prepare=None), repeatable))

    def _first(self, call: Callable[[], Any], repeatable: bool) -> Any:
        """``call()``; when it is the lease's first statement, one that may run twice (a read, a ``BEGIN``),
        and it finds the connection dead (the server restarted or ended the session since the pool last
        looked), once more on a live one. The pool does not ask a connection it lent a moment ago whether
        it is alive (``pool._check``): this is where a dead one is found instead."""
        try:
            result = call()
        except Exception:
            if not (
                self._fresh
                and repeatable
                and self._renew is not None
                and (self.raw.broken or self.raw.closed)
            ):
                raise
            self._fresh = False
            self.raw = self._renew(self.raw)
            result = call()
        self._fresh = False
        return result

    def begin_snapshot(self) -> None:
        """Begin a REPEATABLE READ snapshot and read, in the same round trip, the two facts nearly every
        read asks first (the change log's position, for the in-memory indexes; the vectors' model, for
        recall): :attr:`memo` holds them until the snapshot ends, which cannot change them. A recall
        otherwise spent up to five round trips of its eight on them."""
        cursor = self._first(
            lambda: self.raw.execute(
                f"BEGIN ISOLATION LEVEL REPEATABLE READ; {POSITION_SQL}; {MODEL_SQL}", None, prepare=None
            ),
            True,
        )
        cursor.nextset()
        position = int(cursor.fetchone()[0])
        cursor.nextset()
        self.memo = {"position": position, "model": cursor.fetchall()}

    def end_snapshot(self) -> None:
        self.memo = None
        self.raw.execute("COMMIT")  # after an error inside, Postgres answers COMMIT with a rollback

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> PgCursor:
        rows = list(parameters)
        if not rows:
            return PgCursor(self.raw.cursor())
        text, _ = _bind(sql, rows[0])
        for row in rows[1:]:
            _bind(sql, row)  # every row in the statement's style, before anything runs
        cursor = self.raw.cursor()
        cursor.executemany(text, rows)
        return PgCursor(cursor)

    def close(self) -> None:
        self.raw.close()

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return bool(
            self.raw.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR)
        )


RETRIED = frozenset({"40001", "40P01"})  # serialization failure, deadlock detected
# Held by every write transaction, from its start to its commit (the backend's ``_write``); a role bound to a scope
# takes it too before its row is given an id (tenancy.py), so ids are handed out one writer at a time.
WRITE_LOCK = 0x7065727365757333  # "perseus3"


def conflicted(exc: BaseException) -> bool:
    """True for Postgres cancelling a transaction for a conflict with a concurrent one: a retry cures it."""
    return getattr(exc, "sqlstate", None) in RETRIED


def write_transaction(
    conn: PgConnection,
    work: Callable[[PgConnection], T],
    *,
    retries: int = WRITE_RETRIES,
    isolation: Literal["SERIALIZABLE", "READ COMMITTED"] = "SERIALIZABLE",
) -> T:
    """Run ``work(conn)`` in one transaction, run again whole while Postgres cancels it for a conflict
    (:func:`..retry.transaction`). ``READ COMMITTED`` is for work that serialises itself with a lock (a
    migration): each statement then sees what was committed before it, where SERIALIZABLE would keep the
    snapshot taken before the lock was granted."""
    return transaction(
        conn,
        work,
        begin=f"BEGIN ISOLATION LEVEL {isolation}",
        retryable=conflicted,
        gave_up="a write kept conflicting",
        retries=retries,
    )


def connect(url: str) -> PgConnection:
    """A new autocommit connection to the database at ``url`` (a ``postgresql://`` URL or a libpq
    ``key=value`` string). psycopg is the ``postgres`` extra: without it, a :class:`SetupError` says what
    to install."""
    try:
        import psycopg
    except ImportError as error:
        from ...contract.errors import SetupError

        raise SetupError("PostgreSQL needs psycopg: pip install 'perseus-vault[postgres]'") from error
    return PgConnection(psycopg.connect(url, autocommit=True))


__all__ = ["WRITE_LOCK", "PgConnection", "PgCursor", "connect", "translate", "write_transaction"]
