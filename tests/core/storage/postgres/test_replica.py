"""A vault opened on a database that takes no writes (a streaming replica; here a session with
``default_transaction_read_only``, which refuses writes as a replica does): it reads, recall does not try to count
retrievals, and a write is refused with a message that says where to write instead."""

from __future__ import annotations

import pytest

from perseus_vault_core import NotSupported, SetupError, Vault


def _read_only(url: str) -> str:
    return url + ("&" if "?" in url else "?") + "options=-c%20default_transaction_read_only%3Don"


def test_a_replica_reads_and_refuses_writes_by_name(pg_url: str) -> None:
    with Vault(pg_url, embedder=False) as primary:
        kept = primary.remember("note", "a", "replicas serve reads")
    with Vault(_read_only(pg_url), embedder=False) as replica:
        result = replica.recall("replicas")  # reinforce defaults to true: nothing to count on a replica
        assert [i.id for i in result.items] == [kept.id]
        assert replica.scan().items[0].id == kept.id and replica.history("note", "a").total == 1
        for write in (lambda: replica.remember("note", "b", "no"), lambda: replica.forget(kept.id),
                      lambda: replica.link(kept.id, kept.id, "self")):
            with pytest.raises(NotSupported, match="is read-only .*write through the primary"):
                write()
        assert replica.prepare("replicas").related == [kept.id]  # proactive recall's caches are skipped, not failed
    with Vault(pg_url, embedder=False) as primary:
        assert primary.get_entity(kept.id).retrieval_count == 0  # the replica counted nothing


def test_a_replica_behind_the_package_schema_is_refused_at_open(pg_url: str) -> None:
    import psycopg

    with Vault(pg_url, embedder=False):
        pass
    with psycopg.connect(pg_url, autocommit=True) as conn:  # as if the primary had not been upgraded yet
        conn.execute("DELETE FROM _migrations WHERE version = (SELECT max(version) FROM _migrations)")
    with pytest.raises(SetupError, match="read-only .*open it once through the primary"):
        Vault(_read_only(pg_url), embedder=False)
