"""The filter rows of the speed benchmark (benchmarks/speed.py filtered_recall, benchmarks/run.py where_rows):
the body each synthetic memory carries keeps the share the report says, every figure is measured, and the
rows render."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.run import where_rows
from benchmarks.speed import FILTERS, filter_body, filtered_recall
from benchmarks.synthetic import memories, queries
from perseus_vault_core import Vault

from ..conftest import FakeEmbedder


def test_the_filters_keep_four_in_five_and_one_in_a_thousand() -> None:
    bodies = [filter_body(i) for i in range(10_000)]
    assert sum(b["prio"] >= 1 for b in bodies) == 8_000
    assert sum(b["project"] == FILTERS["few"]["project"] for b in bodies) == 10
    assert len({b["project"] for b in bodies}) == 1_000


def test_every_figure_is_measured_and_the_rows_render(tmp_path: Path) -> None:
    lines = [json.dumps(dict(m, body=filter_body(i))) for i, m in enumerate(memories(3_000))]
    with Vault(tmp_path / "speed.db", embedder=FakeEmbedder()) as vault:
        vault.import_jsonl(lines)
        found = {name: vault.scan(where=where, limit=1000).items for name, where in FILTERS.items()}
        assert len(found["few"]) == 3 and len(found["most"]) == 1_000  # (a page of the 2,400)
        figures = filtered_recall(vault, queries(20), n_queries=5)
    assert set(figures) == {"fts5", "dense", "hybrid"}
    for mode in figures.values():
        assert set(mode) == {"none", "most", "few", "few_new"}
        assert all(stat["n"] == 5 and 0 < stat["p50"] <= stat["p95"] for stat in mode.values())
    rows = where_rows([{"entities": 3_000, "recall_where": figures}])
    assert sum(row.startswith("| 3,000 | ") for row in rows) == 3
    assert where_rows([{"entities": 10_000}]) == []  # a run from before the filter rows renders none
