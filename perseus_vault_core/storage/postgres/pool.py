"""A process's connections to one database: a psycopg-pool pool, each thread leasing one for a verb.

A thread takes a connection from the pool the first time it touches the database and keeps it while
the verb it serves runs (a snapshot or a write transaction never changes connection halfway); when the
outermost verb returns (:meth:`Connections.lease`), the connection goes back to the pool, unless a
transaction is still open on it (a caller iterating a lazy result), in which case it is returned after a
later verb. So a server with many threads holds as many connections as it has verbs running at once, at
most ``pool_size``; a thread that finds them all busy waits up to ``pool_timeout`` seconds, then gets a
:class:`StorageError` naming the setting. The pool checks a connection before lending it, so one broken
by a server restart or a failover is replaced instead of failing the next verb.

Both settings come from the vault's URL, where every caller (the CLI's ``--db``, ``serve``, each adapter)
already passes it, and are taken out before libpq sees it:
``postgresql://host/db?pool_size=20&pool_timeout=10``.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

from ...contract.errors import InvalidInput, StorageError
from .connection import PgConnection

POOL_SIZE = 10  # connections per process at most, unless the URL says pool_size
POOL_TIMEOUT_S = 30.0  # how long a verb waits for a free connection, unless the URL says pool_timeout
OPTIONS = ("pool_size", "pool_timeout")


def split_url(url: str) -> tuple[str, dict[str, float]]:
    """``url`` without the vault's own query options, and those options (validated, defaults filled). Everything
    else is kept byte for byte: libpq reads ``%20`` as a space but ``+`` as a plus sign, so the query is not
    decoded and encoded again, and a URL with no host (``postgresql:///db?host=/run/postgresql``, libpq's way to
    name a socket) keeps its ``//``. The query starts at the first ``?`` after the user part, as libpq reads it
    (a password may hold one)."""
    _, sep, rest = url.partition("://")
    at, slash = rest.find("@"), rest.find("/")
    userinfo = at if sep and at >= 0 and (slash < 0 or at < slash) else -1  # libpq: an @ before any / ends it
    start = url.find("?", len(url) - len(rest) + userinfo + 1) if sep else url.find("?")
    base, query = (url, "") if start < 0 else (url[:start], url[start + 1 :])
    kept, options = [], {"pool_size": float(POOL_SIZE), "pool_timeout": POOL_TIMEOUT_S}
    for piece in query.split("&") if query else []:
        key, _, value = piece.partition("=")
        if unquote(key) not in OPTIONS:
            kept.append(piece)
            continue
        key, value = unquote(key), unquote(value)
        try:
            number = float(value)
        except ValueError:
            raise InvalidInput("path", f"{key} in the URL must be a number, got {value!r}") from None
        if key == "pool_size" and (number != int(number) or not 1 <= number <= 1000):
            raise InvalidInput(
                "path", f"pool_size in the URL must be a whole number from 1 to 1000, got {value}"
            )
        if key == "pool_timeout" and not 0 < number <= 3600:
            raise InvalidInput(
                "path", f"pool_timeout in the URL must be seconds above 0 and at most 3600, got {value}"
            )
        options[key] = number
    return base + ("?" + "&".join(kept) if kept else ""), options


class Connections:
    """The pool of one backend and the threads' leases on it."""

    def __init__(self, url: str, *, size: int, timeout: float, setup: list[str], describe: str) -> None:
        self.size, self.timeout, self._setup, self._describe = size, timeout, setup, describe
        self._local = threading.local()
        self._held: set[PgConnection] = set()  # leased now, by any thread
        self._lock = threading.Lock()
        self.closed = False
        # min_size 0: nothing is opened before a verb needs it (a CLI call opens one connection, not four).
        self.pool = _pool_class()(
            url,
            min_size=0,
            max_size=size,
            timeout=timeout,
            open=True,
            kwargs={"autocommit": True},
            configure=self._configure,
            check=_check,
            name="perseus-vault",
        )

    def _configure(self, raw: Any) -> None:
        for statement in self._setup:
            raw.execute(statement)

    def conn(self) -> PgConnection:
        """This thread's connection: the one it leases, else one taken from the pool now."""
        conn: PgConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if self.closed:
            raise StorageError("the vault is closed")
        conn = PgConnection(self._take(), self.renew)
        self._local.conn = conn
        with self._lock:
            self._held.add(conn)
        # A thread that ends holding one gives it back (a worker thread of a server, say).
        weakref.finalize(threading.current_thread(), self._give_back, conn)
        return conn

    def _take(self) -> Any:
        """A connection from the pool. The pool connects in its own workers and retries a failed attempt for
        minutes; a caller is told at once instead, with the server's reason, when an attempt fails while it
        waits (a wrong password, a server down)."""
        from psycopg_pool import PoolTimeout

        started = time.monotonic()
        deadline = started + self.timeout
        while True:
            try:
                return self.pool.getconn(timeout=min(_SLICE_S, max(deadline - time.monotonic(), 0.001)))
            except PoolTimeout:
                failed = self.pool.failure
                if failed is not None and failed[0] >= started:
                    raise StorageError(
                        f"cannot connect to {self._describe}: {str(failed[1]).strip().splitlines()[0]}"
                    ) from None
                if time.monotonic() >= deadline:
                    raise StorageError(
                        f"no connection to {self._describe} came free within {self.timeout:g} s "
                        f"(all {self.size} of this process's are in use; raise pool_size in the "
                        "URL, docs/postgres.md)"
                    ) from None

    def renew(self, dead: Any) -> Any:
        """A live connection in place of ``dead``, which the pool then discards (PgConnection._first)."""
        self._put(dead)
        return self._take()

    def _put(self, raw: Any) -> None:
        _RETURNED[raw] = time.monotonic()
        try:
            self.pool.putconn(raw)
        except Exception:  # a pool closed meanwhile, or a connection it no longer knows
            _close_quietly(raw)

    @contextmanager
    def lease(self) -> Iterator[None]:
        """Within: this thread keeps its connection; leaving the outermost lease gives it back when idle."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            conn: PgConnection | None = getattr(self._local, "conn", None)
            if depth == 0 and conn is not None and not conn.in_transaction:
                self._local.conn = None
                self._give_back(conn)

    def _give_back(self, conn: PgConnection) -> None:
        with self._lock:
            if conn not in self._held:
                return
            self._held.discard(conn)
        if self.closed:
            _close_quietly(conn.raw)
            return
        self._put(conn.raw)

    def leased(self) -> int:
        """How many connections threads hold now."""
        with self._lock:
            return len(self._held)

    def close(self) -> None:
        self.closed = True
        with self._lock:
            held, self._held = list(self._held), set()
        for conn in held:
            _close_quietly(conn.raw)
        self._local = threading.local()
        self.pool.close()

    def abandon(self) -> None:
        """In a forked child: forget the parent's connections and pool without closing them (closing one
        would end the parent's session on the socket they share); the backend makes a new pool."""
        self.closed = True
        self._held = set()
        self._local = threading.local()
        self._lock = threading.Lock()


