"""The Postgres connection layer (storage/postgres/connection.py): the shared SQL's parameter styles
rewritten for psycopg, checked as text and then run on a real PostgreSQL server with pgvector."""

from __future__ import annotations

import pytest

from perseus_vault_core.contract.errors import InvalidInput
from perseus_vault_core.storage.postgres.connection import PgConnection, connect, translate


@pytest.mark.parametrize(
    ("sql", "expected", "style"),
    [
        ("SELECT 1", "SELECT 1", None),
        ("SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = %s AND b = %s", "positional"),
        (
            "SELECT * FROM t WHERE a = :a AND b = :b_2",
            "SELECT * FROM t WHERE a = %(a)s AND b = %(b_2)s",
            "named",
        ),
        (
            "SELECT x FROM t WHERE y LIKE 'a%' AND z = :z",
            "SELECT x FROM t WHERE y LIKE 'a%%' AND z = %(z)s",
            "named",
        ),
        (
            "SELECT ':no', '?', 'it''s :x' FROM t WHERE a = ?",
            "SELECT ':no', '?', 'it''s :x' FROM t WHERE a = %s",
            "positional",
        ),
        ('SELECT "odd:name?" FROM t WHERE a = :a', 'SELECT "odd:name?" FROM t WHERE a = %(a)s', "named"),
        ("SELECT :v::vector <=> e.embedding", "SELECT %(v)s::vector <=> e.embedding", "named"),
        ("SELECT a % 7 FROM t WHERE b = ?", "SELECT a %% 7 FROM t WHERE b = %s", "positional"),
        (
            "SELECT a -- it's 5% :not ?\nFROM t WHERE b = ?",
            "SELECT a -- it's 5%% :not ?\nFROM t WHERE b = %s",
            "positional",
        ),
        ("SELECT /* :x ? */ $$ :y ? $$ || :z", "SELECT /* :x ? */ $$ :y ? $$ || %(z)s", "named"),
    ],
)
def test_parameters_are_rewritten_and_literals_kept(sql: str, expected: str, style: str | None) -> None:
    assert translate(sql) == (expected, style)


def test_a_statement_mixing_the_two_styles_is_refused() -> None:
    with pytest.raises(InvalidInput, match="mixes"):
        translate("SELECT * FROM t WHERE a = ? AND b = :b")


def test_parameters_must_match_the_statements_style(pg_url: str) -> None:
    conn = connect(pg_url)
    try:
        with pytest.raises(InvalidInput, match="needs a mapping"):
            conn.execute("SELECT :a", (1,))
        with pytest.raises(InvalidInput, match="needs a sequence"):
            conn.execute("SELECT ?", {"a": 1})
        with pytest.raises(InvalidInput, match="takes none"):
            conn.execute("SELECT 1", (1,))
    finally:
        conn.close()


def test_the_shared_sql_runs_on_postgres(pg_url: str) -> None:
    conn = connect(pg_url)
    try:
        conn.execute("CREATE TABLE t (id bigserial PRIMARY KEY, name text NOT NULL, share real)")
        conn.executemany("INSERT INTO t (name, share) VALUES (?, ?)", [("50% off", 0.5), ("it's", None)])
        assert conn.execute(
            "INSERT INTO t (name) VALUES (:name) RETURNING id", {"name": "third"}
        ).fetchone() == (3,)
        rows = conn.execute(
            "SELECT id, name FROM t WHERE name LIKE '%' || :word || '%' ORDER BY id", {"word": "off"}
        ).fetchall()
        assert rows == [(1, "50% off")]
        assert conn.execute("SELECT count(*) FROM t WHERE name LIKE '%s'").fetchone() == (1,)  # 'it''s' aside
        cur = conn.execute("UPDATE t SET share = ? WHERE share IS NULL", (0.25,))
        assert cur.rowcount == 2 and cur.fetchall() == []
        assert [r[0] for r in conn.execute("SELECT name FROM t ORDER BY id")] == ["50% off", "it's", "third"]
        assert conn.execute("SELECT '[1,0]'::vector <=> :q::vector", {"q": "[0,1]"}).fetchone() == (
            1.0,
        )  # pgvector
    finally:
        conn.close()


def test_a_write_that_conflicts_is_run_again_whole(pg_url: str) -> None:
    import threading

    from perseus_vault_core.storage.postgres.connection import write_transaction

    setup = connect(pg_url)
    setup.execute("CREATE TABLE counter (n bigint NOT NULL)")
    setup.execute("INSERT INTO counter VALUES (0)")
    runs: list[str] = []
    both_read = threading.Barrier(2, timeout=30)

    def writer(name: str) -> None:
        conn = connect(pg_url)
        try:

            def bump(c: PgConnection) -> None:
                first = name not in runs
                runs.append(name)
                (n,) = c.execute("SELECT n FROM counter").fetchone()
                if first:
                    both_read.wait()  # both have read 0: the second to write must be cancelled
                c.execute("UPDATE counter SET n = ?", (n + 1,))

            write_transaction(conn, bump)
        finally:
            conn.close()

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert setup.execute("SELECT n FROM counter").fetchone() == (2,)  # no increment lost
        assert sorted(runs) in (["a", "a", "b"], ["a", "b", "b"])  # one of them ran again, once
    finally:
        setup.close()


