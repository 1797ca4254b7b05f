"""Retrieval quality of `recall` on the BEIR collections in ../shared/data (read at run time, never copied).

Every document is remembered through the public API (title as summary, text as content) and
every test query is answered by `Vault.recall`; nDCG@10, R@10, R@100 and MRR@10 are averaged
over the judged queries. Without a collection (see ``data_dir``) it stops at once with one line
naming it.

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


COLLECTIONS = ("scifact", "cranfield")
BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")


class MissingData(LookupError):
    """An evaluation collection is not where the benchmarks look; the message (one line) names it and
    says how to provide it. The collections are never part of the repository (their licences forbid it)."""


def data_dir(collections: tuple[str, ...] | list[str] = COLLECTIONS, root: Path | None = None) -> Path:
    """The folder holding every one of ``collections`` in BEIR layout: ``root`` if given, else
    ``$PERSEUS_VAULT_DATA``, else the first ``shared/data`` beside the checkout or beside any folder above it."""
    env = os.environ.get("PERSEUS_VAULT_DATA")
    if root is not None:
        roots, where = [Path(root)], str(root)
    elif env:
        roots, where = [Path(env)], f"PERSEUS_VAULT_DATA={env}"
    else:
        roots = [parent / "shared" / "data" for parent in Path(__file__).resolve().parents]
        where = "../shared/data beside the checkout or any folder above it"
    for folder in roots:
        if all(_complete(folder / name) for name in collections):
            return folder
    missing = [n for n in collections if not any(_complete(folder / n) for folder in roots)] or list(
        collections
    )
    plural = "s" if len(missing) > 1 else ""
    folders = ", ".join(f"{n}/" for n in missing)
    how = f"put {folders} there"
    if root is None and not env:
        how += f" or set PERSEUS_VAULT_DATA to the folder holding {'them' if plural else 'it'}"
    raise MissingData(
        f"evaluation collection{plural} {', '.join(missing)} not found in {where}"
        f" (BEIR layout: {', '.join(BEIR_FILES)}): {how}"
    )


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in BEIR_FILES)


@dataclass
class Collection:
    name: str
    docs: list[dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def load(name: str, root: Path | None = None, max_queries: int | None = None) -> Collection:
    base = data_dir([name], root) / name
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
    records = (  # a document with no text is its title (a memory's content is never empty); with neither
        # (a few Cranfield records) there is nothing to find, and it is left out
        json.dumps(
            {
                "category": collection.name,
                "key": d["_id"],
                "content": d["text"] or d["title"],
                "summary": (d["title"] or None) if d["text"] else None,
            }
        )
        for d in collection.docs
        if (d["text"] or d["title"]).strip()
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


def run(
    collections: list[str],
    root: Path | None = None,
    modes: tuple[str, ...] = ("fts5", "dense", "hybrid"),
    fusion: dict[str, Any] | None = None,
    model: Any = None,
) -> list[dict[str, object]]:
    """``model``: the embedder (its vectors served from the cache), by default the one the operator configured."""
    from perseus_vault_core.embeddings import load as load_embedder

    from .vector_cache import CachingEmbedder

    data_dir(collections, root)  # a missing collection fails now, not after the model has loaded
    embedder = (model or CachingEmbedder(load_embedder())) if modes != ("fts5",) else None
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
                scores = evaluate(
                    vault, collection, mode, **({"fusion": fusion} if fusion and mode == "hybrid" else {})
                )
                elapsed = time.perf_counter() - started
                rows.append(
                    {
                        "collection": name,
                        "mode": mode,
                        "docs": len(collection.docs),
                        **scores,
                        "reference": REFERENCE.get(name, {}).get(mode, "-"),
                        "ingest_s": built,
                        "query_ms": 1000 * elapsed / max(1, len(collection.queries)),
                    }
                )
            vault.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--collections", nargs="+", default=list(COLLECTIONS))
    parser.add_argument("--modes", nargs="+", default=["fts5", "dense", "hybrid"])
    parser.add_argument(
        "--fusion", type=json.loads, default=None, help='e.g. {"keyword_weight": 1.0, "dense_weight": 0.8}'
    )
    args = parser.parse_args()
    try:
        rows = run(args.collections, args.data, tuple(args.modes), args.fusion)
    except MissingData as error:
        raise SystemExit(f"benchmarks.quality: {error}") from None
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
