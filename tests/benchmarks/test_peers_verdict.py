"""The peer report's verdicts (benchmarks/run.py render_peers): the dense arm judged against every peer, and
against the peers that reach the recall the vault's dense arm is held to."""

from __future__ import annotations

from typing import Any

from benchmarks.run import render_peers


def _run(deep_ratio: float, deep_recall: float) -> dict[str, Any]:
    vault = {
        "system": "Perseus Vault dense",
        "arm": "dense",
        "queries": 300,
        "p50": 2.0,
        "p95": 3.0,
        "recall_vs_exact": 0.997,
    }
    shallow = {
        "system": "Chroma (HNSW)",
        "arm": "dense",
        "queries": 300,
        "p50": 1.5,
        "p95": 2.0,
        "ratio_p50": 0.75,
        "ratio_p95": 0.7,
        "recall_vs_exact": 0.92,
    }
    deep = {
        "system": "Chroma (HNSW, ef_search 800)",
        "arm": "dense",
        "queries": 300,
        "p50": 2.0 * deep_ratio,
        "p95": 3.0,
        "ratio_p50": deep_ratio,
        "ratio_p95": 1.0,
        "recall_vs_exact": deep_recall,
    }
    return {
        "entities": 100_000,
        "queries": 300,
        "k": 10,
        "latency": [vault, shallow, deep],
        "build": {"Perseus Vault": {"ingest_per_s": 1.0, "disk_mb": 1.0}},
    }


def _verdicts(run: dict[str, Any]) -> list[str]:
    return [line for line in render_peers([], [run], []) if line.startswith("| vault dense")]


def test_dense_is_judged_against_every_peer_and_against_those_at_its_recall() -> None:
    every, at_recall = _verdicts(_run(deep_ratio=1.3, deep_recall=0.993))
    assert "BEHIND" in every and "Chroma (HNSW)," in every  # the fastest peer, whatever its recall
    assert at_recall.endswith("| met |") and "ef_search 800" in at_recall and "0.993" in at_recall


def test_a_deep_peer_that_is_faster_is_reported_behind() -> None:
    _, at_recall = _verdicts(_run(deep_ratio=0.8, deep_recall=0.995))
    assert "**BEHIND** by 1.25x" in at_recall


def test_no_row_at_the_recall_target_when_no_peer_reaches_it() -> None:
    assert len(_verdicts(_run(deep_ratio=1.3, deep_recall=0.98))) == 1


def test_the_like_for_like_row_judges_chroma_returning_its_documents() -> None:
    from benchmarks.peers import ChromaDocuments

    run = _run(deep_ratio=1.3, deep_recall=0.993)
    run["latency"].append(
        {
            "system": ChromaDocuments.name,
            "arm": "dense",
            "queries": 300,
            "p50": 2.2,
            "p95": 3.0,
            "ratio_p50": 1.1,
            "ratio_p95": 1.0,
            "recall_vs_exact": 0.92,
        }
    )
    every, _, whole = _verdicts(run)
    assert "BEHIND" in every  # the ids-only arm still decides the verdict against every peer
    assert "returning the documents" in whole and "ratio 1.10" in whole and whole.endswith("| met |")
    run["latency"][-1]["ratio_p50"] = 0.9
    assert "**BEHIND** by 1.11x" in _verdicts(run)[2]


def test_a_peer_that_queries_another_peers_build_reports_no_ingest_rate_of_its_own() -> None:
    import numpy as np

    from benchmarks.peers import ChromaDocuments, FusedBm25sChroma, Peer, build_all

    class Built(Peer):
        name = "built"

        def build(self, *args: Any) -> None:
            pass

        def disk_bytes(self) -> int | None:
            return 5_000_000

    built = Built()
    shared = ChromaDocuments(built)  # type: ignore[arg-type]
    figures = build_all(
        [built, shared, FusedBm25sChroma(built, built)],
        ["a"],
        ["text"],  # type: ignore[arg-type]
        np.zeros((1, 4), dtype=np.float32),
        "",
        None,
        lambda _: None,
    )  # type: ignore[arg-type]
    assert figures["built"]["ingest_per_s"] is not None
    assert figures[shared.name] == {"ingest_per_s": None, "disk_mb": 5.0}  # the collection it queries
    assert figures["bm25s + Chroma, RRF k=60"]["ingest_per_s"] is None
