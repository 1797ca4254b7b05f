"""The engine the verbs share: planned writes, snapshots, reinforcement and the query cache."""

from __future__ import annotations

import threading

import pytest

from perseus_vault_core import StorageError, Vault
from perseus_vault_core.records.store import MissingVectors
from perseus_vault_core.storage import Connection


def _unvectored(conn: Connection) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM entity_versions v WHERE NOT EXISTS "
            "(SELECT 1 FROM version_vectors x WHERE x.vid = v.vid)"
        ).fetchone()[0]
    )


def test_a_write_its_plan_did_not_foresee_is_embedded_and_run_again(dense_vault: Vault) -> None:
    """A batch that writes one memory twice meets a text the plan (read before the write) did not
    hold: the transaction rolls back, the text is embedded, and every version still gets its vector."""
    written = dense_vault.remember_many(
        [
            {"category": "note", "key": "k", "content": "first text"},
            {"category": "note", "key": "k", "content": "second text"},
        ]
    )
    assert [e.content for e in written] == ["second text", "second text"]
    assert dense_vault.history("note", "k").total == 2
    assert _unvectored(dense_vault.engine.conn()) == 0


def test_a_write_that_keeps_missing_vectors_gives_up_with_a_storage_error(dense_vault: Vault) -> None:
    engine = dense_vault.engine
    plan = engine.plan(lambda conn: [])
    assert plan is not None
    attempts = []

    def work(conn: Connection) -> None:
        attempts.append(1)
        raise MissingVectors([f"text {len(attempts)}"])

    with pytest.raises(StorageError, match="kept changing"):
        engine.write_planned(plan, work)
    assert len(attempts) == 5


def test_reading_sees_one_snapshot_while_another_thread_writes(vault: Vault) -> None:
    vault.remember("note", "a", "one")
    engine = vault.engine
    with engine.reading() as conn:
        before = conn.execute("SELECT count(*) FROM entities").fetchone()[0]
        writer = threading.Thread(target=lambda: vault.remember("note", "b", "two"))
        writer.start()
        writer.join()
        assert conn.execute("SELECT count(*) FROM entities").fetchone()[0] == before == 1
    assert engine.read(lambda c: c.execute("SELECT count(*) FROM entities").fetchone()[0]) == 2


def test_reinforce_counts_a_retrieval_without_a_new_version(vault: Vault) -> None:
    entity = vault.remember("note", "a", "one")
    vault.engine.reinforce([entity.id])
    again = vault.get_entity(entity.id)
    assert again.retrieval_count == entity.retrieval_count + 1 and again.version == entity.version


def test_the_last_query_vector_is_reused(dense_vault: Vault) -> None:
    engine = dense_vault.engine
    first = engine.embed_query("which database")
    assert engine.embed_query("which database") is first
    assert engine.embed_query("another question") is not first
