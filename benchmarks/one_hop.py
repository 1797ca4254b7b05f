"""One-hop expansion: recall with and without ``follow_links`` (the memories linked to the best hits join the
candidates; perseus_vault_core/recall/linked.py), on every collection that has a graph.

Every store is written through ``remember`` or ``remember_many``, so each holds the links the vault inferred
at write time (nobody links anything by hand here); every question is asked through ``recall(question,
limit=10)`` in each mode, with ``follow_links`` off and on. Reported: R@5 and R@10 (the share of a
question's relevant memories in the first five or ten), first (the first item is relevant), and the mean time
of a recall:

- bridges: benchmarks/data/bridges.json (devsets.bridges), HotpotQA-like questions that need two memories,
  the one the question names and the one it leads to; "answer@10": the second is in the first ten;
- team memory: benchmarks/data/team_memory.json (as agent_questions.py writes and asks it);
- locomo-dev: each turn one memory, ``Speaker: text``, through ``remember_many`` (conversation.write_turns),
  each category apart and categories 1-4 together;
- SciFact and Cranfield: each document one memory through ``remember_many`` (not ``import_jsonl``, which
  infers no relation), title as summary.

    python -m benchmarks.one_hop [--data ../shared/data] [--only bridges team locomo scifact cranfield]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from perseus_vault_core import Vault

from . import conversation, devsets, quality
from .metrics import recall_at

MODES: tuple[Literal["fts5", "dense", "hybrid"], ...] = ("fts5", "dense", "hybrid")
ARMS = (False, True)  # follow_links
PARTS = ("bridges", "team", "locomo", "scifact", "cranfield")
Question = tuple[str, dict[str, int], tuple[str, ...], dict[str, Any]]  # text, judged, groups, recall options


def ask(
    vault: Vault, questions: list[Question], name_of: Callable[[Any], str], last: dict[str, str] | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """``{group: {"mode, follow_links": {r@5, r@10, first, answer@10, ms, n}}}``; ``last``: per question text,
    the memory that holds its answer (answer@10)."""
    out: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
    for mode in MODES:
        for follow in ARMS:
            cells: dict[str, list[float]] = defaultdict(lambda: [0.0] * 6)
            for text, judged, groups, options in questions:
                started = time.perf_counter()
                items = vault.recall(
                    text, mode=mode, limit=10, reinforce=False, follow_links=follow, **options
                ).items
                ms = 1000 * (time.perf_counter() - started)
                ranked = [name_of(i) for i in items]
                got = (
                    recall_at(ranked, judged, 5),
                    recall_at(ranked, judged, 10),
                    float(bool(ranked) and judged.get(ranked[0], 0) > 0),
                    float(last is not None and last[text] in ranked),
                    ms,
                    1.0,
                )
                for g in groups:
                    cells[g] = [a + b for a, b in zip(cells[g], got)]
            for g, c in cells.items():
                out[g][f"{mode}, {'on' if follow else 'off'}"] = {
                    "r@5": c[0] / c[5],
                    "r@10": c[1] / c[5],
                    "first": c[2] / c[5],
                    "answer@10": c[3] / c[5],
                    "ms": c[4] / c[5],
                    "n": c[5],
                }
    return dict(out)


def _linked_pairs(vault: Vault, names: dict[int, str], questions: list[dict[str, Any]]) -> int:
    """How many questions' two memories are linked (either way, any relation)."""
    ids = {v: k for k, v in names.items()}
    count = 0
    for q in questions:
        first, answer = ids[q["answers"][0]], ids[q["answers"][-1]]
        walk = vault.traverse(first, depth=1)
        count += any(n.entity.id == answer for n in walk.nodes)
    return count


def dev_set(model: Any, name: str) -> dict[str, Any]:
    """bridges.json or team_memory.json, each memory remembered on its day, asked a week after the last."""
    data = devsets.bridges() if name == "bridges" else devsets.team_memory()
    clock = devsets.Clock()
    with (
        tempfile.TemporaryDirectory() as tmp,
        Vault(os.path.join(tmp, f"{name}.db"), embedder=model, clock=clock) as vault,
    ):
        names = devsets.remember_dated(vault, clock, data["memories"])
        clock.now = devsets.day_ms(max(m["valid_from"] for m in data["memories"])) + 7 * 86_400_000
        questions: list[Question] = [
            (q["question"], dict.fromkeys(q["answers"], 1), ("all",), {}) for q in data["questions"]
        ]
        last = {q["question"]: q["answers"][-1] for q in data["questions"]} if name == "bridges" else None
        result = ask(vault, questions, lambda i: names[i.id], last)
        linked = _linked_pairs(vault, names, data["questions"]) if name == "bridges" else None
    return {
        "memories": len(data["memories"]),
        "questions": len(data["questions"]),
        "linked": linked,
        "runs": result,
    }


