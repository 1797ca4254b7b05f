"""Hybrid fusion: absolute arm scores, weighted and summed; deterministic, ties by id."""

from __future__ import annotations

import numpy as np
import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.contract.params import Fusion
from perseus_vault_core.indexes.keyword import ceiling, idf
from perseus_vault_core.recall.fusion import (
    ASKED_SHARE,
    COSINE_FLOOR,
    DENSE_REACH,
    DOCUMENT_WORDS,
    FEEDBACK_WEIGHT,
    KEYWORD_REACH,
    TRUST_KEYWORD,
    TRUST_MARGIN,
    combine,
    fed_back,
    is_document,
    keyword_score,
    query_weights,
    trusted,
)

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def test_the_weighted_sum_of_the_arms_scores() -> None:
    fused = dict(
        combine({1: 0.5, 2: 0.2}, {1: 0.1, 2: 0.9, 3: 0.4}, Fusion(keyword_weight=0.6, dense_weight=0.4))
    )
    assert fused[1] == pytest.approx(0.6 * 0.5 + 0.4 * 0.1)
    assert fused[2] == pytest.approx(0.6 * 0.2 + 0.4 * 0.9)
    assert fused[3] == pytest.approx(0.4 * 0.4)  # not found by the keyword arm: 0 there


def test_order_and_ties_by_id() -> None:
    assert [i for i, _ in combine({5: 0.3, 4: 0.3}, {}, Fusion())] == [4, 5]
    assert [i for i, _ in combine({9: 0.5}, {2: 0.75}, Fusion())] == [2, 9]


def test_weights_apply_and_cannot_both_be_zero() -> None:
    assert combine({1: 0.9}, {2: 0.9}, Fusion(keyword_weight=0.0, dense_weight=1.0))[0][0] == 2
    assert combine({1: 0.9}, {2: 0.9}, Fusion(keyword_weight=1.0, dense_weight=0.0))[0][0] == 1
    with pytest.raises(ValueError, match="both be 0"):
        Fusion(keyword_weight=0.0, dense_weight=0.0)


def test_each_arm_is_weighed_over_how_far_it_reaches_for_the_query() -> None:
    base = Fusion()
    w = query_weights(0.8, 0.5, base)  # keyword reaches 0.8; the cosines 0.4 above the floor
    assert w.keyword_weight + w.dense_weight == pytest.approx(1.0)
    assert w.keyword_weight / w.dense_weight == pytest.approx((0.5 / 0.8) / (0.5 / (0.5 - COSINE_FLOOR)))
    # a best keyword match of one common word is not read as a strong separation: the floor holds it
    assert query_weights(0.01, 0.5, base) == query_weights(KEYWORD_REACH, 0.5, base)
    assert query_weights(0.8, COSINE_FLOOR, base) == query_weights(0.8, COSINE_FLOOR + DENSE_REACH, base)
    # the base weights still say how much each arm counts; an arm that found nothing leaves them as given
    assert query_weights(0.5, 0.5, Fusion(keyword_weight=1.0, dense_weight=0.0)).dense_weight == 0.0
    assert query_weights(None, 0.5, base) is base and query_weights(0.5, None, base) is base


def test_the_model_s_best_match_is_trusted_only_where_it_stands_out_and_words_match_weakly() -> None:
    weak, strong = TRUST_KEYWORD - 0.01, TRUST_KEYWORD
    apart = [(7, 0.45), (3, 0.45 - TRUST_MARGIN - 0.001)]
    assert trusted(weak, apart, {1, 2}, 0.25) == 7
    assert trusted(strong, apart, {1, 2}, 0.25) is None  # the query's words match something strongly
    assert trusted(weak, apart, {7}, 0.25) is None  # the keyword arm found it: fusion weighs it already
    assert trusted(weak, apart, set(), 0.46) is None  # not related: standing out among nonsense is no match
    assert (
        trusted(weak, [(7, 0.45), (3, 0.45 - TRUST_MARGIN + 0.01)], set(), 0.25) is None
    )  # does not stand out
    assert trusted(weak, apart[:1], set(), 0.25) is None and trusted(None, apart, set(), 0.25) is None


def test_a_trusted_memory_is_weighed_as_if_its_words_matched_as_well_as_the_best() -> None:
    fusion = Fusion(keyword_weight=0.6, dense_weight=0.4)
    keyword, dense = {1: 0.25, 2: 0.1}, {1: 0.2, 2: 0.1, 3: 0.3}
    assert [i for i, _ in combine(keyword, dense, fusion)] == [1, 3, 2]
    lifted = dict(combine(keyword, dense, fusion, (3, 0.25)))
    assert lifted[3] == pytest.approx(0.6 * 0.25 + 0.4 * 0.3) and lifted[1] == pytest.approx(
        0.6 * 0.25 + 0.4 * 0.2
    )
    assert [i for i, _ in combine(keyword, dense, fusion, (3, 0.25))] == [3, 1, 2]
    assert dict(combine(keyword, dense, fusion, (9, 0.25))) == dict(
        combine(keyword, dense, fusion)
    )  # not here


