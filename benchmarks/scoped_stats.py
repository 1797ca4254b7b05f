"""What tenant-private keyword statistics cost: scoped vs unscoped fts5 recall, on both keyword paths.

A scoped recall scores BM25 with its scope's own statistics (see docs/recall.md). The in-memory
mirror gets them from its scope mask; the SQL path (a fresh process, a non-ASCII query, a point in
time) reads them from FTS5's data: one pass over the scope's size records, and one index read per
query word joined to the scope. This times both paths, scoped (one of four agents) and unscoped,
current and as_of, on the synthetic store of speed.py. Each query is timed three times and its
best kept (the machine may be shared); p50 and p95 over the queries.

    python -m benchmarks.scoped_stats [--n 100000] [--queries 40] [--db path]

Run it on two checkouts to compare (the store is rebuilt unless ``--db`` names one).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

from perseus_vault_core import Vault

from .synthetic import memories, queries


def _timed(call: Callable[[str], Any], qs: list[str]) -> tuple[float, float]:
    for q in qs[:3]:
        call(q)
    samples = []
    for q in qs:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            call(q)
            best = min(best, (time.perf_counter() - started) * 1000)
        samples.append(best)
    samples.sort()
    return samples[len(samples) // 2], samples[min(len(samples) - 1, int(0.95 * len(samples)))]


def measure(path: str, n_queries: int) -> list[tuple[str, str, tuple[float, float]]]:
    qs = queries(n_queries)
    rows = []
    now = int(time.time() * 1000)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("unscoped", {}),
        ("agent-1 (a quarter)", {"agent_id": "agent-1"}),
        ("unscoped, as_of", {"as_of_unix_ms": now}),
        ("agent-1, as_of", {"agent_id": "agent-1", "as_of_unix_ms": now}),
    ]
    with Vault(path, embedder=False) as vault:
        index = vault.engine.keyword_index
        vault.engine.keyword_index = None  # as a fresh process answers, before its mirror is built
        for label, kw in cases:
            rows.append(
                (
                    "SQL",
                    label,
                    _timed(lambda q, kw=kw: vault.recall(q, mode="fts5", reinforce=False, **kw), qs),
                )
            )
        vault.engine.keyword_index = index
        assert vault.wait_for_keyword_index(), "keyword index did not build"
        for label, kw in cases[:2]:
            rows.append(
                (
                    "in-memory",
                    label,
                    _timed(lambda q, kw=kw: vault.recall(q, mode="fts5", reinforce=False, **kw), qs),
                )
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--db", help="an existing synthetic store (else one is built in a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or os.path.join(tmp, "scoped.db")
        if not args.db:
            with Vault(path, embedder=False) as vault:
                vault.import_jsonl([json.dumps(m) for m in memories(args.n)])
        print("| path | recall (fts5) | p50 ms | p95 ms |\n|---|---|---|---|")
        for where, label, (p50, p95) in measure(path, args.queries):
            print(f"| {where} | {label} | {p50:.1f} | {p95:.1f} |")


if __name__ == "__main__":
    main()
