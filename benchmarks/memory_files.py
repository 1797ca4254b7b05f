"""memory_recall over 10,000 memory-file entries, through the public API.

The folder: 20 memory files of 5 sections with 100 dated entries each (2015-2025), the entries being
the speed benchmark's synthetic sentences (see synthetic.py). It is imported with the benchmark's
vector cache, then ``memory_recall`` answers agent-style questions (hybrid: keyword and meaning, query
embedding included), p50/p95; and the same on a keyword-only vault. A re-import of the unchanged
folder is timed too (it writes and embeds nothing).

``recall_quality`` measures what the speed figures cannot: whether ``memory_recall`` returns every entry
on the asked topic and little else. It imports the labelled folder in tests/fixtures/memory_recall (an
``About Me`` folder of 60 dated entries and 20 agent questions, each with every relevant entry) with the
given embedder, asks each question with the default limit and reports recall and precision per question
and their means; ``render_recall_quality`` turns that into markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from perseus_vault_core import Vault
from perseus_vault_core.features.memory_files.parser import parse
from perseus_vault_core.primitives.porter import stem
from perseus_vault_core.primitives.query import parse as parse_terms
from perseus_vault_core.primitives.query import tokenize

from .speed import timed
from .synthetic import memories, queries

FILES, SECTIONS, PER_SECTION = 20, 5, 100
LABELLED = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "memory_recall"


def write_folder(root: Path) -> int:
    texts = [str(m["content"]) for m in memories(FILES * SECTIONS * PER_SECTION, seed=31)]
    start = dt.date(2015, 1, 1)
    n = 0
    (root / "About Me").mkdir(parents=True)
    for f in range(FILES):
        lines = [f"# Memory file {f}", ""]
        for s in range(SECTIONS):
            lines += [f"## Section {s}"]
            for _ in range(PER_SECTION):
                day = start + dt.timedelta(days=(n * 37) % 4000)
                lines.append(f"- {day.isoformat()}: {texts[n]}")
                n += 1
            lines.append("")
        (root / "About Me" / f"File{f:02d}.md").write_text("\n".join(lines), encoding="utf-8")
    return n


def run(model: Any, cached: Any, n_queries: int = 100) -> dict[str, Any]:
    out: dict[str, Any] = {}
    qs = queries(n_queries, seed=41)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "obsidian"
        out["entries"] = write_folder(root)
        path = os.path.join(tmp, "memory.db")
        with Vault(path, embedder=cached) as vault:
            started = time.perf_counter()
            vault.memory_import(root)
            out["import_s"] = time.perf_counter() - started
            started = time.perf_counter()
            again = vault.memory_import(root)
            out["reimport_s"] = time.perf_counter() - started
            out["reimport_written"] = again.entries_created + again.entries_archived
        with Vault(path, embedder=model) as vault:
            first = vault.memory_recall(qs[0])
            out["mode"] = first.search_mode
            out["hybrid_ms"] = timed([lambda q=q: vault.memory_recall(q) for q in qs])
            out["hybrid_file_ms"] = timed([lambda q=q: vault.memory_recall(q, file="File03") for q in qs])
            out["mean_total"] = sum(vault.memory_recall(q).total for q in qs[:20]) / 20
        with Vault(path, embedder=False) as vault:
            out["keyword_ms"] = timed([lambda q=q: vault.memory_recall(q) for q in qs])
    return out


def score(returned: list[str], relevant: set[str]) -> tuple[float, float]:
    """(recall, precision) of one answer. An empty answer has precision 0 when something was relevant
    (it found nothing it should have), 1 when nothing was. Pure."""
    hits = len(set(returned) & relevant)
    recall = hits / len(relevant) if relevant else 1.0
    precision = hits / len(returned) if returned else float(not relevant)
    return recall, precision


def shared_words(question: str, text: str) -> int:
    """How many of the question's words (stopwords aside, by stem) ``text`` holds. Pure."""
    held = {stem(t) for t in tokenize(text)}
    return sum(s in held for s in parse_terms(question).stems)


