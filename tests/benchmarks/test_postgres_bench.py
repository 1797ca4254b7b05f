"""The PostgreSQL benchmark (benchmarks/postgres.py) end to end on a few hundred memories with stand-in
vectors, on the test server: every figure its report section needs is there, the section renders, and
``--only postgres`` replaces that section alone."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import postgres
from benchmarks.quality import Collection
from perseus_vault_core.embeddings import BUNDLED_DIMENSION, BUNDLED_IDENTITY


class StandIn:
    """The bundled model's identity and dimension (a new process's ``Vault(url)`` then opens the vault with
    its default model and answers a given vector), a unit vector per text hashed from it."""

    identity, dimension = BUNDLED_IDENTITY, BUNDLED_DIMENSION

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [
            np.random.default_rng(
                int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8).digest(), "little")
            ).standard_normal(self.dimension)
            for t in texts
        ]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dimension)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def _collection() -> Collection:
    docs = [
        {"_id": f"d{i}", "title": f"note {i}", "text": f"the {w} pipeline was slow because of {w} retries"}
        for i, w in enumerate(
            ["billing", "ledger", "search", "ingest", "invoices", "cache", "queue", "backup"]
        )
    ]
    queries = {"q1": "slow billing pipeline", "q2": "cache retries", "q3": "backup"}
    qrels = {"q1": {"d0": 1}, "q2": {"d5": 1}, "q3": {"d7": 2}}
    return Collection("tiny", docs, queries, qrels)


@pytest.fixture(scope="module")
def result(pg_server: str) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(postgres.SERVER_VARIABLE, pg_server)
        return postgres.run(
            [300], None, StandIn(), log=lambda _: None, n_queries=30, collections=[_collection()]
        )


def test_the_run_has_every_figure_the_section_needs(result: dict[str, Any]) -> None:
    assert result["server"]["pgvector"] and result["server"]["server_version"]
    (size,) = result["sizes"]
    assert size["migrate"]["entities"] == size["migrate"]["vectors"] == 300 and size["migrate"]["per_s"] > 0
    assert size["ingest"]["items"] == 300
    assert all(size["ingest"][k] > 0 for k in ("pg_per_s", "sqlite_per_s", "store_per_s", "store_all_per_s"))
    systems = {r["system"]: r for r in size["latency"]}
    expected = {
        f"{backend} {mode}"
        for backend in ("Postgres", "Postgres by SQL", "SQLite")
        for mode in postgres.MODES
    }
    assert set(systems) == expected | {postgres.LangGraphPostgres.name}
    assert all(r["queries"] == 30 and 0 < r["p50"] <= r["p95"] for r in systems.values())
    # The same vectors everywhere: every exact dense path finds the exact top 10.
    for name in ("Postgres dense", "Postgres by SQL dense", "SQLite dense"):
        assert systems[name]["recall_vs_exact"] == 1.0
    assert 0 < systems[postgres.LangGraphPostgres.name]["recall_vs_exact"] <= 1.0
    assert set(size["ratios"]) == {"fts5", "dense", "hybrid"} and all(v > 0 for v in size["ratios"].values())
    assert size["store_index_scans"]["searches"] == 35
    assert size["first_recall_saved"]["from_snapshot"] and not size["first_recall_uncached"]["from_snapshot"]
    assert size["first_recall_saved"]["keyword_ms"] > 0 and size["first_recall_uncached"]["dense_ms"] > 0
    assert min(size["pg_mb"], size["store_mb"], size["sqlite_mb"]) > 0


def test_both_backends_score_a_collection_alike(result: dict[str, Any]) -> None:
    rows = result["quality"]
    assert [r["mode"] for r in rows] == list(postgres.MODES)
    for r in rows:
        assert r["postgres"] == pytest.approx(r["sqlite"], abs=1e-9) and r["postgres"] > 0


def test_the_section_renders_with_a_verdict_per_target(result: dict[str, Any]) -> None:
    lines = postgres.render(result)
    text = "\n".join(lines)
    assert lines[0] == postgres.SECTION
    for heading in (
        "### Copy and ingest",
        "### Latency at 300 (k = 10, interleaved)",
        "### A new process's first recall on Postgres",
        "### Quality on both backends",
        "### PostgreSQL targets (100k not run)",
    ):
        assert heading in lines
    verdicts = [
        line
        for line in lines
        if line.startswith("| Postgres ") and ("| met |" in line or "**MISSED**" in line)
    ]
    assert len(verdicts) == 3  # dense and hybrid against PostgresStore, keyword against SQLite
    assert (
        sum("nDCG@10 equal to SQLite's within 0.005" in line and line.endswith("| met |") for line in lines)
        == 3
    )
    assert "LangGraph PostgresStore (pgvector HNSW)" in text and "| 300 | in the cache |" in text


def test_only_postgres_replaces_its_section_and_keeps_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = tmp_path / "benchmarks.md"
    report.write_text(
        "# Benchmarks\n\n## Speed\n\nfast\n\n## PostgreSQL backend\n\nold\n\n### Targets\n\nold\n\n"
        "## One million memories\n\nbig\n",
        encoding="utf-8",
    )
    fake = {"x": 1}
    monkeypatch.setattr(postgres, "render", lambda result: [postgres.SECTION, "", f"new {result['x']}", ""])
    postgres.update_report(report, fake)
    assert report.read_text(encoding="utf-8") == (
        "# Benchmarks\n\n## Speed\n\nfast\n\n## PostgreSQL backend\n\nnew 1\n\n"
        "## One million memories\n\nbig\n"
    )
    missing = tmp_path / "other.md"
    missing.write_text("# Benchmarks\n\n## Speed\n\nfast\n", encoding="utf-8")
    postgres.update_report(missing, fake)
    assert (
        missing.read_text(encoding="utf-8")
        == "# Benchmarks\n\n## Speed\n\nfast\n\n## PostgreSQL backend\n\nnew 1\n"
    )


def test_run_only_postgres_runs_this_part_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import run

    called: list[tuple[Path, list[int]]] = []
    monkeypatch.setattr(postgres, "main", lambda output, sizes: called.append((output, sizes)))
    monkeypatch.setenv(
        "PERSEUS_VAULT_DATA", str(tmp_path)
    )  # no collections there: this part does not need them
    run.main(["--only", "postgres", "--quick", "--output", str(tmp_path / "b.md")])
    run.main(["--only", "postgres", "--output", str(tmp_path / "b.md")])
    assert called == [(tmp_path / "b.md", [10_000]), (tmp_path / "b.md", [10_000, 100_000])]
