"""memory_recall over 10,000 memory-file entries, through the public API.

The folder: 20 memory files of 5 sections with 100 dated entries each (2015-2025), the entries being
the speed benchmark's synthetic sentences (see synthetic.py). It is imported with the benchmark's
vector cache, then ``memory_recall`` answers agent-style questions (hybrid: keyword and meaning, query
embedding included), p50/p95; and the same on a keyword-only vault. A re-import of the unchanged
folder is timed too (it writes and embeds nothing).
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from perseus_vault_core import Vault

from .speed import timed
from .synthetic import memories, queries

FILES, SECTIONS, PER_SECTION = 20, 5, 100


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