def test_a_memory_saying_what_is_asked_is_weighed_as_if_one_more_word_matched() -> None:
    fusion = Fusion(keyword_weight=0.6, dense_weight=0.4)
    keyword, dense = {1: 0.3, 2: 0.2, 4: 0.95}, {1: 0.5, 2: 0.5, 3: 0.4, 4: 0.1}
    plain = dict(combine(keyword, dense, fusion))
    lifted = dict(combine(keyword, dense, fusion, None, {2, 3, 4}))
    assert lifted[1] == plain[1]  # says nothing asked: as it was
    assert lifted[2] == pytest.approx(0.6 * (0.2 + ASKED_SHARE) + 0.4 * 0.5)
    assert lifted[3] == pytest.approx(0.6 * ASKED_SHARE + 0.4 * 0.4)  # the keyword arm did not find it
    assert lifted[4] == pytest.approx(0.6 * (0.95 + ASKED_SHARE) + 0.4 * 0.1)  # past 1: each gains the same
    assert [i for i, _ in combine(keyword, dense, fusion)][:3] == [4, 1, 2]
    assert [i for i, _ in combine(keyword, dense, fusion, None, {2})][:3] == [4, 2, 1]
    both = dict(combine(keyword, dense, fusion, (3, 0.3), {3}))  # trusted and saying it: both lifts
    assert both[3] == pytest.approx(0.6 * (0.3 + ASKED_SHARE) + 0.4 * 0.4)


def test_a_document_is_a_memory_of_many_words() -> None:
    assert is_document(" ".join(["word"] * DOCUMENT_WORDS)) and is_document("a\n" * 10_000)
    assert not is_document(" ".join(["word"] * (DOCUMENT_WORDS - 1))) and not is_document("")


def test_a_query_fed_back_moves_toward_the_best_documents_at_unit_length() -> None:
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    best = [np.array([0.0, 1.0, 0.0], dtype=np.float32), np.array([0.0, 0.0, 1.0], dtype=np.float32)]
    moved = fed_back(query, best)
    assert moved.dtype == np.float32 and float(np.linalg.norm(moved)) == pytest.approx(1.0)
    expected = np.array([1.0, FEEDBACK_WEIGHT / 2, FEEDBACK_WEIGHT / 2])
    assert np.allclose(moved, expected / np.linalg.norm(expected))
    assert float(moved @ query) > float(moved @ best[0]) > 0  # nearer the best, still the query's first


def test_keyword_score_is_bm25_over_the_ceiling_of_the_query_words() -> None:
    top = ceiling(1000, [10, 0])  # a word in 10 rows, and a word in none
    assert top == pytest.approx((idf(1000, 10) + idf(1000, 0)) * 2.2)
    assert keyword_score(top / 4, top) == pytest.approx(0.25)
    assert keyword_score(top * 2, top) == 1.0 and keyword_score(1.0, 0.0) == 0.0


def test_fusion_weights_are_checked_on_the_vault_and_per_call(tmp_path: object) -> None:
    from pathlib import Path

    with pytest.raises(InvalidInput, match="fusion"):
        Vault(Path(str(tmp_path)) / "v.db", embedder=False, fusion={"k": 60})
    with Vault(Path(str(tmp_path)) / "w.db", embedder=False) as vault:
        with pytest.raises(InvalidInput, match="fusion.keyword_weight"):
            vault.recall("x", fusion={"keyword_weight": 2.0})


SHARED = {  # "ledger" is in seven of nine memories; "deploy" says it five times
    "lang": "ledger runs on Kotlin 1.9 with Spring Boot.",
    "db": "ledger keeps its books in its own Postgres 15 cluster.",
    "owner": "Elena owns ledger; ledger questions go to her.",
    "deploy": "ledger deploys: ledger-api and ledger-worker roll out after the ledger smoke test passes on ledger"
    " staging.",
    "pay": "ledger talks to Stripe for card payments.",
    "schema": "Schema changes on ledger need a DBA review.",
    "oncall": "The ledger on-call rota is weekly.",
    "gateway": "gateway is written in Go.",
    "search": "Typesense powers job search.",
}


def test_a_word_most_memories_share_scores_nothing_in_the_keyword_arm(vault: Vault) -> None:
    """The keyword score is BM25 over the most the query's words could score (keyword_score): a word in more than
    half of the scope's memories or more has no weight in BM25 (its idf is clamped to nothing), however often a memory says
    it, so beside the question's other words it neither decides the winner nor sets how far the keyword arm
    reaches (query_weights)."""
    key = {vault.remember("fact", k, text).id: k for k, text in SHARED.items()}
    hits = vault.recall("Which database does ledger use?", mode="fts5", min_score=None, reinforce=False).items
    assert len(hits) == 7 and max(h.score for h in hits) < 0.01  # "deploy" says it five times: nothing
    owns = vault.recall("Who owns ledger?", mode="fts5", min_score=None, reinforce=False).items
    assert key[owns[0].id] == "owner" and owns[0].score > 0.3  # a rarer word of the question decides
    assert all(
        h.score < 0.01 for h in owns if key[h.id] not in ("owner", "db")
    )  # db: "its own", a stem of owns


def test_a_word_most_memories_share_does_not_decide_hybrid_s_winner(
    tmp_path: object, real_embedder: object
) -> None:
    """With the bundled model: the question's only matching word is the one most memories share, so hybrid
    ranks as the model does, and the memory saying that word five times is not first."""
    from pathlib import Path

    with Vault(Path(str(tmp_path)) / "shared.db", embedder=real_embedder) as vault:
        key = {vault.remember("fact", k, text).id: k for k, text in SHARED.items()}
        question = "Which database does ledger use?"
        ranked = {
            mode: [
                key[i.id] for i in vault.recall(question, mode=mode, min_score=None, reinforce=False).items
            ]
            for mode in ("dense", "hybrid")
        }
        assert ranked["hybrid"][0] == ranked["dense"][0] == "db"
