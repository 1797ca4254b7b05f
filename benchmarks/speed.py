"""Speed at scale on synthetic agent memories (see synthetic.py), through the public API.

For each store size:

- bulk import without embeddings (a keyword-only vault);
- the same memories with vectors (from the vector cache, so reruns are fast; the embedding cost is
  measured separately, see ``embedding_ingest``), then, with the real model answering queries
  (query embedding included): keyword, dense and hybrid recall p50/p95, scoped and right after a
  write, and with a ``where`` filter on body fields that keeps most or few memories
  (``filtered_recall``); the SQL paths a fresh process uses before its in-memory indexes exist; as_of,
  scan pages, history; index build times; the file size.

``embedding_ingest`` compares the bare model's batch throughput with a vault ingesting the same
texts (embedding included), and ``cold_start`` / ``peak_memory`` run fresh processes.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from perseus_vault_core import Vault
from perseus_vault_core.indexes.shares import Shares

from .synthetic import memories, queries

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def byte_compile() -> None:
    """Byte-compile the vault's packages: the new processes the benchmarks time (prepare, first recall, the
    1M reader) then import them as an installed wheel's, where a checkout under ``PYTHONDONTWRITEBYTECODE``
    would compile every module again in each one."""
    import compileall

    for package in ("perseus_vault_core", "perseus_vault_integrations"):
        if not compileall.compile_dir(os.path.join(ROOT, package), quiet=1):
            raise SystemExit(f"benchmarks.run: {package} does not byte-compile")


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]

    return {"p50": pick(0.50), "p95": pick(0.95), "mean": statistics.fmean(ordered), "n": float(len(ordered))}


def timed(calls: list[Callable[[], Any]], warmup: int = 10) -> dict[str, float]:
    for call in calls[:warmup]:
        call()
    samples = []
    for call in calls:
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


class GivenVectors:
    """The model's identity, answering only from vectors computed before timing: a write's figure is
    then the vault's own work, not the model's (a text it was not given is an error, not a slow call)."""

    def __init__(self, model: Any, table: dict[str, np.ndarray]) -> None:
        self.identity, self.dimension, self.table = model.identity, model.dimension, table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])


WRITES = 200


def fresh_memories(count: int = WRITES) -> list[dict[str, Any]]:
    """``count`` memories none of the benchmark's vaults holds yet (their keys are new)."""
    return [
        dict(m, key=f"{m['key']}-written", content=f"{m['content']} (written later)")
        for m in memories(count, seed=13)
    ]


def write_cost(path: str, model: Any, qs: list[str]) -> dict[str, Any]:
    """New memories one at a time, each with its vector given, in a process whose indexes are loaded; each
    followed by a keyword recall, which first brings the indexes up to the write. The write's p50/p95 and
    the recall's: what a write costs at this size, index upkeep included."""
    from perseus_vault_core.embeddings import embedding_text

    fresh = fresh_memories()
    texts = [embedding_text(str(m["content"]), m.get("summary")) for m in fresh]  # type: ignore[arg-type]
    table = dict(zip(texts, model.embed(texts)))
    writes, after = [], []
    with Vault(path, embedder=GivenVectors(model, table)) as vault:
        vault.recall(qs[0], mode="fts5")  # open the saved indexes and bring them up to date first
        for m, q in zip(fresh, qs):
            started = time.perf_counter()
            vault.remember(**m)
            writes.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            vault.recall(q, mode="fts5", reinforce=False)
            after.append((time.perf_counter() - started) * 1000)
        served = "ready" in vault.stats().keyword_index
    return {"write": percentiles(writes), "recall_after": percentiles(after), "from_index": served}


@contextmanager
def words_afresh(vault: Vault) -> Iterator[None]:
    """Within: the keyword index keeps no word's shares (indexes/shares.py), so every query scores its
    words as the first query after a write does; what it kept before is back after."""
    index = vault.engine.keyword_index
    kept, index._shares = index._shares, Shares(budget=0)
    try:
        yield
    finally:
        index._shares = kept