def recall_quality(model: Any, folder: Path = LABELLED) -> dict[str, Any]:
    """Recall and precision of ``memory_recall`` (default limit) on a labelled folder, per question and
    averaged (macro: each question counts once). An entry is named ``file/section/date``, as in the labels.
    A relevant entry that shares at most one word with its question is a paraphrase; how many of those
    came back is reported on its own (``paraphrase_recall``, over all of them), since words alone miss them."""
    labels = json.loads((folder / "labels.json").read_text(encoding="utf-8"))
    texts = {}
    for path in sorted((folder / "About Me").glob("*.md")):
        for e in parse(path.stem, path.read_bytes()).entries:
            texts[f"{path.stem}/{e.section}/{e.date}"] = e.text
    rows = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Vault(os.path.join(tmp, "labelled.db"), embedder=model) as vault,
    ):
        report = vault.memory_import(folder)
        for q in labels["questions"]:
            relevant = set(q["relevant"])
            got = [f"{e.file}/{e.section}/{e.date}" for e in vault.memory_recall(q["query"]).entries]
            recall, precision = score(got, relevant)
            paraphrases = {r for r in relevant if shared_words(q["query"], texts[r]) <= 1}
            rows.append(
                {
                    "id": q["id"],
                    "query": q["query"],
                    "relevant": len(relevant),
                    "returned": len(got),
                    "recall": recall,
                    "precision": precision,
                    "missed": sorted(relevant - set(got)),
                    "extra": sorted(set(got) - relevant),
                    "paraphrases": len(paraphrases),
                    "paraphrases_found": len(paraphrases & set(got)),
                }
            )
    n = max(1, len(rows))
    paraphrases = sum(r["paraphrases"] for r in rows)
    return {
        "entries": report.entries_created,
        "files": report.files,
        "questions": rows,
        "recall": sum(r["recall"] for r in rows) / n,
        "precision": sum(r["precision"] for r in rows) / n,
        "paraphrases": paraphrases,
        "paraphrase_recall": sum(r["paraphrases_found"] for r in rows) / max(1, paraphrases),
    }


def render_recall_quality(q: dict[str, Any]) -> list[str]:
    """Markdown lines for docs/benchmarks.md: one row per question, then the means."""
    out = [
        "## Memory files: recall and precision",
        "",
        f"{q['entries']} dated entries in {q['files']} memory files of an `About Me` folder kept over ten years"
        f" (tests/fixtures/memory_recall), {len(q['questions'])} agent questions, each labelled with every"
        " relevant entry; `memory_recall` with the default limit and the bundled model. See"
        " `benchmarks/memory_files.py`.",
        "",
        "| question | relevant (paraphrases) | returned | recall | precision |",
        "|---|---|---|---|---|",
    ]
    out += [
        f"| {r['query']} | {r['relevant']} ({r['paraphrases']}) | {r['returned']} | {r['recall']:.2f} |"
        f" {r['precision']:.2f} |"
        for r in q["questions"]
    ]
    out += [
        f"| **mean** | | | **{q['recall']:.3f}** | **{q['precision']:.3f}** |",
        "",
        f"Paraphrases (relevant entries sharing at most one word with their question): {q['paraphrases']},"
        f" of which {q['paraphrase_recall']:.0%} came back.",
        "",
        "### Memory-file recall targets",
        "",
        "| target | figure | verdict |",
        "|---|---|---|",
        f"| mean recall | {q['recall']:.3f} | {'met' if q['recall'] >= 0.95 else '**MISSED**'} (target >= 0.95) |",
        f"| mean precision | {q['precision']:.3f} | {'met' if q['precision'] >= 0.6 else '**MISSED**'} (target >= 0.6) |",
        "",
    ]
    return out
