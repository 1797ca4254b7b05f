"""features/backfill.py: ``reindex`` judges the relations of memories an earlier version wrote without judging
them (the migration marks them), resumes where it stopped, and never judges a memory twice. Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Conflict, InvalidInput, NotSupported, Vault
from perseus_vault_core.features import relations
from perseus_vault_core.storage.meta import RELATIONS_PENDING, get_meta
from perseus_vault_core.storage.postgres import schema as pg_schema
from perseus_vault_core.storage.sqlite import schema as sqlite_schema

from ...conftest import Clock, FakeEmbedder
from .test_relations import links

pytestmark = pytest.mark.both_backends
TEXTS = [
    ("fact", "prod-region", "Production runs in us-east-1 on EKS."),
    ("note", "lunch", "Lunch is at noon in the atrium."),
    ("fact", "db", "The billing service stores invoices in PostgreSQL 16."),
    ("fact", "prod-region-now", "Production runs in eu-west-1 on EKS."),
    ("fact", "db-again", "The billing service keeps its invoices in PostgreSQL 16."),
    ("note", "standup", "Standup is at 09:30 every day."),
]


def _written(location: str | Path, clock: Clock, judged: bool, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    with monkeypatch.context() as m:
        if not judged:  # as an earlier version wrote them: no relation judged at write time
            m.setattr(relations, "keep", lambda *a, **k: 0)
        with Vault(location, clock=clock, embedder=FakeEmbedder()) as vault:
            ids = []
            for category, key, text in TEXTS:
                ids.append(vault.remember(category, key, text).id)
                clock.advance(60_000)
            return ids


def _before_marking(vault: Vault, backend: str) -> None:
    """The file as the version before the marking migration left it."""
    step = (sqlite_schema if backend == "sqlite" else pg_schema).MIGRATIONS[-1][0]
    conn = vault.engine.conn()
    vault.engine.write(lambda c: c.execute("DELETE FROM _migrations WHERE version = ?", (step,)))
    if backend == "sqlite":
        conn.execute(f"PRAGMA user_version = {step - 1}")


def test_reindex_judges_what_an_earlier_version_wrote_as_its_writes_would_have(
    backend: str, vault_path: str | Path, clock: Clock, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    reference_location = tmp_path / "reference.db"  # written as this version writes, judging each memory
    _written(reference_location, clock, judged=True, monkeypatch=monkeypatch)
    with Vault(reference_location, embedder=FakeEmbedder()) as reference:
        expected = links(reference)
    assert expected, "the reference store judged nothing: no relation to compare"
    _written(vault_path, clock, judged=False, monkeypatch=monkeypatch)
    with Vault(vault_path, embedder=FakeEmbedder()) as vault:
        assert links(vault) == []
        _before_marking(vault, backend)
    seen: list[tuple[int, int]] = []
    with Vault(
        vault_path, embedder=FakeEmbedder()
    ) as vault:  # the migration marks the memories written before
        assert vault.engine.read(lambda c: get_meta(c, RELATIONS_PENDING)) == str(len(TEXTS))
        report = vault.reindex(progress=lambda done, total: seen.append((done, total)))
        assert report.ok and report.relations_judged == len(TEXTS)
        assert seen[-1] == (len(TEXTS), len(TEXTS))
        assert links(vault) == expected
        assert vault.engine.read(lambda c: get_meta(c, RELATIONS_PENDING)) is None
        assert vault.reindex().relations_judged == 0  # judged once
        assert links(vault) == expected


def test_a_stored_relation_survives_reopening_and_is_not_judged_again(
    vault_path: str | Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    _written(vault_path, clock, judged=True, monkeypatch=monkeypatch)
    with Vault(vault_path, embedder=FakeEmbedder()) as vault:
        before = (
            vault.engine.conn()
            .execute(
                "SELECT id, from_id, to_id, relation, weight FROM links WHERE recorded_to_ms IS NULL ORDER BY id"
            )
            .fetchall()
        )
        assert before
        assert (
            vault.engine.read(lambda c: get_meta(c, RELATIONS_PENDING)) is None
        )  # a new vault: nothing marked
    calls: list[Any] = []
    monkeypatch.setattr(relations, "keep", lambda *a, **k: calls.append(a) or 0)
    with Vault(vault_path, embedder=FakeEmbedder()) as vault:
        assert vault.reindex().relations_judged == 0
        vault.recall("Production runs where", reinforce=False)
        after = (
            vault.engine.conn()
            .execute(
                "SELECT id, from_id, to_id, relation, weight FROM links WHERE recorded_to_ms IS NULL ORDER BY id"
            )
            .fetchall()
        )
    assert [tuple(r) for r in after] == [tuple(r) for r in before] and calls == []


def test_a_backfill_stopped_midway_resumes_where_it_stopped(
    backend: str, vault_path: str | Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from perseus_vault_core.features import backfill

    _written(vault_path, clock, judged=False, monkeypatch=monkeypatch)
    with Vault(vault_path, embedder=FakeEmbedder()) as vault:
        _before_marking(vault, backend)
    monkeypatch.setattr(backfill, "RELATION_BATCH", 2)

    def stop(done: int, total: int) -> None:
        if done == 4:
            raise KeyboardInterrupt

    with Vault(vault_path, embedder=FakeEmbedder()) as vault:
        with pytest.raises(KeyboardInterrupt):
            vault.reindex(progress=stop)
        partial = links(vault)
        seen: list[tuple[int, int]] = []
        assert vault.reindex(progress=lambda d, t: seen.append((d, t))).relations_judged == 2  # the last two
        assert seen == [(4, 6), (6, 6)]  # the bar goes on from where the stopped backfill left it
        assert set(partial) <= set(links(vault))


def test_an_inferred_link_someone_unlinked_stays_closed_through_a_backfill(
    backend: str, vault_path: str | Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vault the version before the marking migration wrote (it judged relations): an unlink there stands."""
    _written(vault_path, clock, judged=True, monkeypatch=monkeypatch)
    with Vault(vault_path, embedder=FakeEmbedder()) as vault:
        a, b, relation, _ = links(vault)[0]
        vault.unlink(a, b, relation)
        kept = links(vault)
        _before_marking(vault, backend)
    with Vault(vault_path, embedder=FakeEmbedder()) as vault:
        assert vault.reindex().relations_judged == len(TEXTS)
        assert links(vault) == kept and not any({x, y} == {a, b} for x, y, _, _ in links(vault))
        with pytest.raises(InvalidInput, match="progress"):
            vault.reindex(progress=5)  # type: ignore[arg-type]


