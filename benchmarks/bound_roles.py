"""A role bound to one scope beside the vault's owner, on one PostgreSQL server (docs/benchmarks.md, section "PostgreSQL:
a role bound to one scope"; docs/postgres.md, "Tenants").

Row-level security (storage/postgres/tenancy.py) makes each row a bound role reads pass its policy, and each id it
gives a check; the owner pays neither. How much that costs a write: a database holds the speed benchmark's synthetic
memories (``n``, over four agents' scopes, with their cached MiniLM vectors), loaded by the owner, and a role is bound
to one of those scopes. New memories are then remembered one at a time, each with its vector given (the model's time
left out) and a trigger phrase of its own (so a phrase vector is written too), alternately by the owner's vault and by
the bound role's, into that scope, in an order shuffled anew for each pair. Each vault writes :data:`WRITES` (after
:data:`WARMUP` not counted) twice: right after loading, before PostgreSQL has any statistics of the tables
(autovacuum, kept off until then, would gather them within a minute: a new database's first writes look like this),
and after ``ANALYZE``, as every later write sees the tables.

    python -m benchmarks.run --only bound-roles [--quick | --sizes N ...]   # this part alone: its section only
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from perseus_vault_core import Vault, bind_role
from perseus_vault_core.embeddings import embedding_text

from .postgres import analyze, database, describe, server
from .report import commit, log, write_section
from .speed import GivenVectors, fresh_memories, percentiles
from .synthetic import memories, queries

SECTION = "## PostgreSQL: a role bound to one scope"
SCOPE = {"agent_id": "agent-0", "workspace_hash": ""}  # one of the synthetic memories' four agents
WRITES = 200  # remembers timed per vault and phase
WARMUP = 10
BATCH = 1_000  # the load's remember_many batches
TARGET = 1.5  # the bound role's remember p50 at most this many times the owner's
Log = Callable[[str], None]


@contextlib.contextmanager
def bound(admin: str, url: str, scope: dict[str, str], owner: Vault) -> Iterator[str]:
    """A new login role bound to ``scope`` on ``url``'s vault (``owner``: the vault opened by its owner), as the URL
    it connects with; dropped on leaving."""
    import psycopg

    role, password = f"pv_bench_{uuid.uuid4().hex[:8]}", secrets.token_hex(12)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    try:
        bind_role(owner, role, **scope)
        parts = urlsplit(url)
        yield urlunsplit(parts._replace(netloc=f"{role}:{quote(password)}@{parts.netloc.rpartition('@')[2]}"))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP ROLE {role}")


def autovacuum(url: str, on: bool) -> None:
    """Autovacuum (and its ``ANALYZE``) on or off for every table of the vault's schema."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            t for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        ]
        for table in tables:
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = {'on' if on else 'off'})")


def writes(vaults: dict[str, Vault], items: list[dict[str, Any]], seed: int) -> dict[str, list[float]]:
    """Each vault remembers every other item (``len(items)`` in all), in turns shuffled per pair: ms per call."""
    rng = random.Random(seed)
    names = list(vaults)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(0, len(items) - 1, 2):
        rng.shuffle(names)
        for name, item in zip(names, items[i : i + 2]):
            started = time.perf_counter()
            vaults[name].remember(**item)
            samples[name].append((time.perf_counter() - started) * 1000)
    return {name: s[WARMUP:] for name, s in samples.items()}


