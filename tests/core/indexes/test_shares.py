"""indexes/shares.py: words' BM25 shares kept between keyword queries, exact and never stale."""

from __future__ import annotations

import random

import numpy as np

from perseus_vault_core import Vault
from perseus_vault_core.indexes.keyword import KeywordIndex, Word
from perseus_vault_core.indexes.shares import Known, Shares
from perseus_vault_core.primitives.query import parse

from ...conftest import Clock


def known(size: int) -> Known:
    slots = np.arange(size, dtype=np.int32)
    return Known(Word(slots, np.ones(size, dtype=np.float32), 1.0), np.ones(size))


def test_the_least_recently_used_words_go_first_and_the_budget_holds() -> None:
    shares = Shares(budget=100).at((1,))
    for term in ("a", "b", "c", "d"):
        shares.put(term, known(25))
    assert len(shares) == 4
    assert shares.get("a") is not None  # used: now the most recent
    shares.put("e", known(25))
    assert shares.get("b") is None and shares.get("a") is not None and len(shares) == 4
    shares.put("huge", known(26))  # more than a quarter of the budget: recomputed each time, never held
    assert shares.get("huge") is None


def test_another_state_of_the_index_finds_nothing_held() -> None:
    shares = Shares().at((1, 2))
    shares.put("a", known(3))
    assert shares.at((1, 2)).get("a") is not None
    assert shares.at((1, 3)).get("a") is None
    assert shares.at((1, 2)).get("a") is None  # emptied, not set aside


def zipf_vault(vault: Vault) -> list[str]:
    rng = random.Random(11)
    vocabulary = [f"w{i}" for i in range(300)]
    weights = [1.0 / (rank + 1) ** 1.1 for rank in range(300)]
    vault.remember_many(
        {
            "category": "fact",
            "key": f"z{i}",
            "content": " ".join(rng.choices(vocabulary, weights, k=rng.randint(5, 30))),
        }
        for i in range(2000)
    )
    return [
        " ".join([rng.choice(vocabulary[80:]), *rng.sample(vocabulary[:8], rng.randint(1, 3))])
        for _ in range(30)
    ]


def ranked(index: KeywordIndex, query: str, depth: int | None) -> tuple[list[int], list[int], list[float]]:
    ranking = index._ranked(list(parse(query).stems), None, None, depth)
    return ranking.best(depth or len(ranking))


def test_held_shares_rank_to_the_bit_as_shares_computed_afresh(vault: Vault) -> None:
    queries = zipf_vault(vault)
    assert vault.wait_for_keyword_index()
    index = vault.engine.keyword_index
    assert index is not None
    kept = index._shares
    asks = [(q, depth) for q in queries for depth in (None, 5, 20, 60)]
    random.Random(3).shuffle(asks)
    index._shares = Shares(budget=0)
    afresh = [ranked(index, q, depth) for q, depth in asks]
    index._shares = kept
    first = [ranked(index, q, depth) for q, depth in asks]  # fills the cache as it goes
    assert len(kept) > 20 and any(held.floors for held in kept._words.values())
    again = [ranked(index, q, depth) for q, depth in asks]  # every word held now
    assert first == afresh and again == afresh
    for held in kept._words.values():  # each floor held is the depth-th best share at its own depth
        for depth, floor in held.floors.items():
            assert floor == np.sort(held.shares)[::-1][depth - 1]


def test_a_write_makes_the_next_query_score_its_words_afresh(vault: Vault, clock: Clock) -> None:
    vault.remember_many(
        {"category": "fact", "key": f"k{i}", "content": f"billing ledger note {i}"} for i in range(50)
    )
    assert vault.wait_for_keyword_index()
    index = vault.engine.keyword_index
    assert index is not None
    before = vault.recall("ledger", mode="fts5", reinforce=False, limit=100)
    assert index._shares.get("ledger") is not None
    clock.advance(10)
    new = vault.remember(
        "fact", "new", "ledger ledger ledger"
    ).id  # a new row for the word held, new statistics
    after = vault.recall("ledger", mode="fts5", reinforce=False, limit=100)
    assert after.items[0].id == new and len(after.items) == len(before.items) + 1
    vault.engine.keyword_index = None
    try:
        by_sql = vault.recall("ledger", mode="fts5", reinforce=False, limit=100)
    finally:
        vault.engine.keyword_index = index
    assert [i.id for i in after.items] == [i.id for i in by_sql.items]
