"""One million memories: import, index build, recall p50/p95, dense recall@10 against exact, a new process's
first recall, file size and peak memory (docs/benchmarks.md, "1M memories").

Texts: the speed benchmark's generator (synthetic.py) at 1M. Vectors: embedding 900k more texts with the
bundled model would take about an hour on this machine, so only the texts the vector cache holds (the
100k speed run's) get the model's own vectors; every other text gets the normalised sum of two of those
real vectors, chosen by the text's hash (:class:`DerivedVectors`). That keeps the vectors on the model's
manifold (clustered, not uniform noise, which would make every nearest-neighbour search look alike) and
costs nothing. Queries are embedded by the real model, as a user's would be.

Every step runs in a child process of its own, so each peak memory is that step's alone: the import
(in chunks of 100k, as a user would feed a large file), the index builds and saves, then a reader that
opens the saved indexes and answers.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .report import fmt, pp, verdict
from .speed import ROOT, first_recall
from .synthetic import memories, queries

SIZE = 1_000_000
CHUNK = 100_000
REAL = 100_000  # texts whose real vectors the derived ones are made from


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class DerivedVectors:
    """An embedder for the benchmark's 1M texts: the model's own vector when the cache has it, else the
    normalised sum of two real vectors of the first ``REAL`` texts, picked by the text's hash. It keeps the
    model's identity, so the real model can embed queries against the vault."""

    def __init__(self, cached: Any, real: int = REAL) -> None:
        self.identity, self.dimension = cached.identity, cached.dimension
        self.real = real
        texts = [str(m["content"]) for m in memories(real)]
        self.base = np.asarray(cached.embed(texts), dtype=np.float32)
        self.known = {_key(t): i for i, t in enumerate(texts)}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            key = _key(text)
            found = self.known.get(key)
            if found is not None:
                out[row] = self.base[found]
                continue
            a, b = (
                int.from_bytes(key[:8], "little") % self.real,
                int.from_bytes(key[8:16], "little") % self.real,
            )
            mixed = self.base[a] + self.base[b]
            out[row] = mixed / np.linalg.norm(mixed)
        return out


