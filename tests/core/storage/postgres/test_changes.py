"""The change log on Postgres (storage/postgres/changes.py, over the shared readers of
storage/changelog.py): entries in order, and appended in commit order by concurrent writers."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from perseus_vault_core.storage.base import OP_GONE, OP_HEAD, OP_VECTOR
from perseus_vault_core.storage.postgres import changes
from perseus_vault_core.storage.postgres.connection import PgConnection, connect, write_transaction
from perseus_vault_core.storage.postgres.schema import migrate

from .test_schema import _version


@pytest.fixture
def conn(pg_url: str) -> Iterator[PgConnection]:
    c = connect(pg_url)
    migrate(c, 1_000)
    yield c
    c.close()


def test_entries_are_read_in_order_and_by_kind(conn: PgConnection) -> None:
    assert changes.position(conn) == 0 and changes.first(conn) is None and changes.marker(conn, 0) == "0"
    write_transaction(conn, lambda c: changes.log_changes(c, [7, 8], OP_HEAD))
    write_transaction(conn, lambda c: changes.log_changes(c, [7], OP_VECTOR))
    write_transaction(conn, lambda c: changes.log_changes(c, [7], OP_GONE))
    assert changes.position(conn) == 4 and changes.first(conn) == 1
    assert changes.entries(conn, 0, 4, vectors=True) == [
        (7, OP_HEAD),
        (8, OP_HEAD),
        (7, OP_VECTOR),
        (7, OP_GONE),
    ]
    assert changes.entries(conn, 1, 4, vectors=False) == [(8, OP_HEAD), (7, OP_GONE)]
    assert changes.pending(conn, 0, 4, vectors=False) == 3 and changes.pending(conn, 2, 3, vectors=True) == 1
    assert not changes.rebuilt_since(conn, 0)
    assert changes.marker(conn, 2) == "2:8:1:None" and changes.marker(conn, 99) is None


def test_heads_and_rows_read_the_feeds_columns(conn: PgConnection) -> None:
    vid = _version(conn)
    (eid,) = conn.execute("SELECT entity_id FROM entity_versions WHERE vid = ?", (vid,)).fetchone()
    assert [tuple(r) for r in changes.heads(conn, "text")] == [(vid, eid, "", "", "text", None, "")]
    assert changes.rows(conn, "vector", [vid, vid + 100]) == {vid: (vid, eid, "", "", None)}
    assert changes.rows(conn, "text", []) == {}


def test_concurrent_writers_append_in_commit_order(pg_url: str, conn: PgConnection) -> None:
    first, second = connect(pg_url), connect(pg_url)
    try:
        first.execute("BEGIN")
        changes.log_changes(first, [1], OP_HEAD)  # holds the log until it commits
        done = threading.Event()

        def later() -> None:
            write_transaction(second, lambda c: changes.log_changes(c, [2], OP_HEAD))
            done.set()

        writer = threading.Thread(target=later)
        writer.start()
        assert not done.wait(0.5)  # the second writer waits: it may not take a position and commit first
        assert changes.position(conn) == 0  # and a follower sees nothing uncommitted
        first.execute("COMMIT")
        writer.join(30)
        assert done.is_set()
        assert changes.entries(conn, 0, changes.position(conn), vectors=True) == [(1, OP_HEAD), (2, OP_HEAD)]
    finally:
        first.close()
        second.close()
