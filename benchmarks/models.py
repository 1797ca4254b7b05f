"""The optional model beside the bundled one: multilingual-e5-small (the ``e5`` extra) and the bundled
MiniLM on every collection, with this code, in each mode: SciFact and Cranfield (nDCG@10), locomo-dev on
each ingest path (R@10 over categories 1-4, then each category apart), the team memory's questions (first
hit and R@5); what one query's embedding costs each; and warm ``recall(text, mode=..., limit=10)`` at
10,000 and 100,000 synthetic memories (benchmarks/synthetic.py, as the speed section), each model's vault
answering with its own model, so the query's embedding is in every call, as a user pays it. Both embed in
384 dimensions, so the indexes are alike; the latencies are timed interleaved (every query asked of every
model and mode in a shuffled order) so drift hits both alike.

Vectors come from the benchmark cache (benchmarks/vector_cache.py) where it holds them; e5 embeds about
three SciFact abstracts a second on two cores, and 100,000 synthetic memories in about 40 minutes on one, so
a first run without the cache takes about two hours.

    python -m benchmarks.run --only models [--quick: latency at 10,000 only]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from perseus_vault_core import Vault

from . import agent_questions, conversation, devsets, quality
from .peers import corpus
from .report import log, pp, write_section
from .speed import embed_afresh, percentiles
from .synthetic import queries

SECTION = "## The optional model (e5) beside the bundled one"
MODELS = (("bundled MiniLM", "onnx"), ("multilingual-e5-small", "e5"))
MODES = ("fts5", "dense", "hybrid")
SIZES = (10_000, 100_000)


def _query_ms(model: Any) -> float:
    """One question's embedding, warm, p50 in ms (the team memory's questions, uncached)."""
    questions = [q["question"] for q in devsets.team_memory()["questions"]]
    embed = getattr(model, "embed_queries", None) or model.embed
    embed(questions[:2])  # warm
    took = []
    for text in questions:
        started = time.perf_counter()
        embed([text])
        took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took)


def latency(models: dict[str, tuple[Any, Any]], n: int, n_queries: int = 300) -> dict[str, Any]:
    """Warm ``recall(query, mode=mode, limit=10)`` p50/p95 (ms) on ``n`` synthetic memories, for each
    ``label -> (model, cached)``: one vault per model, written with its cached vectors, then opened with the
    model itself, which embeds every query inside the timed call. Each query is asked of every (model, mode)
    in an order shuffled anew (seeded), after ten warm-up queries."""
    qs = queries(n_queries)
    samples: dict[tuple[str, str], list[float]] = {(m, mode): [] for m in models for mode in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        vaults: dict[str, Vault] = {}
        for label, (model, cached) in models.items():
            log(f"models: {label} at {n:,} ...")
            records, _, _, _, _, _, given = corpus(n, n_queries, cached)
            path = os.path.join(tmp, f"{label}.db")
            with Vault(path, embedder=given, keyword_index=False, vector_index=False) as writing:
                writing.import_jsonl(json.dumps(r) for r in records)
            vaults[label] = vault = Vault(path, embedder=model)
            assert vault.wait_for_keyword_index() and vault.wait_for_vector_index(), "an index did not build"
        pairs = list(samples)
        warm = qs[:10]
        try:
            for i, q in enumerate(warm + qs):
                for label, mode in random.Random(i).sample(pairs, len(pairs)):
                    vault = vaults[label]
                    embed_afresh(vault)
                    started = time.perf_counter()
                    vault.recall(q, mode=mode, limit=10)
                    if i >= len(warm):
                        samples[(label, mode)].append((time.perf_counter() - started) * 1000)
        finally:
            for vault in vaults.values():
                vault.close()
    return {
        "entities": n,
        "recall": {m: {mode: percentiles(samples[(m, mode)]) for mode in MODES} for m in models},
    }


def run(root: Path | None = None, sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    out: dict[str, Any] = {}
    loaded: dict[str, tuple[Any, Any]] = {}
    for label, spec in MODELS:
        raw = load(spec)
        model = CachingEmbedder(raw)
        loaded[label] = (raw, model)
        log(f"models: {label} ...")
        out[label] = {
            "identity": raw.identity,
            "quality": quality.run(list(quality.COLLECTIONS), root, MODES, model=model),
            "conversation": conversation.run(model, root),
            "team": agent_questions.run(model),
            "query_ms": _query_ms(raw),
        }
    timing = [latency(loaded, n) for n in sizes]
    for label in out:
        out[label]["latency"] = {t["entities"]: t["recall"][label] for t in timing}
        out[label]["cpu"] = _cpu()
    return out


def _cpu() -> str:
    """The cores this process may run on and the threads the models embed with (PERSEUS_VAULT_THREADS)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = os.environ.get("PERSEUS_VAULT_THREADS") or str(os.cpu_count() or 1)
    return f"{cores} core{'s' * (cores != 1)}, {threads} embedding thread{'s' * (threads != '1')}"


