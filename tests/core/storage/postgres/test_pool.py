"""storage/postgres/pool.py: a process's connections come from one pool, leased per verb."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from perseus_vault_core import InvalidInput, StorageError, Vault
from perseus_vault_core.storage.postgres.pool import POOL_SIZE, POOL_TIMEOUT_S, split_url


def test_the_vaults_options_leave_the_url_before_libpq_sees_it() -> None:
    url, options = split_url(
        "postgresql://u@h:5432/db?sslmode=require&pool_size=3&pool_timeout=2.5&application_name=a"
    )
    assert url == "postgresql://u@h:5432/db?sslmode=require&application_name=a"
    assert options == {"pool_size": 3, "pool_timeout": 2.5}
    assert split_url("postgresql://u@h/db") == (
        "postgresql://u@h/db",
        {"pool_size": POOL_SIZE, "pool_timeout": POOL_TIMEOUT_S},
    )
    # libpq's own parameters pass byte for byte: %20 is a space to libpq, a + is a plus sign.
    raw = "postgresql://u@h/db?options=-c%20statement_timeout%3D5s&pool_size=2&host=%2Ftmp%2Fpg"
    assert split_url(raw)[0] == "postgresql://u@h/db?options=-c%20statement_timeout%3D5s&host=%2Ftmp%2Fpg"


@pytest.mark.parametrize(
    "query, named",
    [
        ("pool_size=0", "pool_size"),
        ("pool_size=2.5", "pool_size"),
        ("pool_size=many", "pool_size"),
        ("pool_timeout=0", "pool_timeout"),
        ("pool_timeout=-1", "pool_timeout"),
    ],
)
def test_a_bad_pool_option_is_refused_by_name(query: str, named: str) -> None:
    with pytest.raises(InvalidInput, match=named):
        split_url(f"postgresql://u@h/db?{query}")


def _with(url: str, **options: object) -> str:
    """``url`` with the vault's pool options added to its query."""
    return url + ("&" if "?" in url else "?") + "&".join(f"{k}={v}" for k, v in options.items())


def _server_sessions(vault: Vault) -> int:
    """Sessions open on the vault's database now, this one's included."""
    backend = vault.engine.backend
    conn = backend.connect()
    try:
        return int(
            conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            ).fetchone()[0]
        )
    finally:
        conn.close()


def test_a_verb_gives_its_connection_back_and_the_next_thread_reuses_it(pg_url: str) -> None:
    with Vault(pg_url, embedder=False, keyword_index=False, vector_index=False) as vault:
        backend = vault.engine.backend
        vault.remember("note", "a", "the pool lends connections")
        assert backend._connections.leased() == 0  # back in the pool once the verb returned
        seen: list[int] = []

        def recall() -> None:
            vault.recall("pool", reinforce=False)
            seen.append(backend._connections.leased())

        for _ in range(5):
            worker = threading.Thread(target=recall)
            worker.start()
            worker.join()
        assert seen == [0] * 5
        # Five threads, one after another: one pooled session serves them all (plus the counting one).
        assert _server_sessions(vault) == 2


def test_many_threads_share_at_most_pool_size_connections(pg_url: str) -> None:
    with Vault(_with(pg_url, pool_size=2), embedder=False, keyword_index=False, vector_index=False) as vault:
        for i in range(20):
            vault.remember("note", f"k{i}", f"memory number {i} about pools")
        peak = 0
        lock = threading.Lock()

        def recall(i: int) -> int:
            nonlocal peak
            got = vault.recall(f"memory number {i}", mode="fts5", reinforce=False, min_score=None).total
            with lock:
                peak = max(peak, vault.engine.backend._connections.leased())
            return got

        with ThreadPoolExecutor(8) as pool:
            totals = list(pool.map(recall, range(40)))
        assert all(t > 0 for t in totals)
        assert 1 <= peak <= 2
        assert _server_sessions(vault) <= 3