def embed_afresh(vault: Vault) -> None:
    """The vault forgets the last query's vector (engine.py keeps one), so the next call embeds its query, as a
    call of its own would."""
    vault.engine._last_query = None


def filter_body(i: int) -> dict[str, Any]:
    """The body the speed benchmark's ``i``-th memory carries, for the filter rows: a priority 0-4 (a filter
    on ``prio >= 1`` keeps four in five) and a project, one of 1,000 spread evenly (one keeps one in 1,000)."""
    return {"prio": i % 5, "project": f"p{(i * 7919) % 1000:03d}"}


def synthetic_lines(n: int, seed: int = 7) -> Iterator[str]:
    """The JSONL lines of the speed benchmark's ``n`` synthetic memories, each with its :func:`filter_body`."""
    return (json.dumps(dict(m, body=filter_body(i))) for i, m in enumerate(memories(n, seed)))


FILTERS = {"most": {"prio": {"$gte": 1}}, "few": {"project": "p042"}}


def filtered_recall(vault: Vault, qs: list[str], n_queries: int = 100) -> dict[str, Any]:
    """Recall in each mode with no filter, a where that keeps four memories in five, one that keeps one in
    1,000, and one that keeps one in 1,000 but is a new filter on every call (so every call pays the pass over
    the heads that a filter keeping few costs the first time; docs/filters.md). Unfiltered calls are timed
    beside the filtered ones, on the same queries, interleaved, so both see the same warm state."""
    out: dict[str, Any] = {}
    qs = qs[:n_queries]
    for m, mode in enumerate(("fts5", "dense", "hybrid")):
        samples: dict[str, list[float]] = {"none": [], "most": [], "few": [], "few_new": []}
        warm = qs[:10]
        for i, q in enumerate(warm + qs):
            new = {"project": f"p{(100 + m * 300 + i) % 1000:03d}"}  # asked of no earlier call
            for name, where in (("none", None), *FILTERS.items(), ("few_new", new)):
                extra = {} if where is None else {"where": where}
                embed_afresh(vault)
                started = time.perf_counter()
                vault.recall(q, mode=mode, reinforce=False, **extra)
                if i >= len(warm):  # the first ten are warm-up
                    samples[name].append((time.perf_counter() - started) * 1000)
        out[mode] = {name: percentiles(values) for name, values in samples.items()}
    return out


