"""The in-memory keyword index must rank exactly as FTS5's bm25() does, and follow every write."""

from __future__ import annotations

import multiprocessing
import random
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.indexes.keyword import KeywordIndex
from perseus_vault_core.storage.sqlite.keyword import fts5_totals

from ...conftest import Clock

WORDS = (
    "billing ledger invoice postgres sqlite replica backup restore cache latency throughput queue worker "
    "deploy rollback canary schema migration index vector search ranking memory agent token secret rotate "
    "alice bob carol incident outage alert pager runbook connection connecting connected connector "
    "the a of and to in for on with what why how we did decide"
).split()
UNICODE = ["café", "naïve", "Zürich", "日本語", "straße", "ÉCOLE", "emoji🙂", "résumé"]


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), rng.choice(UNICODE))
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), "—“quoted”—")
    return " ".join(words)


def results(vault: Vault, query: str, **kw: object) -> list[tuple[int, float]]:
    return [
        (i.id, i.score) for i in vault.recall(query, reinforce=False, trust_weight=0.0, limit=50, **kw).items
    ]


def compare_paths(vault: Vault, queries: list[str], **kw: object) -> None:
    index = vault.engine.keyword_index
    assert index is not None and index.ready, index.describe() if index else "no index"
    fast = [results(vault, q, **kw) for q in queries]
    vault.engine.keyword_index = None
    try:
        slow = [results(vault, q, **kw) for q in queries]
    finally:
        vault.engine.keyword_index = index
    for q, a, b in zip(queries, fast, slow):
        assert [i for i, _ in a] == [i for i, _ in b], q
        if "agent_id" in kw or "workspace_hash" in kw:
            assert a == b, q  # scoped: both paths score with the same arithmetic, to the last bit
        else:
            assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-12, abs=0), q


SCOPES: list[dict[str, object]] = [
    {"agent_id": "a"},
    {"workspace_hash": "w1"},
    {"agent_id": "b", "workspace_hash": "w2"},
]


