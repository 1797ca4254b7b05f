"""Retrieval quality of `recall` on the BEIR collections in ../shared/data (read at run time).

Every document is remembered through the public API (title as summary, text as content) and
every test query is answered by `Vault.recall`; nDCG@10, R@10, R@100 and MRR@10 are averaged
over the judged queries.

    python -m benchmarks.quality [--data ../shared/data] [--collections scifact cranfield]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perseus_vault_core import Vault

from .metrics import mrr_at, ndcg_at, recall_at

# Published reference figures (nDCG@10 on the test split), printed beside ours.
REFERENCE = {
    "scifact": {
        "fts5": "0.687 (SQLite FTS5, porter, OR, bm25); BM25 0.665 (BEIR) / 0.679 (Anserini)",
        "dense": "0.645 (all-MiniLM-L6-v2, MTEB)",
        "hybrid": "about 0.72 (RRF k=60 of FTS5 and MiniLM, depth 100)",
    },
    "cranfield": {},
}


def data_dir() -> Path:
    """``$PERSEUS_VAULT_DATA``, else ``shared/data`` beside the checkout or any folder above it."""
    env = os.environ.get("PERSEUS_VAULT_DATA")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "data" / "scifact").is_dir():
            return parent / "shared" / "data"
    raise SystemExit("evaluation data not found: set PERSEUS_VAULT_DATA to the folder holding scifact/ and cranfield/")


@dataclass
class Collection:
    name: str
    docs: list[dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load(name: str, root: Path | None = None, max_queries: int | None = None) -> Collection:
    base = (root or data_dir()) / name
    with open(base / "corpus.jsonl", encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle if line.strip()]
    qrels: dict[str, dict[str, int]] = {}
    with open(base / "qrels" / "test.tsv", encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    queries = {}
    with open(base / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            q = json.loads(line)
            if q["_id"] in qrels:
                queries[q["_id"]] = q["text"]
    if max_queries is not None:
        queries = dict(sorted(queries.items(), key=lambda kv: (len(kv[0]), kv[0]))[:max_queries])
    return Collection(name, docs, queries, qrels)


def build_vault(collection: Collection, path: str, embedder: Any = None) -> Vault:
    vault = Vault(path, embedder=embedder if embedder is not None else False)
    records = (
        json.dumps({"category": collection.name, "key": d["_id"], "content": d["text"], "summary": d["title"] or None})
        for d in collection.docs
    )
    vault.import_jsonl(records)
    return vault


def evaluate(vault: Vault, collection: Collection, mode: str = "fts5", **params: object) -> dict[str, float]:
    totals = {"ndcg@10": 0.0, "r@10": 0.0, "r@100": 0.0, "mrr@10": 0.0}
    for qid, text in collection.queries.items():
        result = vault.recall(text, mode=mode, limit=100, reinforce=False, **params)
        ranked = [item.key for item in result.items]
        judged = collection.qrels[qid]
        totals["ndcg@10"] += ndcg_at(ranked, judged, 10)
        totals["r@10"] += recall_at(ranked, judged, 10)
        totals["r@100"] += recall_at(ranked, judged, 100)
        totals["mrr@10"] += mrr_at(ranked, judged, 10)
    n = len(collection.queries)
    return {k: v / n for k, v in totals.items()} | {"queries": float(n)}


def run(collections: list[str], root: Path | None = None, modes: tuple[str, ...] = ("fts5", "dense", "hybrid"),
        fusion: dict[str, Any] | None = None) -> list[dict[str, object]]:
    from perseus_vault_core.embed import load as load_embedder

    from .vector_cache import CachingEmbedder

    embedder = CachingEmbedder(load_embedder()) if modes != ("fts5",) else None
    rows = []
    for name in collections:
        collection = load(name, root)
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            vault = build_vault(collection, os.path.join(tmp, "q.db"), embedder)
            vault.wait_for_keyword_index()
            if embedder is not None:
                vault.wait_for_vector_index()
            built = time.perf_counter() - started
            for mode in modes:
                started = time.perf_counter()
                scores = evaluate(vault, collection, mode, **({"fusion": fusion} if fusion and mode == "hybrid" else {}))
                elapsed = time.perf_counter() - started
                rows.append({
                    "collection": name, "mode": mode, "docs": len(collection.docs), **scores,
                    "reference": REFERENCE.get(name, {}).get(mode, "-"),
                    "ingest_s": built, "query_ms": 1000 * elapsed / max(1, len(collection.queries)),
                })
            vault.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--collections", nargs="+", default=["scifact", "cranfield"])
    parser.add_argument("--modes", nargs="+", default=["fts5", "dense", "hybrid"])
    parser.add_argument("--fusion", type=json.loads, default=None, help='e.g. {"keyword_weight": 1.0, "dense_weight": 0.8}')
    args = parser.parse_args()
    for row in run(args.collections, args.data, tuple(args.modes), args.fusion):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