def run_size(n: int, model: Any, cached: Any, n_queries: int = 300, seed: int = 7) -> dict[str, Any]:
    """``model``: the real embedder (queries); ``cached``: the same model behind the vector cache (bulk)."""
    out: dict[str, Any] = {"entities": n}
    lines = list(synthetic_lines(n, seed))
    qs = queries(n_queries)
    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.db")
        # The importing vaults do no index work: closing would save built indexes (indexes/settle.py), and the
        # builds below are timed (the hooks benchmark times that close, benchmarks/hooks.py).
        with Vault(plain, embedder=False, keyword_index=False, vector_index=False) as vault:
            started = time.perf_counter()
            vault.import_jsonl(lines)
            out["import_per_s"] = n / (time.perf_counter() - started)

        path = os.path.join(tmp, "speed.db")
        with Vault(path, embedder=cached, keyword_index=False, vector_index=False) as vault:
            started = time.perf_counter()
            vault.import_jsonl(lines)
            out["import_cached_vectors_per_s"] = n / (time.perf_counter() - started)
        with Vault(path, embedder=model) as vault:
            # A fresh process answers with SQL until its in-memory indexes are built.
            indexes = vault.engine.keyword_index, vault.engine.vector_index
            vault.engine.keyword_index = vault.engine.vector_index = None
            out["recall_fts5_sql"] = timed(
                [lambda q=q: vault.recall(q, mode="fts5") for q in qs[:60]], warmup=3
            )
            out["recall_dense_sql"] = timed(
                [lambda q=q: vault.recall(q, mode="dense") for q in qs[:30]], warmup=3
            )
            vault.engine.keyword_index, vault.engine.vector_index = indexes
            started = time.perf_counter()
            assert vault.wait_for_keyword_index(), "keyword index did not build"
            out["keyword_index_build_s"] = time.perf_counter() - started
            started = time.perf_counter()
            assert vault.wait_for_vector_index(), "vector index did not build"
            out["vector_index_build_s"] = time.perf_counter() - started
            # Both indexes were just saved: a new process opens them with nothing to replay.
            out["first_recall_saved"] = first_recall(path, qs[0], model.embed([qs[0]])[0])

            for mode in ("fts5", "dense", "hybrid"):
                out[f"recall_{mode}"] = timed([lambda q=q, m=mode: vault.recall(q, mode=m) for q in qs])
            out["recall_fts5_no_reinforce"] = timed(
                [lambda q=q: vault.recall(q, mode="fts5", reinforce=False) for q in qs]
            )
            # The keyword index keeps each word's shares until the next write (indexes/shares.py); with
            # nothing kept, every query scores its words afresh, as the first query after a write does.
            with words_afresh(vault):
                out["recall_fts5_words_afresh"] = timed(
                    [lambda q=q: vault.recall(q, mode="fts5", reinforce=False) for q in qs]
                )
            out["recall_hybrid_agent_filter"] = timed(
                [lambda q=q: vault.recall(q, agent_id="agent-1") for q in qs]
            )
            out["recall_where"] = filtered_recall(vault, qs)
            out["embed_query"] = timed([lambda q=q: model.embed([q]) for q in qs])
            out["dense_recall_at_10_vs_exact"] = dense_recall_vs_exact(vault, model, qs[:100])
            # An agent that writes a memory and then recalls: the indexes follow each write first.
            fresh = [json.loads(line) for line in lines[: len(qs)]]
            samples = []
            for i, (q, m) in enumerate(zip(qs, fresh)):
                vault.remember(**dict(m, content=m["content"] + f" (revised {i})"))
                started = time.perf_counter()
                vault.recall(q)
                samples.append((time.perf_counter() - started) * 1000)
            out["recall_hybrid_after_write"] = percentiles(samples)

            rng = random.Random(seed)
            picks = [rng.randrange(n) for _ in range(500)]
            kinds = ["decision", "fact", "incident", "preference", "note"]
            now = int(time.time() * 1000)

            def as_of(i: int) -> None:
                kind = kinds[i % 5]
                vault.as_of(kind, f"{kind}-{i:07d}", now, agent_id=f"agent-{i % 4}")

            out["as_of"] = timed([lambda i=i: as_of(i) for i in picks])
            cursors: list[str | None] = [None]
            page = vault.scan(limit=100)
            while page.has_more and len(cursors) < 300:
                cursors.append(page.next_cursor)
                page = vault.scan(cursor=page.next_cursor, limit=100)
            rng.shuffle(cursors)
            out["scan_page_100"] = timed([lambda c=c: vault.scan(cursor=c, limit=100) for c in cursors])

            def history(i: int) -> None:
                kind = kinds[i % 5]
                vault.history(kind, f"{kind}-{i:07d}", agent_id=f"agent-{i % 4}")

            out["history"] = timed([lambda i=i: history(i) for i in picks])
        out["db_mb"] = os.path.getsize(path) / 1e6
        out["cold_start"] = cold_start(path, qs[0])
        out["first_recall"] = first_recall(path, qs[0], model.embed([qs[0]])[0])
        out["shared_readers"] = shared_readers(path, qs[:20], model.embed(qs[:20]))
        context = "I am working on the billing pipeline: why is the invoices queue slow?"
        out["prepare"] = prepare_fresh(path, context)
        out["prepare_keyword"] = prepare_fresh(path, context, keyword_only=True)
        out["peak_memory_mb"] = peak_memory(path, qs[:50])
        out["writes"] = write_cost(path, model, qs)
    return out


