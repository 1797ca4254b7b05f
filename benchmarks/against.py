"""Warm recall beside an earlier commit's, in one run: ``python -m benchmarks.run --only against [--ref REF]
[--sizes N]``.

The Speed section's figures come from a full run on whatever the machine was then; a later change is
judged against them only by running both codes side by side. This part checks the earlier commit out
(a git worktree in a temporary folder, the built model graph copied beside it), builds one store of the
same synthetic memories with each code (vectors from the benchmark's cache), and times the same warm
queries in alternating processes: the earlier code, this one, the earlier, this one. A store is warm
when every query was asked once in each mode (the in-memory indexes built, the heads' columns read),
as a long-lived server's is. Each figure is the median over the rounds of each round's p50 (p95).

Run as a script (``python benchmarks/against.py build|measure DB``, with ``PYTHONPATH`` naming the tree
to time), it is the process each round starts: it imports the package from that tree and nothing
of this one's but the vector cache, read by path.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The commit whose full run docs/benchmarks.md's Speed and side-by-side sections report.
BASE_REF = "1ec2d1c"
MODES = ("fts5", "dense", "hybrid")
ROUNDS = 5
QUERIES = 300
SIZE = 100_000
TITLE = "## Warm recall beside an earlier commit"


def main(output: Path, sizes: list[int], ref: str | None = None) -> None:
    from .report import log, write_section  # inside: the timed processes run this file as a script

    section = render(run(sizes or [SIZE], ref or BASE_REF, log=log))
    write_section(output, section)
    log(f"wrote the {section[0].lstrip('# ')} section of {output}")


def run(sizes: list[int], ref: str, log: Any = print) -> dict[str, Any]:
    """Each size's figures for ``ref`` and for this tree (see the module docstring)."""
    from .speed import synthetic_lines
    from .synthetic import queries

    commit = _git("rev-parse", "--short", f"{ref}^{{commit}}")
    here = _git("rev-parse", "--short", "HEAD") + (
        " with uncommitted changes" if _git("status", "--porcelain") else ""
    )
    out: dict[str, Any] = {"ref": commit, "here": here, "sizes": []}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        _git("worktree", "add", "--detach", str(base), commit)
        try:
            _model_files(base)
            qs = Path(tmp) / "queries.json"
            qs.write_text(json.dumps(queries(QUERIES)), encoding="utf-8")
            for n in sizes:
                lines = Path(tmp) / f"lines-{n}.jsonl"
                lines.write_text("".join(line + "\n" for line in synthetic_lines(n)), encoding="utf-8")
                trees = {"base": base, "here": ROOT}
                dbs = {name: Path(tmp) / f"{name}-{n}.db" for name in trees}
                for name, tree in trees.items():
                    log(f"against {commit}: building {n:,} memories with the {name} code ...")
                    _child(tree, "build", dbs[name], lines, qs)
                rounds: dict[str, list[dict[str, list[float]]]] = {name: [] for name in trees}
                for r in range(ROUNDS):
                    for name, tree in trees.items():
                        rounds[name].append(json.loads(_child(tree, "measure", dbs[name], lines, qs)))
                        log(f"against {commit}: {n:,}, round {r + 1}, {name}: {rounds[name][-1]}")
                out["sizes"].append({"entities": n, **{name: _medians(got) for name, got in rounds.items()}})
        finally:
            _git("worktree", "remove", "--force", str(base))
    return out


