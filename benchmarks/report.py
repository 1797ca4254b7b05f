"""The report's shared writing: numbers and verdicts as the tables of docs/benchmarks.md print them, the
commit a run measured, a section written in place, and the progress lines a run logs.

Every part of the benchmarks renders its own section with these; :mod:`benchmarks.run` runs the parts and
joins their sections. Nothing here imports a part, so no part imports ``run`` back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def commit() -> str:
    """The checkout's short commit, marked when code beside the report has uncommitted changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        # The report and its images are this run's own output (written before the last sections render).
        dirty = subprocess.run(
            [
                "git",
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":(exclude)docs/benchmarks.md",
                ":(exclude)docs/img",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return head + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def verdict(value: float, target: float, higher_is_better: bool, unit: str) -> str:
    ok = value >= target if higher_is_better else value <= target
    sign = ">=" if higher_is_better else "<="
    if ok:
        return f"met (target {sign} {target:g} {unit})"
    gap = (target - value) if higher_is_better else (value - target)
    return f"**MISSED** by {gap:.3g} {unit} (target {sign} {target:g} {unit})"


def fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def pp(stat: dict[str, float]) -> str:
    """A latency's p50 / p95."""
    return f"{fmt(stat['p50'])} / {fmt(stat['p95'])}"


def replace_section(report: str, section: list[str]) -> str:
    """``report`` with the section ``section`` heads (its first line, a ``## `` heading, up to the next one)
    replaced by ``section``, or ``section`` appended where it has none; everything else is kept as it was.
    Every part that runs alone (``--only``) writes its section so."""
    lines = report.rstrip("\n").split("\n")
    if section[0] in lines:
        start = lines.index(section[0])
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines[start:end] = section
    else:
        lines += [""] + section
    return "\n".join(lines).rstrip("\n") + "\n"


def write_section(path: Path, section: list[str]) -> None:
    """``section`` into the report at ``path`` in place of the one with its heading, the rest kept."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    path.write_text(replace_section(old, section), encoding="utf-8")


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