# --- embed: vectors for a keyword-only store, and a re-embed with another model ---


def test_embed_backfills_a_keyword_only_store(db_path, clock: Clock, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, clock=clock, embedder=False) as plain:
        for i in range(30):
            plain.remember("note", f"k{i}", f"note number {i} about billing")
        plain.remember("note", "k0", "note zero, rewritten")
        assert plain.stats().embedding_coverage == 0.0
        with pytest.raises(NotSupported):
            plain.embed()
    with Vault(db_path, clock=clock, embedder=fake_embedder) as vault:
        assert vault.recall("billing").search_mode == "fts5"  # no vectors yet
        seen: list[tuple[int, int]] = []
        report = vault.embed(progress=lambda done, total: seen.append((done, total)))
        assert report.embedded == 31 and seen[-1] == (31, 31)  # 30 heads and one older version
        stats = vault.stats()
        assert stats.embedding_coverage == 1.0 and stats.embedded == 30
        assert vault.recall("billing").search_mode == "hybrid"
        assert vault.embed().embedded == 0  # nothing left to do
        assert vault.check().ok


def test_another_model_is_refused_and_nothing_is_written(
    db_path, clock: Clock, fake_embedder: FakeEmbedder
) -> None:  # type: ignore[no-untyped-def]
    class Other(FakeEmbedder):
        identity = "another-model@2"

    with Vault(db_path, clock=clock, embedder=fake_embedder) as first:
        first.remember("note", "k", "first model wrote this")
    with Vault(db_path, clock=clock, embedder=Other()) as second:
        before = second.stats()
        with pytest.raises(Conflict, match="embed --reembed"):
            second.remember("note", "k2", "second model")
        with pytest.raises(Conflict):
            second.recall("first model", mode="dense")
        with pytest.raises(Conflict):
            second.recall("first model")  # auto mode would be hybrid: refused, not silently mixed
        assert second.stats().entities == before.entities
        report = second.embed(reembed=True)
        assert report.reembedded and report.model == "another-model@2" and report.embedded == 1
        second.remember("note", "k2", "second model")
        assert second.stats().embedding_model == "another-model@2"
        assert second.recall("first model", mode="dense").items


def test_a_broken_embedder_cannot_start_a_reembed(dense_vault: Vault) -> None:
    from perseus_vault_core import InvalidInput

    for i in range(5):
        dense_vault.remember("note", f"k{i}", f"kept vector {i}")

    class Broken(FakeEmbedder):
        identity = "broken@1"

        def embed(self, texts):  # type: ignore[no-untyped-def]
            return super().embed(texts)[:, :10]  # the wrong width

    dense_vault.engine.embedder = Broken()
    with pytest.raises(InvalidInput, match="embedder"):
        dense_vault.embed(reembed=True)
    assert dense_vault.stats().embedded == 5 and dense_vault.stats().embedding_model == FakeEmbedder.identity


def test_a_vector_backfill_does_not_rebuild_the_keyword_index(
    db_path, clock: Clock, fake_embedder: FakeEmbedder
) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, clock=clock, embedder=False) as plain:
        plain.remember_many(
            {"category": "note", "key": f"k{i}", "content": f"billing note {i}"} for i in range(50)
        )
    with Vault(db_path, clock=clock, embedder=fake_embedder) as vault:
        assert vault.wait_for_keyword_index()
        index = vault.engine.keyword_index
        assert index is not None
        rows_before = index.rows
        vault.embed()
        assert vault.recall("billing", mode="fts5").items
        assert index.ready and index.rows is rows_before  # followed the log, no rebuild
