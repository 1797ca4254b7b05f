"""The top of a recall does not depend on how much the caller asks for: the first ``k`` items of
``recall(limit=k)`` are the first ``k`` of a deeper recall, and ``offset`` pages are slices of it, in
every mode. The store is large enough that the arms' pools matter (a query's words match far more
memories than a pool holds), so a rule that let the pool grow with ``limit`` would show here."""

from __future__ import annotations

import random

import pytest

from perseus_vault_core import Vault

pytestmark = pytest.mark.both_backends

WORDS = ("deploy billing ledger gateway cache queue retry timeout schema index replica backup region "
         "token session export import alert pager runbook rollout canary quota invoice refund webhook").split()
QUERIES = ("billing ledger retry", "gateway timeout alert", "schema index replica backup")


def _fill(vault: Vault, n: int = 1_500) -> None:
    rng = random.Random(36)
    vault.remember_many([{"category": rng.choice(("note", "fact", "decision")), "key": f"k{i}",
                          "content": " ".join(rng.choices(WORDS, k=rng.randint(4, 12))) + f" item {i}"}
                         for i in range(n)])
    vault.wait_for_keyword_index()  # every call answered by the same path (the SQL path's cosines may
    vault.wait_for_vector_index()  # differ from the index's in the last bit, which curation can read)


def _ids(vault: Vault, query: str, mode: str, limit: int, offset: int = 0, **more: object) -> list[int]:
    return [i.id for i in vault.recall(query, mode=mode, limit=limit, offset=offset, reinforce=False, **more).items]


@pytest.mark.parametrize("mode", ["fts5", "dense", "hybrid"])
def test_the_top_k_is_the_same_whatever_the_limit_and_offset(dense_vault: Vault, mode: str) -> None:
    _fill(dense_vault)
    for query in QUERIES:
        deep = _ids(dense_vault, query, mode, 400)
        assert len(deep) == 400  # pools matter: far more matches than the first tier's pool
        for k in (1, 10, 25, 26, 100, 150):
            assert _ids(dense_vault, query, mode, k) == deep[:k], (query, k)
        paged = [i for offset in range(0, 120, 20) for i in _ids(dense_vault, query, mode, 20, offset)]
        assert paged == deep[:120], query
        assert _ids(dense_vault, query, mode, 30, offset=90) == deep[90:120], query


def test_the_top_k_holds_with_the_knobs(dense_vault: Vault) -> None:
    _fill(dense_vault)
    knobs = {"min_score": "auto", "trust_weight": 0.3, "content_weight": 0.5}
    for query in QUERIES[:2]:
        deep = _ids(dense_vault, query, "hybrid", 300, **knobs)
        for k in (10, 40, 120):
            assert _ids(dense_vault, query, "hybrid", k, **knobs) == deep[:k], (query, k)
