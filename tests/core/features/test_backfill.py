"""features/backfill.py: ``reindex`` judges the relations of memories an earlier version wrote without judging
them (the migration marks them), resumes where it stopped, and never judges a memory twice. Both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Vault
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
