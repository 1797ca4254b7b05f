"""What curation costs a warm recall on a store whose relations were judged at write time, beside bm25s and Chroma.

The speed section's synthetic memories (benchmarks/synthetic.py), with their cached MiniLM vectors, written
through ``remember_many`` in batches of 1,000, so that each write judged its candidates and kept their relations
as inferred links (an ``import_jsonl`` keeps none, and curation would have nothing to read). Then, with both
in-memory indexes warm, the same queries interleaved (each query's systems in an order shuffled anew) across:
the vault's three modes with curation (the default) and with ``curate=False``; bm25s (keyword), Chroma at its
defaults (dense) and the two fused by reciprocal rank (hybrid), as in the peers section. Query vectors are given
to every system alike (none embeds inside the timed call). Reported: p50 / p95 per system; for each vault mode
the curated p50 over the uncurated p50 on the same queries (target: at most 1.05), and each peer's p50 over the
curated vault's (above 1: the vault is faster).

    python -m benchmarks.run --only curation-cost [--sizes 100000]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from perseus_vault_core import Vault

from .peers import Bm25s, Chroma, FusedBm25sChroma, Peer, _exact_top, corpus
from .report import log, write_section
from .speed import percentiles
from .vector_cache import cached_model

SECTION = "## Curation's cost on warm recall, beside bm25s and Chroma"
SIZE = 100_000
QUERIES = 300
BATCH = 1_000
K = 10
MODES = ("fts5", "dense", "hybrid")


class Arm:
    def __init__(self, vault: Vault, mode: str, curate: bool) -> None:
        self.vault, self.mode, self.curate = vault, mode, curate
        self.name = f"Perseus Vault {mode}" + ("" if curate else ", curate=False")

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        return [
            i.key
            for i in self.vault.recall(
                text, mode=self.mode, limit=k, reinforce=False, min_score=None, curate=self.curate
            ).items
        ]


def run(n: int, cached: Any, log: Callable[[str], None] = print) -> dict[str, Any]:
    records, ids, texts, vectors, qs, table, embed = corpus(n, QUERIES, cached)
    out: dict[str, Any] = {"entities": n, "queries": QUERIES, "k": K}
    with tempfile.TemporaryDirectory() as tmp:
        vault = Vault(os.path.join(tmp, "vault.db"), embedder=embed)
        started = time.perf_counter()
        for first in range(0, n, BATCH):
            vault.remember_many(records[first : first + BATCH])
            if first % 20_000 == 0:
                log(f"  curation-cost: {first + BATCH:,} of {n:,} written")
        out["write_s"] = time.perf_counter() - started
        out["links"] = vault.stats().links  # open links: here all inferred (nobody links)
        vault.wait_for_keyword_index()
        vault.wait_for_vector_index()
        vault.recall(
            qs[0], limit=K
        )  # a curated recall: the relations curation acts on load in the background
        held = vault.engine.relations
        while held is not None and held.loading:
            time.sleep(0.05)
        out["relations_held"] = held is not None and held.complete
        keyword, dense = Bm25s(), Chroma()
        # Chroma as shipped (ef_search 100) answers with less recall than the vault's dense arm; at ef_search 800
        # its recall is the vault's (docs/benchmarks.md, the peers' latency): "ahead at equal recall" is read there
        peers: list[Peer] = [keyword, dense, Chroma(ef_search=800), FusedBm25sChroma(keyword, dense)]
        for peer in peers:
            peer.build(ids, texts, vectors, tmp, embed)
        arms = {(m, c): Arm(vault, m, c) for m in MODES for c in (True, False)}
        systems: list[Any] = [*arms.values(), *peers]
        samples: dict[str, list[float]] = {s.name: [] for s in systems}
        for s in systems:  # warm-up
            for q in qs[:5]:
                s.search(q, table[q], K)
        found: dict[str, list[set[str]]] = {s.name: [] for s in systems}
        for i, q in enumerate(qs):
            for s in random.Random(i).sample(systems, len(systems)):
                t0 = time.perf_counter()
                keys = s.search(q, table[q], K)
                samples[s.name].append((time.perf_counter() - t0) * 1000)
                found[s.name].append(set(keys))
        exact = _exact_top(vectors, ids, [table[q] for q in qs], K)
        rows = []
        for s in systems:
            mode = s.mode if isinstance(s, Arm) else s.arm
            curated = samples[arms[mode, True].name]
            row: dict[str, Any] = {"system": s.name, "arm": mode, **percentiles(samples[s.name])}
            if (
                mode == "dense"
            ):  # the share of the exact nearest ten found (curation reorders: read it uncurated)
                row["recall_vs_exact"] = sum(len(f & e) for f, e in zip(found[s.name], exact)) / (K * len(qs))
            if isinstance(s, Arm) and not s.curate:
                row["curated_over_this"] = statistics.median(curated) / statistics.median(samples[s.name])
            elif not isinstance(s, Arm):
                row["peer_over_curated"] = statistics.median(samples[s.name]) / statistics.median(curated)
            rows.append(row)
        out["latency"] = rows
        vault.close()
        for peer in peers:
            peer.close()
    return out


def render(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        SECTION,
        "",
        "The synthetic memories written through `remember_many` (batches of 1,000: each write judged its "
        "candidates and kept their relations), both in-memory indexes warm, then "
        f"{QUERIES} queries interleaved across the vault's three modes with curation (the default) and "
        "without, bm25s, Chroma at its defaults and the two fused by reciprocal rank; query vectors given to "
        "every system. `curated / this`: the curated arm's p50 over this uncurated one's (target <= 1.05); "
        "`peer / vault`: the peer's p50 over the curated vault arm's of its mode (above 1: the vault is "
        "faster). See `benchmarks/curation_cost.py`.",
        "",
    ]
    for r in results:
        lines += [
            f"At {r['entities']:,} memories ({r['links']:,} links kept, all inferred; writing them took "
            f"{r['write_s']:.0f} s):",
            "",
            "| system | mode | p50 | p95 | curated / this | peer / vault | dense recall@10 vs exact |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in r["latency"]:
            ratio = f"{row['curated_over_this']:.2f}" if "curated_over_this" in row else ""
            peer = f"{row['peer_over_curated']:.2f}" if "peer_over_curated" in row else ""
            exact = f"{row['recall_vs_exact']:.3f}" if "recall_vs_exact" in row else ""
            lines.append(
                f"| {row['system']} | {row['arm']} | {row['p50']:.2f} ms | {row['p95']:.2f} ms | {ratio} |"
                f" {peer} | {exact} |"
            )
        lines.append("")
    return lines


def main(output: Path, sizes: list[int]) -> None:
    results = [run(n, cached_model(), log=log) for n in sizes]
    log(json.dumps(results))
    write_section(output, render(results))
    log(f"wrote the {SECTION.lstrip('# ')} section of {output}")
