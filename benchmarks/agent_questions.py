"""Agent questions: recall on the hand-written team memory (benchmarks/data/team_memory.json, loaded by
``devsets.team_memory``): 198 memories an assistant kept over eight months with one team, and 71 natural
questions, each labelled with the memories that answer it and its kind (attribute, paraphrase, current,
howto, preference, person, decision-why, chat; see benchmarks/devsets.py).

Each memory is remembered on the day it became valid (a clock set to its ``valid_from``), with the bundled
model; the questions are asked a week after the last one, through ``recall(question, limit=10)`` in
each mode, with curation (the default) and without. Reported: first-hit accuracy (the first item answers
the question) and R@5 (the share of a question's answers in the first five), overall, per kind, and for
each half of the questions (even and odd places in the file: "A" and "B"), so a rule tuned on one half
can be checked on the other.

    python -m benchmarks.agent_questions
"""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from typing import Any, Literal

from perseus_vault_core import Vault

from . import devsets

KINDS = ("attribute", "paraphrase", "current", "howto", "preference", "person", "decision-why", "chat")
Mode = Literal["fts5", "dense", "hybrid"]
RUNS: tuple[tuple[Mode, bool], ...] = (("fts5", True), ("dense", True), ("hybrid", True), ("hybrid", False))
ASKED = "2025-03-01"  # a week after the last memory


def _score(
    vault: Vault, names: dict[int, str], questions: list[dict[str, Any]], mode: Mode, curate: bool
) -> dict[str, tuple[float, float, int]]:
    cells: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for n, q in enumerate(questions):
        ranked = [
            names[i.id]
            for i in vault.recall(q["question"], mode=mode, limit=10, reinforce=False, curate=curate).items
        ]
        first = float(bool(ranked) and ranked[0] in q["answers"])
        r5 = len(set(ranked[:5]) & set(q["answers"])) / len(q["answers"])
        for key in ("all", "A" if n % 2 == 0 else "B", q["kind"]):
            cells[key][0] += first
            cells[key][1] += r5
            cells[key][2] += 1
    return {k: (c[0] / c[2], c[1] / c[2], int(c[2])) for k, c in cells.items()}


def run(model: Any) -> dict[str, Any]:
    data = devsets.team_memory()
    clock = devsets.Clock()
    with (
        tempfile.TemporaryDirectory() as tmp,
        Vault(os.path.join(tmp, "team.db"), embedder=model, clock=clock) as vault,
    ):
        names = devsets.remember_dated(vault, clock, data["memories"])
        clock.now = devsets.day_ms(ASKED)
        runs = {
            f"{mode}{'' if curate else ', curate=False'}": _score(
                vault, names, data["questions"], mode, curate
            )
            for mode, curate in RUNS
        }
    return {"memories": len(data["memories"]), "questions": len(data["questions"]), "runs": runs}


def render(r: dict[str, Any]) -> list[str]:
    out = [
        "## Agent questions (team memory)",
        "",
        f"{r['memories']} memories of one team over eight months and {r['questions']} natural questions"
        " (benchmarks/data/team_memory.json, written by hand), each memory remembered on the day it became"
        " valid, each question asked through `recall(question, limit=10)`. First: the first item answers the"
        " question; R@5: the share of its answers in the first five. A and B: the questions at even and odd"
        " places (tune on one, check on the other). See `benchmarks/agent_questions.py`.",
        "",
        "| mode | first | R@5 | first A | first B | " + " | ".join(KINDS) + " |",
        "|---|---|---|---|---|" + "---|" * len(KINDS),
    ]
    for name, cells in r["runs"].items():
        kinds = " | ".join(f"{cells[k][0]:.2f}" for k in KINDS)
        out.append(
            f"| {name} | {cells['all'][0]:.3f} | {cells['all'][1]:.3f} | {cells['A'][0]:.3f} |"
            f" {cells['B'][0]:.3f} | {kinds} |"
        )
    counts = next(iter(r["runs"].values()))
    out += [
        "",
        "Questions per kind: " + ", ".join(f"{k} {counts[k][2]}" for k in KINDS) + ". The per-kind columns"
        " are first-hit accuracy.",
        "",
    ]
    return out


def main() -> None:
    from perseus_vault_core.embeddings import load as load_model

    from .vector_cache import CachingEmbedder

    print("\n".join(render(run(CachingEmbedder(load_model())))))


if __name__ == "__main__":
    main()