def _medians(rounds: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Each row's [p50, p95], the median of the rounds' figures."""
    return {row: [statistics.median(r[row][k] for r in rounds) for k in (0, 1)] for row in rounds[0]}


def render(result: dict[str, Any]) -> list[str]:
    lines = [
        TITLE,
        "",
        f"Warm recall p50 / p95 in ms (k = 10, the defaults, reinforcement written) of the code at {result['ref']} "
        f"and of this code ({result['here']}), in one run on one machine: alternating processes, "
        f"{ROUNDS} rounds each, the median of the rounds (benchmarks/against.py). Dense and hybrid include "
        "embedding the query.",
        "",
        "| entities | mode | " + f"{result['ref']} | this code | ratio (p50) |",
        "|---|---|---|---|---|",
    ]
    for size in result["sizes"]:
        for row, here in size["here"].items():
            base = (
                size["base"].get(row) or size["base"][row.split(",")[0]]
            )  # curate=False: beside the default
            lines.append(
                f"| {size['entities']:,} | {row} | {base[0]:.2f} / {base[1]:.2f} | {here[0]:.2f} / {here[1]:.2f} "
                f"| {here[0] / base[0]:.2f}x |"
            )
    both = all(row in size["base"] for size in result["sizes"] for row in size["here"])
    note = (
        "A `curate=False` row is each code without curating its first places (docs/curation.md), beside the "
        "same row of the other."
        if both
        else "A `curate=False` row is this code without curating its first places (docs/curation.md), beside the "
        "earlier code's default (which had no curation): what curation costs, and what the rest costs."
    )
    return lines + ["", note, ""]


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"benchmarks.run --only against: git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def _model_files(base: Path) -> None:
    """The built model graph (not kept in git) beside the earlier code, where it reads it."""
    from perseus_vault_core.embeddings.minilm import SHIPPED as here

    there = base / here.relative_to(ROOT)
    there.mkdir(parents=True, exist_ok=True)
    for f in here.iterdir():
        if f.is_file() and not (there / f.name).exists():
            shutil.copy2(f, there / f.name)


def _child(tree: Path, what: str, db: Path, lines: Path, qs: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), what, str(db), str(lines), str(qs)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(
            f"benchmarks.run --only against: the {what} process of {tree} failed:\n{done.stderr[-2000:]}"
        )
    return done.stdout.strip().splitlines()[-1]


def _process(what: str, db: str, lines: str, qs: str) -> None:
    """One round's process (run as a script): build the store, or time the warm queries and print them."""
    import importlib.util

    from perseus_vault_core import Vault
    from perseus_vault_core.embeddings import load

    model = load()
    if what == "build":
        spec = importlib.util.spec_from_file_location("vector_cache", HERE / "vector_cache.py")
        assert spec is not None and spec.loader is not None
        cache = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cache)
        with Vault(db, embedder=cache.CachingEmbedder(model)) as vault:
            vault.import_jsonl(Path(lines).read_text(encoding="utf-8").splitlines())
            vault.wait_for_keyword_index()
            vault.wait_for_vector_index()
        print("{}")
        return
    asked = json.loads(Path(qs).read_text(encoding="utf-8"))
    figures = {}
    with Vault(db, embedder=model) as vault:
        assert vault.wait_for_keyword_index() and vault.wait_for_vector_index()
        for mode in MODES:  # warm: each query once in each mode
            for q in asked:
                vault.recall(q, mode=mode, reinforce=False)
        time.sleep(2)  # what the warm-up started in the background (the heads' columns) settles
        try:  # whether the code has curation to turn off (an earlier one refuses the parameter)
            vault.recall(asked[0], mode="fts5", curate=False, reinforce=False)
            curates = True
        except Exception:
            curates = False
        for mode in MODES:
            variants: list[tuple[str, dict[str, Any]]] = [(mode, {})]
            if curates:
                variants.append((f"{mode}, curate=False", {"curate": False}))
            for name, more in variants:
                times = []
                for q in asked:
                    started = time.perf_counter()
                    vault.recall(q, mode=mode, **more)
                    times.append((time.perf_counter() - started) * 1000)
                times.sort()
                figures[name] = [statistics.median(times), times[int(len(times) * 0.95)]]
    print(json.dumps(figures))


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == HERE:
        sys.path.pop(0)  # this folder's modules (mcp.py, ...) must not stand in for the timed tree's imports
    _process(*sys.argv[1:5])
