"""What an agent reads: the characters of a 5-hit recall and of a ``prepare`` block, over MCP.

An agent pays for every character a tool's text holds. The store is a small, realistic one: the
memories a coding agent keeps about one project (decisions, preferences, facts, an incident), most a
sentence long, some with a summary, a topic path, body fields or trigger phrases, written on a fixed
clock over a few weeks. The same calls run through an in-process MCP server (``build_server``), and the
figures are the text content a model reads: its length, the memory text it carries (each hit's content
and summary), and per hit what it costs beyond that.

``python -m benchmarks.run --only agent-text`` replaces its section of docs/benchmarks.md. The figures
before the compact text (``BEFORE``) were measured by the same function on the code as it was then.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import anyio

from .report import log, write_section

SECTION = "## What an agent reads"
QUERY = "which database do we use for the billing service"
CONTEXT = "I am about to change the billing service's database migrations; anything I should know?"
START_MS = 1_780_000_000_000  # 2026-05-28, so that the dates are the same every run
DAY_MS = 86_400_000

# category, key, content, extras; one memory a day from START_MS
MEMORIES: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "decision",
        "db-engine",
        "We use PostgreSQL 16 for the billing service; SQLite stays for local tests.",
        {},
    ),
    (
        "decision",
        "db-engine-old",
        "Billing ran on MySQL 5.7 until the spring migration.",
        {"summary": "old billing database"},
    ),
    (
        "preference",
        "migrations",
        "Database migrations go through alembic, one revision per pull request.",
        {"recall_when": ["database migration", "alembic"]},
    ),
    (
        "fact",
        "billing-owner",
        "Carol owns the billing service and approves its schema changes.",
        {"topic_path": "billing/people"},
    ),
    (
        "incident",
        "inc-2291",
        "Billing went down for 40 minutes when a migration locked the invoices table.",
        {"body": {"ticket": "OPS-2291", "severity": 2}, "topic_path": "billing/incidents"},
    ),
    ("decision", "queue", "Kafka carries billing events; RabbitMQ was retired in March.", {}),
    (
        "fact",
        "db-host",
        "The billing database is db-billing-1 in eu-west-1, with a read replica.",
        {"topic_path": "billing/infra"},
    ),
    (
        "preference",
        "style",
        "Keep functions under 80 lines and name tests after the behaviour they check.",
        {},
    ),
    ("fact", "ci", "CI runs on GitHub Actions; the full suite takes about ten minutes.", {}),
    (
        "decision",
        "cache",
        "Redis caches invoice totals for five minutes; never cache payment state.",
        {"recall_when": ["cache payment"]},
    ),
    (
        "fact",
        "backups",
        "Billing database backups run nightly at 02:00 UTC and are kept 30 days.",
        {"topic_path": "billing/infra"},
    ),
    ("note", "vendor", "Stripe handles card payments; the contract renews in November.", {}),
    ("preference", "reviews", "Two approvals for anything touching money, one elsewhere.", {}),
    ("fact", "api", "The public API is versioned by URL path (/v1, /v2); v1 ends in December.", {}),
    ("decision", "search", "Invoice search uses PostgreSQL full-text search, not Elasticsearch.", {}),
    ("fact", "oncall", "On-call rotates weekly; the billing pager goes to Dave this week.", {}),
]


async def _texts(vault: Any) -> dict[str, Any]:
    from mcp import Client

    from perseus_vault_integrations.mcp import build_server

    async with Client(build_server(vault)) as client:
        recall = await client.call_tool("perseus_vault_recall", {"query": QUERY, "limit": 5})
        prepare = await client.call_tool("perseus_vault_prepare", {"context": CONTEXT})
    return {
        "recall": (getattr(recall.content[0], "text", ""), recall.structured_content),
        "prepare": (getattr(prepare.content[0], "text", ""), prepare.structured_content),
    }


def run() -> dict[str, Any]:
    """The characters of a 5-hit recall's text and of a ``prepare`` block, over the store above."""
    from perseus_vault_core import Vault

    now = [START_MS]
    with tempfile.TemporaryDirectory(prefix="pv-agent-text-") as folder:
        with Vault(str(Path(folder) / "agent.db"), clock=lambda: now[0]) as vault:
            for day, (category, key, content, extras) in enumerate(MEMORIES):
                now[0] = START_MS + day * DAY_MS
                vault.remember(category=category, key=key, content=content, **extras)
            now[0] = START_MS + len(MEMORIES) * DAY_MS
            texts = anyio.run(_texts, vault)
    recall_text, structured = texts["recall"]
    items = structured["items"]
    memory = sum(len(i["content"]) + len(i.get("summary") or "") for i in items)
    prepare_text = texts["prepare"][0]
    bullets = [line for line in prepare_text.splitlines() if line.startswith("- ")]
    return {
        "recall": {
            "hits": len(items),
            "chars": len(recall_text),
            "memory_chars": memory,
            "per_hit_overhead": round((len(recall_text) - memory) / max(1, len(items)), 1),
            "text": recall_text,
        },
        "prepare": {
            "chars": len(prepare_text),
            "lines": prepare_text.count("\n") + 1,
            "memories": len(bullets),
            "dated": sum(bool(re.search(r"\(#\d+, \d{4}-\d\d-\d\d", b)) for b in bullets),
            "text": prepare_text,
        },
    }


