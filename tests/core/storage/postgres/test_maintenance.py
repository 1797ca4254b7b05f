"""storage/postgres/maintenance.py: ``analyze``, which an import runs in its own transaction as its tables
double (``Backend.refresh_statistics``), so statements planned while they were small are planned again."""

from __future__ import annotations

import json

import psycopg
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.import_export import REFRESH_FIRST
from perseus_vault_core.storage.postgres.maintenance import GROWN

from ....conftest import FakeEmbedder
from .test_vectors import _statements


def test_an_import_refreshes_the_planners_statistics_each_time_its_tables_double(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    count = REFRESH_FIRST * 2 + 10  # past the first refresh and the second (at twice as many records)
    lines = [json.dumps({"category": "note", "key": f"n{i}", "content": f"ledger entry {i} about cache warming"})
             for i in range(count)]
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        with _statements(monkeypatch) as sent:
            report = vault.import_jsonl(lines)
        assert report.created == count
        assert [s for s in sent if s.startswith("ANALYZE")] == [f"ANALYZE {', '.join(GROWN)}"] * 2
    with psycopg.connect(pg_url) as conn:  # committed with the import: the statistics count its rows
        (tuples,) = conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'entities'").fetchone()
    assert tuples >= REFRESH_FIRST * 2


def test_a_small_import_asks_for_no_statistics(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        with _statements(monkeypatch) as sent:
            vault.import_jsonl(json.dumps({"category": "note", "key": f"n{i}", "content": f"entry {i}"})
                               for i in range(20))
        assert not [s for s in sent if s.startswith("ANALYZE")]