def locomo(model: Any, root: Path | None = None) -> dict[str, Any]:
    turns, questions, qrels = conversation.load(root)
    asked: list[Question] = []
    for q in questions:
        category = conversation.CATEGORIES[q["metadata"]["category"]]
        groups = (category, "1-4") if q["metadata"]["category"] in conversation.RETRIEVAL else (category,)
        asked.append((q["text"], qrels[q["_id"]], groups, {"workspace_hash": q["metadata"]["conv"]}))
    with tempfile.TemporaryDirectory() as tmp, Vault(os.path.join(tmp, "turns.db"), embedder=model) as vault:
        conversation.write_turns(vault, turns)
        result = ask(vault, asked, lambda i: i.key)
    return {"memories": len(turns), "questions": len(questions), "runs": result}


def beir(model: Any, name: str, root: Path | None = None) -> dict[str, Any]:
    collection = quality.load(name, root)
    with tempfile.TemporaryDirectory() as tmp, Vault(os.path.join(tmp, "q.db"), embedder=model) as vault:
        items = [
            {
                "category": name,
                "key": d["_id"],
                "content": d["text"] or d["title"],
                "summary": (d["title"] or None) if d["text"] else None,
            }
            for d in collection.docs
            if (d["text"] or d["title"]).strip()
        ]
        started = time.perf_counter()
        for at in range(0, len(items), 1_000):
            vault.remember_many(items[at : at + 1_000])
        written = time.perf_counter() - started
        vault.wait_for_keyword_index()
        vault.wait_for_vector_index()
        asked: list[Question] = [
            (text, collection.qrels[qid], ("all",), {}) for qid, text in collection.queries.items()
        ]
        result = ask(vault, asked, lambda i: i.key)
    return {"memories": len(items), "questions": len(asked), "write_s": written, "runs": result}


def run(model: Any, parts: tuple[str, ...] = PARTS, root: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in parts:
        if part in ("bridges", "team"):
            out[part] = dev_set(model, "bridges" if part == "bridges" else "team")
        elif part == "locomo":
            out[part] = locomo(model, root)
        else:
            out[part] = beir(model, part, root)
    return out


TITLES = {
    "bridges": "bridges (HotpotQA-like, benchmarks/data/bridges.json)",
    "team": "team memory (benchmarks/data/team_memory.json)",
    "locomo": "locomo-dev (turns)",
    "scifact": "SciFact",
    "cranfield": "Cranfield",
}


def render(r: dict[str, Any]) -> list[str]:
    out = []
    for part, found in r.items():
        linked = (
            f"; {found['linked']} of {found['questions']} questions' two memories are linked"
            if found.get("linked") is not None
            else ""
        )
        out += [
            f"### {TITLES[part]}",
            "",
            f"{found['memories']:,} memories, {found['questions']} questions{linked}.",
            "",
            "| questions | mode | follow_links | R@5 | R@10 | first |"
            + (" answer@10 |" if part == "bridges" else "")
            + " ms |",
            "|---|---|---|---|---|---|" + ("---|" if part == "bridges" else "") + "---|",
        ]
        for group, runs in found["runs"].items():
            for arm, s in runs.items():
                mode, follow = arm.split(", ")
                extra = f" {s['answer@10']:.3f} |" if part == "bridges" else ""
                out.append(
                    f"| {group} ({int(s['n'])}) | {mode} | {follow} | {s['r@5']:.3f} | {s['r@10']:.3f} |"
                    f" {s['first']:.3f} |{extra} {s['ms']:.1f} |"
                )
        out.append("")
    return out


def main() -> None:
    from perseus_vault_core.embeddings import load as load_model

    from .vector_cache import CachingEmbedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    model, result = CachingEmbedder(load_model()), {}
    for part in args.only:  # each part's table as soon as it is measured
        result.update(run(model, (part,), args.data))
        if args.json is not None:
            args.json.write_text(json.dumps(result, indent=1), encoding="utf-8")
        print("\n".join(render({part: result[part]})), flush=True)


if __name__ == "__main__":
    main()
