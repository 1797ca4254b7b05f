"""Trigger phrases at store scale: ``python -m benchmarks.run --only triggers``.

A store of ``MEMORIES`` memories with ``PHRASES`` ``recall_when`` phrases each, written with ``import_jsonl`` (one
transaction; it writes the trigger index as ``remember`` does). Phrases are 2 to 4 words from a varied vocabulary:
the ~300 words of the synthetic corpus (systems, components, people, reasons: benchmarks/synthetic.py), which many
phrases share, and 4,096 made-up words (three syllables), which few do; sometimes a stopword before them. Contexts
hold a few stored phrases among ordinary words (an English filler, a quarter of it words of the corpus): of about
40 words, and of about 2,000. ``prepare`` and ``recall_when`` p50 / p95 over ``TRIALS`` calls after a warm-up,
keyword-only; then the cost of one ``remember`` with ``PHRASES`` phrases into that store, which now writes the
index's rows.

Each store is built and measured in a process of its own (``python benchmarks/triggers.py measure DB WORK``), which
imports the vault from its ``PYTHONPATH``: with ``PERSEUS_BEFORE_TREE`` set (a checkout of the code before the
index), that code is measured the same way, on a store of its own built from the same lines, with ``BEFORE_TRIALS``
calls (each costs seconds there).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MEMORIES, PHRASES, TRIALS, BEFORE_TRIALS, WRITES = 20_000, 32, 21, 5, 41
SECTION = "## Trigger phrases at store scale"

SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ru",
    "te",
    "zan",
    "vor",
    "pel",
    "dri",
    "sko",
    "gua",
    "nix",
    "bet",
    "fol",
    "yam",
    "quo",
)
RARE = [a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES]  # 4,096 made-up words
LEAD = ("when", "before", "while", "the", "if", "after")
FILLER = """so we looked at it again this morning and then talked about what to do next with the team because nobody
was sure how long it would take or who should own it now that things have changed since last time people said they
would come back to this later but it keeps coming up in every meeting and someone has to decide soon anyway""".split()


def _common() -> list[str]:
    from . import synthetic

    words = synthetic.SYSTEMS + synthetic.COMPONENTS + synthetic.PEOPLE + synthetic.REASONS + synthetic.VERBS
    return sorted({w for word in words for w in word.split("-")} | set(synthetic.ADJECTIVES))


def phrase(rng: random.Random, common: list[str]) -> str:
    words = [
        rng.choice(common) if rng.random() < 0.35 else rng.choice(RARE) for _ in range(rng.randint(2, 4))
    ]
    return " ".join(([rng.choice(LEAD)] if rng.random() < 0.3 else []) + words)


def lines(common: list[str]) -> list[str]:
    rng = random.Random(46)
    return [
        json.dumps(
            {
                "category": "note",
                "key": f"m{i}",
                "content": f"memory {i}: " + phrase(rng, common),
                "recall_when": [phrase(rng, common) for _ in range(PHRASES)],
            }
        )
        for i in range(MEMORIES)
    ]


def contexts(stored: list[str], common: list[str], words: int, held: int, n: int) -> list[str]:
    """``n`` contexts of about ``words`` words: ``held`` stored phrases at random places in filler."""
    rng = random.Random(words)
    out = []
    for _ in range(n):
        text = [rng.choice(common) if rng.random() < 0.25 else rng.choice(FILLER) for _ in range(words)]
        for _ in range(held):
            record = json.loads(rng.choice(stored))
            text.insert(rng.randrange(len(text)), rng.choice(record["recall_when"]))
        out.append(" ".join(text))
    return out


def _percentiles(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {
        "p50_ms": 1000 * statistics.median(times),
        "p95_ms": 1000 * times[min(len(times) - 1, int(0.95 * len(times)))],
    }


def measure(db: str, work: str) -> dict[str, Any]:
    """Build the store at ``db`` from ``work`` (its lines, the contexts, the writes: :func:`run`), then time the
    calls, with this process's vault code."""
    from perseus_vault_core import Vault

    given = json.loads(Path(work).read_text(encoding="utf-8"))
    found: dict[str, Any] = {}
    with Vault(db, embedder=False) as vault:
        t0 = time.perf_counter()
        vault.import_jsonl(given["lines"])
        found["build_s"] = time.perf_counter() - t0
        vault.wait_for_keyword_index()  # warm, as a server or the resident helper is: prepare's recall reads it
        for size, texts in given["contexts"].items():
            for verb in ("prepare", "recall_when"):
                call = getattr(vault, verb)
                call(texts[0])  # warm: a first call builds what the process keeps
                times, hits = [], 0
                for text in texts[1:]:
                    t0 = time.perf_counter()
                    result = call(text)
                    times.append(time.perf_counter() - t0)
                    hits += len(result.triggered if verb == "prepare" else result.items)
                found[f"{verb}_{size}"] = {**_percentiles(times), "triggered": hits / len(times)}
        times = []
        for i, phrases in enumerate(given["writes"]):
            t0 = time.perf_counter()
            vault.remember("note", f"new{i}", f"a new memory {i}", recall_when=phrases)
            times.append(time.perf_counter() - t0)
        found["remember"] = _percentiles(times[1:])
    return found


