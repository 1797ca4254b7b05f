"""The stores a user would pick instead of the vault, side by side in the same process and run.

Every peer gets the same documents and the SAME MiniLM vectors as the vault (from the vector cache,
keyed by model identity and text hash); query vectors are computed once, before timing, and handed
to every system alike (the vault through an embedder that looks them up, Chroma and the LangGraph
stores through their embedding functions, LlamaIndex as ``query_embedding``), so no system pays for
embedding a query inside the timed call. Add the query-embedding p50 of the speed section for an
end-to-end figure.

Peers and the vault arm each is compared with:

- keyword: ``bm25s`` and ``rank-bm25`` (in memory) against ``recall(mode="fts5")``;
- dense: LangGraph ``InMemoryStore`` and ``SqliteStore`` (sqlite-vec), Chroma ``PersistentClient``
  (HNSW, cosine), LlamaIndex ``SimpleVectorStore`` against ``recall(mode="dense")``;
- hybrid: what a user would assemble from the fastest arms, bm25s + Chroma fused by reciprocal
  rank (k=60, depth 100, as in SciFact's published hybrid reference figure), against ``recall()``;
- graph: LlamaIndex ``SimplePropertyGraphStore.get_rel_map`` against ``traverse`` (see
  ``graph_peer``).

Latency is measured interleaved: query by query, every system answers the same query, in an order
shuffled anew for each query (seeded), so machine drift hits all of them alike and no system always
follows the same one (with a rotating order each system always ran right after the same other one,
and one that followed a system answering the same query found its data warm: in one run the vault's
keyword arm with no shares kept, placed right after its hybrid arm, beat the keyword arm with them
by 0.3 ms); each peer's p50 is divided by the vault's
p50 over the same queries (a ratio above 1 means the vault is faster). Slow peers answer only the
first queries (their count is in the report). The vault is called with ``reinforce=False``, as
the peers write nothing on a read.
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from perseus_vault_core import Vault

from .metrics import mrr_at, ndcg_at, recall_at
from .speed import percentiles, words_afresh
from .synthetic import memories, queries

CURVE_K = (1, 3, 5, 10, 20, 50, 100)


class LookupEmbedder:
    """The bundled model's identity, answering from vectors computed before timing (then the model)."""

    def __init__(self, inner: Any, table: dict[str, np.ndarray]) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.dimension = inner.dimension
        self.table = table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [self._unwrap(t) for t in texts]
        if all(t in self.table for t in texts):
            return (
                np.stack([self.table[t] for t in texts])
                if texts
                else np.zeros((0, self.dimension), np.float32)
            )
        return np.asarray(self.inner.embed(list(texts)), dtype=np.float32)

    def _unwrap(self, text: str) -> str:
        # LangGraph's SqliteStore (3.1.x) hands the embedder the field serialized as JSON,
        # '{"text": "..."}', where InMemoryStore hands the text itself; unwrapping it gives SqliteStore
        # the same vectors as every other system (the report says so).
        if text not in self.table and text.startswith('{"text": '):
            try:
                inner = json.loads(text).get("text")
            except ValueError:
                return text
            if isinstance(inner, str) and inner in self.table:
                return inner
        return text

    def lists(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self.embed(texts)]


# --- tokenization for the BM25 libraries ------------------------------------------------------

_WORD = re.compile(r"\w+")


def _stemmer() -> Callable[[str], str] | None:
    # Porter stemming, as the vault's FTS5 (porter) uses; nltk comes with llama-index-core. Without
    # it the BM25 peers run unstemmed, and the report says so.
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError:
        return None
    stem: Callable[[str], str] = PorterStemmer().stem
    return stem