def compare_scoped(vault: Vault, rng: random.Random, n: int = 10) -> None:
    for scope in SCOPES:
        compare_paths(vault, queries(rng, n), **scope)
        compare_paths(vault, queries(rng, n // 2), include_archived=True, **scope)


@pytest.fixture
def corpus(vault: Vault, clock: Clock) -> random.Random:
    rng = random.Random(42)
    vault.remember_many(
        {
            "category": rng.choice(["fact", "decision"]),
            "key": f"k{i}",
            "content": sentence(rng, rng.randint(3, 30)),
            "summary": sentence(rng, 4) if rng.random() < 0.3 else None,
            "topic_path": rng.choice(["ops", "db/core", None]),
            "agent_id": rng.choice(["a", "b", None]),
            "workspace_hash": rng.choice(["w1", "w2", None]),
        }
        for i in range(400)
    )
    return rng


def queries(rng: random.Random, n: int = 60) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(n)]


def test_same_ids_and_scores_as_fts5(vault: Vault, corpus: random.Random) -> None:
    assert vault.wait_for_keyword_index()
    compare_paths(vault, queries(corpus))
    compare_scoped(vault, corpus)
    compare_paths(vault, queries(corpus, 20), category="decision", topic_path="db")


def test_statistics_match_fts5(vault: Vault, corpus: random.Random) -> None:
    assert vault.wait_for_keyword_index()
    index = vault.engine.keyword_index
    assert index is not None
    assert fts5_totals(vault.engine.conn()) == (index._n_rows, index._n_tokens)


def test_follows_updates_archives_and_purges(vault: Vault, corpus: random.Random, clock: Clock) -> None:
    assert vault.wait_for_keyword_index()
    rng = corpus
    for i in range(120):
        clock.advance(10)
        k = rng.randrange(400)
        action = rng.random()
        if action < 0.5:
            vault.remember("fact" if k % 2 else "decision", f"k{k}", sentence(rng, rng.randint(3, 20)))
        elif action < 0.7:
            vault.remember("fact", f"new{i}", sentence(rng, 8))
        else:
            found = vault.recall("", limit=1, offset=rng.randrange(50), reinforce=False).items
            if found:
                vault.forget(found[0].id)
                if action > 0.9:
                    vault.purge(found[0].id)
    compare_paths(vault, queries(rng))
    compare_scoped(vault, rng)  # archived heads still count in their scope's statistics, purged ones no more
    index = vault.engine.keyword_index
    assert index is not None and fts5_totals(vault.engine.conn()) == (index._n_rows, index._n_tokens)


def _writer(path: str, start: int) -> None:
    with Vault(path, keyword_index=False) as other:
        other.remember_many(
            {"category": "fact", "key": f"p{start + i}", "content": f"ledger replica zebra{i}"}
            for i in range(50)
        )
        found = other.recall("ledger", limit=5, reinforce=False).items
        other.forget(found[0].id)


def test_follows_writes_from_another_process(db_path: Path) -> None:
    with Vault(db_path) as vault:  # wall clock, like the other process
        vault.remember_many(
            {"category": "fact", "key": f"k{i}", "content": f"ledger note {i}"} for i in range(100)
        )
        assert vault.wait_for_keyword_index()
        ctx = multiprocessing.get_context("spawn")
        proc = ctx.Process(target=_writer, args=(str(db_path), 0))
        proc.start()
        proc.join(60)
        assert proc.exitcode == 0
        assert any(i.key.startswith("p") for i in vault.recall("zebra3", reinforce=False).items)
        compare_paths(vault, ["ledger", "ledger replica", "zebra7 note", "note"])


def test_reindex_makes_mirrors_rebuild(vault: Vault, corpus: random.Random) -> None:
    assert vault.wait_for_keyword_index()
    vault.reindex()
    vault.recall("billing")  # the mirror notices the rebuild and stands aside until rebuilt
    assert vault.wait_for_keyword_index()
    compare_paths(vault, queries(corpus, 20))


def test_disables_itself_when_tokens_disagree(vault: Vault, corpus: random.Random) -> None:
    index = KeywordIndex(vault.engine.backend)
    conn = vault.engine.conn()
    # Simulate drift between the rows and FTS5: remove one head from FTS5 behind the vault's back.
    vid, content, summary, tags = conn.execute(
        "SELECT vid, content, summary, tags FROM entity_versions WHERE recorded_to_ms IS NULL LIMIT 1"
    ).fetchone()
    conn.execute(
        "INSERT INTO entities_fts(entities_fts, rowid, content, summary, tags) VALUES ('delete', ?, ?, ?, ?)",
        (vid, content, summary, tags),
    )
    index.build(conn)
    assert not index.ready and index.disabled and "differs from FTS5" in index.disabled
    assert "disabled" in index.describe()


def test_a_reader_behind_the_mirror_gets_fts5_not_a_newer_snapshot(vault: Vault, clock: Clock) -> None:
    """sync and rank happen under one lock: a reader whose snapshot is older than the mirror is
    answered by FTS5 for its own snapshot, never by a mirror that moved on."""
    vault.remember_many(
        {"category": "fact", "key": f"k{i}", "content": f"billing note {i}"} for i in range(50)
    )
    assert vault.wait_for_keyword_index()
    index = vault.engine.keyword_index
    assert index is not None
    from perseus_vault_core.storage.sqlite.connection import connect

    reader = connect(vault.path)
    reader.execute("BEGIN")
    assert index.search(reader, ["bill"]) is not None  # at the reader's snapshot
    clock.advance(10)

    def write_and_recall() -> None:
        vault.remember("fact", "k7", "rewritten without the word")
        vault.recall("billing")  # moves the mirror past the reader's snapshot

    import threading

    t = threading.Thread(target=write_and_recall)
    t.start()
    t.join()
    assert index.search(reader, ["bill"]) is None  # the mirror is ahead: it stands aside
    from perseus_vault_core.contract.params import Filters
    from perseus_vault_core.primitives.filters import view
    from perseus_vault_core.recall.arms import Arms

    hits, _ = Arms(vault.engine.backend, keyword_index=index).keyword(
        reader, ["billing"], ["bill"], view(Filters(), clock.now), 100
    )
    assert len(hits) == 50  # the reader still sees k7's old content in its snapshot
    reader.execute("COMMIT")
    reader.close()


def test_recall_right_after_writes_stays_exact(vault: Vault, corpus: random.Random, clock: Clock) -> None:
    assert vault.wait_for_keyword_index()
    for i in range(30):
        clock.advance(5)
        vault.remember("fact", f"k{i}", sentence(corpus, 12))
        compare_paths(vault, queries(corpus, 3))
        compare_paths(vault, queries(corpus, 2), **SCOPES[i % 3])


@pytest.fixture
def zipf(vault: Vault) -> list[str]:
    """3,000 rows over a skewed vocabulary (a few words in most rows, most words in few), where a query's
    rare words decide its best rows and its common ones only nudge them: what pruning leaves out."""
    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(400)]
    weights = [1.0 / (rank + 1) ** 1.1 for rank in range(400)]
    vault.remember_many(
        {
            "category": rng.choice(["fact", "decision"]),
            "key": f"z{i}",
            "topic_path": "few" if i % 40 == 0 else "many",
            "content": " ".join(rng.choices(vocabulary, weights, k=rng.randint(5, 40))),
        }
        for i in range(3000)
    )
    return [
        " ".join([rng.choice(vocabulary[100:]), *rng.sample(vocabulary[:6], rng.randint(1, 3))])
        for _ in range(40)
    ] + [" ".join(rng.sample(vocabulary[:30], 3)) for _ in range(20)]


