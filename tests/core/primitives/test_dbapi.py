"""The DB-API shapes the vault relies on (primitives/dbapi.py): a connection each backend hands out
executes with ``?`` parameters and in batches, its cursors fetch one, all, or by iteration and count the
rows a write touched, it says when a transaction is open, and once closed it runs nothing."""

from __future__ import annotations

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.primitives import dbapi
from perseus_vault_core.storage import driver_errors

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def test_a_backends_connection_is_the_connection_the_vault_relies_on(vault: Vault) -> None:
    conn: dbapi.Connection = vault.engine.backend.connect()  # one of its own, to close
    try:
        assert not conn.in_transaction
        conn.execute("BEGIN")
        assert conn.in_transaction
        conn.execute("CREATE TEMPORARY TABLE shapes (n INTEGER, word TEXT)")
        many = conn.executemany(
            "INSERT INTO shapes (n, word) VALUES (?, ?)", [(1, "one"), (2, "two"), (3, "three")]
        )
        assert many.rowcount == 3
        cursor: dbapi.Cursor = conn.execute("SELECT n, word FROM shapes WHERE n >= ? ORDER BY n", (2,))
        assert tuple(cursor.fetchone()) == (2, "two")
        assert [tuple(row) for row in cursor.fetchall()] == [(3, "three")]  # what is left
        assert [row[0] for row in conn.execute("SELECT n FROM shapes ORDER BY n DESC")] == [3, 2, 1]
        assert conn.execute("SELECT n FROM shapes WHERE n > ?", (9,)).fetchone() is None
        assert conn.execute("UPDATE shapes SET word = ? WHERE n < ?", ("small", 3)).rowcount == 2
        assert conn.execute("DELETE FROM shapes WHERE n = ?", (7,)).rowcount == 0
        conn.execute("ROLLBACK")
        assert not conn.in_transaction
    finally:
        conn.close()
    with pytest.raises(
        driver_errors()
    ):  # the driver's own error, which the vault's edge turns into StorageError
        conn.execute("SELECT 1").fetchone()
