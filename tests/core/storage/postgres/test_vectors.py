"""storage/postgres/vectors.py: the HNSW index beside the vectors. A vault's first vector makes it at once;
an import's first vectors (a new vault's import, ``migrate``'s copy) have it built once, after them, in
the same transaction, and so do a backfill's (``embed``, a re-embed): one build costs far less than inserting
into the graph row by row."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.features import backfill
from perseus_vault_core.storage.postgres import vectors
from perseus_vault_core.storage.postgres.connection import PgConnection

from ....conftest import FakeEmbedder


def _lines(start: int, n: int) -> list[str]:
    return [
        json.dumps({"category": "note", "key": f"n{i}", "content": f"ledger entry {i} about cache warming"})
        for i in range(start, start + n)
    ]


@contextmanager
def _statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement the vault sends meanwhile, in order (executemany's once)."""
    sent: list[str] = []
    execute, executemany = PgConnection.execute, PgConnection.executemany

    def one(self: PgConnection, sql: str, parameters: Any = None, /) -> Any:
        sent.append(" ".join(sql.split()))
        return execute(self, sql, parameters)

    def many(self: PgConnection, sql: str, parameters: Any, /) -> Any:
        sent.append(" ".join(sql.split()))
        return executemany(self, sql, parameters)

    with monkeypatch.context() as patch:
        patch.setattr(PgConnection, "execute", one)
        patch.setattr(PgConnection, "executemany", many)
        yield sent


def _index(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (vectors.HNSW_INDEX,)
        ).fetchone()
    return None if row is None else str(row[0])


def test_a_vaults_first_remembered_vector_makes_the_index(pg_url: str) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        assert _index(pg_url) is None
        vault.remember("note", "n0", "ledger entry about cache warming")
    assert "USING hnsw" in str(_index(pg_url))


