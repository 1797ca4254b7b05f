"""What a call costs at each per-call limit (docs/limits.md): the largest input the vault takes, timed.

The store: ``N`` synthetic agent memories (the speed benchmark's), keyword-only, each with a body field
``team`` and a ``note`` of a few words, in one file. Each case is one call at a limit's maximum, run
``REPEAT`` times after a first call (which builds the in-memory index or fills a cache); the figure is
the median, beside the same call without the input that the limit bounds, so the ratio is what the limit
lets a caller add. A limit that is not about recall (a batch, a body, a walk) is timed on its own verb.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perseus_vault_core import Vault
from perseus_vault_core.contract import where

from .report import log, write_section
from .synthetic import memories, queries

SECTION = "## Per-call limits at their maximum"
N = 20_000
REPEAT = 5
Log = Callable[[str], None]


def _median_ms(call: Callable[[], Any]) -> float:
    call()  # the first: builds what later calls reuse
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _wheres() -> dict[str, dict[str, Any]]:
    """A where at each of its caps (where.py), each matching nothing, so that every memory is tested."""
    per_in = where.MAX_VALUES
    lists = where.MAX_ALL_VALUES // per_in
    return {
        f"{where.MAX_CONDITIONS} conditions": {
            "$or": [{"team": f"team-{i}-x"} for i in range(where.MAX_CONDITIONS)]
        },
        f"{where.MAX_ALL_VALUES:,} values ({lists} `$in` of {per_in:,}) on a body field": {
            f"team{i}": {"$in": [f"team-{i}-{j}" for j in range(per_in)]} for i in range(lists - 1)
        }
        | {"team": {"$in": [f"team-{j}-x" for j in range(per_in)]}},
        f"{where.MAX_ALL_VALUES:,} values on a memory field (`category`)": {
            "$or": [{"category": {"$in": [f"cat-{i}-{j}" for j in range(per_in)]}} for i in range(lists)]
        },
        f"{where.MAX_CHARS:,} characters of values ({where.MAX_CHARS // where.MAX_VALUE_CHARS} of "
        f"{where.MAX_VALUE_CHARS:,})": {
            "team": {
                "$in": [
                    f"{i:04d}" + "x" * (where.MAX_VALUE_CHARS - 4)
                    for i in range(where.MAX_CHARS // where.MAX_VALUE_CHARS)
                ]
            }
        },
        f"{where.MAX_SUBSTRINGS} `$isubstring` of {where.MAX_NEEDLE_CHARS} characters": {
            "$or": [
                {"note": {"$isubstring": f"{i:02d}" + "Q" * (where.MAX_NEEDLE_CHARS - 2)}}
                for i in range(where.MAX_SUBSTRINGS)
            ]
        },
    }


def run(n: int = N, log: Log = print) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pv-limits-") as folder:
        path = str(Path(folder) / "limits.db")
        texts = [str(m["content"]) for m in memories(n)]
        with Vault(path, embedder=False) as vault:
            for first in range(0, n, 10_000):  # remember_many's batch limit
                vault.remember_many(
                    [
                        {
                            "category": "note",
                            "key": f"k{i}",
                            "content": texts[i],
                            "body": {"team": f"team-{i % 40}", "note": " ".join(texts[i].split()[:6])},
                        }
                        for i in range(first, min(n, first + 10_000))
                    ]
                )
            vault.wait_for_keyword_index()  # every figure below from the index a long-running vault holds
            query = queries(1)[0]
            base_recall = _median_ms(lambda: vault.recall(query, mode="fts5", limit=10, reinforce=False))
            base_scan = _median_ms(lambda: vault.scan(limit=100))
            for name, w in _wheres().items():
                size = len(json.dumps(w))
                recall_ms = _median_ms(
                    lambda: vault.recall(query, mode="fts5", limit=10, reinforce=False, where=w)
                )
                scan_ms = _median_ms(lambda: vault.scan(limit=100, where=w))
                rows.append(
                    {"case": f"`where`: {name}", "bytes": size, "recall_ms": recall_ms, "scan_ms": scan_ms}
                )
                log(json.dumps(rows[-1]))
            long_query = " ".join(texts[:200])[:4096]
            rows.append(
                {
                    "case": "recall `query` of 4,096 characters",
                    "recall_ms": _median_ms(
                        lambda: vault.recall(long_query, mode="fts5", limit=10, reinforce=False)
                    ),
                }
            )
            rows.append(
                {
                    "case": "recall `limit` 1,000",
                    "recall_ms": _median_ms(
                        lambda: vault.recall(
                            "billing service config", mode="fts5", limit=1000, reinforce=False
                        )
                    ),
                }
            )
            rows.append(
                {
                    "case": "recall `offset` 10,000 (`limit` 10)",
                    "recall_ms": _median_ms(
                        lambda: vault.recall(
                            "billing service config", mode="fts5", limit=10, offset=10_000, reinforce=False
                        )
                    ),
                }
            )
            log(json.dumps(rows[-3:]))
            batch = [
                {"category": "batch", "key": f"b{i}", "content": text}
                for i, text in enumerate(texts[:10_000])
            ]
            start = time.perf_counter()
            vault.remember_many(batch)
            rows.append(
                {
                    "case": "`remember_many` of 10,000 memories (keyword-only)",
                    "write_ms": (time.perf_counter() - start) * 1000,
                }
            )
            big = "word " * (256 * 1024 // 5 - 10)
            # The next read brings the in-memory index up to the batch (~0.4 s for 10,000 memories); remember
            # reads it for its similar-memory report, so bring it up first: the row times the body alone.
            vault.recall("warm", mode="fts5", reinforce=False)
            vault.wait_for_keyword_index()
            start = time.perf_counter()
            vault.remember(category="big", key="body", content=big)
            rows.append(
                {"case": "`remember` of a 256 KiB body", "write_ms": (time.perf_counter() - start) * 1000}
            )
            log(json.dumps(rows[-2:]))
    return {"n": n, "base_recall_ms": base_recall, "base_scan_ms": base_scan, "rows": rows}


def render(result: dict[str, Any]) -> list[str]:
    out = [
        SECTION,
        "",
        f"One call at each limit's maximum on {result['n']:,} synthetic memories (keyword-only; `python -m "
        "benchmarks.run --only limits`), median of 5 after a first call; each `where` matches nothing, so every "
        f"memory is tested. Without a filter a keyword recall takes {result['base_recall_ms']:.2f} ms and a "
        f"scan page of 100 {result['base_scan_ms']:.2f} ms.",
        "",
        "| call | filter's JSON | keyword recall ms | scan page of 100 ms | write ms |",
        "|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        cells = [
            f"{row['bytes']:,} B" if "bytes" in row else "",
            f"{row['recall_ms']:.2f}" if "recall_ms" in row else "",
            f"{row['scan_ms']:.2f}" if "scan_ms" in row else "",
            f"{row['write_ms']:.0f}" if "write_ms" in row else "",
        ]
        out.append(f"| {row['case']} | " + " | ".join(cells) + " |")
    return out + [""]


def main(output: Path, sizes: list[int]) -> None:
    """``python -m benchmarks.run --only limits [--output FILE]``: this part alone, its section replaced."""
    write_section(output, render(run(log=log)))
    log(f"wrote the {SECTION[3:]} section of {output}")