def test_a_failed_write_leaves_nothing(pg_url: str) -> None:
    from perseus_vault_core.storage.postgres.connection import write_transaction

    conn = connect(pg_url)
    try:
        conn.execute("CREATE TABLE t (a int)")

        def half(c: PgConnection) -> None:
            c.execute("INSERT INTO t VALUES (1)")
            raise RuntimeError("stop")

        with pytest.raises(RuntimeError, match="stop"):
            write_transaction(conn, half)
        assert not conn.in_transaction and conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    finally:
        conn.close()


def test_a_transaction_is_the_backends_to_open(pg_url: str) -> None:
    conn = connect(pg_url)
    try:
        assert (
            isinstance(conn, PgConnection) and not conn.in_transaction
        )  # autocommit, as SQLite's connections
        conn.execute("BEGIN")
        assert conn.in_transaction
        conn.execute("CREATE TABLE gone (a int)")
        conn.execute("ROLLBACK")
        assert not conn.in_transaction
        assert conn.execute("SELECT to_regclass('gone')").fetchone() == (None,)
    finally:
        conn.close()


def test_a_read_snapshot_reads_the_log_position_and_the_model_with_its_begin(pg_url: str) -> None:
    from perseus_vault_core.storage import changelog, vector_rows
    from perseus_vault_core.storage.postgres.backend import _snapshot
    from perseus_vault_core.storage.postgres.schema import migrate

    conn = connect(pg_url)
    try:
        migrate(conn, 1_000)
        conn.execute(
            "INSERT INTO vault_meta (key, value) VALUES ('embedding_model', 'm@1'), ('embedding_dimension', '8')"
        )
        with _snapshot(conn):
            assert conn.in_transaction and conn.memo is not None
            assert changelog.position(conn) == 0 and vector_rows.model(conn) == ("m@1", 8)
            other = connect(
                pg_url
            )  # a write committed meanwhile is not in this snapshot, as with a fresh read
            other.execute("INSERT INTO head_changes (vid, op, scope) VALUES (1, 0, '')")
            other.execute("UPDATE vault_meta SET value = '16' WHERE key = 'embedding_dimension'")
            other.close()
            assert changelog.position(conn) == 0 and vector_rows.model(conn) == ("m@1", 8)
        assert conn.memo is None and not conn.in_transaction
        assert changelog.position(conn) == 1 and vector_rows.model(conn) == ("m@1", 16)
        with _snapshot(conn):
            conn.execute("DELETE FROM head_changes")  # a statement that is not a read drops what was read
            assert conn.memo is None and changelog.position(conn) == 0
        with pytest.raises(RuntimeError, match="inside"), _snapshot(conn):
            raise RuntimeError("inside")
        assert conn.memo is None and not conn.in_transaction
    finally:
        conn.close()


def test_a_warm_recall_costs_few_round_trips(pg_url: str) -> None:
    """BEGIN with the snapshot's facts, the best candidates' places in a dialogue, the page, COMMIT: four
    messages to the server for a recall in any mode with the in-memory indexes built (five when the first
    places hold memories alike, whose texts curation reads) (the pool lends the connection given back a moment ago without
    asking the server first, pool.FRESH_S)."""
    import threading

    import psycopg

    from perseus_vault_core import Vault

    from ....conftest import FakeEmbedder

    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.remember_many(
            [
                {"category": "note", "key": f"n{i}", "content": f"ledger entry {i} about cache warming"}
                for i in range(40)
            ]
        )
        vault.recall("cache warming", mode="hybrid", reinforce=False)
        assert vault.wait_for_keyword_index(60) and vault.wait_for_vector_index(60)
        for _ in range(3):
            vault.recall("cache warming", mode="hybrid", reinforce=False)
        sent: list[str] = []
        me, real = threading.get_ident(), psycopg.Connection.execute

        def counted(self: psycopg.Connection, query: object, *args: object, **kwargs: object) -> object:
            if threading.get_ident() == me:
                sent.append(str(query)[:60])
            return real(self, query, *args, **kwargs)  # type: ignore[arg-type]

        psycopg.Connection.execute = counted  # type: ignore[assignment,method-assign]
        try:
            for mode in ("fts5", "dense", "hybrid"):
                sent.clear()
                assert vault.recall("cache warming", mode=mode, reinforce=False, curate=False).items
                assert len(sent) <= 4, (
                    mode,
                    sent,
                )  # and the best candidates' places in a dialogue (context.py)
                sent.clear()  # curated (the default): the relations kept among the first places, and (these
                # memories are all alike, so linked when written) the texts of the linked ones
                assert vault.recall("cache warming", mode=mode, reinforce=False).items
                assert len(sent) <= 6, (mode, sent)
        finally:
            psycopg.Connection.execute = real  # type: ignore[method-assign]