def dense_recall_vs_exact(vault: Vault, model: Any, qs: list[str]) -> float:
    """Share of the exact top 10 (a full cosine scan in SQL) that dense recall returns."""
    from perseus_vault_core.contract.params import Filters
    from perseus_vault_core.primitives.filters import view
    from perseus_vault_core.storage.sqlite import vectors
    from perseus_vault_core.storage.sqlite.connection import read_snapshot

    found = 0
    conn = vault.engine.conn()
    for q in qs:
        got = {i.id for i in vault.recall(q, mode="dense", limit=10, reinforce=False).items}
        with read_snapshot(conn):
            exact, _ = vectors.search(conn, model.embed([q])[0], view(Filters(), int(time.time() * 1000)), 10)
        found += len(got & {h.entity_id for h in exact})
    return found / (10 * len(qs))


def embedding_ingest(model: Any, n: int = 2_000, rounds: int = 2) -> dict[str, float]:
    """The bare model's batch throughput against a vault ingesting the same texts, embedding included.

    Warmed up first, then alternated (bare, vault, bare, vault...) so drift hits both; medians."""
    texts = [m["content"] for m in memories(n, seed=99)]
    model.embed(texts[:64])
    bare, ingest = [], []
    for round_ in range(rounds):
        records = [dict(m, key=f"{m['key']}-ingest{round_}") for m in memories(n, seed=99)]
        started = time.perf_counter()
        model.embed(texts)
        bare.append(n / (time.perf_counter() - started))
        with (
            tempfile.TemporaryDirectory() as tmp,
            Vault(os.path.join(tmp, "ingest.db"), embedder=model) as vault,
        ):
            started = time.perf_counter()
            vault.import_jsonl(json.dumps(r) for r in records)
            ingest.append(n / (time.perf_counter() - started))
    b, v = statistics.median(bare), statistics.median(ingest)
    return {"texts": float(n), "bare_per_s": b, "vault_per_s": v, "ratio": v / b}


_CHILD = """
import sys, time, json
started = time.perf_counter()
from perseus_vault_core import Vault
vault = Vault(sys.argv[1])
mode = sys.argv[2]
queries = json.loads(sys.argv[3])
first = vault.recall(queries[0], mode=mode)
first_s = time.perf_counter() - started
if len(queries) > 1:
    vault.wait_for_keyword_index(); vault.wait_for_vector_index()
    for q in queries:
        for m in ("fts5", "dense", "hybrid"):
            vault.recall(q, mode=m)
from benchmarks.million import peak_rss_mb
print(json.dumps({"first_answer_s": first_s, "items": len(first.items), "peak_rss_mb": peak_rss_mb()}))
"""