def peak_rss_mb() -> float:
    """This process's own peak resident memory: VmHWM on Linux (ru_maxrss also counts the parent's memory
    at fork), else ru_maxrss."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fill(path: str, n: int) -> dict[str, float]:
    """(child) Import ``n`` memories in chunks, with derived vectors."""
    from perseus_vault_core import Vault
    from perseus_vault_core.embeddings import load as load_model

    from .vector_cache import CachingEmbedder

    vectors = DerivedVectors(CachingEmbedder(load_model()))
    started = time.perf_counter()
    source = memories(n)
    # No index work here: the next step builds and saves the indexes, timed (closing would build them first).
    with Vault(path, embedder=vectors, keyword_index=False, vector_index=False) as vault:
        done = 0
        while done < n:
            lines = [json.dumps(m) for _, m in zip(range(min(CHUNK, n - done)), source)]
            vault.import_jsonl(lines)
            done += len(lines)
    return {"import_s": time.perf_counter() - started, "peak_rss_mb": peak_rss_mb()}


def build_indexes(path: str) -> dict[str, float]:
    """(child) Build both indexes of the imported vault, and save them beside it."""
    from perseus_vault_core import Vault

    out: dict[str, float] = {}
    with Vault(path, embedder=False) as vault:
        started = time.perf_counter()
        assert vault.wait_for_keyword_index(), "keyword index did not build"
        out["keyword_index_build_s"] = time.perf_counter() - started
        assert vault.wait_for_vector_index(), "vector index did not build"
        out["both_indexes_s"] = time.perf_counter() - started
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def answer(path: str, n_queries: int) -> dict[str, Any]:
    """(child) A reader on the built vault: recall p50/p95 per mode (query embedding included, reinforcement
    written, as in the speed section), its peak memory, then dense recall@10 against an exact scan."""
    from perseus_vault_core import Vault
    from perseus_vault_core.embeddings import load

    from .speed import timed, write_cost

    model = load()
    qs = queries(n_queries)
    out: dict[str, Any] = {}
    with Vault(path, embedder=model) as vault:
        for mode in ("fts5", "dense", "hybrid"):  # a first pass pages the saved indexes in, then steady state
            out[f"first_pass_{mode}"] = timed(
                [lambda q=q, m=mode: vault.recall(q, mode=m) for q in qs], warmup=0
            )
            out[f"recall_{mode}"] = timed([lambda q=q, m=mode: vault.recall(q, mode=m) for q in qs])
        given = model.embed(qs)
        out["recall_by_vector"] = timed(
            [lambda v=v: vault.recall_by_vector(v, reinforce=False) for v in given]
        )
        stats = vault.stats()
        out["from_snapshot"] = (
            "from a snapshot" in stats.keyword_index and "from a snapshot" in stats.vector_index
        )
        out["peak_rss_mb"] = peak_rss_mb()
        # Exact top 10 by cosine over every stored vector (all memories here are live and visible).
        index = vault.engine.vector_index
        assert index is not None
        rows = index.rows.n
        matrix, entities = index._matrix[:rows], index.rows.entities[:rows]
        found = 0
        checked = given[:100]
        for vector in checked:
            got = {item.id for item in vault.recall_by_vector(vector, limit=10, reinforce=False).items}
            scores = np.asarray(matrix @ vector, dtype=np.float64)
            top = np.argpartition(-scores, 10)[:10]
            found += len(got & set(entities[top].tolist()))
        out["dense_recall_at_10_vs_exact"] = found / (10 * len(checked))
        out["percentiles_of"] = len(qs)
    out["writes"] = write_cost(path, model, qs)
    return out


def _child(step: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.million", step, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=3600,
    )
    if done.returncode:
        raise RuntimeError(f"benchmarks.million {step} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(
    model: Any, n: int = SIZE, n_queries: int = 300, extra: Callable[[str], Any] | None = None
) -> dict[str, Any]:
    """The whole 1M benchmark, each step in a child process; the vault is deleted afterwards. ``extra``:
    more measures on the built vault (its path), before it goes (benchmarks/hooks.py's new processes)."""
    out: dict[str, Any] = {"entities": n}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "million.db")
        loaded, indexed = _child("fill", path, str(n)), _child("index", path)
        out["build"] = {
            "import_s": loaded["import_s"],
            "import_peak_rss_mb": loaded["peak_rss_mb"],
            **{k: v for k, v in indexed.items() if k != "peak_rss_mb"},
            "index_peak_rss_mb": indexed["peak_rss_mb"],
        }
        out["import_per_s"] = n / out["build"]["import_s"]
        out["db_mb"] = os.path.getsize(path) / 1e6
        out["index_files_mb"] = (
            sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp) if f.endswith(".pvidx")) / 1e6
        )
        qs = queries(n_queries)
        out["first_recall"] = first_recall(path, qs[0], model.embed([qs[0]])[0])
        out["reader"] = _child("answer", path, str(n_queries))
        if extra is not None:
            out["extra"] = extra(path)
    return out


if __name__ == "__main__":
    if sys.argv[1] == "fill":
        print(json.dumps(fill(sys.argv[2], int(sys.argv[3]))))
    elif sys.argv[1] == "index":
        print(json.dumps(build_indexes(sys.argv[2])))
    elif sys.argv[1] == "answer":
        print(json.dumps(answer(sys.argv[2], int(sys.argv[3]))))
    else:  # python -m benchmarks.million [N]: the whole benchmark, figures on stdout
        from perseus_vault_core.embeddings import load

        print(json.dumps(run(load(), int(sys.argv[2]) if len(sys.argv) > 2 else SIZE), indent=1))