_SLICE_S = 0.1  # how often a waiting caller looks whether the pool's last attempt to connect failed


FRESH_S = 2.0  # a connection given back this recently is lent again without asking the server
_RETURNED: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()  # when each was given back


def _check(raw: Any) -> None:
    """The pool's check before lending ``raw``: an empty query (one round trip); raising makes the pool drop
    it and lend another (after a server restart or a failover, which a connection learns of only when it
    next talks to the server). Skipped for a connection given back within :data:`FRESH_S`: a busy
    process leases one per verb, and the check cost each warm recall a fifth of its time on loopback; a
    connection that died meanwhile is found by its lease's first statement instead, which then runs on a
    new one (``PgConnection._first``)."""
    if time.monotonic() - _RETURNED.get(raw, float("-inf")) < FRESH_S:
        return
    raw.execute("")


_POOL: Any = None


def _pool_class() -> Any:
    """psycopg-pool's ``ConnectionPool`` (imported on first use: the ``postgres`` extra), noting its last failed
    attempt to connect (``failure``: when, and the error)."""
    global _POOL
    if _POOL is None:
        from psycopg_pool import ConnectionPool

        class Pool(ConnectionPool):
            failure: tuple[float, BaseException] | None = None

            def _connect(self, timeout: float | None = None) -> Any:
                try:
                    return super()._connect(timeout)
                except Exception as error:
                    self.failure = (time.monotonic(), error)
                    raise

        _POOL = Pool
    return _POOL


def _close_quietly(raw: Any) -> None:
    try:
        raw.close()
    except Exception:  # closing is best effort; the process may be exiting
        pass


__all__ = ["OPTIONS", "POOL_SIZE", "POOL_TIMEOUT_S", "Connections", "split_url"]
