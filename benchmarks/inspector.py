"""The web inspector's pages at 10k and 100k memories: the server's time for each (target: at most 300 ms a
page on a 100,000-memory vault, docs/ui.md).

The store: the speed benchmark's synthetic memories (4 agents, vectors from the cache) linked as the
GraphRAG benchmark links them (clusters of 50, one link per memory, graphrag.build_store); then 2% of them
updated twice (their certainty, so they have history), 1% archived, 1% superseded, and a memory file of 500
dated entries. ``perseus-vault ui`` serves it in a process of its own (its in-memory indexes built first,
as a long-lived server builds them); every page is fetched over HTTP on loopback as a browser would open
it. The figure is the ``Server-Timing`` the inspector sends (from the request's arrival to the start of
its response, which is the whole page: pages are rendered before they are sent); the client's wall time
is beside it.

Each page is asked ``REQUESTS`` times with different memories, queries and filters, after its first
request, which is reported on its own ("first"): the pages whose answer the vault keeps (the link graph's
communities, clustered on the first call after a change; the hygiene report, computed in the background
and kept until the next write) pay for it there. The hygiene report's own computation time is given too.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from perseus_vault_core import Vault

from .graphrag import build_store
from .report import commit, log, write_section
from .speed import byte_compile
from .synthetic import queries

SECTION = "## Web inspector"
TARGET_MS = 300.0
REQUESTS = 30
ENTRIES = 500
Log = Callable[[str], None]


def _prepare(path: str, n: int, cached: Any) -> dict[str, Any]:
    """The store (see the module's docstring); returns the ids and instants the pages are asked about."""
    build_store(path, cached, n=n, links=n)
    rng = random.Random(17)
    with Vault(path, embedder=cached) as vault:
        ids = []
        page = vault.scan(limit=1000)
        while True:
            ids += [e.id for e in page.items]
            if not page.has_more:
                break
            page = vault.scan(cursor=page.next_cursor, limit=1000)
        before_changes = int(time.time() * 1000)
        time.sleep(0.01)
        changed = rng.sample(ids, n // 50)
        for round_ in (1, 2):
            batch = []
            for entity_id in changed:
                e = vault.get_entity(entity_id)
                batch.append(
                    {
                        "category": e.category,
                        "key": e.key,
                        "content": e.content,
                        "agent_id": e.agent_id,
                        "certainty": 0.5 + round_ / 10,
                    }
                )
            vault.remember_many(batch)
        rest = [i for i in ids if i not in set(changed)]
        for entity_id in rest[: n // 100]:
            vault.forget(entity_id)
        by_agent: dict[str | None, list[int]] = {}
        for entity_id in rest[
            n // 100 : n // 100 + n // 50
        ]:  # a memory is superseded by one of its own scope
            by_agent.setdefault(vault.get_entity(entity_id).agent_id, []).append(entity_id)
        olds = []
        for group in by_agent.values():
            for old, new in zip(group[::2], group[1::2]):
                vault.supersede(old, new)
                olds.append(old)
        hidden = set(rest[: n // 100]) | set(olds)  # archived or superseded: no walk starts there
        folder = Path(path).with_suffix("") / "About Me"
        folder.mkdir(parents=True)
        start = dt.date(2020, 1, 1)
        lines = ["# Journal", "", "## Work"] + [
            f"- {start + dt.timedelta(days=3 * i)}: note {i} on the {rng.choice(['billing', 'search', 'storage'])} "
            f"service and what we learned"
            for i in range(ENTRIES)
        ]
        (folder / "Journal.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        vault.memory_import(folder.parent)
        cursor, deep = vault.scan(limit=1000, status="active"), ""
        while cursor.has_more:  # a cursor near the end: browse's last pages cost what its first ones do
            deep, cursor = (
                cursor.next_cursor,
                vault.scan(cursor=cursor.next_cursor, limit=1000, status="active"),
            )
        started = time.perf_counter()
        report = vault.hygiene(agent_id="agent-0")
        hygiene_s = time.perf_counter() - started
    return {
        "ids": [i for i in ids if i not in hidden],
        "changed": changed,
        "before_changes": before_changes,
        "deep": deep,
        "hygiene_s": hygiene_s,
        "hygiene_scanned": report.scanned,
    }


def _pages(store: dict[str, Any], qs: list[str]) -> dict[str, list[str]]:
    """Each page's URLs: ``REQUESTS + 1`` of them (the first is the cold one)."""
    rng = random.Random(5)
    count = REQUESTS + 1
    ids, changed = store["ids"], store["changed"]
    words = [q.split()[-1] for q in qs]
    some = [rng.choice(changed) if i % 3 == 0 else rng.choice(ids) for i in range(count)]
    agents = [f"agent-{i % 4}" for i in range(count)]
    return {
        "overview": ["/"] * count,
        "browse, first page": ["/browse?limit=50"] * count,
        "browse, a page near the end": [f"/browse?limit=50&cursor={store['deep']}"] * count,
        "browse, scope + type + category": [
            f"/browse?agent_id={a}&type=decision&category=decision" for a in agents
        ],
        "browse, archived": ["/browse?status=archived"] * count,
        "browse, text": [f"/browse?q={words[i % len(words)]}" for i in range(count)],
        "memory": [f"/memory/{i}" for i in some],
        "recall playground, hybrid + knobs": [
            f"/recall?q={qs[i]}&mode=hybrid&validity=1&trust_weight=0.5" for i in range(count)
        ],
        "graph, 2 hops": [f"/graph?id={i}&depth=2" for i in some],
        "communities": ["/graph"] * count,
        "time travel": [f"/time?at={store['before_changes']}&agent_id={a}" for a in agents],
        "latest writes": ["/time"] * count,
        "hygiene (report ready)": ["/hygiene?agent_id=agent-0"] * count,
        "memory files": ["/files"] * count,
        "a memory file by date": ["/files?file=Journal"] * count,
    }


def _timed(client: httpx.Client, url: str) -> tuple[float, float]:
    started = time.perf_counter()
    r = client.get(url)
    wall = (time.perf_counter() - started) * 1000
    if r.status_code != 200 or "message error" in r.text:
        raise RuntimeError(f"{url}: {r.status_code} {r.text[-300:]}")
    return float(r.headers["server-timing"].removeprefix("app;dur=")), wall


def _serve(path: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "perseus_vault_core.cli", "ui", "--db", path, "--http", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip().rstrip("/")


def _ready(overview: str) -> bool:
    """Whether the overview says both in-memory indexes are built."""
    states = [overview.split(f"<dt>{name}</dt><dd>")[1][:40] for name in ("keyword index", "vector index")]
    return all(state.startswith("ready") for state in states)


def run_size(n: int, cached: Any, log: Log = print) -> dict[str, Any]:
    out: dict[str, Any] = {"entities": n}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "inspector.db")
        started = time.perf_counter()
        store = _prepare(path, n, cached)
        log(f"  store of {n:,} ready in {time.perf_counter() - started:.0f} s")
        out["hygiene_report_s"], out["hygiene_scanned"] = store["hygiene_s"], store["hygiene_scanned"]
        out["db_mb"] = os.path.getsize(path) / 1e6
        proc, base = _serve(path)
        try:
            with httpx.Client(base_url=base, timeout=600) as client:
                deadline = time.monotonic() + 600
                # a server's indexes, built in the background (asked with another top: the overview's counts stay cold)
                while not _ready(client.get("/?top=1").text):
                    if time.monotonic() > deadline:
                        raise RuntimeError("the inspector's indexes were not ready within 10 minutes")
                    time.sleep(1)
                load = os.getloadavg()[0]
                out["pages"] = _measure(client, _pages(store, queries(REQUESTS + 1, seed=23)), log)
                out["load"] = (load + os.getloadavg()[0]) / 2  # other work on the machine slows every figure
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return out


PENDING = ("Computing the report", "is being clustered")  # what a page says while its background work runs


def _measure(client: httpx.Client, pages: dict[str, list[str]], log: Log) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, urls in pages.items():
        started = time.perf_counter()
        first = _timed(client, urls[0])
        while any(marker in client.get(urls[0]).text for marker in PENDING):  # the page's background work
            time.sleep(0.5)
        background = time.perf_counter() - started
        server, wall = zip(*(_timed(client, u) for u in urls[1:]))
        results[name] = {
            "first_ms": first[0],
            "server": _stats(list(server)),
            "wall": _stats(list(wall)),
            "background_s": background,
        }
        log(
            f"  {name}: first {first[0]:.1f} ms, p50 {results[name]['server']['p50']:.1f}, "
            f"max {results[name]['server']['max']:.1f}"
        )
    return results


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "max": ordered[-1],
    }


def run(sizes: list[int], cached: Any, log: Log = print) -> dict[str, Any]:
    result: dict[str, Any] = {"date": dt.date.today().isoformat(), "sizes": []}
    for n in sizes:
        log(f"web inspector at {n:,} memories ...")
        result["sizes"].append(run_size(n, cached, log))
    return result


def render(result: dict[str, Any]) -> list[str]:
    """The section "Web inspector" of docs/benchmarks.md, from :func:`run`'s result."""
    sizes = result["sizes"]
    out = [
        SECTION,
        "",
        f"Run {result['date']} (commit {commit()}). Each page of `perseus-vault ui` over the synthetic store (4 "
        "agents, one link per memory in clusters of 50, 2% of memories with two updates, 1% archived, 1% "
        f"superseded, a memory file of {ENTRIES} entries), fetched {REQUESTS} times over HTTP on loopback with "
        "different memories, queries and filters; milliseconds of server time (the inspector's Server-Timing: "
        "the whole page rendered), p50 / p95 / max, after the page's first request (its own column: the "
        "communities are clustered and the hygiene report started there; the overview's comes after the requests "
        "that waited for the in-memory indexes, which read the store's figures). See `benchmarks/inspector.py`.",
        "",
        "| page | " + " | ".join(f"{s['entities']:,}: p50 / p95 / max | first" for s in sizes) + " |",
        "|---|" + "---|---|" * len(sizes),
    ]
    for name in sizes[0]["pages"]:
        cells = []
        for s in sizes:
            p = s["pages"][name]
            cells.append(
                f"{p['server']['p50']:.1f} / {p['server']['p95']:.1f} / {p['server']['max']:.1f} | "
                f"{p['first_ms']:.0f}"
            )
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    big = sizes[-1]
    worst = max(p["server"]["max"] for p in big["pages"].values())
    met = "met" if worst <= TARGET_MS else "NOT met"
    out += [
        "",
        f"Target at {big['entities']:,} memories: every page's server time at most {TARGET_MS:.0f} ms: "
        f"{met} (the slowest request of any page, after its first: {worst:.0f} ms). The hygiene report itself "
        f"(agent-0's {big['hygiene_scanned']:,} memories, weighed pairwise) takes "
        f"{big['hygiene_report_s']:.1f} s, which is why the page computes it in the background and keeps it "
        "until the next write; clustering the link graph, which the memory and graph pages start in the "
        f"background the same way, took {big['pages']['memory']['background_s']:.1f} s from the first memory "
        "page to the first with its communities. The machine's load average while the pages were timed: "
        + ", ".join(f"{s.get('load', 0):.1f} at {s['entities']:,}" for s in sizes)
        + f" ({os.cpu_count()} cores; above that, requests wait for a core). Client wall time adds about "
        f"{statistics.median(p['wall']['p50'] - p['server']['p50'] for p in big['pages'].values()):.1f} ms "
        "a page on loopback.",
        "",
    ]
    return out


def main(output: Path, sizes: list[int]) -> None:
    """``python -m benchmarks.run --only inspector [--quick | --sizes N ...] [--output FILE]``: this part alone, its
    section of ``output`` replaced (the model loaded for its identity, the store's vectors from the cache)."""
    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    byte_compile()
    result = run(sizes, CachingEmbedder(load()), log=log)
    log(json.dumps(result))
    write_section(output, render(result))
    log(f"wrote the {SECTION[3:]} section of {output}")
