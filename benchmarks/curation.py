"""Curation on a labelled set (benchmarks/data/curation.json): newer facts first, duplicates collapsed,
distinct memories left alone, hygiene's duplicates, and what the similar-memory report costs a write.

The store holds every memory of the set (updates' older and newer facts, paraphrase pairs, similar but
distinct pairs: about 500), each written on the day it became valid, with the bundled model. Then:

(a) for each update's question, recall (the defaults, limit 10): the newer fact ranks above the older
    (the older left out, or not found, counts as above; the newer not found counts as a miss);
(b) each labelled pair judged by what recall does with it: the pair's second memory recalled by its own
    text, and collapsed into the first (``duplicates``) or not. Precision over every pair collapsed
    (paraphrases, updates and distinct pairs alike), recall over the paraphrases;
(c) the distinct pairs collapsed or marked outdated (``outdated_by``), of all distinct pairs;
(d) hygiene's duplicate and near-duplicate flags against the paraphrase pairs (precision over every
    flagged pair of the set's memories, recall over the paraphrases);
and a guard: for each distinct pair with a question about its first memory, that memory above the other.
Each figure is given for the "dev" half (the rules were tuned on it) and the "check" half.

The write-time cost of the similar-memory report (remembering.py): at 10,000 and 100,000 synthetic
memories (vectors derived from the model's, as the 1M benchmark derives them), in a process whose
in-memory indexes are ready, ``remember`` of new memories with the report and without it, interleaved,
their p50 and the difference.
"""

from __future__ import annotations

import datetime as dt
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perseus_vault_core import Vault
from perseus_vault_core.features import remembering

from . import devsets
from .million import DerivedVectors
from .speed import fresh_memories, percentiles
from .synthetic import memories

SECTION = "## Curation: newer facts first, duplicates collapsed"
Log = Callable[[str], None]


def _day_ms(day: str) -> int:
    return int(dt.datetime.fromisoformat(day).replace(tzinfo=dt.timezone.utc).timestamp() * 1000)


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def _memories(data: dict[str, Any]) -> list[tuple[str, int, str, dict[str, Any]]]:
    """(list name, item index, role, memory) for every memory of the set."""
    out = []
    for name, roles in (("updates", ("older", "newer")), ("paraphrases", ("a", "b")), ("distinct", ("a", "b"))):
        for n, item in enumerate(data[name]):
            out.extend((name, n, role, item[role]) for role in roles)
    return out


def build(path: str, embedder: Any) -> tuple[Vault, dict[tuple[str, int, str], int], _Clock]:
    """The store, each memory written at its valid_from date (keys made unique per pair)."""
    data = devsets.curation()
    clock = _Clock()
    vault = Vault(path, embedder=embedder, clock=clock)
    ids: dict[tuple[str, int, str], int] = {}
    for name, n, role, m in sorted(_memories(data), key=lambda r: (r[3]["valid_from"], r[0], r[1], r[2])):
        clock.now = _day_ms(m["valid_from"])
        entity = vault.remember(category=m["category"], key=f"{m['key']}--{name}-{n}-{role}", content=m["content"])
        ids[name, n, role] = entity.id
    clock.now = _day_ms("2025-06-01")
    return vault, ids, clock


def _rank(items: list[Any], wanted: int) -> int | None:
    for rank, item in enumerate(items):
        if item.id == wanted or wanted in (item.duplicates or []):
            return rank
    return None


def measure(vault: Vault, ids: dict[tuple[str, int, str], int]) -> dict[str, dict[str, float]]:
    data = devsets.curation()
    out: dict[str, dict[str, float]] = {}
    flagged = {(h.id, h.duplicate_of) for h in vault.hygiene(limit=1000).items if h.duplicate_of is not None}
    flagged_pairs = {frozenset(p) for p in flagged}
    for split in ("dev", "check"):
        wins = total = 0
        for n, item in enumerate(data["updates"]):
            if item["split"] != split:
                continue
            total += 1
            items = vault.recall(item["question"], reinforce=False).items
            newer, older = _rank(items, ids["updates", n, "newer"]), _rank(items, ids["updates", n, "older"])
            wins += newer is not None and (older is None or newer < older or
                                           any(i.id == ids["updates", n, "older"] and i.outdated_by for i in items))
        collapsed: dict[str, int] = {}
        marked = {"distinct": 0}
        counted: dict[str, int] = {}
        for name in ("paraphrases", "updates", "distinct"):
            first_role, second_role = ("older", "newer") if name == "updates" else ("a", "b")
            collapsed[name] = counted[name] = 0
            for n, item in enumerate(data[name]):
                if item["split"] != split:
                    continue
                counted[name] += 1
                a, b = ids[name, n, first_role], ids[name, n, second_role]
                items = vault.recall(item[second_role]["content"], limit=10, reinforce=False).items
                together = any({a, b} <= {i.id, *(i.duplicates or [])} for i in items)
                collapsed[name] += together
                if name == "distinct":
                    marked["distinct"] += together or any(i.id in (a, b) and i.outdated_by in (a, b) for i in items)
        hits = collapsed["paraphrases"]
        precision = hits / max(1, sum(collapsed.values()))
        guard_wins = guard_total = 0
        for n, item in enumerate(data["distinct"]):
            if item["split"] != split or not item.get("question_a"):
                continue
            guard_total += 1
            items = vault.recall(item["question_a"], reinforce=False).items
            a, b = _rank(items, ids["distinct", n, "a"]), _rank(items, ids["distinct", n, "b"])
            guard_wins += a is not None and (b is None or a <= b)
        pairs = {frozenset((ids[name, n, x], ids[name, n, y]))
                 for name, (x, y) in (("paraphrases", ("a", "b")),) for n, item in enumerate(data[name])
                 if item["split"] == split}
        in_split = {frozenset((ids[name, n, x], ids[name, n, y]))
                    for name, (x, y) in (("paraphrases", ("a", "b")), ("updates", ("older", "newer")),
                                         ("distinct", ("a", "b")))
                    for n, item in enumerate(data[name]) if item["split"] == split}
        found = {p for p in flagged_pairs if p in in_split}
        out[split] = {
            "newer_first": wins / max(1, total), "updates": total,
            "collapse_precision": precision, "collapse_recall": hits / max(1, counted["paraphrases"]),
            "updates_collapsed": collapsed["updates"] / max(1, counted["updates"]),
            "distinct_wrong": marked["distinct"] / max(1, counted["distinct"]),
            "hygiene_precision": len(found & pairs) / max(1, len(found)),
            "hygiene_recall": len(found & pairs) / max(1, len(pairs)),
            "distinct_guard": guard_wins / max(1, guard_total),
        }
    return out