# Measured by run() on the code before the compact text (commit 69d4236).
BEFORE: dict[str, Any] = {
    "recall": {"hits": 5, "chars": 3658, "memory_chars": 352, "per_hit_overhead": 661.2},
    "prepare": {"chars": 692, "lines": 9, "memories": 6, "dated": 0},
}


def render(result: dict[str, Any], before: dict[str, Any] | None = None) -> list[str]:
    before = BEFORE if before is None else before
    r, p = result["recall"], result["prepare"]
    out = [
        SECTION,
        "",
        f"The text an agent reads, over MCP, on a store of {len(MEMORIES)} short project memories "
        "(`benchmarks/agent_text.py`; `python -m benchmarks.run --only agent-text`): a recall of 5 hits "
        f"(`{QUERY}`) and the `prepare` block for a turn. Memory text is each hit's content and summary; "
        "the rest is what the format costs.",
        "",
        "| | before | now |",
        "|---|---|---|",
    ]
    if before:
        br, bp = before["recall"], before["prepare"]
        out += [
            f"| recall, 5 hits: characters of text | {br['chars']:,} | {r['chars']:,} |",
            f"| of which memory text | {br['memory_chars']:,} | {r['memory_chars']:,} |",
            f"| per hit beyond its memory text | {br['per_hit_overhead']:,.0f} | {r['per_hit_overhead']:,.0f} |",
            f"| `prepare` block: characters | {bp['chars']:,} | {p['chars']:,} |",
            f"| `prepare` lines that say when their memory was written | {bp['dated']} of {bp['memories']} | "
            f"{p['dated']} of {p['memories']} |",
        ]
    out += [
        "",
        "The target is at most 160 characters a hit beyond its memory text. The `prepare` block grows by "
        "the date on each line (12 characters), so that of two memories that disagree a model can tell the newer.",
    ]
    # Indented, not fenced: the block's own "## " heading must not end this section (replace_section).
    out += ["", "The recall's text now:", ""] + [f"    {line}" for line in r["text"].splitlines()]
    out += ["", "The `prepare` block:", ""] + [f"    {line}" for line in p["text"].splitlines()] + [""]
    return out


def main(output: Path, sizes: list[int]) -> None:
    """``python -m benchmarks.run --only agent-text [--output FILE]``: this part alone, its section replaced."""
    result = run()
    log(json.dumps({k: {n: v for n, v in part.items() if n != "text"} for k, part in result.items()}))
    write_section(output, render(result))
    log(f"wrote the {SECTION[3:]} section of {output}")


if __name__ == "__main__":  # the figures alone, as JSON (how BEFORE was measured on the older code)
    print(json.dumps(run(), indent=1))
