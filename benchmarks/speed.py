"""Speed at scale on synthetic agent memories (see synthetic.py), through the public API.

For each store size: bulk import (no embeddings), keyword recall p50/p95 (the in-memory
keyword index, and FTS5 alone as a fresh process first sees it), as_of lookups, 100-item
scan pages, history; the database size on disk.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from perseus_vault_core import Vault

from .synthetic import memories, queries


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return {"p50": pick(0.50), "p95": pick(0.95), "mean": statistics.fmean(ordered), "n": float(len(ordered))}


def timed(calls: list[Callable[[], Any]], warmup: int = 10) -> dict[str, float]:
    for call in calls[:warmup]:
        call()
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def db_bytes(path: str) -> int:
    return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))


def run_size(n: int, n_queries: int = 300, seed: int = 7) -> dict[str, Any]:
    out: dict[str, Any] = {"entities": n}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "speed.db")
        lines = [json.dumps(m) for m in memories(n, seed)]
        with Vault(path) as vault:
            started = time.perf_counter()
            vault.import_jsonl(lines)
            elapsed = time.perf_counter() - started
            out["import_per_s"] = n / elapsed
            out["import_s"] = elapsed

            qs = queries(n_queries)
            # A fresh process answers with FTS5 alone until its keyword index is built.
            index = vault._keyword_index
            vault._keyword_index = None
            out["recall_fts5_only"] = timed([lambda q=q: vault.recall(q) for q in qs[:100]])
            vault._keyword_index = index
            started = time.perf_counter()
            assert vault.wait_for_keyword_index(), "keyword index did not build"
            out["index_build_s"] = time.perf_counter() - started
            out["recall"] = timed([lambda q=q: vault.recall(q) for q in qs])
            out["recall_no_reinforce"] = timed([lambda q=q: vault.recall(q, reinforce=False) for q in qs])
            out["recall_agent_filter"] = timed([lambda q=q: vault.recall(q, agent_id="agent-1") for q in qs])
            # An agent that writes a memory and then recalls: the index follows each write first.
            fresh = [json.loads(line) for line in lines[:len(qs)]]
            samples = []
            for i, (q, m) in enumerate(zip(qs, fresh)):
                vault.remember(**dict(m, content=m["content"] + f" (revised {i})"))
                started = time.perf_counter()
                vault.recall(q)
                samples.append((time.perf_counter() - started) * 1000)
            out["recall_after_write"] = percentiles(samples)

            rng = random.Random(seed)
            picks = [rng.randrange(n) for _ in range(500)]
            kinds = ["decision", "fact", "incident", "preference", "note"]
            now = int(time.time() * 1000)

            def as_of(i: int) -> None:
                kind = kinds[i % 5]
                vault.as_of(kind, f"{kind}-{i:07d}", now, agent_id=f"agent-{i % 4}")

            out["as_of"] = timed([lambda i=i: as_of(i) for i in picks])

            cursors: list[str | None] = [None]
            page = vault.scan(limit=100)
            while page.has_more and len(cursors) < 300:
                cursors.append(page.next_cursor)
                page = vault.scan(cursor=page.next_cursor, limit=100)
            rng.shuffle(cursors)
            out["scan_page_100"] = timed([lambda c=c: vault.scan(cursor=c, limit=100) for c in cursors])

            def history(i: int) -> None:
                kind = kinds[i % 5]
                vault.history(kind, f"{kind}-{i:07d}", agent_id=f"agent-{i % 4}")

            out["history"] = timed([lambda i=i: history(i) for i in picks])
        out["db_mb"] = db_bytes(path) / 1e6 if os.path.exists(path) else 0.0
        # after close the WAL is checkpointed into the main file
        out["db_mb"] = os.path.getsize(path) / 1e6
    return out


if __name__ == "__main__":
    import sys

    for size in [int(a) for a in sys.argv[1:]] or [10_000]:
        print(json.dumps(run_size(size)))