def run_size(admin: str, n: int, cached: Any, log: Log = print, count: int = WRITES) -> dict[str, Any]:
    """Both phases at ``n`` memories (see the module docstring)."""
    records = list(memories(n))
    phrases = queries(2 * 2 * (count + WARMUP), seed=17)
    items = [dict(m, **SCOPE, recall_when=[p]) for m, p in zip(fresh_memories(len(phrases)), phrases)]
    texts = (
        [str(r["content"]) for r in records]
        + [embedding_text(str(m["content"]), None) for m in items]
        + phrases
    )
    given = GivenVectors(cached, dict(zip(texts, cached.embed(texts))))
    half = len(items) // 2
    out: dict[str, Any] = {"entities": n, "writes": count}
    with database(admin, f"bound{n}") as url, Vault(url, embedder=given) as owner:
        autovacuum(url, on=False)
        log(f"  bound roles at {n:,}: loading ...")
        for at in range(0, n, BATCH):
            owner.remember_many(records[at : at + BATCH])
        with bound(admin, url, SCOPE, owner) as role_url, Vault(role_url, embedder=given) as tenant:
            vaults = {"owner": owner, "bound": tenant}
            log(f"  bound roles at {n:,}: writes before statistics ...")
            out["fresh"] = {k: percentiles(v) for k, v in writes(vaults, items[:half], seed=n).items()}
            autovacuum(url, on=True)
            analyze(url)
            log(f"  bound roles at {n:,}: writes after ANALYZE ...")
            out["analyzed"] = {k: percentiles(v) for k, v in writes(vaults, items[half:], seed=n + 1).items()}
    return out


def run(sizes: list[int], cached: Any, log: Log = print, count: int = WRITES) -> dict[str, Any]:
    """Every figure of the section; vectors from ``cached`` (the vector cache before the bundled model)."""
    out: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "sizes": []}
    with server() as admin:
        with database(admin, "describe") as url:
            out["server"] = describe(url)
        for n in sizes:
            log(f"bound roles at {n:,} memories ...")
            out["sizes"].append(run_size(admin, n, cached, log, count))
    return out


# --- the report ---------------------------------------------------------------------------------

PHASES = {"fresh": "right after loading (no statistics yet)", "analyzed": "after `ANALYZE`"}


def ratio(size: dict[str, Any], phase: str) -> float:
    return float(size[phase]["bound"]["p50"] / size[phase]["owner"]["p50"])


def render(result: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md, from :func:`run`'s result."""
    info = result["server"]
    writes_timed = result["sizes"][0]["writes"] if result["sizes"] else WRITES
    out = [
        SECTION,
        "",
        f"Run {result['date']} (commit {commit()}) on PostgreSQL {info['server_version']} with pgvector"
        f" {info['pgvector']}, psycopg {info['psycopg']}. The speed section's synthetic memories (over four"
        " agents' scopes, with their cached MiniLM vectors) loaded by the vault's owner, then a role bound to one"
        " of those scopes (`bind_role`). New memories remembered one at a time into that scope, each with its"
        " vector given (no model time) and a trigger phrase of its own, alternately by the owner's vault and the"
        f" bound role's in an order shuffled per pair: {writes_timed} each (after {WARMUP} not counted), first"
        " right after loading, before PostgreSQL has statistics of the tables (autovacuum kept off until then; it"
        " gathers them within a minute), then after `ANALYZE`. The bound role's rows each pass a policy, and each"
        ' id it gives a check (docs/postgres.md, "Tenants"). See `benchmarks/bound_roles.py`.',
        "",
        "| memories | statistics | owner `remember` p50 / p95 | bound role p50 / p95 | bound / owner, p50 |",
        "|---|---|---|---|---|",
    ]
    for s in result["sizes"]:
        for phase, label in PHASES.items():
            owner, tenant = s[phase]["owner"], s[phase]["bound"]
            out.append(
                f"| {s['entities']:,} | {label} | {owner['p50']:.2f} / {owner['p95']:.2f} ms |"
                f" {tenant['p50']:.2f} / {tenant['p95']:.2f} ms | {ratio(s, phase):.2f}x |"
            )
    out += ["", "| target | figure | verdict |", "|---|---|---|"]
    for s in result["sizes"]:
        for phase, label in PHASES.items():
            r = ratio(s, phase)
            out.append(
                f"| a bound role's `remember` p50 at most {TARGET}x the owner's, {s['entities']:,}, {label} |"
                f" {r:.2f}x | {'met' if r <= TARGET else '**MISSED**'} |"
            )
    return out + [""]


def main(output: Path, sizes: list[int]) -> None:
    """``python -m benchmarks.run --only bound-roles [--quick | --sizes N ...] [--output FILE]``: this part alone,
    its section of ``output`` replaced."""
    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    write_section(output, render(run(sizes, CachingEmbedder(load()), log=log)))
    log(f"wrote the {SECTION[3:]} section of {output}")