def render(r: dict[str, Any]) -> list[str]:
    labels = list(r)
    head = "| collection | measure | mode | " + " | ".join(labels) + " |"
    out = [
        SECTION,
        "",
        "Every collection through the vault with this code, once with each model (`PERSEUS_VAULT_EMBEDDER`"
        " unset, and `e5`: docs/embeddings.md); the keyword arm is the same in both. See `benchmarks/models.py`.",
        "",
        head,
        "|---|---|---|" + "---|" * len(labels),
    ]

    def row(collection: str, measure: str, mode: str, values: list[float], digits: int = 4) -> None:
        out.append(f"| {collection} | {measure} | {mode} | " + " | ".join(_bold_best(values, digits)) + " |")

    for name in quality.COLLECTIONS:
        for mode in MODES:
            values = [
                next(q["ndcg@10"] for q in r[m]["quality"] if q["collection"] == name and q["mode"] == mode)
                for m in labels
            ]
            row(name, "nDCG@10", mode, values)
    for path in next(iter(r.values()))["conversation"]["paths"]:
        for mode in MODES:
            row(
                "locomo-dev",
                f"R@10 (1-4), {path}",
                mode,
                [r[m]["conversation"]["paths"][path][mode]["r@10"] for m in labels],
            )
    for run_name in next(iter(r.values()))["team"]["runs"]:
        for k, measure in ((0, "first hit"), (1, "R@5")):
            row(
                "team questions",
                measure,
                run_name,
                [r[m]["team"]["runs"][run_name]["all"][k] for m in labels],
                3,
            )
    out += [
        "",
        f"One question embedded, warm, p50 ({r[labels[0]]['cpu']}): "
        + ", ".join(f"{m} {r[m]['query_ms']:.1f} ms" for m in labels)
        + ". Models: "
        + ", ".join(f"{m} `{r[m]['identity']}`" for m in labels)
        + ".",
        "",
    ]
    return out + by_category(r) + recall_latency(r)


def _bold_best(values: list[float], digits: int) -> list[str]:
    """Each value, the highest in bold where one alone is highest (a tie has no winner)."""
    best = max(values)
    return [
        f"**{v:.{digits}f}**" if v == best and values.count(best) == 1 else f"{v:.{digits}f}" for v in values
    ]


def by_category(r: dict[str, Any]) -> list[str]:
    """locomo-dev's R@10 in each category, each ingest path and mode, the models side by side in each cell."""
    labels = list(r)
    paths = r[labels[0]]["conversation"]["paths"]
    asked = next(iter(paths.values()))["hybrid"]["categories"]
    names = [n for n in conversation.CATEGORIES.values() if n in asked]
    out = [
        "### locomo-dev in each category",
        "",
        "R@10 of each LoCoMo category (questions in brackets; adversarial is outside the 1-4 figure above),"
        f" each cell {' / '.join(labels)}, the better in bold.",
        "",
        "| path | mode | " + " | ".join(f"{n} ({asked[n]['questions']})" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for path in paths:
        for mode in MODES:
            cells = [
                " / ".join(
                    _bold_best(
                        [r[m]["conversation"]["paths"][path][mode]["categories"][n]["r@10"] for m in labels],
                        3,
                    )
                )
                for n in names
            ]
            out.append(f"| {path} | {mode} | " + " | ".join(cells) + " |")
    return out + [""]


def recall_latency(r: dict[str, Any]) -> list[str]:
    """Warm recall's p50 / p95 at each size measured, each mode, each model (:func:`latency`)."""
    labels = list(r)
    first = r[labels[0]]
    sizes = list(first["latency"])
    queries_asked = int(first["latency"][sizes[0]]["hybrid"]["n"])
    out = [
        "### Warm recall, each model",
        "",
        "Warm `recall(query, mode=..., limit=10)` in ms, p50 / p95, on the speed section's synthetic memories:"
        " one vault per model, written with its vectors from the cache and opened with the model itself, which"
        f" embeds the query inside every call (reinforcement written, as the speed section). {queries_asked}"
        " queries after 10 warm-up ones, each asked of every model and mode in an order shuffled anew, so"
        f" drift hits both alike; {first['cpu']}. The last column: {labels[-1]}'s p50 over {labels[0]}'s.",
        "",
        "| memories | mode | " + " | ".join(labels) + " | p50 ratio |",
        "|---|---|" + "---|" * (len(labels) + 1),
    ]
    for n in sizes:
        for mode in MODES:
            stats = [r[m]["latency"][n][mode] for m in labels]
            ratio = stats[-1]["p50"] / stats[0]["p50"]
            out.append(f"| {n:,} | {mode} | " + " | ".join(pp(s) for s in stats) + f" | {ratio:.2f}x |")
    return out + [""]


def main(output: Path, sizes: list[int]) -> None:
    section = render(run(sizes=tuple(sizes)))
    write_section(output, section)
    log(f"wrote the {SECTION.lstrip('# ')} section of {output}")