def _in_process(tree: Path, *args: str) -> Any:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(HERE / "triggers.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(before: Path | None, log: Any = print) -> dict[str, Any]:
    out: dict[str, Any] = {
        "memories": MEMORIES,
        "phrases": PHRASES,
        "trials": TRIALS,
        "before_trials": BEFORE_TRIALS,
        "writes": WRITES - 1,
        "rows": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        common = _common()
        stored = lines(common)
        rng = random.Random(5)
        writes = [[phrase(rng, common) for _ in range(PHRASES)] for _ in range(WRITES)]
        for label, tree, trials in (("this code", ROOT, TRIALS), ("before the index", before, BEFORE_TRIALS)):
            if tree is None:
                continue
            log(f"triggers: {MEMORIES:,} x {PHRASES} phrases, {label} ...")
            work = Path(tmp) / "work.json"
            work.write_text(
                json.dumps(
                    {
                        "lines": stored,
                        "writes": writes,
                        "contexts": {
                            size: contexts(stored, common, size, held, trials + 1)
                            for size, held in ((40, 3), (2_000, 5))
                        },
                    }
                ),
                encoding="utf-8",
            )
            db = Path(tmp) / f"{len(out['rows'])}.db"
            out["rows"].append({"code": label, **_in_process(tree, "measure", str(db), str(work))})
    return out


def render(r: dict[str, Any]) -> list[str]:
    def cell(f: dict[str, float]) -> str:
        return f"{f['p50_ms']:.1f} / {f['p95_ms']:.1f} ms"

    lines = [
        SECTION,
        "",
        f"{r['memories']:,} memories with {r['phrases']} `recall_when` phrases each (2 to 4 words from ~300 words "
        "many phrases share and 4,096 few do), keyword-only; contexts of ~40 words holding 3 stored phrases and "
        "of ~2,000 words holding 5, among ordinary words. p50 / p95 over "
        f"{r['trials']} calls after a warm-up ({r['before_trials']} for the code before the index: seconds "
        f"each); `remember`: one memory of {r['phrases']} phrases into that store, p50 / p95 of {r['writes']}. "
        "Each store built (`import_jsonl`, one transaction), its in-memory keyword index built (as a server's "
        "or the resident helper's is: `prepare`'s recall reads it), and measured in a process of its own "
        "(benchmarks/triggers.py). `before the index`: the code before `trigger_terms`, which read and compared "
        "every visible memory's phrases on every call. Target: `prepare` p50 <= 50 ms on the ~40-word context.",
        "",
        "| code | build | context | `prepare` p50 / p95 | `recall_when` p50 / p95 | triggered per call | "
        "`remember` p50 / p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in r["rows"]:
        for size in ("40", "2000"):
            p, w = row[f"prepare_{size}"], row[f"recall_when_{size}"]
            lines.append(
                f"| {row['code']} | {row['build_s']:.1f} s | ~{int(size):,} words | {cell(p)} | {cell(w)} | "
                f"{w['triggered']:.1f} | {cell(row['remember']) if size == '40' else ''} |"
            )
    return lines + [""]


def main(output: Path, sizes: list[int]) -> None:
    from .report import log, write_section  # inside: the timed processes run this file as a script

    before = os.environ.get("PERSEUS_BEFORE_TREE")
    section = render(run(Path(before) if before else None, log=log))
    write_section(output, section)
    log(f"wrote the {section[0].lstrip('# ')} section of {output}")


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[2], sys.argv[3])))