def _child(path: str, mode: str, qs: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, path, mode, json.dumps(qs)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - started
    return result


def cold_start(path: str, query: str, runs: int = 3) -> dict[str, float]:
    """A new process, to its first dense answer (imports, opening, model load, query, SQL search)."""
    results = [_child(path, "dense", [query]) for _ in range(runs)]
    return {
        "first_answer_s_p50": statistics.median(r["first_answer_s"] for r in results),
        "process_s_p50": statistics.median(r["process_s"] for r in results),
    }


_FIRST = """
import sys, time, json
import numpy as np
started = time.perf_counter()
from perseus_vault_core import Vault
imported = time.perf_counter()
vault = Vault(sys.argv[1])
opened = time.perf_counter()
vault.recall(sys.argv[2], mode="fts5", reinforce=False)
keyword = time.perf_counter()
vault.recall_by_vector(np.load(sys.argv[3]), reinforce=False)
dense = time.perf_counter()
stats = vault.stats()
print(json.dumps({"import_s": imported - started, "open_s": opened - imported, "keyword_ms": (keyword - opened) * 1000,
                  "dense_ms": (dense - keyword) * 1000, "from_snapshot": "from a snapshot" in stats.keyword_index
                  and "from a snapshot" in stats.vector_index}))
"""


def _vector_file(vectors: Any) -> str:
    """Query vectors in a temporary .npy file, for a child process (the caller deletes it)."""
    with tempfile.NamedTemporaryFile(suffix=".npy", delete=False) as handle:
        np.save(handle, np.asarray(vectors, dtype=np.float32))
    return handle.name


def first_recall(path: str, query: str, vector: Any, runs: int = 5) -> dict[str, Any]:
    """A new process on a vault whose indexes were saved: its first keyword recall, then its first dense
    recall with the query vector given, each timed after opening (p50 of ``runs`` processes)."""
    vectors = _vector_file(vector)
    try:
        results = []
        for _ in range(runs):
            done = subprocess.run(
                [sys.executable, "-c", _FIRST, path, query, vectors],
                capture_output=True,
                text=True,
                check=True,
                cwd=ROOT,
            )
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    finally:
        os.unlink(vectors)
    return {
        key: statistics.median(r[key] for r in results)
        for key in ("import_s", "open_s", "keyword_ms", "dense_ms")
    } | {"from_snapshot": all(r["from_snapshot"] for r in results)}


_READER = """
import sys, json
import numpy as np
from perseus_vault_core import Vault
vault = Vault(sys.argv[1])
vectors = np.load(sys.argv[2])
for q, v in zip(json.loads(sys.argv[3]), vectors):
    vault.recall(q, mode="fts5", reinforce=False)
    vault.recall_by_vector(v, reinforce=False)
stats = vault.stats()
print(json.dumps({"from_snapshot": "from a snapshot" in stats.keyword_index and "from a snapshot" in stats.vector_index}),
      flush=True)
sys.stdin.readline()
"""


def _pss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no Pss line")


def shared_readers(path: str, qs: list[str], vectors: Any, readers: int = 4) -> dict[str, Any] | None:
    """Proportional set size of reader processes on one vault, each answering keyword and dense recalls
    (query vectors given) from the saved indexes: one alone, then ``readers`` at once, all held open while
    their PSS is read. ``None`` where /proc has no smaps_rollup (not Linux)."""
    if not os.path.exists(f"/proc/{os.getpid()}/smaps_rollup"):
        return None
    given = _vector_file(vectors)

    def run(n: int) -> tuple[list[float], bool]:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _READER, path, given, json.dumps(qs)],
                cwd=ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(n)
        ]
        try:
            ready = [json.loads(p.stdout.readline()) for p in procs if p.stdout is not None]
            return [_pss_mb(p.pid) for p in procs], all(r["from_snapshot"] for r in ready)
        finally:
            for p in procs:
                p.communicate("\n", timeout=60)

    try:
        one, alone_ok = run(1)
        many, many_ok = run(readers)
    finally:
        os.unlink(given)
    return {
        "readers": readers,
        "one_mb": one[0],
        "sum_mb": sum(many),
        "each_mb": many,
        "ratio": sum(many) / one[0],
        "from_snapshot": alone_ok and many_ok,
    }


def prepare_fresh(path: str, context: str, runs: int = 5, keyword_only: bool = False) -> dict[str, Any]:
    """Wall time of `perseus-vault prepare` in a new process: the default bundled model, or keyword-only
    (``PERSEUS_VAULT_EMBEDDER=none``, as a hook that must not load a model would run it)."""
    env = dict(os.environ)
    env.pop("PERSEUS_VAULT_EMBEDDER", None)
    if keyword_only:
        env["PERSEUS_VAULT_EMBEDDER"] = "none"
    command = [sys.executable, "-m", "perseus_vault_core.cli", "prepare", "--db", path, context]

    def once() -> tuple[float, str]:
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=True, timeout=300)
        return time.perf_counter() - started, done.stdout

    first, text = once()
    times = [once()[0] for _ in range(runs)]
    times.sort()
    return {
        "first_s": first,
        "p50_s": times[len(times) // 2],
        "runs": runs,
        "chars": len(text.rstrip("\n")),
        "triggered": text.count("when: "),
    }


def peak_memory(path: str, qs: list[str]) -> float:
    """Peak resident memory of a process that builds both indexes and answers every mode."""
    return _child(path, "hybrid", qs)["peak_rss_mb"]


if __name__ == "__main__":
    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    real = load()
    for size in [int(a) for a in sys.argv[1:]] or [10_000]:
        print(json.dumps(run_size(size, real, CachingEmbedder(real))))