def test_a_thread_that_waits_too_long_for_a_connection_gets_one_clear_error(pg_url: str) -> None:
    with Vault(
        _with(pg_url, pool_size=1, pool_timeout=0.3), embedder=False, keyword_index=False, vector_index=False
    ) as vault:
        vault.remember("note", "a", "one connection only")
        backend = vault.engine.backend
        holding, release = threading.Event(), threading.Event()

        def hold() -> None:
            with backend.lease():
                backend.conn()
                holding.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        holding.wait(10)
        started = time.monotonic()
        with pytest.raises(StorageError, match=r"no connection .* came free within 0.3 s .*pool_size"):
            vault.recall("connection", reinforce=False)
        assert time.monotonic() - started < 5
        release.set()
        holder.join()
        assert vault.recall("connection", reinforce=False).total == 1  # free again


def _end_the_pooled_session(vault: Vault) -> int:
    """Have the server end the session of the connection the vault's pool lends next; its process id."""
    backend = vault.engine.backend
    with backend.lease():
        pid = int(backend.conn().execute("SELECT pg_backend_pid()").fetchone()[0])
    admin = backend.connect()
    try:
        admin.execute("SELECT pg_terminate_backend(?)", (pid,))
    finally:
        admin.close()
    time.sleep(0.2)
    return pid


def test_a_connection_the_server_ended_is_replaced_before_the_next_verb(pg_url: str) -> None:
    with Vault(pg_url, embedder=False, keyword_index=False, vector_index=False) as vault:
        vault.remember("note", "a", "survives a dropped session")
        _end_the_pooled_session(vault)
        # The dead one is dropped (by the pool's check, or by the verb's first statement), a new one serves.
        assert vault.recall("dropped session", reinforce=False).total == 1


@pytest.mark.parametrize("verb", ["recall", "remember", "get"])
def test_a_connection_that_died_just_after_use_is_replaced_by_the_next_verbs_first_statement(
    pg_url: str, verb: str
) -> None:
    """Given back a moment ago, a connection is lent without the pool's check (pool.FRESH_S); when the server
    ended it meanwhile, the verb's first statement finds that and runs on a new connection."""
    from perseus_vault_core.storage.postgres import pool

    with Vault(pg_url, embedder=False, keyword_index=False, vector_index=False) as vault:
        first = vault.remember("note", "a", "survives a dropped session")
        backend = vault.engine.backend
        pid = _end_the_pooled_session(vault)
        assert pool.FRESH_S > 0.5  # so the pool lends the dead one without asking
        if verb == "recall":
            assert vault.recall("dropped session", reinforce=False).total == 1
        elif verb == "remember":
            written = vault.remember("note", "b", "written after the drop")
            assert vault.get_entity(written.id).content == "written after the drop"
        else:
            assert vault.get_entity(first.id).content == "survives a dropped session"
        with backend.lease():
            assert backend.conn().execute("SELECT pg_backend_pid()").fetchone()[0] != pid


def test_a_forked_child_uses_a_pool_of_its_own(pg_url: str) -> None:
    with Vault(pg_url, embedder=False, keyword_index=False, vector_index=False) as vault:
        vault.remember("note", "a", "parent and child")
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: recall on the inherited vault, report, leave without cleanup
            try:
                os.write(writer, str(vault.recall("parent child", reinforce=False).total).encode())
            finally:
                os._exit(0)
        os.close(writer)
        os.waitpid(pid, 0)
        assert os.read(reader, 10) == b"1"
        os.close(reader)
        assert vault.recall("parent child", reinforce=False).total == 1  # the parent's session is intact


def test_a_server_that_refuses_is_named_at_once_not_after_the_pool_timeout(pg_url: str) -> None:
    bad = (
        pg_url.replace("postgresql://", "postgresql://nobody_here@", 1)
        if "@" not in pg_url
        else "postgresql://nobody_here@" + pg_url.split("@", 1)[1]
    )
    started = time.monotonic()
    with pytest.raises(StorageError, match="cannot connect to .*nobody_here"):
        Vault(bad, embedder=False)
    assert time.monotonic() - started < 5  # not the 30 s pool timeout
