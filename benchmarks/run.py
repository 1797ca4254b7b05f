"""One command for every benchmark: `python -m benchmarks.run [--quick]` (or `make bench`).

Runs the quality benchmarks on ../shared/data (keyword, dense, hybrid), the ingest-with-embedding
comparison, the speed benchmarks at 10k and 100k synthetic memories (10k only with --quick), the PostgreSQL
backend beside SQLite and LangGraph's PostgresStore at the same sizes (postgres.py; ``--only postgres`` runs it
alone and replaces only its section), a role bound to one scope writing beside the owner (bound_roles.py; ``--only
bound-roles``), the web inspector's pages at the same sizes (inspector.py; ``--only
inspector``), one million memories (million.py; not with --quick), what an agent reads of a recall and of a
``prepare`` block (agent_text.py; ``--only agent-text``), and each other part that has its own section alone
as well (``--only quality``, ``conversation``, ``limits``, ``hooks``, ``curation``, ``agent-questions``,
``catch-up``, ``graph-themes``, ``curation-cost``, ``models``: the optional e5 model beside the bundled one on every collection;
``triggers``: ``prepare`` and ``recall_when`` at 20,000 memories x 32 phrases, beside the code of
``PERSEUS_BEFORE_TREE`` when set; ``--only against [--ref REF]`` times warm recall beside an earlier commit's, against.py), and
writes the figures to docs/benchmarks.md with the machine, versions and date, and each target beside
the figure it judges. Without the collections (see ``quality.data_dir``) it stops at once with one line
naming the missing one. Embeddings of the corpora are cached in benchmarks/.cache (keyed by
model identity and text hash): the first full run embeds about 110k texts (some 15 minutes on two
cores), reruns take minutes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perseus_vault_core.recall.pipeline import DENSE_DEPTH, MIN_POOL, SHORTLIST_PER_POOL

from . import (
    against,
    agent_questions,
    agent_text,
    bound_roles,
    catch_up,
    conversation,
    curation,
    curation_cost,
    graph_themes,
    graphrag,
    hooks,
    inspector,
    limits,
    mcp,
    memory_files,
    million,
    models,
    peers,
    plots,
    postgres,
    quality,
    speed,
    triggers,
)
from .report import ROOT, commit, fmt, log, pp, verdict, write_section
from .speed import byte_compile
from .vector_cache import cached_model

REPORT = ROOT / "docs" / "benchmarks.md"


def machine() -> dict[str, str]:
    import numpy
    import sqlite_vec

    from perseus_vault_core.storage.sqlite.connection import choose_driver

    driver = choose_driver()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        if names:
            cpu = f"{names[0]} x {len(names)}"
    except OSError:
        pass
    import onnxruntime

    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "onnxruntime": onnxruntime.__version__,
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": platform.python_version(),
        "sqlite": f"{driver.sqlite_version} ({driver.name})",
        "sqlite-vec": sqlite_vec.__version__ if hasattr(sqlite_vec, "__version__") else "?",
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "memory": _memory_gb(),
        "commit": commit(),
        "peers": ", ".join(
            f"{p} {_version(p)}"
            for p in (
                "langgraph",
                "langgraph-checkpoint-sqlite",
                "langgraph-checkpoint-postgres",
                "chromadb",
                "llama-index-core",
                "bm25s",
                "rank-bm25",
                "nltk",
                "matplotlib",
            )
        ),
    }


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _memory_gb() -> str:
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            kb = int(next(line for line in handle if line.startswith("MemTotal")).split()[1])
        return f"{kb / 1024 / 1024:.1f} GiB"
    except (OSError, StopIteration, ValueError):
        return "?"


def where_rows(sizes: list[dict[str, Any]]) -> list[str]:
    """Recall with a ``where`` filter on body fields (speed.filtered_recall), beside the same queries unfiltered."""
    runs = [s for s in sizes if "recall_where" in s]
    if not runs:
        return []
    out = [
        "",
        "Recall with a `where` filter on body fields (docs/filters.md): each memory carries a priority 0-4 and"
        " one of 1,000 projects; `prio >= 1` keeps four memories in five, `project = p042` one in 1,000 (the"
        " filter's answers are remembered after its first use), and the last column asks a project not asked"
        " before on every call, so each pays the pass over the heads a filter that keeps few costs the first"
        " time. 100 queries, no reinforcement, interleaved with the same queries unfiltered.",
        "",
        "| entities | mode | no filter p50 / p95 | keeps 4 in 5 | keeps 1 in 1,000 | keeps 1 in 1,000, a new filter each call |",
        "|---|---|---|---|---|---|",
    ]
    for s in runs:
        for mode, label in (("fts5", "keyword"), ("dense", "dense"), ("hybrid", "hybrid")):
            w = s["recall_where"][mode]
            out.append(
                f"| {s['entities']:,} | {label} | {pp(w['none'])} | {pp(w['most'])} | {pp(w['few'])} | "
                f"{pp(w['few_new'])} |"
            )
    return out


def render_writes(sizes: list[dict[str, Any]], big: dict[str, Any] | None) -> list[str]:
    """One write at every size: the figure that says whether writes stay incremental as the store grows."""
    from .speed import WRITES

    rows = [(s["entities"], s["writes"]) for s in sizes if "writes" in s]
    if big is not None and "writes" in big["reader"]:
        rows.append((big["entities"], big["reader"]["writes"]))
    if not rows:
        return []
    out = [
        "## Writes as the store grows",
        "",
        f"{WRITES} new memories written one at a time (`remember`, each with its vector given, so the model's time"
        " is left out) into the benchmark's vault of each size, in a process whose saved indexes are open; each"
        " write is followed by a keyword recall, which first brings both indexes up to that write (the"
        " indexes' share of a write's cost lands there). Snapshots are re-saved in the background as usual"
        " (every 1,000 log entries, or a hundredth of the rows). See `write_cost` in `benchmarks/speed.py`.",
        "",
        "| entities | write p50 / p95 | keyword recall right after it, p50 / p95 | answered by the index |",
        "|---|---|---|---|",
    ]
    for n, w in rows:
        out.append(
            f"| {n:,} | {pp(w['write'])} ms | {pp(w['recall_after'])} ms | {'yes' if w['from_index'] else '**no**'} |"
        )
    if len(rows) > 1:
        (n0, w0), (n1, w1) = rows[0], rows[-1]
        out += [
            "",
            f"At {n1:,} a write's p50 is {w1['write']['p50'] / w0['write']['p50']:.2f}x its p50 at {n0:,},"
            f" and the recall right after it {w1['recall_after']['p50'] / w0['recall_after']['p50']:.2f}x"
            f" ({n1 // n0:,}x the memories).",
        ]
    return out + [""]


def render_quality(qual: list[dict[str, Any]]) -> list[str]:
    """The quality section: each collection's figures per mode, then the targets they are held to."""
    out = ["## Quality (BEIR collections in `../shared/data`, test split)", ""]
    out += [
        "| collection | docs | queries | mode | nDCG@10 | R@10 | R@100 | MRR@10 | reference nDCG@10 | query ms (mean) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for q in qual:
        out.append(
            f"| {q['collection']} | {q['docs']:,} | {int(q['queries'])} | {q['mode']} | {q['ndcg@10']:.4f} | {q['r@10']:.4f} | "
            f"{q['r@100']:.4f} | {q['mrr@10']:.4f} | {q['reference']} | {fmt(q['query_ms'])} |"
        )
    out += [
        "",
        "Each document is remembered with its title as `summary` and its text as `content` (the bundled model embeds"
        " both, as BEIR does); each query is one `recall(query, mode=..., limit=100, reinforce=False)`. Metrics follow"
        " BEIR / pytrec_eval (linear gain, log2 discount, ideal DCG over the judged documents). Hybrid uses the default"
        " fusion (the keyword score and the cosine, each arm weighed by how far it reaches for the query,"
        " docs/recall.md#hybrid-fusion).",
        "",
    ]
    by = {(q["collection"], q["mode"]): q["ndcg@10"] for q in qual}
    out += ["### Quality targets", "", "| target | figure | verdict |", "|---|---|---|"]
    if ("scifact", "fts5") in by:
        out.append(
            f"| SciFact keyword nDCG@10 | {by[('scifact', 'fts5')]:.4f} | {verdict(by[('scifact', 'fts5')], 0.68, True, '')} |"
        )
    if ("scifact", "dense") in by:
        gap = abs(by[("scifact", "dense")] - 0.645)
        out.append(
            f"| SciFact dense reproduces MiniLM's 0.645 (within 0.005) | {by[('scifact', 'dense')]:.4f} | "
            f"{'met' if gap <= 0.005 else '**MISSED** by ' + format(gap - 0.005, '.4f')} |"
        )
    if ("scifact", "hybrid") in by:
        out.append(
            f"| SciFact hybrid nDCG@10 | {by[('scifact', 'hybrid')]:.4f} | {verdict(by[('scifact', 'hybrid')], 0.72, True, '')} |"
        )
    for name, label, target in (("scifact", "SciFact", 0.74), ("cranfield", "Cranfield", 0.42)):
        if (name, "hybrid") in by:  # the development targets of the recall that generalises (docs/recall.md)
            out.append(
                f"| {label} hybrid nDCG@10, development target | {by[(name, 'hybrid')]:.4f} | "
                f"{verdict(by[(name, 'hybrid')], target, True, '')} |"
            )
    for name in sorted({q["collection"] for q in qual}):
        arms = [by[(name, m)] for m in ("fts5", "dense") if (name, m) in by]
        if (name, "hybrid") in by and arms:
            out.append(
                f"| {name}: hybrid at or above the best single arm | {by[(name, 'hybrid')]:.4f} vs {max(arms):.4f} | "
                f"{verdict(by[(name, 'hybrid')], max(arms), True, '')} |"
            )
    out.append("")
    return out


def render(
    info: dict[str, str],
    sizes: list[dict[str, Any]],
    qual: list[dict[str, Any]],
    ingest: dict[str, float],
    graph: dict[str, Any] | None = None,
    mem: dict[str, Any] | None = None,
    server: dict[str, Any] | None = None,
) -> str:
    out = [
        "# Benchmarks",
        "",
        "Generated by `python -m benchmarks.run` (`make bench`); every figure below comes from that run.",
        "",
    ]
    out += ["## Machine", "", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in info.items()] + [""]

    out += render_quality(qual)

    out += ["## Speed (synthetic agent memories, 18-36 words)", ""]
    out += [
        "Memories come from `benchmarks/synthetic.py` (decisions, incidents, preferences about systems and people,"
        " Zipf-skewed vocabulary, 4 agents); queries are agent-style questions over the same vocabulary, stopwords"
        " included. Latencies are wall-clock milliseconds per call through the public `Vault` API, after 10 warm-up"
        " calls, with reinforcement written (unless noted). Dense and hybrid figures include embedding the query with"
        " the bundled model (ONNX Runtime, 2 threads). Vectors of the stored memories come from the benchmark's vector"
        " cache (the embedding cost of ingest is measured on its own, below).",
        "",
        "| entities | keyword p50 / p95 | dense p50 / p95 | hybrid p50 / p95 | hybrid, one agent | hybrid right after a write | keyword, no reinforcement | keyword, every word scored afresh | query embedding | file MB (with vectors) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sizes:
        out.append(
            f"| {s['entities']:,} | {pp(s['recall_fts5'])} | {pp(s['recall_dense'])} | {pp(s['recall_hybrid'])} | "
            f"{pp(s['recall_hybrid_agent_filter'])} | {pp(s['recall_hybrid_after_write'])} | "
            f"{pp(s['recall_fts5_no_reinforce'])} | {pp(s['recall_fts5_words_afresh'])} | {pp(s['embed_query'])} | "
            f"{fmt(s['db_mb'], 1)} |"
        )
    out += where_rows(sizes)
    out += [
        "",
        "| entities | import / s, no embeddings | import / s, cached vectors | as_of p50 / p95 | scan page of 100 p50 / p95 | history p50 / p95 | keyword index build | vector index build | keyword by SQL alone | dense by SQL alone | cold start to first dense answer | peak memory |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sizes:
        out.append(
            f"| {s['entities']:,} | {fmt(s['import_per_s'], 0)} | {fmt(s['import_cached_vectors_per_s'], 0)} | {pp(s['as_of'])} | "
            f"{pp(s['scan_page_100'])} | {pp(s['history'])} | {fmt(s['keyword_index_build_s'])} s | "
            f"{fmt(s['vector_index_build_s'])} s | {pp(s['recall_fts5_sql'])} | {pp(s['recall_dense_sql'])} | "
            f"{fmt(s['cold_start']['first_answer_s_p50'])} s ({fmt(s['cold_start']['process_s_p50'])} s process) | "
            f"{fmt(s['peak_memory_mb'], 0)} MB |"
        )
    out += [
        "",
        '"By SQL alone" is how a fresh process answers before its in-memory indexes exist (a one-shot CLI call,'
        " or the first recall of a server): FTS5 scores every row matching any query word, and the dense SQL path"
        " computes `vec_distance_cosine` over every visible row. After the first recall the vault builds both"
        " in-memory indexes in the background (the build columns) and answers from them with the same results"
        " (tested). The keyword index keeps each word's BM25 shares until the next write"
        ' changes them (indexes/shares.py), so a word asked again costs less; "every word scored afresh" is the'
        ' same queries with nothing kept, as the first query after a write runs. "Cold start" is a new Python process opening the vault, loading the model and answering one'
        ' dense query by SQL (median of 3); "peak memory" is a process that builds both indexes and answers every'
        " mode.",
        "",
    ]
    out += [
        "A new process on a vault whose in-memory indexes were saved (indexes/snapshot.py) opens them instead of"
        " building: its first recall, timed from an open vault (p50 of 5 processes; the dense one is given its"
        " query vector). Right after the save there is nothing to replay; after 300 writes (900 log entries, below"
        " the re-save threshold) the new process first replays them from the change log: the vector index stores"
        " each new vector; the keyword index queues the new versions, and its first answer scans the queue for the"
        " query's own words (docs/recall.md). The package's modules are byte-compiled before any new process"
        " starts (`byte_compile`), as an installed wheel's are; where `PYTHONDONTWRITEBYTECODE` is set and they"
        " are not, every new process compiles them again (about 0.25 s more here).",
        "",
        "| entities | snapshot | import of the package | opening the vault | first keyword recall | first dense recall | from the snapshot |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in sizes:
        for label, key in (("just saved", "first_recall_saved"), ("300 writes since", "first_recall")):
            f = s[key]
            out.append(
                f"| {s['entities']:,} | {label} | {fmt(f['import_s'])} s | {fmt(f['open_s'] * 1000)} ms | "
                f"{fmt(f['keyword_ms'])} ms | {fmt(f['dense_ms'])} ms | {'yes' if f['from_snapshot'] else '**no**'} |"
            )
    out.append("")
    shared = [s for s in sizes if s.get("shared_readers")]
    if shared:
        out += [
            "Reader processes on one vault, each answering 20 keyword and 20 dense recalls (query vectors given)"
            " from the saved indexes, all held open while their proportional set size (PSS: a page shared by k"
            " processes counts 1/k in each) is read from `/proc/<pid>/smaps_rollup`. The indexes are mapped"
            " copy-on-write, so their pages are shared; the rest of each process (Python, numpy, pydantic,"
            " SQLite's cache) is its own.",
            "",
            "| entities | one reader alone | readers at once | their summed PSS | ratio to one | from the snapshot |",
            "|---|---|---|---|---|---|",
        ]
        for s in shared:
            r = s["shared_readers"]
            out.append(
                f"| {s['entities']:,} | {fmt(r['one_mb'], 0)} MB | {r['readers']} | {fmt(r['sum_mb'], 0)} MB | "
                f"{r['ratio']:.2f}x | {'yes' if r['from_snapshot'] else '**no**'} |"
            )
        out.append("")
    if ingest:
        out += [
            "### Ingest with embedding",
            "",
            f"On {int(ingest['texts']):,} new memories: the bare model embeds {fmt(ingest['bare_per_s'], 0)} texts/s;"
            f" the vault ingests {fmt(ingest['vault_per_s'], 0)} memories/s, embedding included"
            f" ({ingest['ratio'] * 100:.0f}% of the bare model).",
            "",
        ]
    big = max(sizes, key=lambda s: s["entities"])
    full = big["entities"] >= 100_000
    n = f"{big['entities']:,}"
    out += ["### Speed targets", "", "| target | figure | verdict |", "|---|---|---|"]

    def at_100k(label: str, value: float, target: float, unit: str, higher: bool = False) -> None:
        text = verdict(value, target, higher, unit) if full else "not run (quick mode)"
        out.append(f"| {label} | {fmt(value)} {unit} at {n} | {text} |")

    at_100k("keyword recall p50 at 100k", big["recall_fts5"]["p50"], 10, "ms")
    at_100k("dense recall p50 at 100k, query embedding included", big["recall_dense"]["p50"], 25, "ms")
    at_100k("hybrid recall p50 at 100k, query embedding included", big["recall_hybrid"]["p50"], 30, "ms")
    at_100k("file size at 100k with vectors", big["db_mb"], 400, "MB")
    at_100k("peak memory of a process answering recalls at 100k", big["peak_memory_mb"], 1024, "MB")
    low = min(s["import_per_s"] for s in sizes)
    out.append(
        f"| bulk import without embeddings | {fmt(low, 0)} / s (slowest size) | {verdict(low, 5000, True, '/s')} |"
    )
    if ingest:
        out.append(
            f"| ingest with embedding, share of the bare model's throughput | {ingest['ratio'] * 100:.0f}% | "
            f"{verdict(ingest['ratio'] * 100, 90, True, '%')} |"
        )
    worst_as_of = max(s["as_of"]["p50"] for s in sizes)
    out.append(f"| as_of lookup | p50 {fmt(worst_as_of, 3)} ms | {verdict(worst_as_of, 1, False, 'ms')} |")
    worst_scan = max(s["scan_page_100"]["p50"] for s in sizes)
    out.append(f"| 100-item scan page | p50 {fmt(worst_scan)} ms | {verdict(worst_scan, 5, False, 'ms')} |")
    out.append(
        f"| cold start to the first dense answer | {fmt(big['cold_start']['first_answer_s_p50'])} s at {n} | reported (no target) |"
    )
    if "prepare" in big:
        at_100k(
            "`perseus-vault prepare` in a new process, with the model, p50 of 5",
            big["prepare"]["p50_s"],
            1.0,
            "s",
        )
        at_100k(
            "`perseus-vault prepare` in a new process, keyword-only, p50 of 5",
            big["prepare_keyword"]["p50_s"],
            0.35,
            "s",
        )
    if big.get("shared_readers"):
        r = big["shared_readers"]
        at_100k(f"{r['readers']} readers' summed PSS, as a multiple of one reader's", r["ratio"], 2, "x")
    for label, key in (
        ("snapshot just saved", "first_recall_saved"),
        ("300 writes to replay", "first_recall"),
    ):
        at_100k(
            f"a new process's first keyword recall after opening, {label}", big[key]["keyword_ms"], 15, "ms"
        )
        at_100k(
            f"a new process's first dense recall (query vector given), {label}",
            big[key]["dense_ms"],
            20,
            "ms",
        )
    for s in sizes:
        out.append(
            f"| dense recall@10 against an exact scan, {s['entities']:,} entities | "
            f"{s['dense_recall_at_10_vs_exact']:.3f} | reported (sign-bit pre-filter, depth {DENSE_DEPTH:,}, "
            f"shortlist {SHORTLIST_PER_POOL * MIN_POOL:,}) |"
        )
    out.append("")
    if graph:
        out += render_graph(graph)
    if mem:
        out += render_memory(mem)
    if server:
        out += render_mcp(server)
    return "\n".join(out)


def render_mcp(s: dict[str, Any]) -> list[str]:
    return [
        "## MCP round trip",
        "",
        f"Keyword recall on {s['entities']:,} synthetic memories (keyword-only store), the same queries called"
        " directly through `Vault.recall` and through `perseus-vault serve` (a subprocess) via `VaultClient`"
        " (the official SDK's client), each warmed first. Two overheads: the MCP p50 minus the direct p50"
        " (back-to-back direct calls run on a hot CPU, which a server waiting on its pipe never is), and,"
        " per call, the round trip minus the engine's own time in the server (reported in each result's"
        " `_meta`), the target's measure. See `benchmarks/mcp.py`.",
        "",
        "| path | p50 / p95 ms | p50 - direct p50 | over the engine's own time, p50 / p95 |",
        "|---|---|---|---|",
        f"| direct `Vault.recall` | {pp(s['direct_ms'])} | - | - |",
        f"| MCP over stdio | {pp(s['stdio_ms'])} | {fmt(s['stdio_overhead_ms'])} ms | "
        f"{pp(s['stdio_over_engine_ms'])} ms |",
        f"| MCP over streamable HTTP (bearer token) | {pp(s['http_ms'])} | {fmt(s['http_overhead_ms'])} ms | "
        f"{pp(s['http_over_engine_ms'])} ms |",
        "",
        "### MCP target",
        "",
        "| target | figure | verdict |",
        "|---|---|---|",
        f"| stdio round trip over the engine's own time, recall p50 | {fmt(s['stdio_over_engine_ms']['p50'])} ms | "
        f"{verdict(s['stdio_over_engine_ms']['p50'], 5, False, 'ms')} |",
        "",
    ] + render_surface(s["surface"])


def render_surface(t: dict[str, Any]) -> list[str]:
    core, every, before = t["core"], t["all"], t["before"]
    out = [
        "### What a model reads in every session",
        "",
        "Characters of the listed tools' names, descriptions and input schemas (each schema as `json.dumps`"
        " writes it), which an MCP client hands the model in every session (about 4 characters a token). The"
        " default profile lists every documented way to recall and the writes an agent makes; `--tools all`"
        " lists every verb; rarely needed knobs sit inside each tool's `options` argument, said in brief. See"
        " `benchmarks/mcp.py` and docs/mcp.md.",
        "",
        "| tools listed | tools | characters | vs. before profiles |",
        "|---|---|---|---|",
        f"| before profiles and options (every verb, every knob flat) | {before['tools']} | {before['chars']:,} | 1.00x |",
        f"| `core` before it served every documented mode | {t['core_before']['tools']} | "
        f"{t['core_before']['chars']:,} | {t['core_before']['chars'] / before['chars']:.2f}x |",
        f"| `core` (default) | {core['tools']} | {core['chars']:,} | {core['chars'] / before['chars']:.2f}x |",
        f"| `all` | {every['tools']} | {every['chars']:,} | {every['chars'] / before['chars']:.2f}x |",
        "",
        "| target | figure | verdict |",
        "|---|---|---|",
        f"| default profile at most 20,000 characters | {core['chars']:,} | {verdict(core['chars'], 20_000, False, 'characters')} |",
        "",
        "| `core` tool | characters |",
        "|---|---|",
    ]
    out += [
        f"| `{name}` | {size:,} |" for name, size in sorted(core["per_tool"].items(), key=lambda kv: -kv[1])
    ]
    return out + [""]


def render_memory(m: dict[str, Any]) -> list[str]:
    return [
        "## Memory files (10k entries)",
        "",
        f"{m['entries']:,} dated entries in 20 markdown files of 5 sections (the speed benchmark's synthetic"
        " sentences, dates 2015-2025), imported with `memory_import`; questions are the speed benchmark's"
        " agent-style queries. See `benchmarks/memory_files.py`.",
        "",
        "| measure | figure |",
        "|---|---|",
        f"| import of the folder (vectors from the cache) | {fmt(m['import_s'])} s |",
        f"| re-import of the unchanged folder | {fmt(m['reimport_s'])} s ({m['reimport_written']} entries written) |",
        f"| memory_recall p50 / p95 ({m['mode']}, query embedding included) | {pp(m['hybrid_ms'])} ms |",
        f"| memory_recall with `file` p50 / p95 | {pp(m['hybrid_file_ms'])} ms |",
        f"| memory_recall on a keyword-only vault p50 / p95 | {pp(m['keyword_ms'])} ms |",
        f"| matched entries per question (mean, first 20) | {m['mean_total']:.1f} |",
        "",
        "### Memory-file target",
        "",
        "| target | figure | verdict |",
        "|---|---|---|",
        f"| memory_recall p50 over 10k entries | {fmt(m['hybrid_ms']['p50'])} ms | {verdict(m['hybrid_ms']['p50'], 50, False, 'ms')} |",
        "",
    ]


def render_graph(g: dict[str, Any]) -> list[str]:
    p = g["prepare"]
    out = [
        "## GraphRAG and proactive recall (10k entities, 50k links)",
        "",
        "The speed benchmark's 10,000 synthetic memories in planted clusters of 50 (each in one agent's scope),"
        " joined by 50,000 links: 90% inside a cluster, 10% between two clusters of the same agent; one memory in"
        " ten has a trigger phrase. See `benchmarks/graphrag.py`.",
        "",
        "| measure | figure |",
        "|---|---|",
        f"| graph | {g['nodes']:,} entities, {g['edges']:,} distinct linked pairs |",
        f"| communities, label propagation, fresh vault (nothing memoised), p50 of 3 | {fmt(g['communities_ms']['p50'] / 1000)} s"
        f" ({g['communities']} communities; {g['planted_recovered'] * 100:.0f}% of planted clusters found exactly) |",
        f"| communities, modularity (Louvain), fresh vault | {fmt(g['modularity_ms'] / 1000)} s ({g['modularity_communities']}"
        f" communities; {g['modularity_planted_recovered'] * 100:.0f}% of planted clusters found exactly) |",
        f"| communities again, graph unchanged, p50 / p95 | {pp(g['communities_unchanged_ms'])} ms |",
        f"| communities after one new link (its component clustered again) | {fmt(g['communities_after_link_ms'] / 1000)} s |",
        f"| global_recall, first call (writes {g['summaries_written']} community summaries; their vectors are their members' means) | {fmt(g['global_recall_first_s'])} s |",
        f"| global_recall p50 / p95 ({g['global_recall_mode']}, query embedding included) | {pp(g['global_recall_ms'])} ms |",
        *(
            [
                f"| traverse depth 2 (outgoing), p50 / p95 over {g['traverse']['starts']} starts | {pp(g['traverse']['vault_ms'])} ms;"
                f" {g['traverse']['peer']} on the same links, interleaved: {pp(g['traverse']['peer_ms'])} ms"
                f" (**{g['traverse']['ratio_p50']:.1f}x** ours at p50) |"
            ]
            if "traverse" in g
            else []
        ),
        f"| `perseus-vault prepare` in a new process, wall time, p50 of {p['runs']} | {fmt(p['p50_s'])} s"
        f" (first run, storing trigger vectors: {fmt(p['first_s'])} s; block {p['chars']} chars, {p['triggered']} triggered) |",
        "",
        "### GraphRAG targets",
        "",
        "| target | figure | verdict |",
        "|---|---|---|",
        f"| communities on 10k entities / 50k links | {fmt(g['communities_ms']['p50'] / 1000)} s | "
        f"{verdict(g['communities_ms']['p50'] / 1000, 5, False, 's')} |",
        f"| global_recall p50 on it | {fmt(g['global_recall_ms']['p50'])} ms | {verdict(g['global_recall_ms']['p50'], 100, False, 'ms')} |",
        f"| first global_recall on a fresh 10k graph | {fmt(g['global_recall_first_s'])} s | "
        f"{verdict(g['global_recall_first_s'], 3, False, 's')} |",
        f"| prepare in a fresh process on 10k, p50 of 5 | {fmt(p['p50_s'])} s | {verdict(p['p50_s'], 1.5, False, 's')} |",
        "",
    ]
    return out


ARM = {"fts5": "keyword", "dense": "dense", "hybrid": "hybrid"}


def _ratio(r: float) -> str:
    # Above 1: the peer is slower than the vault by that factor; below 1 the vault is behind.
    return f"**{r:.2f}x**" if r >= 1 else f"{r:.2f}x (vault behind)"


def render_peers(qual: list[dict[str, Any]], runs: list[dict[str, Any]], images: list[str]) -> list[str]:
    out = [
        "## Side by side with the stores a user would pick instead",
        "",
        "Same process, same run, same data and the same MiniLM vectors for every system (from the vector cache,"
        " keyed by model identity and text hash). Query vectors are computed before timing and handed to every"
        " system alike (the vault through an embedder that looks them up), so the latencies below exclude query"
        " embedding for everyone; add the speed section's query-embedding p50 for end to end. The vault is called"
        " with `reinforce=False` (peers write nothing on a read). Keyword peers tokenize with lowercase words,"
        " English stopwords and the Porter stemmer (nltk), as close to FTS5's porter tokenizer as they allow."
        ' LangGraph\'s SqliteStore (3.1.x) asks its embedder for the field serialized as JSON (`{"text": ...}`)'
        " where InMemoryStore asks for the text; the benchmark's embedder unwraps it so that SqliteStore too gets the"
        " same vectors (left as is, its recall@10 against an exact scan fell to about 0.63 on 2k memories)."
        " Chroma runs twice: as a user creates it (HNSW at its defaults, ef_search 100) and searching deep enough"
        " to reach the recall@10 against an exact scan that the vault's dense arm is held to, 0.99 (ef_search 800);"
        " the recall column shows what each reached. Both ask for ids only (`include=[]`); a third row queries the"
        " default collection with Chroma's default `include` (documents, metadatas, distances), the work the vault"
        " does on every recall, which returns its memories whole."
        " The hybrid peer is what a user would assemble: bm25s and Chroma fused by reciprocal rank (k=60, depth"
        " 100). Latency is interleaved: each query is answered by every system in turn, in an order shuffled anew"
        " for each query (seeded), so that no system always runs right after the same one (a system behind another"
        " that answered the same query finds that query's data warm). See `benchmarks/peers.py`.",
        "",
    ]
    if qual:
        out += [
            "### Quality per system",
            "",
            "| collection | system | compared arm | nDCG@10 | R@10 | R@100 | MRR@10 | nDCG@10 minus the vault's same arm |",
            "|---|---|---|---|---|---|---|---|",
        ]
        ours = {(r["collection"], r["arm"]): r["ndcg@10"] for r in qual if r["vault"]}
        for r in qual:
            delta = "-" if r["vault"] else f"{r['ndcg@10'] - ours[(r['collection'], r['arm'])]:+.4f}"
            name = f"**{r['system']}**" if r["vault"] else r["system"]
            out.append(
                f"| {r['collection']} | {name} | {ARM[r['arm']]} | {r['ndcg@10']:.4f} | {r['r@10']:.4f} | "
                f"{r['r@100']:.4f} | {r['mrr@10']:.4f} | {delta} |"
            )
        out.append("")
        for image in images:
            if image.startswith("img/recall_"):
                out += [f"![recall@k]({image})", ""]
    for run in runs:
        n = run["entities"]
        out += [
            f"### Latency at {n:,} synthetic memories (k = {run['k']}, interleaved)",
            "",
            "| system | arm | queries | p50 ms | p95 ms | peer p50 / vault p50 | peer p95 / vault p95 | dense recall@10 vs exact |"
            " ingest / s (vectors given) | disk MB |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in run["latency"]:
            built = run["build"].get(row["system"]) or run["build"].get("Perseus Vault") or {}
            if row["system"].startswith("Perseus Vault"):
                built = run["build"]["Perseus Vault"]
            ingest = fmt(built["ingest_per_s"], 0) if built.get("ingest_per_s") else "-"
            disk = (
                fmt(built["disk_mb"], 1)
                if built.get("disk_mb") is not None
                else "-"
                if row["arm"] == "hybrid"
                else "in memory"
            )
            name = f"**{row['system']}**" if row["system"].startswith("Perseus Vault") else row["system"]
            out.append(
                f"| {name} | {ARM[row['arm']]} | {row['queries']} | {fmt(row['p50'])} | {fmt(row['p95'])} | "
                f"{_ratio(row['ratio_p50']) if 'ratio_p50' in row else '-'} | "
                f"{_ratio(row['ratio_p95']) if 'ratio_p95' in row else '-'} | "
                f"{format(row['recall_vs_exact'], '.3f') if 'recall_vs_exact' in row else '-'} | {ingest} | {disk} |"
            )
        slow = sorted({(r["system"], r["queries"]) for r in run["latency"] if r["queries"] < run["queries"]})
        if slow:
            out += [
                "",
                "Fewer queries for the slow peers (the same first queries of the list, interleaved with the vault's,"
                " and their ratio is taken over those queries only): "
                + ", ".join(f"{s} {q}" for s, q in slow)
                + ".",
            ]
        out.append("")
    if runs:
        out += ["![p50 latency against store size](img/latency_by_size.png)", ""]
        top = max(runs, key=lambda r: r["entities"])
        out += [
            f"### Verdict at {top['entities']:,}"
            + (" (quick mode: 100k not run)" if top["entities"] < 100_000 else ""),
            "",
            "| claim | figure | verdict |",
            "|---|---|---|",
        ]
        for arm in ("fts5", "dense", "hybrid"):
            rows = [r for r in top["latency"] if r["arm"] == arm and "ratio_p50" in r]
            if rows:
                worst = min(rows, key=lambda r: r["ratio_p50"])
                ok = worst["ratio_p50"] >= 1
                out.append(
                    f"| vault {ARM[arm]} p50 ahead of every peer | closest: {worst['system']}, ratio {worst['ratio_p50']:.2f} |"
                    f" {'met' if ok else '**BEHIND** ' + worst['system'] + ' by ' + format(1 / worst['ratio_p50'], '.2f') + 'x (' + fmt(worst['p50']) + ' ms against our ' + fmt(worst['p50'] / worst['ratio_p50']) + ' ms)'} |"
                )
        deep = [
            r
            for r in top["latency"]
            if r["arm"] == "dense" and "ratio_p50" in r and r.get("recall_vs_exact", 0) >= 0.99
        ]
        if deep:  # the recall the vault's dense arm is held to: peers that reach it, compared at it
            worst = min(deep, key=lambda r: r["ratio_p50"])
            ok = worst["ratio_p50"] >= 1
            out.append(
                f"| vault dense p50 ahead of every dense peer with recall@10 at or above 0.99 | closest: {worst['system']}"
                f" (recall@10 {worst['recall_vs_exact']:.3f}), ratio {worst['ratio_p50']:.2f} |"
                f" {'met' if ok else '**BEHIND** by ' + format(1 / worst['ratio_p50'], '.2f') + 'x'} |"
            )
        whole = next(
            (r for r in top["latency"] if r["system"] == peers.ChromaDocuments.name and "ratio_p50" in r),
            None,
        )
        if whole:  # like for like: Chroma returning its documents, as every recall returns its memories
            out.append(
                f"| vault dense p50 ahead of Chroma at its defaults returning the documents, as the vault returns"
                f" its memories | ratio {whole['ratio_p50']:.2f} |"
                f" {'met' if whole['ratio_p50'] >= 1 else '**BEHIND** by ' + format(1 / whole['ratio_p50'], '.2f') + 'x'} |"
            )
        afresh = next((r for r in top["latency"] if r["system"].endswith("words scored afresh")), None)
        keyword_peers = [r for r in top["latency"] if r["arm"] == "fts5" and "ratio_p50" in r]
        if afresh and keyword_peers:
            best = min(keyword_peers, key=lambda r: r["p50"])
            ratio = best["p50"] / afresh["p50"]
            out.append(
                f"| vault keyword p50, every word scored afresh (no shares kept), against {best['system']} |"
                f" {fmt(afresh['p50'])} against {fmt(best['p50'])} ms, ratio {ratio:.2f} |"
                f" {'ahead' if ratio >= 1 else 'behind by ' + format(1 / ratio, '.2f') + 'x'} (reported, not a target) |"
            )
        for name in sorted({r["collection"] for r in qual}):
            mine = next(
                (r for r in qual if r["vault"] and r["collection"] == name and r["arm"] == "hybrid"), None
            )
            others = [r for r in qual if not r["vault"] and r["collection"] == name]
            if mine and others:
                best = max(others, key=lambda r: r["ndcg@10"])
                gap = mine["ndcg@10"] - best["ndcg@10"]
                out.append(
                    f"| {name}: vault hybrid nDCG@10 above every peer | {mine['ndcg@10']:.4f} vs {best['system']}"
                    f" {best['ndcg@10']:.4f} | {'met' if gap >= 0 else '**BEHIND** by ' + format(-gap, '.4f')} |"
                )
        out.append("")
    return out


def _part_alone(render_run: Callable[[], list[str]]) -> Callable[[Path, list[int]], None]:
    """An ``--only`` part that has no ``main`` of its own: run and render it, its section of the report
    replaced, the rest kept."""

    def part(output: Path, sizes: list[int]) -> None:
        section = render_run()
        write_section(output, section)
        log(f"wrote the {section[0].lstrip('# ')} section of {output}")

    return part


_quality = _part_alone(lambda: render_quality(quality.run(list(quality.COLLECTIONS))))
_conversation = _part_alone(lambda: conversation.render(conversation.run(cached_model())))
_agent_questions = _part_alone(lambda: agent_questions.render(agent_questions.run(cached_model())))
_graph_themes = _part_alone(lambda: graph_themes.render(graph_themes.run(cached_model())))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run every benchmark and write docs/benchmarks.md")
    parser.add_argument("--quick", action="store_true", help="10k entities only (minutes on a laptop)")
    parser.add_argument(
        "--sizes", type=int, nargs="*", help="override the store sizes of the speed and peer runs"
    )
    parser.add_argument("--no-million", action="store_true", help="skip the 1M run (the full mode runs it)")
    parser.add_argument("--output", type=Path, default=REPORT)
    parser.add_argument(
        "--only",
        choices=[
            "postgres",
            "bound-roles",
            "inspector",
            "limits",
            "agent-text",
            "hooks",
            "curation",
            "agent-questions",
            "quality",
            "conversation",
            "against",
            "catch-up",
            "graph-themes",
            "triggers",
            "curation-cost",
            "models",
        ],
        help="run only this part; replace only its section of the report",
    )
    parser.add_argument(
        "--ref",
        help="--only against: the commit to time beside this code (default: the one the "
        "Speed section's full run measured)",
    )
    args = parser.parse_args(argv)
    if args.ref is not None and args.only != "against":
        parser.error("--ref goes with --only against")
    needed = {
        None: [*quality.COLLECTIONS, conversation.NAME],
        "quality": list(quality.COLLECTIONS),
        "conversation": [conversation.NAME],
        "models": [*quality.COLLECTIONS, conversation.NAME],
    }
    try:
        if (
            args.only in needed
        ):  # fail at once when a collection is missing (--only postgres skips its quality instead)
            quality.data_dir(needed[args.only])
    except quality.MissingData as error:
        raise SystemExit(f"benchmarks.run: {error}") from None
    sizes = args.sizes or ([10_000] if args.quick else [10_000, 100_000])
    if (
        args.only
    ):  # this part alone (postgres.py, inspector.py): its section of the report replaced, the rest kept
        if args.only == "hooks" and not args.sizes:  # 2,000 and 100,000 memories (and 1M in the full run)
            sizes = [hooks.REAL] if args.quick else [hooks.REAL, 100_000]
        if args.only == "curation-cost" and not args.sizes:
            sizes = [curation_cost.SIZE]
        if args.only == "against":
            return against.main(args.output, args.sizes or [10_000 if args.quick else against.SIZE], args.ref)
        return {
            "postgres": postgres.main,
            "bound-roles": bound_roles.main,
            "inspector": inspector.main,
            "limits": limits.main,
            "hooks": hooks.main,
            "agent-text": agent_text.main,
            "curation": curation.main,
            "agent-questions": _agent_questions,
            "quality": _quality,
            "conversation": _conversation,
            "catch-up": catch_up.main,
            "triggers": triggers.main,
            "graph-themes": _graph_themes,
            "curation-cost": curation_cost.main,
            "models": models.main,
        }[args.only](args.output, sizes)
    byte_compile()
    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    info = machine()
    model = load()
    cached = CachingEmbedder(model)
    log("quality ...")
    qual = quality.run(list(quality.COLLECTIONS))
    for row in qual:
        log(json.dumps(row))
    log("peers quality (same vectors) ...")
    peer_qual = peers.quality(list(quality.COLLECTIONS), cached, log=log)
    for row in peer_qual:
        log(json.dumps({k: v for k, v in row.items() if k != "recall_curve"}))
    log("ingest with embedding ...")
    ingest = speed.embedding_ingest(model)
    log(json.dumps(ingest))
    results, peer_runs = [], []

    def at_size(n: int) -> None:
        log(f"speed at {n:,} entities ...")
        results.append(speed.run_size(n, model, cached))
        log(json.dumps(results[-1]))
        log(f"peers at {n:,} entities ...")
        peer_runs.append(peers.speed(n, model, cached, log=log))
        log(json.dumps(peer_runs[-1]))

    for n in sizes:
        at_size(n)
    pg = postgres.run(sizes, model, cached, log=log)
    roles = bound_roles.run(sizes, cached, log=log)
    pages = inspector.run(sizes, cached, log=log)
    big = None
    if args.quick or args.no_million:
        million_report = [
            "## One million memories",
            "",
            "Not run (" + ("quick mode" if args.quick else "--no-million") + "; the full mode runs it).",
            "",
        ]
    else:
        log("1M memories (import, indexes, recall, a new process, memory) ...")
        started = dt.datetime.now().timestamp()
        big = million.run(model, extra=hooks.at_million)
        log(json.dumps(big))
        million_report = million.render(big, (dt.datetime.now().timestamp() - started) / 60)
    log("graphrag, traverse and prepare at 10,000 entities ...")
    graph = graphrag.run(model, cached)
    log(json.dumps(graph))
    log("memory files at 10,000 entries ...")
    mem = memory_files.run(model, cached)
    log(json.dumps(mem))
    log("memory-file recall on the labelled folder ...")
    labelled = memory_files.recall_quality(model)
    log(json.dumps({k: v for k, v in labelled.items() if k != "questions"}))
    log("conversational memory (locomo-dev) ...")
    chats = conversation.run(cached)
    log(
        json.dumps(
            {p: {m: round(s["r@10"], 4) for m, s in modes.items()} for p, modes in chats["paths"].items()}
        )
    )
    log("MCP round trip ...")
    server = mcp.run()
    log(json.dumps(server))
    log("per-call limits at their maximum ...")
    at_limits = limits.run(log=log)
    log("new processes: hooks, the resident helper, start-up ...")
    at_hooks = hooks.run([hooks.REAL] if args.quick else [hooks.REAL, 100_000], log=log)
    if big is not None and "extra" in big:
        at_hooks["sizes"].append(big["extra"])  # the same measures on the 1M vault (million.py)
    log("what an agent reads ...")
    reads = agent_text.run()
    log("agent questions on the team memory ...")
    asked = agent_questions.run(cached)
    log("graphrag on stores nobody linked ...")
    themes = graph_themes.run(cached)
    log("curation on the labelled set, and the similar-memory report's cost ...")
    curated = curation.run(cached, log=log, sizes=(10_000,) if args.quick else (10_000, 100_000))
    log("a holder catching up with another process's writes ...")
    caught = [
        catch_up.run(n, cached, log=log) for n in (catch_up.SIZES[:1] if args.quick else catch_up.SIZES)
    ]
    images = [f"img/{p.name}" for p in plots.recall_curves(peer_qual)] + [
        f"img/{plots.latency_by_size(peer_runs).name}"
    ]
    report = render(info, results, qual, ingest, graph, mem, server)
    report += "\n" + "\n".join(conversation.render(chats) + memory_files.render_recall_quality(labelled))
    report += "\n" + "\n".join(
        render_peers(peer_qual, peer_runs, images)
        + postgres.render(pg)
        + bound_roles.render(roles)
        + inspector.render(pages)
        + million_report
        + render_writes(results, big)
        + limits.render(at_limits)
        + hooks.render(at_hooks)
        + agent_text.render(reads)
        + agent_questions.render(asked)
        + graph_themes.render(themes)
        + curation.render(curated)
        + catch_up.render(caught)
    )
    args.output.write_text(report + "\n", encoding="utf-8")
    log(f"wrote {args.output} and {', '.join(images)}")


if __name__ == "__main__":
    main()