def test_an_import_into_a_new_vault_builds_the_index_once_after_its_vectors(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = FakeEmbedder()
    with Vault(pg_url, embedder=embedder) as vault:
        with _statements(monkeypatch) as sent:
            vault.import_jsonl(_lines(0, 30))
        builds = [
            i for i, s in enumerate(sent) if s.startswith(f"CREATE INDEX IF NOT EXISTS {vectors.HNSW_INDEX}")
        ]
        writes = [i for i, s in enumerate(sent) if s.startswith(f"INSERT INTO {vectors.TABLE} ")]
        assert len(builds) == 1 and writes and max(writes) < builds[0], sent
        assert "vector_cosine_ops" in str(_index(pg_url))
    # A new process answering by SQL (no in-memory index) searches through it and finds the memory.
    with Vault(pg_url, embedder=embedder, keyword_index=False, vector_index=False) as reader:
        items = reader.recall(
            "ledger entry 7 about cache warming", mode="dense", limit=1, reinforce=False
        ).items
        assert [i.key for i in items] == ["n7"]


def test_an_import_into_a_vault_with_vectors_leaves_the_index_alone(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.remember("note", "first", "the first memory, with the first vector")
        made = _index(pg_url)
        with _statements(monkeypatch) as sent:
            vault.import_jsonl(_lines(0, 10))
        assert not [s for s in sent if "INDEX" in s.upper().split(" ON ")[0]], sent
        assert _index(pg_url) == made and made is not None


def test_an_import_that_fails_leaves_no_model_and_no_index(pg_url: str, tmp_path: Path) -> None:
    """The deferred build is in the import's transaction: an import refused after its memories and vectors
    were written (here by its last line, a link from a memory to itself) leaves the vault as it was."""
    embedder = FakeEmbedder()
    with Vault(tmp_path / "source.db", embedder=embedder) as source:
        a, b = source.remember("note", "a", "alpha memory"), source.remember("note", "b", "beta memory")
        source.link(a.id, b.id, "relates_to")
        lines = io.StringIO()
        source.export_jsonl(lines)
    records = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert records[-1]["record"] == "link"
    records[-1]["to_id"] = records[-1]["from_id"]
    with Vault(pg_url, embedder=embedder) as vault:
        with pytest.raises(InvalidInput, match="two different entities"):
            vault.import_jsonl(json.dumps(r) for r in records)
        assert vault.stats().entities == 0
    assert _index(pg_url) is None
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM vault_meta WHERE key = 'embedding_model'").fetchone() == (
            0,
        )


class _Other(FakeEmbedder):
    identity = "another-model@2"


class _StopsAt(_Other):
    """Fails on its ``n``-th call, as a backfill killed midway would stop."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def embed(self, texts: Any) -> Any:
        if self.calls + 1 == self.n:
            raise RuntimeError("stopped midway")
        return super().embed(texts)


def test_a_reembed_builds_the_index_once_after_its_last_vector(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.import_jsonl(_lines(0, 30))
    monkeypatch.setattr(backfill, "BATCH_ROWS", 8)  # four batches, each its own transaction
    with Vault(pg_url, embedder=_Other()) as vault:
        with _statements(monkeypatch) as sent:
            report = vault.embed(reembed=True)
        assert report.embedded == 30 and report.reembedded
        builds = [
            i for i, s in enumerate(sent) if s.startswith(f"CREATE INDEX IF NOT EXISTS {vectors.HNSW_INDEX}")
        ]
        writes = [i for i, s in enumerate(sent) if s.startswith(f"INSERT INTO {vectors.TABLE} ")]
        assert len(builds) == 1 and len(writes) == 4 and max(writes) < builds[0], sent
    assert "vector(64)" in str(_index(pg_url))
    with Vault(pg_url, embedder=_Other(), keyword_index=False, vector_index=False) as reader:
        items = reader.recall(
            "ledger entry 7 about cache warming", mode="dense", limit=1, reinforce=False
        ).items
        assert [i.key for i in items] == ["n7"]


def test_a_backfill_stopped_midway_leaves_the_build_to_the_next_embed(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.import_jsonl(_lines(0, 30))
    monkeypatch.setattr(backfill, "BATCH_ROWS", 8)
    with Vault(pg_url, embedder=_StopsAt(3)) as vault:  # the probe, one batch, then the stop
        with pytest.raises(RuntimeError, match="stopped midway"):
            vault.embed(reembed=True)
        assert vault.stats().embedding_model == "another-model@2" and _index(pg_url) is None
        report = vault.check()
        assert not report.ok and any("no HNSW index" in p for p in report.problems), report
        # Meanwhile a search by SQL scans the vectors there are, exactly.
        with Vault(pg_url, embedder=_Other(), keyword_index=False, vector_index=False) as reader:
            assert reader.recall(
                "ledger entry 3 about cache warming", mode="dense", limit=1, reinforce=False
            ).items
    with Vault(pg_url, embedder=_Other()) as vault:
        report = vault.embed()
        assert report.embedded == 22 and vault.stats().embedding_coverage == 1.0
        assert vault.check().ok
    assert "vector_cosine_ops" in str(_index(pg_url))


def test_reindex_builds_the_index_an_embed_left_unbuilt(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.import_jsonl(_lines(0, 30))
    monkeypatch.setattr(backfill, "BATCH_ROWS", 8)
    with Vault(pg_url, embedder=_StopsAt(3)) as vault:
        with pytest.raises(RuntimeError, match="stopped midway"):
            vault.embed(reembed=True)
        assert _index(pg_url) is None
        assert vault.reindex().ok
    assert "vector_cosine_ops" in str(_index(pg_url))


def test_an_embed_with_an_index_in_place_builds_nothing(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.remember("note", "n0", "ledger entry about cache warming")
        made = _index(pg_url)
        with _statements(monkeypatch) as sent:
            assert vault.embed().embedded == 0
        assert not [s for s in sent if s.startswith("CREATE INDEX")], sent
    assert _index(pg_url) == made and made is not None
