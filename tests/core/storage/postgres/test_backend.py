"""The PostgreSQL backend (storage/postgres/backend.py; its URLs: tests/core/storage/test_urls.py).

- The in-memory indexes of a PostgreSQL vault, saved in the host's cache folder and opened by the next
  process (``mirror_file``, ``cache_folder``).
- A vault opened on a database that takes no writes (a streaming replica; here a session with
  ``default_transaction_read_only``, which refuses writes as a replica does): it reads, recall does not
  try to count retrievals, and a write is refused with a message that says where to write instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from perseus_vault_core import NotSupported, SetupError, Vault

from ....conftest import Clock, FakeEmbedder
from ...indexes.test_snapshot import answers, built, fill


def _saved(folder: Path) -> list[str]:
    return sorted(p.name.split("-", 1)[1] for p in folder.glob("*.pvidx"))


def test_a_new_process_answers_its_first_recall_from_the_cached_snapshot(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    embedder = FakeEmbedder()
    with Vault(pg_url, embedder=embedder, clock=clock) as vault:
        fill(vault, 300)
    built(pg_url, embedder)  # type: ignore[arg-type]
    assert _saved(tmp_path / "cache") == ["keyword-index.pvidx", "vector-index.pvidx"]
    assert oct((tmp_path / "cache").stat().st_mode & 0o777) == "0o700"
    with Vault(pg_url, embedder=embedder, clock=clock, keyword_index=False, vector_index=False) as writer:
        fill(writer, 40, start=300)  # written after the snapshot: replayed from the change log
        writer.forget(1)
        expected = {mode: answers(writer, mode) for mode in ("fts5", "dense", "hybrid")}
    with Vault(
        pg_url, embedder=embedder, clock=clock, keyword_index="saved", vector_index="saved"
    ) as one_shot:
        assert answers(one_shot, "fts5") == expected["fts5"]
        assert one_shot.stats().keyword_index.endswith("from a snapshot)")
        assert (
            answers(one_shot, "dense") == expected["dense"]
            and answers(one_shot, "hybrid") == expected["hybrid"]
        )


def test_another_database_never_takes_its_snapshot(
    pg_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: Clock
) -> None:
    from ....conftest import new_database

    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    with new_database(pg_server) as first, new_database(pg_server) as second:
        for url in (first, second):  # the same memories, so the same change log positions
            with Vault(url, embedder=False, clock=clock) as vault:
                fill(vault, 50)
                vault.recall("billing")
                assert vault.wait_for_keyword_index(30)
        assert len(list((tmp_path / "cache").glob("*-keyword-index.pvidx"))) == 2  # one per database


def test_an_empty_cache_variable_keeps_the_indexes_in_memory(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", "")
    with Vault(pg_url, embedder=False) as vault:
        fill(vault, 20)
        assert vault.recall("billing").items and vault.wait_for_keyword_index(30)
        assert "snapshot" not in vault.stats().keyword_index


def _read_only(url: str) -> str:
    return url + ("&" if "?" in url else "?") + "options=-c%20default_transaction_read_only%3Don"


def test_a_replica_reads_and_refuses_writes_by_name(pg_url: str) -> None:
    with Vault(pg_url, embedder=False) as primary:
        kept = primary.remember("note", "a", "replicas serve reads")
    with Vault(_read_only(pg_url), embedder=False) as replica:
        result = replica.recall("replicas")  # reinforce defaults to true: nothing to count on a replica
        assert [i.id for i in result.items] == [kept.id]
        assert replica.scan().items[0].id == kept.id and replica.history("note", "a").total == 1
        for write in (
            lambda: replica.remember("note", "b", "no"),
            lambda: replica.forget(kept.id),
            lambda: replica.link(kept.id, kept.id, "self"),
        ):
            with pytest.raises(NotSupported, match="is read-only .*write through the primary"):
                write()
        assert replica.prepare("replicas").related == [
            kept.id
        ]  # proactive recall's caches are skipped, not failed
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
