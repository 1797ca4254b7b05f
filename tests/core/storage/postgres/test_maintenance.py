"""storage/postgres/maintenance.py: ``analyze``, which an import runs in its own transaction each time the
vault doubles (``Backend.refresh_statistics``), so statements planned while it was small are planned again."""

from __future__ import annotations

import json

import psycopg
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.features.import_export import REFRESH_FIRST
from perseus_vault_core.storage.postgres.maintenance import GROWN

from ....conftest import FakeEmbedder
from .test_vectors import _statements


def _notes(start: int, n: int) -> list[str]:
    return [
        json.dumps({"category": "note", "key": f"n{i}", "content": f"ledger entry {i} about cache warming"})
        for i in range(start, start + n)
    ]


def _analyzed(sent: list[str]) -> int:
    assert all(s == f"ANALYZE {', '.join(GROWN)}" for s in sent if s.startswith("ANALYZE"))
    return sum(s.startswith("ANALYZE") for s in sent)


def test_an_import_refreshes_the_planners_statistics_each_time_the_vault_doubles(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into a new vault, 2,010 memories (written 1,000 at a time): once the first batch is in (past
    REFRESH_FIRST), again at 2,000, not at 1,000 and 2,000 of the same batch's records."""
    count = REFRESH_FIRST * 4 + 10
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        with _statements(monkeypatch) as sent:
            report = vault.import_jsonl(_notes(0, count))
        assert report.created == count
        assert _analyzed(sent) == 2
        first = next(i for i, s in enumerate(sent) if s.startswith("ANALYZE"))
        assert any(s.startswith("INSERT INTO keyword_postings") for s in sent[:first])
    with psycopg.connect(pg_url) as conn:  # committed with the import: the statistics count its rows
        (tuples,) = conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'entities'").fetchone()
    assert tuples >= REFRESH_FIRST * 4


def test_an_import_asks_for_no_statistics_until_the_vault_doubles(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = REFRESH_FIRST + 100
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.import_jsonl(_notes(0, held))
        with _statements(monkeypatch) as sent:
            vault.import_jsonl(_notes(held, held - 1))  # one short of twice what it held
        assert _analyzed(sent) == 0
        with _statements(monkeypatch) as sent:  # now it holds 2 * held - 1: an import as large doubles it
            vault.import_jsonl(_notes(2 * held - 1, 2 * held - 1))
        assert _analyzed(sent) == 1


def test_a_small_import_asks_for_no_statistics(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        with _statements(monkeypatch) as sent:
            vault.import_jsonl(_notes(0, 20))
        assert _analyzed(sent) == 0
        assert not [s for s in sent if s.startswith("SELECT count(*) FROM entities")], (
            sent
        )  # no size to weigh


def test_the_smallest_import_that_doubles_a_vault_past_the_first_refresh_runs_it(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    half = REFRESH_FIRST // 2  # an import this large into a vault holding as many reaches REFRESH_FIRST
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.import_jsonl(_notes(0, half))
        with _statements(monkeypatch) as sent:
            vault.import_jsonl(_notes(half, half))
        assert _analyzed(sent) == 1