STEM = _stemmer()
STOP = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
there these they this to was will with what who why how do we did does""".split()
)


def tokens(text: str) -> list[str]:
    words = [w for w in _WORD.findall(text.lower()) if w not in STOP]
    return [STEM(w) for w in words] if STEM else words


# --- the peers ---------------------------------------------------------------------------------


class Peer:
    name = "peer"
    arm = "dense"  # the vault mode it is compared with: fts5, dense or hybrid
    cost = "fast"  # fast / medium / slow: how many queries it answers at large sizes
    persistent = False
    builds = True  # False where it queries what another peer built: no ingest rate of its own

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        raise NotImplementedError

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        raise NotImplementedError

    def disk_bytes(self) -> int | None:
        return None

    def close(self) -> None:
        pass


def _folder_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


class Bm25s(Peer):
    name, arm = "bm25s (in memory)", "fts5"

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        import bm25s

        self.ids = ids
        self.index = bm25s.BM25()
        self.index.index([tokens(t) for t in texts], show_progress=False)

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        query = tokens(text)
        if not query:
            return []
        k = min(k, len(self.ids))
        docs, scores = self.index.retrieve([query], k=k, show_progress=False, n_threads=1)
        return [self.ids[int(i)] for i, s in zip(docs[0], scores[0]) if s > 0]


class RankBm25(Peer):
    name, arm, cost = "rank-bm25 (in memory)", "fts5", "medium"

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = ids
        self.index = BM25Okapi([tokens(t) or ["_"] for t in texts])

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        scores = self.index.get_scores(tokens(text))
        top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
        top = top[np.argsort(-scores[top])]
        return [self.ids[int(i)] for i in top if scores[i] > 0]


class LangGraphInMemory(Peer):
    name, cost = "LangGraph InMemoryStore", "slow"

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        from langgraph.store.base import PutOp
        from langgraph.store.memory import InMemoryStore

        self.store = InMemoryStore(index={"dims": embed.dimension, "embed": embed.lists, "fields": ["text"]})
        # InMemoryStore (langgraph 1.x) fails a batch holding the same text twice (it embeds the
        # distinct texts, then expects one vector per item): repeats go in a later batch.
        pending = list(zip(ids, texts))
        while pending:
            batch, seen, later = [], set(), []
            for i, t in pending:
                (later if t in seen or len(batch) >= 2000 else batch).append((i, t))
                seen.add(t)
            self.store.batch([PutOp(("mem",), i, {"text": t}) for i, t in batch])
            pending = later

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        return [item.key for item in self.store.search(("mem",), query=text, limit=k)]


class LangGraphSqlite(Peer):
    name, cost, persistent = "LangGraph SqliteStore (sqlite-vec)", "medium", True

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        from langgraph.store.base import PutOp
        from langgraph.store.sqlite import SqliteStore

        self.path = os.path.join(folder, "langgraph.sqlite")
        # The same SQLite module the vault runs on (the interpreter's own cannot load sqlite-vec here).
        from perseus_vault_core.storage.sqlite.connection import choose_driver

        self.conn = choose_driver().module.connect(self.path, check_same_thread=False, isolation_level=None)
        self.store = SqliteStore(
            self.conn, index={"dims": embed.dimension, "embed": embed.lists, "fields": ["text"]}
        )
        self.store.setup()
        for start in range(0, len(ids), 2000):
            self.store.batch(
                [
                    PutOp(("mem",), i, {"text": t})
                    for i, t in zip(ids[start : start + 2000], texts[start : start + 2000])
                ]
            )

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        return [item.key for item in self.store.search(("mem",), query=text, limit=k)]

    def disk_bytes(self) -> int | None:
        return sum(os.path.getsize(p) for p in (self.path, self.path + "-wal") if os.path.exists(p))

    def close(self) -> None:
        self.conn.close()


class Chroma(Peer):
    """Chroma as a user creates it (its HNSW at its defaults, ef_search 100), or with ``ef_search`` raised:
    at its default its recall@10 against an exact scan is about 0.92 to 0.96 on the synthetic memories, and
    the vault's dense arm is held to 0.99, so the table also shows Chroma searching deep enough to reach
    that recall (ef_search 800 gave 0.993 at 100k), at the cost in time that recall has for it."""

    name, persistent = "Chroma PersistentClient (HNSW)", True

    def __init__(self, ef_search: int | None = None) -> None:
        self.ef_search = ef_search
        if ef_search is not None:
            self.name = f"Chroma PersistentClient (HNSW, ef_search {ef_search})"

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        import chromadb
        from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

        class SameVectors(EmbeddingFunction[Documents]):
            # The MiniLM vectors every system gets (the cache), as Chroma's embedding function.
            def __init__(self) -> None:
                pass

            def __call__(self, input: Documents) -> Embeddings:
                return list(embed.embed(list(input)))

            @staticmethod
            def name() -> str:
                return "perseus-bench-minilm"

            def get_config(self) -> dict[str, Any]:
                return {}

            @staticmethod
            def build_from_config(config: dict[str, Any]) -> SameVectors:
                return SameVectors()

        self.path = os.path.join(folder, "chroma" if self.ef_search is None else f"chroma-ef{self.ef_search}")
        self.client = chromadb.PersistentClient(
            path=self.path, settings=chromadb.Settings(anonymized_telemetry=False)
        )
        if self.ef_search is None:
            self.collection = self.client.create_collection(
                "mem", embedding_function=SameVectors(), metadata={"hnsw:space": "cosine"}
            )
        else:
            self.collection = self.client.create_collection(
                "mem",
                embedding_function=SameVectors(),
                configuration={"hnsw": {"space": "cosine", "ef_search": self.ef_search}},
            )
        step = min(5000, self.client.get_max_batch_size())
        for start in range(0, len(ids), step):
            self.collection.add(
                ids=ids[start : start + step],
                documents=texts[start : start + step],
                embeddings=vectors[start : start + step],
            )

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        found = self.collection.query(query_texts=[text], n_results=k, include=[])
        return list(found["ids"][0])

    def disk_bytes(self) -> int | None:
        return _folder_bytes(self.path)


class LlamaSimpleVector(Peer):
    name, cost = "LlamaIndex SimpleVectorStore", "slow"

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        from llama_index.core.schema import TextNode
        from llama_index.core.vector_stores import SimpleVectorStore

        self.store = SimpleVectorStore()
        for start in range(0, len(ids), 5000):
            self.store.add(
                [
                    TextNode(id_=i, text=t, embedding=v.tolist())
                    for i, t, v in zip(
                        ids[start : start + 5000], texts[start : start + 5000], vectors[start : start + 5000]
                    )
                ]
            )

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        from llama_index.core.vector_stores import VectorStoreQuery

        return list(
            self.store.query(VectorStoreQuery(query_embedding=vector.tolist(), similarity_top_k=k)).ids or []
        )


class ChromaDocuments(Peer):
    """The same Chroma collection queried as a user queries it, with the default ``include`` (documents,
    metadatas and distances): the work the vault does too, since every recall returns its memories
    whole. The plain Chroma arm asks for ids only (``include=[]``), which is less work than the vault's."""

    name, persistent, builds = "Chroma PersistentClient (HNSW), documents returned", True, False

    def __init__(self, chroma: Chroma) -> None:
        self.chroma = chroma

    def disk_bytes(self) -> int | None:
        return self.chroma.disk_bytes()

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        pass  # shares the collection built already

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        found = self.chroma.collection.query(query_texts=[text], n_results=k)
        return list(found["ids"][0])


