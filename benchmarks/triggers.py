"""Trigger phrases at store scale: ``python -m benchmarks.run --only triggers [--ref-tree PATH]``.

A store of ``MEMORIES`` memories with ``PHRASES`` ``recall_when`` phrases each (varied: a verb, an object and often a
place, from word lists, so most phrases are distinct), then ``prepare`` and ``recall_when`` on 40-word contexts that
hold a few of the stored phrases (and words of many more), p50 / p95 over ``TRIALS`` calls after one warm-up:
keyword-only, and with the bundled model (its phrases drawn from a pool of ``POOL`` distinct phrases, so that building
the store embeds a pool rather than 640,000 phrases; the meaning arm still compares the context with every one).

Each measurement runs in a process of its own (``python benchmarks/triggers.py measure ...``), which imports the
vault from its ``PYTHONPATH``: the code before the trigger index (an older checkout, ``PERSEUS_BEFORE_TREE``) is
measured the same way beside this one.
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
MEMORIES, PHRASES, POOL, TRIALS = 20_000, 32, 4_000, 15
SECTION = "## Trigger phrases at store scale"

VERBS = ("editing", "deploying", "choosing", "reviewing", "debugging", "migrating", "planning", "testing", "writing",
         "refactoring", "configuring", "upgrading", "monitoring", "benchmarking", "documenting", "releasing",
         "rolling back", "profiling", "securing", "scaling", "designing", "merging", "tagging", "archiving")
OBJECTS = ("the billing service", "a database", "the audit chain", "the login page", "payment retries", "the cache",
           "the search index", "a cron job", "the api gateway", "tenant isolation", "the onboarding flow", "invoices",
           "the mobile app", "feature flags", "the release train", "access tokens", "the data warehouse", "webhooks",
           "rate limits", "the backup policy", "error budgets", "the style guide", "customer exports", "the queue")
PLACES = ("", "", "for the eu region", "in staging", "before friday", "with alice", "on the new cluster", "for bob",
          "during the freeze", "after the outage", "in the monorepo", "for the quarterly report")
NOUNS = [f"{a}{b}" for a in ("kr", "pl", "st", "gr", "vo", "mi", "ze", "tu", "ba", "lo") for b in
         ("ax", "orn", "ique", "elt", "ump", "iva", "ost", "ent", "oly", "ark")]  # 100 made-up project names


def phrase(rng: random.Random) -> str:
    place = rng.choice(PLACES)
    name = rng.choice(NOUNS) if rng.random() < 0.7 else ""
    return " ".join(p for p in (rng.choice(VERBS), rng.choice(OBJECTS), name, place) if p)


def build(db: str, model: bool) -> None:
    from perseus_vault_core import Vault

    rng = random.Random(46)
    pool = list(dict.fromkeys(phrase(rng) for _ in range(POOL * 2)))[:POOL]
    embedder: Any = False
    if model:
        from perseus_vault_core.embeddings import load

        embedder = load()
    with Vault(db, embedder=embedder) as vault:
        for start in range(0, MEMORIES, 1_000):
            vault.remember_many([{
                "category": "note", "key": f"m{i}", "content": f"memory {i}: " + phrase(rng),
                "recall_when": list(dict.fromkeys(rng.choice(pool) if model else phrase(rng) for _ in range(PHRASES)))}
                for i in range(start, start + 1_000)])


def contexts(n: int) -> list[str]:
    rng = random.Random(7)
    out = []
    for _ in range(n):
        words = " ".join(phrase(rng) for _ in range(5)).split()
        out.append(" ".join(["today", "we", "are"] + words)[:400])
    return out


def measure(db: str, model: bool) -> dict[str, Any]:
    from perseus_vault_core import Vault

    embedder: Any = False
    if model:
        from perseus_vault_core.embeddings import load

        embedder = load()
    found: dict[str, Any] = {}
    with Vault(db, embedder=embedder) as vault:
        texts = contexts(TRIALS + 1)
        for verb in ("prepare", "recall_when"):
            call = getattr(vault, verb)
            call(texts[0])  # warm: a first call builds what the process keeps
            times, hits = [], 0
            for text in texts[1:]:
                t0 = time.perf_counter()
                result = call(text)
                times.append(time.perf_counter() - t0)
                hits += len(result.triggered if verb == "prepare" else result.items)
            times.sort()
            found[verb] = {"p50_ms": 1000 * statistics.median(times),
                           "p95_ms": 1000 * times[min(len(times) - 1, int(0.95 * len(times)))],
                           "triggered_per_call": hits / len(times)}
    return found


def _in_process(tree: Path, *args: str) -> Any:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, str(HERE / "triggers.py"), *args], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else None


def run(before: Path | None, log: Any = print) -> dict[str, Any]:
    out: dict[str, Any] = {"memories": MEMORIES, "phrases": PHRASES, "pool": POOL, "trials": TRIALS, "rows": []}
    for model in (False, True):
        mode = "with the model" if model else "keyword-only"
        for label, tree in (("this code", ROOT), ("before the index", before)):
            if tree is None:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                db = str(Path(tmp) / "store.db")
                log(f"triggers: building {MEMORIES:,} x {PHRASES} phrases, {mode}, {label} ...")
                _in_process(tree, "build", db, str(int(model)))
                figures = _in_process(tree, "measure", db, str(int(model)))
            out["rows"].append({"mode": mode, "code": label, **figures})
    return out


def render(r: dict[str, Any]) -> list[str]:
    lines = [SECTION, "",
             f"{r['memories']:,} memories with {r['phrases']} `recall_when` phrases each (keyword-only: varied phrases, "
             f"mostly distinct; with the model: drawn from {r['pool']:,} distinct phrases), 40-word contexts; p50 / p95 "
             f"over {r['trials']} calls after a warm-up, each store built and measured in a process of its own "
             "(benchmarks/triggers.py). `before the index`: the code before `trigger_terms` (every visible memory's "
             "phrases read and compared on every call).", "",
             "| mode | code | `prepare` p50 / p95 | `recall_when` p50 / p95 | triggered per call |",
             "|---|---|---|---|---|"]
    for row in r["rows"]:
        p, w = row["prepare"], row["recall_when"]
        lines.append(f"| {row['mode']} | {row['code']} | {p['p50_ms']:.1f} / {p['p95_ms']:.1f} ms | "
                     f"{w['p50_ms']:.1f} / {w['p95_ms']:.1f} ms | {w['triggered_per_call']:.1f} |")
    return lines + [""]


def main(output: Path, sizes: list[int]) -> None:
    from .postgres import write_section
    from .run import log

    before = os.environ.get("PERSEUS_BEFORE_TREE")
    section = render(run(Path(before) if before else None, log=log))
    write_section(output, section)
    log(f"wrote the {section[0].lstrip('# ')} section of {output}")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], bool(int(sys.argv[3])))
    else:
        print(json.dumps(measure(sys.argv[2], bool(int(sys.argv[3])))))
