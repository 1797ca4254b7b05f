"""GraphRAG and proactive recall at 10k entities and 50k links, through the public API.

The store: the speed benchmark's synthetic memories (see synthetic.py), grouped into planted
clusters of 50 (each cluster in one agent's scope), with 50,000 links: 90% between two members of
one cluster, 10% between two clusters of the same agent. One memory in ten carries a trigger
phrase ("working on the <component>").

Measured:

- ``communities``: a fresh vault object (nothing memoised) clustering the whole graph, p50 of 3,
  with label propagation and once with modularity; the same call again on an unchanged graph; the
  call after one new link (its component is clustered again); how many planted clusters came back
  exactly as one community;
- ``global_recall``: the first call (which writes every community's summary) and then p50/p95 over
  agent-style questions, with the bundled model (hybrid: keyword and meaning);
- ``traverse``: depth 2 along outgoing links from 100 random starts, interleaved call by call with
  LlamaIndex's ``SimplePropertyGraphStore.get_rel_map`` holding the same links (see peers.py);
- ``prepare``: ``perseus-vault prepare --db PATH "CONTEXT"`` in a new process, wall time, p50 of 5
  (after one run that stores the trigger phrases' vectors).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from typing import Any

from perseus_vault_core import Vault
from perseus_vault_core.features import graph as graph_module

from . import peers
from .speed import percentiles, prepare_fresh, timed
from .synthetic import memories, queries

CLUSTER = 50


def build_store(
    path: str, cached: Any, n: int = 10_000, links: int = 50_000, seed: int = 5
) -> tuple[dict[int, list[int]], list[tuple[int, int]]]:
    """Write the store; return the planted clusters (cluster number -> entity ids) and the links."""
    rng = random.Random(seed)
    records = []
    for i, m in enumerate(memories(n)):
        cluster = i // CLUSTER
        m["agent_id"] = f"agent-{cluster % 4}"
        if i % 10 == 0:
            m["recall_when"] = [f"working on the {str(m['topic_path']).split('/')[0]}"]
        records.append(json.dumps(m))
    with Vault(path, embedder=cached) as vault:
        vault.import_jsonl(records)
        ids = [e.id for e in vault.scan(limit=1000).items]
        cursor = vault.scan(limit=1000)
        ids = [e.id for e in cursor.items]
        while cursor.has_more:
            cursor = vault.scan(cursor=cursor.next_cursor, limit=1000)
            ids += [e.id for e in cursor.items]
        planted = {c: ids[c * CLUSTER : (c + 1) * CLUSTER] for c in range(n // CLUSTER)}
        pairs: set[tuple[int, int]] = set()
        clusters = sorted(planted)
        while len(pairs) < links:
            c = rng.choice(clusters)
            a = rng.choice(planted[c])
            if rng.random() < 0.9:
                b = rng.choice(planted[c])
            else:
                other = rng.choice([d for d in clusters if d % 4 == c % 4 and d != c])
                b = rng.choice(planted[other])
            if a != b:
                pairs.add((a, b))
        by_source: dict[int, list[int]] = {}
        for a, b in sorted(pairs):
            by_source.setdefault(a, []).append(b)
        now = int(time.time() * 1000)
        vault.engine.write(
            lambda c: [
                graph_module.link_many(vault.engine.backend, c, a, bs, "related", now)
                for a, bs in by_source.items()
            ]
        )
    return planted, sorted(pairs)


def run(model: Any, cached: Any, n_queries: int = 60) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.db")
        planted, pairs = build_store(path, cached)
        # traverse (depth 2, outgoing links) interleaved with LlamaIndex's property graph on the same links.
        starts = random.Random(3).sample(sorted({a for a, _ in pairs}), 103)
        out["traverse"] = peers.graph_peer(path, model, pairs, starts)
        cold = []
        for _ in range(3):
            with Vault(path, embedder=model) as vault:
                started = time.perf_counter()
                result = vault.communities(limit=1000, central=0)
                cold.append((time.perf_counter() - started) * 1000)
        out["communities_ms"] = percentiles(cold)
        out["nodes"], out["edges"], out["communities"] = result.nodes, result.edges, result.total
        found = {tuple(c.members) for c in result.communities}
        out["planted_recovered"] = sum(tuple(sorted(m)) in found for m in planted.values()) / len(planted)
        with Vault(path, embedder=model) as vault:
            started = time.perf_counter()
            modularity = vault.communities(method="modularity", limit=1000, central=0)
            out["modularity_ms"] = (time.perf_counter() - started) * 1000
            out["modularity_communities"] = modularity.total
            found = {tuple(c.members) for c in modularity.communities}
            out["modularity_planted_recovered"] = sum(
                tuple(sorted(m)) in found for m in planted.values()
            ) / len(planted)

            vault.communities()
            out["communities_unchanged_ms"] = timed(
                [lambda: vault.communities(limit=1000, central=0)] * 20, warmup=2
            )
            members = planted[0]
            vault.link(members[1], members[-2], relation="mentions")
            started = time.perf_counter()
            vault.communities(limit=1000, central=0)
            out["communities_after_link_ms"] = (time.perf_counter() - started) * 1000

            qs = queries(n_queries, seed=23)
            started = time.perf_counter()
            first = vault.global_recall(qs[0])
            out["global_recall_first_s"] = time.perf_counter() - started
            out["summaries_written"] = len(vault.recall("", type="community_summary", limit=1000).items)
            out["global_recall_ms"] = timed([lambda q=q: vault.global_recall(q) for q in qs], warmup=5)
            out["global_recall_mode"] = first.search_mode
        out["prepare"] = prepare_fresh(
            path, "I am working on the billing pipeline: why is the invoices queue slow?"
        )
    return out
