"""A long-lived holder's first recall after another process wrote: ``python -m benchmarks.run --only catch-up``.

The holder (this process) keeps a store of synthetic memories (each of ``SIZES``) open with both in-memory indexes built
and warm, as the MCP server, the resident helper or an app's ``Vault`` does. Another process then writes 1
memory (``remember``) or ``BULK`` (``remember_many``), with their vectors, and exits; the holder's next recall
in a mode brings the index that mode reads up to those writes before it answers (indexes/mirror.py follows
the change log from its position to the reader's snapshot). Each row is the p50 / p95, over ``TRIALS`` (fewer
for the bulk), of that first recall, beside the same queries asked with nothing new; and whether the index
answered it (caught up) rather than SQL. At two store sizes: the cost should grow with the writes, not with
the store.

Run as a script (``python benchmarks/catch_up.py write DB LINES CACHE``) it is the writer process.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIZES = (10_000, 100_000)
BULK = 1_000
TRIALS = {1: 15, BULK: 4}
MODES = ("fts5", "dense", "hybrid")
SECTION = "## Catching up with other processes' writes"


def main(output: Path, sizes: list[int]) -> None:
    from .report import log, write_section  # inside: the writer process runs this file as a script
    from .vector_cache import cached_model

    cached = cached_model()
    section = render([run(n, cached, log=log) for n in (sizes or SIZES)])
    write_section(output, section)
    log(f"wrote the {section[0].lstrip('# ')} section of {output}")


def run(n: int, cached: Any, log: Any = print) -> dict[str, Any]:
    from perseus_vault_core import Vault
    from perseus_vault_core.embeddings import embedding_text

    from .speed import synthetic_lines
    from .synthetic import memories, queries

    qs = queries(200)
    wanted = sum(count * trials for count, trials in TRIALS.items()) * len(MODES)
    extra = list(memories(n + wanted, seed=7))[n:]  # the same generator, past the store's own memories
    cached.embed([embedding_text(str(m["content"]), None) for m in extra])  # cached: the writers look them up
    out: dict[str, Any] = {"entities": n, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "store.db")
        log(f"catch-up: building {n:,} memories ...")
        with Vault(db, embedder=cached) as builder:
            builder.import_jsonl(list(synthetic_lines(n)))
        with Vault(db, embedder=cached) as holder:
            assert holder.wait_for_keyword_index() and holder.wait_for_vector_index()
            for mode in MODES:  # warm, as a server is
                for q in qs:
                    holder.recall(q, mode=mode, reinforce=False)
            quiet = {mode: _timed(holder, mode, qs[:50]) for mode in MODES}
            used = 0
            for count, trials in TRIALS.items():
                for mode in MODES:
                    first, answered = [], 0
                    for t in range(trials):
                        batch = extra[used : used + count]
                        used += count
                        _write(db, batch, Path(tmp), cached.path)
                        q = qs[(t * 7) % len(qs)]
                        started = time.perf_counter()
                        holder.recall(q, mode=mode, reinforce=False)
                        first.append((time.perf_counter() - started) * 1000)
                        answered += _current(holder, mode)
                    out["rows"].append(
                        {
                            "writes": count,
                            "mode": mode,
                            "first": _pp(first),
                            "quiet": quiet[mode],
                            "by_index": f"{answered} of {trials}",
                        }
                    )
                    log(f"catch-up: {count} write(s), {mode}: {out['rows'][-1]}")
    return out


def _timed(vault: Any, mode: str, qs: list[str]) -> dict[str, float]:
    times = []
    for q in qs:
        started = time.perf_counter()
        vault.recall(q, mode=mode, reinforce=False)
        times.append((time.perf_counter() - started) * 1000)
    return _pp(times)


def _pp(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
    }


def _current(vault: Any, mode: str) -> int:
    """1 when the index(es) ``mode`` reads followed the log to its end (they answered), else 0 (SQL did)."""
    engine = vault.engine
    indexes = {"fts5": [engine.keyword_index], "dense": [engine.vector_index]}.get(
        mode, [engine.keyword_index, engine.vector_index]
    )
    position = engine.read(engine.backend.changes.position)
    return int(all(i is not None and i.ready and i.seq == position for i in indexes))


def _write(db: str, batch: list[dict[str, Any]], tmp: Path, cache: Path) -> None:
    lines = tmp / "batch.jsonl"
    lines.write_text("".join(json.dumps(m) + "\n" for m in batch), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "write", db, str(lines), str(cache)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"benchmarks.run --only catch-up: the writer failed:\n{done.stderr[-2000:]}")


def render(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        SECTION,
        "",
        "A holder keeps a store of synthetic memories open with both in-memory indexes warm (as the"
        " MCP server, the resident helper or an app's `Vault` does); another process writes 1 memory"
        f" (`remember`) or {BULK:,} (`remember_many`), with their vectors, and exits. The holder's next recall in"
        " a mode first brings that mode's index up to those writes (it follows the change log), then answers."
        " ms, p50 / p95 over the trials, beside the same queries with nothing new (benchmarks/catch_up.py).",
        "",
        "| entities | writes by another process | mode | first recall after them | with nothing new | answered by "
        "the index |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        for r in result["rows"]:
            lines.append(
                f"| {result['entities']:,} | {r['writes']:,} | {r['mode']} | {r['first']['p50']:.2f} / "
                f"{r['first']['p95']:.2f} | {r['quiet']['p50']:.2f} / {r['quiet']['p95']:.2f} | {r['by_index']} |"
            )
    return lines + [""]


def _writer(db: str, lines: str, cache_path: str) -> None:
    """The other process: its batch's memories, one ``remember`` or one ``remember_many``, vectors from the cache."""
    import importlib.util

    from perseus_vault_core import Vault
    from perseus_vault_core.embeddings import load

    spec = importlib.util.spec_from_file_location("vector_cache", HERE / "vector_cache.py")
    assert spec is not None and spec.loader is not None
    cache = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cache)
    batch = [json.loads(line) for line in Path(lines).read_text(encoding="utf-8").splitlines()]
    embedder = cache.CachingEmbedder(load(), Path(cache_path))
    with Vault(db, embedder=embedder, keyword_index="saved", vector_index="saved") as vault:
        if len(batch) == 1:
            vault.remember(**batch[0])
        else:
            vault.remember_many(batch)


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == HERE:
        sys.path.pop(0)  # this folder's modules (mcp.py, ...) must not stand in for the package's imports
    _writer(sys.argv[2], sys.argv[3], sys.argv[4])