class FusedBm25sChroma(Peer):
    """Hybrid as a user would assemble it: bm25s and Chroma, reciprocal-rank fusion (k=60, depth 100)."""

    name, arm, builds = "bm25s + Chroma, RRF k=60", "hybrid", False

    def __init__(self, keyword: Bm25s, dense: Chroma) -> None:
        self.keyword, self.dense = keyword, dense

    def build(
        self, ids: list[str], texts: list[str], vectors: np.ndarray, folder: str, embed: LookupEmbedder
    ) -> None:
        pass  # shares the two arms built already

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        depth = max(k, 100)
        score: dict[str, float] = {}
        for ranked in (self.keyword.search(text, vector, depth), self.dense.search(text, vector, depth)):
            for rank, doc in enumerate(ranked):
                score[doc] = score.get(doc, 0.0) + 1.0 / (60 + rank + 1)
        return sorted(score, key=lambda d: -score[d])[:k]


def make_peers() -> list[Peer]:
    keyword, dense = Bm25s(), Chroma()
    return [
        keyword,
        RankBm25(),
        dense,
        ChromaDocuments(dense),
        Chroma(ef_search=CHROMA_DEEP_EF),
        LangGraphSqlite(),
        LangGraphInMemory(),
        LlamaSimpleVector(),
        FusedBm25sChroma(keyword, dense),
    ]


