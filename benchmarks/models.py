"""The optional model beside the bundled one: multilingual-e5-small (the ``e5`` extra) and the bundled
MiniLM on every collection, with this code, in each mode: SciFact and Cranfield (nDCG@10), locomo-dev on
each ingest path (R@10 over categories 1-4), the team memory's questions (first hit and R@5); and what one
query's embedding costs each. Recall itself costs the same with either (both embed in 384 dimensions, so
the indexes are alike): the speed sections hold for both, plus the query's embedding.

Vectors come from the benchmark cache (benchmarks/vector_cache.py) where it holds them; e5 embeds about
three SciFact abstracts a second on two cores, so a first run without the cache takes about an hour.

    python -m benchmarks.run --only models
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from . import agent_questions, conversation, devsets, quality
from .report import log, write_section

SECTION = "## The optional model (e5) beside the bundled one"
MODELS = (("bundled MiniLM", "onnx"), ("multilingual-e5-small", "e5"))
MODES = ("fts5", "dense", "hybrid")


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


def run(root: Path | None = None) -> dict[str, Any]:
    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    out: dict[str, Any] = {}
    for label, spec in MODELS:
        raw = load(spec)
        model = CachingEmbedder(raw)
        log(f"models: {label} ...")
        out[label] = {
            "identity": raw.identity,
            "quality": quality.run(list(quality.COLLECTIONS), root, MODES, model=model),
            "conversation": conversation.run(model, root),
            "team": agent_questions.run(model),
            "query_ms": _query_ms(raw),
        }
    return out


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
        best = max(values)
        cells = [
            f"**{v:.{digits}f}**" if v == best and values.count(best) == 1 else f"{v:.{digits}f}"
            for v in values
        ]
        out.append(f"| {collection} | {measure} | {mode} | " + " | ".join(cells) + " |")

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
        "One question embedded, warm, p50: "
        + ", ".join(f"{m} {r[m]['query_ms']:.1f} ms" for m in labels)
        + ". Models: "
        + ", ".join(f"{m} `{r[m]['identity']}`" for m in labels)
        + ".",
        "",
    ]
    return out


def main(output: Path, sizes: list[int]) -> None:
    section = render(run())
    write_section(output, section)
    log(f"wrote the {SECTION.lstrip('# ')} section of {output}")