def render(m: dict[str, Any], minutes: float) -> list[str]:
    """The report's 1M section: the figures, then each target beside its figure."""
    b, r, f = m["build"], m["reader"], m["first_recall"]
    out = [
        "## One million memories",
        "",
        f"{m['entities']:,} synthetic memories from the speed benchmark's generator, in one vault; this part of the"
        f" run took {minutes:.1f} min. Vectors: the first {REAL:,} texts have the bundled model's own vectors (from the"
        " vector cache); every other text gets the normalised sum of two of those real vectors, chosen by the text's"
        " hash (embedding 900k more texts would take about an hour here), so the vectors lie on the model's manifold."
        " Queries are the speed benchmark's, embedded by the real model. Each step runs in a process of its own: the"
        f" import (in chunks of {CHUNK:,}, one transaction each); the index builds and saves; a reader that"
        " opens the saved indexes and answers. Recall latencies include query embedding and written reinforcement, as"
        " in the speed section. Each mode's queries run twice: the first pass pages the saved indexes in from the"
        " files (shown), the second is the steady state of a long-running process (the targets). See"
        " `benchmarks/million.py`.",
        "",
        "| measure | figure |",
        "|---|---|",
        f"| import with vectors | {fmt(m['import_per_s'], 0)} memories/s ({fmt(b['import_s'], 1)} s) |",
        f"| index builds and saves after the import (keyword; both) | {fmt(b['keyword_index_build_s'], 1)} s;"
        f" {fmt(b['both_indexes_s'], 1)} s |",
        f"| keyword recall p50 / p95 | {pp(r['recall_fts5'])} ms |",
        f"| dense recall p50 / p95 (query embedding included) | {pp(r['recall_dense'])} ms |",
        f"| hybrid recall p50 / p95 (query embedding included) | {pp(r['recall_hybrid'])} ms |",
        f"| dense recall by vector p50 / p95 (query vector given) | {pp(r['recall_by_vector'])} ms |",
        f"| first pass, keyword / dense / hybrid p50 | {fmt(r['first_pass_fts5']['p50'])} / {fmt(r['first_pass_dense']['p50'])}"
        f" / {fmt(r['first_pass_hybrid']['p50'])} ms |",
        f"| dense recall@10 against an exact scan (100 queries) | {r['dense_recall_at_10_vs_exact']:.3f} |",
        f"| a new process's first keyword / dense recall (vector given), after opening | {fmt(f['keyword_ms'])} /"
        f" {fmt(f['dense_ms'])} ms (from the saved indexes: {'yes' if f['from_snapshot'] else '**no**'}) |",
        f"| vault file | {fmt(m['db_mb'], 0)} MB |",
        f"| saved index files beside it | {fmt(m['index_files_mb'], 0)} MB |",
        f"| peak memory of the importing process | {fmt(b['import_peak_rss_mb'], 0)} MB |",
        f"| peak memory of the index-building process | {fmt(b['index_peak_rss_mb'], 0)} MB |",
        f"| peak memory of the reader (indexes mapped from the saved files) | {fmt(r['peak_rss_mb'], 0)} MB |",
        "",
        "### 1M targets",
        "",
        "| target | figure | verdict |",
        "|---|---|---|",
    ]
    for label, value, target, unit, higher in (
        ("keyword recall p50", r["recall_fts5"]["p50"], 20, "ms", False),
        ("dense recall p50", r["recall_dense"]["p50"], 20, "ms", False),
        ("hybrid recall p50", r["recall_hybrid"]["p50"], 35, "ms", False),
        ("dense recall@10 against exact", r["dense_recall_at_10_vs_exact"], 0.95, "", True),
        (
            "peak memory (the largest of the three processes)",
            max(b["import_peak_rss_mb"], b["index_peak_rss_mb"], r["peak_rss_mb"]),
            3000,
            "MB",
            False,
        ),
        ("vault file size", m["db_mb"], 3000, "MB", False),
    ):
        out.append(
            f"| {label} | {fmt(value, 3 if not unit else 2)} {unit} | {verdict(value, target, higher, unit)} |"
        )
    out.append("")
    return out