WRITES = 200


def write_cost(n: int, cached: Any) -> dict[str, Any]:
    """p50 / p95 of ``remember`` at ``n`` memories with the similar-memory report and without it."""
    derived = DerivedVectors(cached, real=2_000)
    with tempfile.TemporaryDirectory(prefix="pv-curation-writes-") as folder:
        path = str(Path(folder) / "writes.db")
        with Vault(path, embedder=derived, keyword_index=False, vector_index=False) as vault:
            for first in range(0, n, 10_000):
                vault.remember_many([dict(m) for m in memories(min(n, first + 10_000))][first:])
        with Vault(path, embedder=derived) as vault:
            vault.recall("warm up", mode="dense")
            assert vault.wait_for_vector_index(600) and vault.wait_for_keyword_index(600)
            fresh = fresh_memories(2 * WRITES)
            neighbours = remembering._neighbours
            with_report, without = [], []
            for i, m in enumerate(fresh):
                off = i % 2 == 1
                if off:
                    remembering._neighbours = lambda *args: ([], None)  # type: ignore[assignment]
                try:
                    started = time.perf_counter()
                    vault.remember(**m)  # type: ignore[arg-type]
                    (without if off else with_report).append((time.perf_counter() - started) * 1000)
                finally:
                    remembering._neighbours = neighbours
    on, off = percentiles(with_report), percentiles(without)
    return {"entities": n, "with": on, "without": off, "added_p50_ms": on["p50"] - off["p50"]}


def run(embedder: Any, log: Log = print, sizes: tuple[int, ...] = (10_000, 100_000)) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pv-curation-") as folder:
        vault, ids, _ = build(str(Path(folder) / "curation.db"), embedder)
        try:
            quality = measure(vault, ids)
        finally:
            vault.close()
    log(json.dumps(quality))
    writes = []
    for n in sizes:
        writes.append(write_cost(n, embedder))
        log(json.dumps(writes[-1]))
    return {"quality": quality, "writes": writes}


def render(result: dict[str, Any]) -> list[str]:
    q = result["quality"]
    rows = [("(a) newer fact above the older, for a question about it", "newer_first", ">= 0.95", True),
            ("(b) duplicates collapsed: precision", "collapse_precision", ">= 0.90", True),
            ("(b) duplicates collapsed: recall", "collapse_recall", ">= 0.90", True),
            ("(c) distinct pairs collapsed or marked outdated", "distinct_wrong", "<= 0.05", False),
            ("(d) hygiene duplicates: precision", "hygiene_precision", "", True),
            ("(d) hygiene duplicates: recall", "hygiene_recall", "", True),
            ("update pairs collapsed (the newer shown, the older listed)", "updates_collapsed", "", False),
            ("guard: a distinct pair's own memory above its twin, for a question about it", "distinct_guard", "", True)]
    out = [SECTION, "", "On benchmarks/data/curation.json (written for this project: update, paraphrase and similar-"
           "but-distinct pairs across team, personal, project and people domains), the bundled model, recall's "
           "defaults. The rules were tuned on the dev half; the check half was not looked at while tuning.", "",
           "| measure | dev | check | target |", "|---|---|---|---|"]
    for label, key, target, _ in rows:
        out.append(f"| {label} | {q['dev'][key]:.3f} | {q['check'][key]:.3f} | {target} |")
    out += ["", "What the similar-memory report adds to a `remember` (new memories, their vectors given; the "
            "in-memory indexes ready; with and without the report interleaved, 200 each):", "",
            "| memories | remember p50 / p95 with the report | without | added p50 |", "|---|---|---|---|"]
    for w in result.get("writes", []):
        out.append(f"| {w['entities']:,} | {w['with']['p50']:.2f} / {w['with']['p95']:.2f} ms | "
                   f"{w['without']['p50']:.2f} / {w['without']['p95']:.2f} ms | {w['added_p50_ms']:.2f} ms |")
    return out + [""]


def main(output: Path, sizes: list[int]) -> None:
    """``python -m benchmarks.run --only curation``: this part alone, its section of ``output`` replaced."""
    from perseus_vault_core.embeddings import load

    from .postgres import write_section
    from .run import log
    from .vector_cache import CachingEmbedder

    write_section(output, render(run(CachingEmbedder(load()), log=log)))
    log(f"wrote the {SECTION[3:]} section of {output}")