def test_pruned_rankings_keep_the_best_rows_and_their_exact_scores(vault: Vault, zipf: list[str]) -> None:
    from perseus_vault_core.primitives.query import parse

    assert vault.wait_for_keyword_index()
    index = vault.engine.keyword_index
    assert index is not None
    pruned_any = 0
    for query in zipf:
        stems = list(parse(query).stems)
        full = index._ranked(stems, None, None)
        for depth in (5, 20, 60):
            pruned = index._ranked(stems, None, None, depth)
            pruned_any += pruned.partial
            assert pruned.ceiling == full.ceiling
            assert pruned.top(depth) == full.top(depth), (query, depth)  # ids, versions and scores to the bit
            assert len(pruned) <= len(full)
    assert pruned_any > 30  # the corpus does prune: the comparison above is not of two full rankings


def test_recall_with_pruning_matches_fts5_even_when_filters_hide_most_rows(
    vault: Vault, zipf: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert vault.wait_for_keyword_index()
    asked: list[int | None] = []
    search = KeywordIndex.search

    def spy(self: KeywordIndex, *args: Any, depth: int | None = None) -> Any:
        asked.append(depth)
        return search(self, *args, depth=depth)

    monkeypatch.setattr(KeywordIndex, "search", spy)
    for kw in ({}, {"category": "decision"}, {"topic_path": "few"}):
        index = vault.engine.keyword_index
        fast = [
            [(i.id, i.score) for i in vault.recall(q, reinforce=False, limit=5, **kw).items] for q in zipf
        ]
        vault.engine.keyword_index = None
        try:
            slow = [
                [(i.id, i.score) for i in vault.recall(q, reinforce=False, limit=5, **kw).items] for q in zipf
            ]
        finally:
            vault.engine.keyword_index = index
        for q, a, b in zip(zipf, fast, slow):
            assert [i for i, _ in a] == [i for i, _ in b], q
            assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-12, abs=0), q
    assert None in asked  # a filter hid most of a pruned ranking's best rows: every match was ranked then


@pytest.mark.parametrize("sizes", [(0,), (1,), (5, 0), (40, 40, 3), (300, 7, 300)])
def test_sorted_union_is_the_distinct_slots_ascending(sizes: tuple[int, ...]) -> None:
    import numpy as np

    from perseus_vault_core.indexes.keyword import sorted_union

    rng = np.random.default_rng(sum(sizes))
    arrays = [np.sort(rng.choice(500, size, replace=False)).astype(np.int32) for size in sizes]
    union = sorted_union(arrays)
    assert union.dtype == np.int32 and union.tolist() == sorted(set().union(*(a.tolist() for a in arrays)))
