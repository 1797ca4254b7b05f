"""The report's plots (PNG, matplotlib, no display): recall@k per mode and collection, latency by size.

Both are drawn from the figures of the same run (the rows ``peers.quality`` and ``peers.speed``
return), so every point is traceable to a table in docs/benchmarks.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .peers import CURVE_K

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt

    return plt


def recall_curves(rows: list[dict[str, Any]], folder: Path = IMG) -> list[Path]:
    """One PNG per collection: recall@k for k in CURVE_K, one line per system and mode."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in sorted({r["collection"] for r in rows}):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for r in (r for r in rows if r["collection"] == name):
            label = r["system"] if not r["vault"] else f"{r['system']} (ours)"
            ax.plot(
                CURVE_K,
                r["recall_curve"],
                marker="o",
                markersize=3,
                label=label,
                linewidth=2.2 if r["vault"] else 1.0,
                linestyle="-" if r["vault"] else "--",
            )
        ax.set_xscale("log")
        ax.set_xticks(CURVE_K, [str(k) for k in CURVE_K])
        ax.set_xlabel("k")
        ax.set_ylabel("recall@k")
        ax.set_title(f"{name}: recall@k per system and mode")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        path = folder / f"recall_{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def latency_by_size(runs: list[dict[str, Any]], folder: Path = IMG) -> Path:
    """p50 latency against store size, one line per system, one panel per arm (log-log)."""
    plt = _pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    arms = ["fts5", "dense", "hybrid"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.5))
    for ax, arm in zip(axes, arms):
        series: dict[str, list[tuple[int, float]]] = {}
        for run in runs:
            for row in run["latency"]:
                if row["arm"] == arm:
                    series.setdefault(row["system"], []).append((run["entities"], row["p50"]))
        for system, points in sorted(series.items()):
            points.sort()
            ours = system.startswith("Perseus Vault")
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                marker="o",
                label=system,
                linewidth=2.2 if ours else 1.0,
                linestyle="-" if ours else "--",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("entities")
        ax.set_ylabel("p50 ms (query vector given)")
        ax.set_title({"fts5": "keyword", "dense": "dense", "hybrid": "hybrid"}[arm])
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = folder / "latency_by_size.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