CHROMA_DEEP_EF = (
    800  # Chroma's ef_search for recall@10 at or above 0.99 at 100k (0.993 measured; 600 gave 0.988)
)


# --- the vault as one more system ---------------------------------------------------------------


class VaultArm:
    def __init__(self, vault: Vault, mode: str, keys: dict[str, str] | None = None) -> None:
        self.vault, self.mode = vault, mode
        self.name = f"Perseus Vault {mode}"

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        # The k nearest, as the peers answer: no relevance floor (min_score=None), the default ranking otherwise.
        return [
            i.key
            for i in self.vault.recall(text, mode=self.mode, limit=k, reinforce=False, min_score=None).items
        ]


class VaultArmAfresh(VaultArm):
    """The keyword arm with no word's shares kept between queries (benchmarks.speed.words_afresh): every
    query scores its words as the first one after a write does."""

    def __init__(self, vault: Vault) -> None:
        super().__init__(vault, "fts5")
        self.name = "Perseus Vault fts5, words scored afresh"

    def search(self, text: str, vector: np.ndarray, k: int) -> list[str]:
        with words_afresh(self.vault):
            return super().search(text, vector, k)


def build_all(
    peers: list[Peer],
    ids: list[str],
    texts: list[str],
    vectors: np.ndarray,
    folder: str,
    embed: LookupEmbedder,
    log: Callable[[str], None],
) -> dict[str, dict[str, float | None]]:
    """Build every peer; its ingest rate (items/s, vectors given) and its size on disk."""
    out: dict[str, dict[str, float | None]] = {}
    for peer in peers:
        log(f"  build {peer.name} ...")
        started = time.perf_counter()
        peer.build(ids, texts, vectors, folder, embed)
        elapsed = time.perf_counter() - started
        size = peer.disk_bytes()
        out[peer.name] = {
            "ingest_per_s": len(ids) / elapsed if peer.builds else None,
            "disk_mb": size / 1e6 if size is not None else None,
        }
    return out


# --- quality on the BEIR collections -----------------------------------------------------------


def quality(
    collections: list[str], cached: Any, root: Any = None, log: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """nDCG@10, R@10, R@100, MRR@10 and recall@k of every peer (and the vault) on each collection."""
    from . import quality as q

    rows: list[dict[str, Any]] = []
    for name in collections:
        col = q.load(name, root)
        ids = [d["_id"] for d in col.docs]
        texts = [f"{d['title']} {d['text']}".strip() if d.get("title") else d["text"] for d in col.docs]
        log(f"peers quality on {name} ({len(ids):,} docs) ...")
        vectors = cached.embed(texts)
        qtexts = list(col.queries.values())
        table = dict(zip(texts, vectors)) | dict(zip(qtexts, cached.embed(qtexts)))
        embed = LookupEmbedder(cached, table)
        with tempfile.TemporaryDirectory() as tmp:
            peers = make_peers()
            build_all(peers, ids, texts, vectors, tmp, embed, log)
            vault = q.build_vault(col, os.path.join(tmp, "vault.db"), embed)
            vault.wait_for_keyword_index()
            vault.wait_for_vector_index()
            systems: list[Any] = [VaultArm(vault, m) for m in ("fts5", "dense", "hybrid")] + peers
            for system in systems:
                totals = {"ndcg@10": 0.0, "r@10": 0.0, "r@100": 0.0, "mrr@10": 0.0}
                curve = [0.0] * len(CURVE_K)
                for qid, text in col.queries.items():
                    ranked = system.search(text, table[text], 100)
                    judged = col.qrels[qid]
                    totals["ndcg@10"] += ndcg_at(ranked, judged, 10)
                    totals["r@10"] += recall_at(ranked, judged, 10)
                    totals["r@100"] += recall_at(ranked, judged, 100)
                    totals["mrr@10"] += mrr_at(ranked, judged, 10)
                    for j, k in enumerate(CURVE_K):
                        curve[j] += recall_at(ranked, judged, k)
                n = len(col.queries)
                arm = system.mode if isinstance(system, VaultArm) else system.arm
                rows.append(
                    {
                        "collection": name,
                        "system": system.name,
                        "arm": arm,
                        "queries": n,
                        "vault": isinstance(system, VaultArm),
                        **{k: v / n for k, v in totals.items()},
                        "recall_curve": [c / n for c in curve],
                    }
                )
            vault.close()
            for peer in peers:
                peer.close()
    return rows


# --- latency, interleaved ----------------------------------------------------------------------


def query_budget(cost: str, n: int, n_queries: int) -> int:
    """How many of the queries a peer answers: all for fast peers, fewer for slow ones at scale."""
    if cost == "fast":
        return n_queries
    if cost == "medium":
        return min(n_queries, 150 if n <= 10_000 else 50 if n <= 100_000 else 0)
    return min(n_queries, 30 if n <= 10_000 else 10 if n <= 100_000 else 0)


Corpus = tuple[
    list[dict[str, Any]], list[str], list[str], np.ndarray, list[str], dict[str, np.ndarray], "LookupEmbedder"
]


def corpus(n: int, n_queries: int, cached: Any) -> Corpus:
    """``n`` synthetic memories and ``n_queries`` queries with their cached vectors: (records, ids, texts, vectors,
    queries, text -> vector for both, an embedder that looks every one of them up)."""
    records = list(memories(n))
    ids = [str(r["key"]) for r in records]
    texts = [str(r["content"]) for r in records]
    vectors = cached.embed(texts)
    qs = queries(n_queries)
    table = dict(zip(texts, vectors)) | dict(zip(qs, cached.embed(qs)))
    return records, ids, texts, vectors, qs, table, LookupEmbedder(cached, table)


def speed(
    n: int, model: Any, cached: Any, n_queries: int = 300, k: int = 10, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """All systems on ``n`` synthetic memories: ingest, disk, interleaved p50/p95 and ratios to the vault."""
    log(f"peers at {n:,}: vectors ...")
    records, ids, texts, vectors, qs, table, embed = corpus(n, n_queries, cached)
    out: dict[str, Any] = {"entities": n, "queries": n_queries, "k": k}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "vault.db")
        vault = Vault(path, embedder=embed)
        started = time.perf_counter()
        vault.import_jsonl(json.dumps(r) for r in records)
        vault_ingest = n / (time.perf_counter() - started)
        vault.wait_for_keyword_index()
        vault.wait_for_vector_index()
        peers = [p for p in make_peers() if query_budget(p.cost, n, n_queries) > 0]
        built = build_all(peers, ids, texts, vectors, tmp, embed, log)
        built["Perseus Vault"] = {"ingest_per_s": vault_ingest, "disk_mb": os.path.getsize(path) / 1e6}
        out["build"] = built
        arms = {m: VaultArm(vault, m) for m in ("fts5", "dense", "hybrid")}
        systems: list[Any] = list(arms.values()) + [VaultArmAfresh(vault)] + peers
        budget = {s.name: query_budget(getattr(s, "cost", "fast"), n, n_queries) for s in systems}
        samples: dict[str, dict[int, float]] = {s.name: {} for s in systems}
        results: dict[str, dict[int, list[str]]] = {s.name: {} for s in systems}
        for s in systems:  # warm-up: caches, lazy loads, HNSW pages
            for q in qs[:5]:
                s.search(q, table[q], k)
        log(f"  interleaved queries at {n:,} ...")
        for i, q in enumerate(qs):
            active = [s for s in systems if i < budget[s.name]]
            for s in random.Random(i).sample(active, len(active)):
                started = time.perf_counter()
                got = s.search(q, table[q], k)
                samples[s.name][i] = (time.perf_counter() - started) * 1000
                results[s.name][i] = got
            if i % 50 == 0:
                log(f"    query {i}/{len(qs)}")
        exact = _exact_top(vectors, ids, [table[q] for q in qs], k)
        rows = []
        for s in systems:
            arm = s.mode if isinstance(s, VaultArm) else s.arm
            mine = samples[s.name]
            ref = samples[arms[arm].name]
            row: dict[str, Any] = {
                "system": s.name,
                "arm": arm,
                "queries": len(mine),
                **percentiles(list(mine.values())),
            }
            if not isinstance(s, VaultArm):
                row["ratio_p50"] = statistics.median(mine.values()) / statistics.median(ref[i] for i in mine)
                row["ratio_p95"] = row["p95"] / percentiles([ref[i] for i in mine])["p95"]
            if arm == "dense":
                row["recall_vs_exact"] = sum(len(set(results[s.name][i]) & exact[i]) for i in mine) / (
                    k * len(mine)
                )
            rows.append(row)
        out["latency"] = rows
        vault.close()
        for peer in peers:
            peer.close()
    return out


def _exact_top(vectors: np.ndarray, ids: list[str], qvecs: list[np.ndarray], k: int) -> list[set[str]]:
    normed = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    out = []
    for qv in qvecs:
        sims = normed @ (qv / max(float(np.linalg.norm(qv)), 1e-12))
        top = np.argpartition(-sims, k)[:k]
        out.append({ids[int(i)] for i in top})
    return out


# --- graph: traverse against LlamaIndex's property graph ---------------------------------------


def graph_peer(
    path: str, model: Any, pairs: list[tuple[int, int]], starts: list[int], depth: int = 2
) -> dict[str, Any]:
    """``traverse(depth=2, direction="out")`` against ``SimplePropertyGraphStore.get_rel_map`` on the same links."""
    from llama_index.core.graph_stores import SimplePropertyGraphStore
    from llama_index.core.graph_stores.types import EntityNode, Relation

    store = SimplePropertyGraphStore()
    nodes = sorted({a for a, _ in pairs} | {b for _, b in pairs})
    started = time.perf_counter()
    store.upsert_nodes([EntityNode(name=str(i), label="memory") for i in nodes])
    store.upsert_relations([Relation(label="related", source_id=str(a), target_id=str(b)) for a, b in pairs])
    build_s = time.perf_counter() - started
    vault_ms, peer_ms = [], []
    with Vault(path, embedder=model) as vault:
        for j, s in enumerate(starts):
            calls: list[Callable[[], Any]] = [
                lambda s=s: vault.traverse(s, depth=depth, direction="out"),
                lambda s=s: store.get_rel_map(
                    [EntityNode(name=str(s), label="memory")], depth=depth, limit=100_000
                ),
            ]
            order = calls if j % 2 == 0 else calls[::-1]
            times = []
            for call in order:
                t0 = time.perf_counter()
                call()
                times.append((time.perf_counter() - t0) * 1000)
            v, p = (times[0], times[1]) if j % 2 == 0 else (times[1], times[0])
            vault_ms.append(v)
            peer_ms.append(p)
    warm = 3
    return {
        "starts": len(starts) - warm,
        "vault_ms": percentiles(vault_ms[warm:]),
        "peer_ms": percentiles(peer_ms[warm:]),
        "ratio_p50": statistics.median(peer_ms[warm:]) / statistics.median(vault_ms[warm:]),
        "peer_build_s": build_s,
        "peer": "LlamaIndex SimplePropertyGraphStore.get_rel_map",
    }


if __name__ == "__main__":
    import sys

    from perseus_vault_core.embeddings import load

    from .vector_cache import CachingEmbedder

    real = load()
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    print(
        json.dumps(
            speed(size, real, CachingEmbedder(real), n_queries=int(sys.argv[2]) if len(sys.argv) > 2 else 40),
            indent=1,
        )
    )
