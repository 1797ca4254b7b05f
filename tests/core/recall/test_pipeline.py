"""recall: BM25 order, the query contract, escaping, filters, knobs, reinforcement, decay, modes; and stable tops.

Stable tops: the top of a recall does not depend on how much the caller asks for: the first ``k`` items of
``recall(limit=k)`` are the first ``k`` of a deeper recall, and ``offset`` pages are slices of it, in
every mode. The store is large enough that the arms' pools matter (a query's words match far more
memories than a pool holds), so a rule that let the pool grow with ``limit`` would show here."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perseus_vault_core import InvalidInput, NotSupported, Vault
from perseus_vault_core.contract.params import Fusion
from perseus_vault_core.recall import fusion, modes, pipeline
from perseus_vault_core.recall.fusion import query_weights

from ...conftest import DAY_MS, Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def ids(result) -> list[int]:  # type: ignore[no-untyped-def]
    return [item.id for item in result.items]


@pytest.fixture
def notes(vault: Vault, clock: Clock) -> dict[str, int]:
    texts = {
        "both": "The billing ledger runs on postgres",
        "billing": "The billing service sends invoices",
        "postgres": "Postgres replication lag alarm",
        "rare": "Zanzibar keeps the billing archive",
        "neither": "Lunch is at noon on Fridays",
    }
    out = {}
    for key, text in texts.items():
        out[key] = vault.remember("note", key, text).id
        clock.advance(1000)
    # Filler, so that BM25's IDF sees a realistic corpus (a word in over half the rows has none).
    for i in range(20):
        vault.remember("filler", f"f{i}", f"Unrelated note {i} about the weather and lunch")
    return out


def test_more_and_rarer_terms_rank_higher(vault: Vault, notes: dict[str, int]) -> None:
    r = vault.recall("billing postgres", reinforce=False)
    assert r.search_mode == "fts5" and r.total == len(r.items) == 4
    assert r.items[0].id == notes["both"]  # matches both words
    assert notes["neither"] not in ids(r)
    # "zanzibar" occurs once, "billing" three times: the rarer word outweighs the common one.
    r = vault.recall("zanzibar billing", reinforce=False)
    assert r.items[0].id == notes["rare"]
    scores = [i.score for i in r.items]
    assert scores == sorted(scores, reverse=True) and all(
        0.0 < x < 1.0 for x in scores
    )  # absolute: a share of the ceiling
    assert [i.ranks for i in r.items] == [{"fts5": n} for n in range(1, len(r.items) + 1)]


def test_bm25_order_is_fts5_bm25(vault: Vault, notes: dict[str, int], backend: str) -> None:
    """Scores are FTS5's bm25(), whichever path computed them."""
    if backend == "postgres":
        pytest.skip(
            "reads FTS5's own bm25(); tests/core/storage/postgres/test_keyword.py holds Postgres's scores to it"
        )
    conn = vault.engine.conn()
    expected = conn.execute(
        "SELECT v.entity_id, -bm25(entities_fts, 1.0, 1.0, 0.5) FROM entities_fts "
        'JOIN entity_versions v ON v.vid = entities_fts.rowid WHERE entities_fts MATCH \'"billing" OR "postgres"\''
    ).fetchall()
    # The absolute score: bm25 over the most the query's words could score, sum(idf x (k1 + 1)).
    n = conn.execute("SELECT count(*) FROM entities_fts").fetchone()[0]
    dfs = [
        conn.execute("SELECT count(*) FROM entities_fts WHERE entities_fts MATCH ?", (w,)).fetchone()[0]
        for w in ("billing", "postgres")
    ]
    top = sum(max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6) for df in dfs) * 2.2
    got = {i.id: i.score for i in vault.recall("billing postgres", reinforce=False, trust_weight=0.0).items}
    assert got == pytest.approx({eid: s / top for eid, s in expected})


def test_stemming_matches_inflections(vault: Vault) -> None:
    e = vault.remember("note", "k", "We were connecting the replicas")
    assert ids(vault.recall("connection replica")) == [e.id]


def test_stopwords_never_match_alone(vault: Vault) -> None:
    vault.remember("note", "k", "What is the plan for this and that")
    assert vault.recall("what is the").items == []
    assert vault.recall("the and of").total == 0


def test_empty_query_enumerates_in_default_order(vault: Vault, clock: Clock) -> None:
    old = vault.remember("note", "old", "first")
    clock.advance(40 * DAY_MS)
    new = vault.remember("note", "new", "second")
    mid = vault.remember("note", "mid", "third", agent_id="x")
    r = vault.recall("", reinforce=False)
    assert r.search_mode == "enumerate"
    # decay first (old has decayed), then recency, then id
    assert ids(r) == [mid.id, new.id, old.id] or ids(r) == [new.id, mid.id, old.id]
    assert ids(r)[-1] == old.id
    assert ids(vault.recall("   ", reinforce=False)) == ids(r)
    assert ids(vault.recall("", agent_id="x")) == [mid.id]
    assert ids(vault.recall("", limit=1, offset=2, reinforce=False)) == [old.id]
    assert r.items[-1].score == pytest.approx(r.items[-1].decay)


def test_star_is_a_literal_and_matches_nothing(vault: Vault, notes: dict[str, int]) -> None:
    assert vault.recall("*").items == []
    assert vault.recall("**").total == 0


FTS_SYNTAX = [
    '"',
    '""',
    '"billing',
    'billing"',
    "NEAR(billing postgres)",
    "NEAR(",
    "content:billing",
    "col:x",
    "billing AND postgres",
    "billing OR",
    "AND",
    "NOT postgres",
    "-billing",
    "billing*",
    "^billing",
    "(billing",
    "billing)",
    "((",
    ")",
    "billing + postgres",
    "{content summary}: billing",
    "'",
    "\\",
    "bill'ing",
    "💥 billing",
    "a:b:c",
    "NEAR(a b, 3)",
    ":",
    ";",
    "--",
]


@pytest.mark.parametrize("query", ["\x00", "billing\x00postgres"])
def test_a_nul_in_a_query_is_refused_as_on_every_backend(
    vault: Vault, notes: dict[str, int], query: str
) -> None:
    """PostgreSQL cannot hold a NUL in text, so both backends refuse it alike (text.problem)."""
    with pytest.raises(InvalidInput, match="^query: contains NUL"):
        vault.recall(query)


@pytest.mark.parametrize("query", FTS_SYNTAX)
def test_fts5_syntax_is_data(vault: Vault, notes: dict[str, int], query: str) -> None:
    result = vault.recall(query)
    words = [w for w in ("billing", "postgres") if w in query.lower()]
    if words:
        assert result.items, query
        assert all(any(w in i.content.lower() for w in words) for i in result.items)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=60))
def test_any_text_query_never_raises(vault: Vault, query: str) -> None:
    vault.remember("note", "k", "Any text at all")
    try:
        vault.recall(query)
    except InvalidInput as exc:  # only text that is not valid Unicode, or holds a NUL, is refused
        assert exc.field == "query"
        assert "\x00" in query or any(0xD800 <= ord(c) <= 0xDFFF for c in query)


def test_filters(vault: Vault) -> None:
    a = vault.remember(
        "decision", "a", "shared words here", type="decision", topic_path="architecture/storage"
    )
    b = vault.remember(
        "fact", "b", "shared words here", type="fact", topic_path="architecture", keep_duplicate=True
    )
    c = vault.remember("fact", "c", "shared words here", topic_path="architectures/old", agent_id="x")
    d = vault.remember("fact", "d", "shared words here", workspace_hash="w")
    q = "shared words"
    assert set(ids(vault.recall(q, curate=False, category="decision"))) == {a.id}
    assert set(ids(vault.recall(q, curate=False, type="fact"))) == {b.id}
    assert set(ids(vault.recall(q, curate=False, topic_path="architecture"))) == {a.id, b.id}
    assert set(ids(vault.recall(q, curate=False, topic_path="architecture/"))) == {a.id, b.id}
    assert set(ids(vault.recall(q, curate=False, topic_path="architecture/storage"))) == {a.id}
    assert set(ids(vault.recall(q, curate=False, agent_id="x"))) == {c.id}
    assert set(ids(vault.recall(q, curate=False, agent_id=""))) == {a.id, b.id, d.id}
    assert set(ids(vault.recall(q, curate=False, workspace_hash="w"))) == {d.id}
    assert set(ids(vault.recall(q, curate=False))) == {a.id, b.id, c.id, d.id}


def test_limit_offset_bounds(vault: Vault) -> None:
    for i in range(30):
        vault.remember("note", f"k{i}", f"common word number {i}")
    full = ids(vault.recall("common", limit=30, reinforce=False))
    assert ids(vault.recall("common", limit=10, offset=10, reinforce=False)) == full[10:20]
    assert vault.recall("common", offset=50_000).items == []  # clamped at 10,000: past the end
    for bad in ({"limit": 0}, {"limit": 1001}, {"limit": -1}, {"offset": -1}, {"limit": "5"}):
        with pytest.raises(InvalidInput) as err:
            vault.recall("common", **bad)
        assert err.value.field == next(iter(bad))
    with pytest.raises(InvalidInput) as err:
        vault.recall("common", colour="red")
    assert err.value.field == "colour"
    with pytest.raises(InvalidInput) as err:
        vault.recall("common", min_decay=float("nan"))
    assert err.value.field == "min_decay"


def test_preview_cap(vault: Vault) -> None:
    e = vault.remember("note", "long", "needle " + "x" * 500)
    item = vault.recall("needle", preview_cap=20).items[0]
    assert item.content.startswith("needle " + "x" * 13)
    assert f"perseus_vault_get_entity(id={e.id})" in item.content and "507" in item.content
    assert vault.get_entity(e.id).content == "needle " + "x" * 500
    short = vault.remember("note", "short", "needle short")
    assert (
        next(i for i in vault.recall("needle", preview_cap=100).items if i.id == short.id).content
        == "needle short"
    )


def test_trust_weight_lifts_verified_never_penalises(vault: Vault) -> None:
    plain = vault.remember("note", "plain", "rotation policy for tokens")
    verified = vault.remember("note", "verified", "rotation policy for keys", verified=True)
    unsure = vault.remember("note", "unsure", "rotation policy for secrets", certainty=0.5)
    off = vault.recall("rotation policy", trust_weight=0.0, reinforce=False)
    assert off.items[0].id == plain.id  # a three-way tie: by id
    on = vault.recall("rotation policy", trust_weight=0.5, reinforce=False)
    assert [i.id for i in on.items] == [verified.id, unsure.id, plain.id]
    by_id = {i.id: i.score for i in on.items}
    base = {i.id: i.score for i in off.items}
    assert by_id[plain.id] == pytest.approx(base[plain.id])
    assert by_id[unsure.id] == pytest.approx(base[unsure.id] * 1.25)  # x (1 + 0.5 x certainty 0.5)
    assert by_id[verified.id] == pytest.approx(base[verified.id] * 1.25)  # x 1.5, held to the knob range


def test_the_default_knobs_shortcut_scores_as_the_general_weighing(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    # recall._rank weighs with trust alone in a loop of its own when no other knob is on: the same
    # scores, to the bit, as _weigh's general path.
    from perseus_vault_core.recall import pipeline as recall_module

    for n in range(30):
        vault.remember(
            "note",
            f"n{n}",
            f"rotation policy {'tokens keys' if n % 3 else 'secrets'} note {n}",
            verified=n % 4 == 0,
            certainty=None if n % 5 == 0 else (n % 7) / 7,
        )
    queries = [
        ("rotation policy", {}),
        ("keys secrets", {"trust_weight": 0.7}),
        ("policy note", {"trust_weight": 0.0}),
    ]
    fast = [vault.recall(q, reinforce=False, **o).model_dump() for q, o in queries]  # type: ignore[arg-type]
    monkeypatch.setattr(recall_module, "_trust_only", lambda params: False)
    general = [vault.recall(q, reinforce=False, **o).model_dump() for q, o in queries]  # type: ignore[arg-type]
    assert fast == general
    assert (
        fast[0] != vault.recall("rotation policy", reinforce=False, trust_weight=0.0).model_dump()
    )  # trust weighed


def test_a_boost_never_lifts_an_off_topic_memory_over_an_on_topic_one(vault: Vault, clock: Clock) -> None:
    on_topic = vault.remember(
        "note", "db", "Postgres replication lag: the replica falls behind on bulk imports"
    )
    off_topic = vault.remember(
        "note",
        "deploys",
        "Deploys go out on Tuesdays, replica count checked after",
        verified=True,
        recall_when=["deploys"],
    )
    clock.advance(400 * DAY_MS)
    fresh = vault.remember("note", "fresh", "Lunch order for the team: replica of last week's")
    query = "postgres replication lag replica"
    for knobs in (
        {"trust_weight": 10.0},
        {"recency_half_life_secs": 86_400.0},
        {"profile": "validity"},
        {"startup": True},
        {"content_weight": 10.0},
    ):
        got = [i.id for i in vault.recall(query, reinforce=False, min_score=None, **knobs).items]  # type: ignore[arg-type]
        assert got.index(on_topic.id) < got.index(off_topic.id), knobs
        assert got.index(on_topic.id) < got.index(fresh.id), knobs


def test_content_weight_rewards_literal_witness(vault: Vault) -> None:
    summary_only = vault.remember("note", "a", "unrelated body text here", summary="kafka retention settings")
    in_content = vault.remember("note", "b", "kafka retention settings are seven days, kept in the ops repo")
    off = {i.id: i.score for i in vault.recall("kafka retention", trust_weight=0, reinforce=False).items}
    on = {
        i.id: i.score
        for i in vault.recall("kafka retention", trust_weight=0, content_weight=1.0, reinforce=False).items
    }
    assert on[summary_only.id] == pytest.approx(off[summary_only.id])
    assert on[in_content.id] > off[in_content.id]


def test_diversity_halving_spreads_keywords(vault: Vault) -> None:
    alphas = [vault.remember("note", f"alpha{i}", f"alpha alpha alpha {i}").id for i in range(6)]
    betas = [
        vault.remember(
            "note", f"beta{i}", "beta " + " ".join(f"pad{j}" for j in range(30)), keep_duplicate=True
        ).id
        for i in range(2)
    ]
    for i in range(20):
        vault.remember("filler", f"f{i}", f"unrelated filler note {i}")
    plain = vault.recall("beta alpha", limit=4, reinforce=False, curate=False)
    assert ids(plain) == alphas[:4]  # the short, alpha-dense notes win on BM25
    # "beta" is keyword 0: ceil(4 x 0.5^0) = 4 slots; "alpha" is keyword 1: ceil(4 x 0.5^1) = 2 slots.
    diverse = vault.recall("beta alpha", limit=4, diversity_halving=0.5, reinforce=False, curate=False)
    assert ids(diverse) == alphas[:2] + betas
    assert ids(
        vault.recall("beta alpha", limit=4, diversity_halving=1.0, reinforce=False, curate=False)
    ) == ids(plain)
    # over-quota items are deferred, not dropped
    deep = vault.recall("beta alpha", limit=8, diversity_halving=0.5, reinforce=False, curate=False)
    assert set(ids(deep)) == set(alphas + betas)


def test_expansion_adds_stem_variants(vault: Vault) -> None:
    e = vault.remember("note", "k", "the connector library handles retries")
    assert vault.recall("connect").items == []
    r = vault.recall(
        "connect", expansion=True, min_score=None
    )  # a variant's match is weak: asked for plain top-k
    assert ids(r) == [e.id] and r.variants >= 1
    assert vault.recall("connect", expansion={"enabled": True, "max_variants": 0}).items == []
    assert vault.recall("connect", expansion=False).variants == 0


def test_reinforcement_after_ranking(vault: Vault, clock: Clock) -> None:
    e = vault.remember("note", "k", "reinforce me")
    clock.advance(500)
    first = vault.recall("reinforce")
    assert first.items[0].retrieval_count == 0  # items show what ranking saw
    got = vault.get_entity(e.id)
    assert got.retrieval_count == 1 and got.last_accessed_ms == clock.now
    vault.recall("reinforce", reinforce=False)
    assert vault.get_entity(e.id).retrieval_count == 1
    vault.recall("reinforce", as_of_unix_ms=clock.now)
    vault.recall("reinforce", valid_at_unix_ms=clock.now)
    assert vault.get_entity(e.id).retrieval_count == 1
    vault.recall("")
    assert vault.get_entity(e.id).retrieval_count == 2


def test_decay_is_anchored_and_filters(vault: Vault, clock: Clock) -> None:
    e = vault.remember("note", "k", "decaying memory")
    now = clock.now
    later = now + 30 * DAY_MS
    item = vault.recall("decaying", query_time_unix_ms=later, reinforce=False).items[0]
    assert item.decay == pytest.approx(0.5)  # one half-life of idleness, never retrieved
    assert vault.recall("decaying", query_time_unix_ms=later, min_decay=0.6).items == []
    assert ids(vault.recall("decaying", query_time_unix_ms=later, min_decay=0.4, reinforce=False)) == [e.id]
    # use lengthens the half-life: after one retrieval it is 60 days
    vault.recall("decaying")
    item = vault.recall("decaying", query_time_unix_ms=later, reinforce=False).items[0]
    assert item.decay == pytest.approx(0.5 ** (30 / 60))
    assert math.isclose(
        vault.recall("decaying", query_time_unix_ms=later, reinforce=False).items[0].decay, item.decay
    )


def test_recency_half_life(vault: Vault, clock: Clock) -> None:
    old = vault.remember("note", "old", "deploy checklist")
    clock.advance(10 * DAY_MS)
    new = vault.remember("note", "new", "deploy checklist", keep_duplicate=True)
    plain = vault.recall("deploy checklist", reinforce=False, curate=False)  # curated, the two take one place
    assert ids(plain) == [old.id, new.id]  # same score: ties by id
    timed = vault.recall(
        "deploy checklist", recency_half_life_secs=DAY_MS / 1000, reinforce=False, curate=False
    )
    assert ids(timed) == [new.id, old.id]
    # the documented formula in full: 0.5 ** (10 days / 1 day) for the older one
    assert timed.items[1].score == pytest.approx(timed.items[0].score * 0.5**10)
    # age runs from the memory's valid-from time when it has one: valid 2 days before the query
    dated = vault.remember(
        "note", "dated", "deploy checklist", valid_from_ms=clock.now - 2 * DAY_MS, keep_duplicate=True
    )
    timed = vault.recall(
        "deploy checklist", recency_half_life_secs=DAY_MS / 1000, reinforce=False, curate=False
    )
    scores = {i.id: i.score for i in timed.items}
    assert scores[dated.id] == pytest.approx(scores[new.id] * 0.25)


def test_min_score_judges_relevance_before_any_knob(vault: Vault, clock: Clock) -> None:
    """A knob never lets a memory under min_score in, and never pushes a related one out: min_score is
    applied to the relevance the arms gave, before trust, recency and the rest weigh it."""
    weak = vault.remember(
        "note", "weak", "lunch menu for friday and a stray mention of the rollout", verified=True
    )
    strong = vault.remember("note", "strong", "the rollout plan for the payments service")
    clock.advance(300 * DAY_MS)
    fresh = vault.remember("note", "fresh", "a rollout note written today")
    relevance = {
        i.id: i.score
        for i in vault.recall("rollout plan payments", trust_weight=0, reinforce=False, min_score=None).items
    }
    floor = (relevance[weak.id] + relevance[strong.id]) / 2
    assert relevance[weak.id] < floor < relevance[strong.id]
    for knobs in (
        {"trust_weight": 10.0},
        {"recency_half_life_secs": 86_400.0},
        {"startup": True},
        {"content_weight": 10.0},
        {"profile": "validity"},
    ):
        got = vault.recall("rollout plan payments", min_score=floor, reinforce=False, **knobs)  # type: ignore[arg-type]
        assert weak.id not in ids(got), knobs  # boosted, still under the floor: out
        assert strong.id in ids(got), (
            knobs
        )  # 300 days old: its score falls under the floor, its relevance does not
    assert fresh.id not in ids(vault.recall("rollout plan payments", min_score=floor, reinforce=False))


def test_same_call_same_bytes(vault: Vault, notes: dict[str, int]) -> None:
    a = vault.recall("billing postgres", reinforce=False).model_dump_json()
    b = vault.recall("billing postgres", reinforce=False).model_dump_json()
    assert a == b


def test_meaning_modes_need_an_embedder(vault: Vault, notes: dict[str, int]) -> None:
    # The fixture's vault has no embedder: meaning-based modes are refused, never silently keyword.
    for kwargs in ({"mode": "dense"}, {"mode": "hybrid"}):
        with pytest.raises(NotSupported):
            vault.recall("billing", **kwargs)
    with pytest.raises(InvalidInput) as err:
        vault.recall("billing", mode="vector")
    assert err.value.field == "mode"
    assert vault.recall("billing", mode="fts5").search_mode == "fts5"


def test_as_of_recall_sees_content_of_that_time(vault: Vault, clock: Clock) -> None:
    e = vault.remember("decision", "db", "We chose MySQL")
    before = clock.now
    clock.advance(1000)
    vault.remember("decision", "db", "We chose SQLite")
    assert vault.recall("mysql").items == []
    then = vault.recall("mysql", as_of_unix_ms=before)
    assert ids(then) == [e.id] and then.items[0].content == "We chose MySQL" and then.items[0].version == 1
    assert vault.recall("sqlite", as_of_unix_ms=before).items == []
    assert vault.recall("chose", as_of_unix_ms=before - 1).items == []  # did not exist yet


@pytest.mark.parametrize(
    "text",
    ["한국어 문서", "データベース 設計", "βάση δεδομένων", "ฐานข้อมูล ระบบ", "Зубная щётка", "café crème"],
)
def test_every_script_finds_its_own_words(vault: Vault, text: str) -> None:
    e = vault.remember("note", "k", text)
    first = text.split()[0]
    assert ids(vault.recall(first)) == [e.id]


def test_expansion_does_not_reveal_other_tenants_words(vault: Vault) -> None:
    vault.remember("note", "secret", "zebracorporation merger", agent_id="a")
    mine = vault.remember("note", "mine", "nothing to see", agent_id="b")
    r = vault.recall("zebracorp", agent_id="b", expansion=True)
    assert r.items == [] and r.variants == 0
    assert vault.recall("zebracorp", agent_id="a", expansion=True).variants == 1
    assert mine.id


def test_recall_among_given_entities_matches_filtering_the_full_answer(dense_vault: Vault) -> None:
    """Global recall drills into a list of entities (``only``): the narrowed search must rank them
    exactly as the full search does, in every mode, and never return anything else."""
    from perseus_vault_core.contract.params import RecallParams

    ids = [
        dense_vault.remember(
            "n", f"k{i}", f"storage note {i} about sqlite {'wal' if i % 3 else 'backup'} mode"
        ).id
        for i in range(30)
    ]
    chosen = ids[::4]
    arms = {}
    for mode in ("fts5", "dense"):
        params = RecallParams(
            query="sqlite wal backup", mode=mode, limit=100, reinforce=False, min_score=None
        )
        full = dense_vault.engine.recall(params)
        narrow = dense_vault.engine.recall(params, only=chosen)
        assert [i.id for i in narrow.items] == [i.id for i in full.items if i.id in chosen]
        arms[mode] = [i.id for i in narrow.items]
    # The narrowed hybrid answer fuses the narrowed arms (each item's ranks are its places in them), weighed as
    # the full answer is (how far each arm reaches is read before narrowing): the full order, cut to the chosen.
    params = RecallParams(
        query="sqlite wal backup", mode="hybrid", limit=100, reinforce=False, min_score=None
    )
    hybrid = dense_vault.engine.recall(params, only=chosen)
    assert {i.id for i in hybrid.items} == set(arms["fts5"]) | set(arms["dense"]) and set(
        arms["dense"]
    ) <= set(chosen)
    full = dense_vault.engine.recall(params)
    assert [i.id for i in hybrid.items] == [i.id for i in full.items if i.id in chosen]
    for item in hybrid.items:
        assert item.ranks == {arm: ids_.index(item.id) + 1 for arm, ids_ in arms.items() if item.id in ids_}


def test_preview_cap_cuts_every_field_of_the_body(vault: Vault) -> None:
    e = vault.remember(
        "note",
        "big",
        "needle in a short content",
        summary="s" * 300,
        body={"small": 1, "log": "y" * 5000, "later": {"deep": "z" * 5000}},
    )
    item = vault.recall("needle", preview_cap=200, reinforce=False).items[0]
    wire = item.model_dump_json()
    assert len(wire) < 2500, len(wire)  # the entity's own text is over 10,000 characters
    assert item.body["small"] == 1 and item.body["log"].endswith("…") and "later" not in item.body
    assert len(item.summary or "") <= 200
    assert (
        f"perseus_vault_get_entity(id={e.id})" in item.content
    )  # the footer, though the content itself fits
    assert vault.get_entity(e.id).body["later"] == {"deep": "z" * 5000}  # stored whole
    sourced = vault.remember(
        "note",
        "sourced",
        "needle too",
        source="s" * 1000,
        recall_when=[f"trigger number {i} " + "t" * 200 for i in range(8)],
    )
    cut = next(
        i for i in vault.recall("needle", preview_cap=300, reinforce=False).items if i.id == sourced.id
    )
    assert len(cut.source or "") <= 300 and len(cut.recall_when) == 1 and "get_entity" in cut.content


def test_an_enumeration_applies_the_knobs_that_need_no_query_words(vault: Vault, clock: Clock) -> None:
    vague = vault.remember("note", "vague", "stuff happened")
    concrete = vault.remember(
        "note", "concrete", "Decided: deploy PV-42 via https://ci.example.com/pipelines/7"
    )
    clock.advance(1000)
    vault.remember("note", "newest", "misc")
    plain = vault.recall("", reinforce=False)
    assert [i.key for i in plain.items][0] == "newest" and all(i.actionability is None for i in plain.items)
    startup = vault.recall("", startup=True, reinforce=False)
    assert startup.items[0].id == concrete.id and all(i.actionability is not None for i in startup.items)
    valid = vault.recall("", profile="validity", reinforce=False)
    assert all(i.validity is not None for i in valid.items)
    annotated = vault.recall("", validity_annotate=True, reinforce=False)
    assert [i.id for i in annotated.items] == [i.id for i in plain.items] and annotated.items[
        0
    ].validity is not None
    paged = vault.recall("", startup=True, limit=1, offset=1, reinforce=False)
    assert [i.id for i in paged.items] == [startup.items[1].id]
    assert vague.id in {i.id for i in startup.items}
    for knob, value in (("content_weight", 1.0), ("diversity_halving", 0.5), ("expansion", True)):
        with pytest.raises(InvalidInput) as err:
            vault.recall("", **{knob: value})
        assert err.value.field == knob


# --- stable tops ------------------------------------------------------------------------------------

WORDS = (
    "deploy billing ledger gateway cache queue retry timeout schema index replica backup region "
    "token session export import alert pager runbook rollout canary quota invoice refund webhook"
).split()
QUERIES = ("billing ledger retry", "gateway timeout alert", "schema index replica backup")


def _fill(vault: Vault, n: int = 1_500) -> None:
    rng = random.Random(36)
    vault.remember_many(
        [
            {
                "category": rng.choice(("note", "fact", "decision")),
                "key": f"k{i}",
                "content": " ".join(rng.choices(WORDS, k=rng.randint(4, 12))) + f" item {i}",
            }
            for i in range(n)
        ]
    )
    vault.wait_for_keyword_index()  # every call answered by the same path (the SQL path's cosines may
    vault.wait_for_vector_index()  # differ from the index's in the last bit, which curation can read)


def _ids(vault: Vault, query: str, mode: str, limit: int, offset: int = 0, **more: object) -> list[int]:
    return [
        i.id
        for i in vault.recall(query, mode=mode, limit=limit, offset=offset, reinforce=False, **more).items
    ]


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


def test_a_filter_never_changes_hybrid_s_weights(dense_vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hybrid weighs its arms by how far they reach for the query, read over the caller's scope before any
    filter (category, type, topic, where, a list of entities), once a recall whatever its depth: a filter only
    removes memories, each kept one weighed as it is unfiltered (tests/core/contract/test_where.py holds the
    order)."""
    from perseus_vault_core.contract.params import RecallParams

    _fill(dense_vault)
    seen: list[tuple[float | None, float | None]] = []

    def recorded(best_keyword: float | None, best_cosine: float | None, fusion: Fusion) -> Fusion:
        seen.append((best_keyword, best_cosine))
        return query_weights(best_keyword, best_cosine, fusion)

    monkeypatch.setattr(pipeline, "query_weights", recorded)
    some = [i.id for i in dense_vault.recall("", limit=200).items][::3]
    for query in QUERIES:
        seen.clear()
        plain = dense_vault.recall(query, mode="hybrid", limit=10, reinforce=False)
        for narrowing in (
            {"category": "note"},
            {"type": "decision"},
            {"topic_path": "nowhere"},
            {"where": {"category": "fact"}},
            {"limit": 300},
        ):
            dense_vault.recall(query, mode="hybrid", **{"limit": 10, "reinforce": False, **narrowing})
        dense_vault.engine.recall(RecallParams(query=query, mode="hybrid", reinforce=False), only=some)
        assert plain.items and seen[0][0] is not None and seen[0][1] is not None
        assert len(seen) > 6 and set(seen) == {seen[0]}, query  # every tier of every recall: the same reach


def _documents(vault: Vault, n: int = 60) -> None:
    """Memories of a hundred words or more each (abstracts, pages): what hybrid feeds its query back toward."""
    rng = random.Random(48)
    vault.remember_many(
        [
            {
                "category": rng.choice(("note", "fact")),
                "key": f"d{i}",
                "content": " ".join(rng.choices(WORDS, k=rng.randint(100, 140))) + f" document {i}",
                "agent_id": "reader",
            }
            for i in range(n)
        ]
    )


def test_hybrid_feeds_its_query_back_toward_the_best_documents_once_whatever_the_filter(
    dense_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the first ranking's best memories are documents, hybrid asks the model again with the query moved
    toward them (fusion.fed_back): decided once a recall from the unfiltered first pool, like the weights, so a
    filter only removes memories, and every tier and page is of the same search. Short memories never are."""
    identity = dense_vault.engine.arms().embedder_model
    assert identity is not None  # the rule was measured on the bundled model: this stand-in plays it here
    monkeypatch.setattr(modes, "BUNDLED_IDENTITY", identity()[0])
    moved: list[bytes] = []

    def recorded(query: np.ndarray, best: list[np.ndarray]) -> np.ndarray:
        moved.append(fusion.fed_back(query, best).tobytes())
        return fusion.fed_back(query, best)

    monkeypatch.setattr(pipeline, "fed_back", recorded)
    _fill(dense_vault, 300)  # short memories: never fed back
    for query in QUERIES:
        dense_vault.recall(query, mode="hybrid", limit=10, reinforce=False)
    assert moved == []
    _documents(dense_vault)  # another agent's: only documents in its scope
    kinds = {i.id: i.category for i in dense_vault.recall("", limit=500, agent_id="reader").items}
    for query in QUERIES:
        moved.clear()
        plain = _ids(dense_vault, query, "hybrid", 40, min_score=None, agent_id="reader")
        assert len(moved) == 1, query  # the best two are documents here
        notes = _ids(dense_vault, query, "hybrid", 40, min_score=None, agent_id="reader", category="note")
        facts = _ids(
            dense_vault, query, "hybrid", 40, min_score=None, agent_id="reader", where={"category": "fact"}
        )
        deep = _ids(dense_vault, query, "hybrid", 200, min_score=None, agent_id="reader")
        assert len(moved) == 4 and set(moved) == {moved[0]}, query  # the same move in every recall
        assert deep[:40] == plain
        items = dense_vault.recall(
            query, mode="hybrid", limit=40, min_score=None, reinforce=False, agent_id="reader"
        )
        by_moved = dense_vault.recall_by_vector(
            np.frombuffer(moved[0], dtype=np.float32),
            limit=200,
            min_score=None,
            reinforce=False,
            agent_id="reader",
        )
        nearest = {i.id: n for n, i in enumerate(by_moved.items, start=1)}
        for (
            item
        ) in items.items:  # each item's dense rank is its rank in the moved search, not the first one's
            assert item.ranks.get("dense") in (None, nearest[item.id]), (query, item.id)
        assert notes == [i for i in deep if kinds[i] == "note"][: len(notes)]
        assert facts == [i for i in deep if kinds[i] == "fact"][: len(facts)]
    monkeypatch.setattr(fusion, "DOCUMENT_WORDS", 1_000)  # no document: the query is never moved
    moved.clear()
    dense_vault.recall(QUERIES[0], mode="hybrid", reinforce=False, agent_id="reader")
    assert moved == []


def test_another_tenant_s_memories_never_move_a_recall(dense_vault: Vault) -> None:
    """How far an arm reaches is read within the caller's scope: another agent's strong matches change
    neither the weights nor the order of what this agent recalls."""
    for i in range(40):
        dense_vault.remember("note", f"a{i}", f"{WORDS[i % len(WORDS)]} ledger note {i}", agent_id="a")
    before = _ids(dense_vault, "ledger cache queue", "hybrid", 40, min_score=None, agent_id="a")
    for i in range(40):
        dense_vault.remember("note", f"b{i}", "ledger cache queue ledger cache queue", agent_id="b")
    assert _ids(dense_vault, "ledger cache queue", "hybrid", 40, min_score=None, agent_id="a") == before


def test_the_top_k_holds_with_the_knobs(dense_vault: Vault) -> None:
    _fill(dense_vault)
    knobs = {"min_score": "auto", "trust_weight": 0.3, "content_weight": 0.5}
    for query in QUERIES[:2]:
        deep = _ids(dense_vault, query, "hybrid", 300, **knobs)
        for k in (10, 40, 120):
            assert _ids(dense_vault, query, "hybrid", k, **knobs) == deep[:k], (query, k)


# --- dense and hybrid recall: modes, fusion, filters inside the vector arm, knobs in every mode ---


def test_auto_mode_is_hybrid_when_vectors_exist(dense_vault: Vault, dense_notes: dict[str, int]) -> None:
    r = dense_vault.recall("billing ledger", reinforce=False)
    assert r.search_mode == "hybrid"
    assert r.items[0].id in (dense_notes["db"], dense_notes["queue"])
    assert all(set(i.ranks) <= {"fts5", "dense"} and i.ranks for i in r.items)
    both = [i for i in r.items if set(i.ranks) == {"fts5", "dense"}]
    assert both, "items found by both arms carry both ranks"
    assert dense_vault.stats().embedding_coverage == 1.0


def test_dense_mode_never_falls_back_to_keywords(dense_vault: Vault, dense_notes: dict[str, int]) -> None:
    r = dense_vault.recall("billing ledger", mode="dense", reinforce=False)
    assert r.search_mode == "dense" and r.items
    assert all(set(i.ranks) == {"dense"} for i in r.items)
    assert (
        r.items[0].ranks == {"dense": 1} and -1.0 <= r.items[-1].score <= r.items[0].score <= 1.0
    )  # cosines


def test_hybrid_with_an_empty_keyword_arm_is_the_dense_arm(
    dense_vault: Vault, dense_notes: dict[str, int]
) -> None:
    # Only stopwords: the keyword arm finds nothing and is dropped; dense still answers.
    hybrid = dense_vault.recall("what is it about", mode="hybrid", reinforce=False)
    dense = dense_vault.recall("what is it about", mode="dense", reinforce=False)
    assert ids(hybrid) == ids(dense)
    assert all("fts5" not in i.ranks for i in hybrid.items)
    assert dense_vault.recall("*", mode="dense").items == []  # no word at all: nothing, in every mode


def test_same_call_same_bytes_in_every_mode(dense_vault: Vault, dense_notes: dict[str, int]) -> None:
    for mode in ("fts5", "dense", "hybrid"):
        a = dense_vault.recall("billing events ledger", mode=mode, reinforce=False).model_dump_json()
        assert a == dense_vault.recall("billing events ledger", mode=mode, reinforce=False).model_dump_json()


def test_the_vector_arm_filters_inside_its_query(dense_vault: Vault) -> None:
    """The nearest vectors belong to another tenant: the vector arm must still return this tenant's."""
    for i in range(40):
        dense_vault.remember(
            "note", f"other{i}", "billing ledger postgres backups", agent_id="other", keep_duplicate=True
        )
    mine = dense_vault.remember("note", "mine", "an unrelated sentence about gardening", agent_id="me")
    for mode in ("dense", "hybrid"):
        r = dense_vault.recall(
            "billing ledger postgres backups", mode=mode, agent_id="me", limit=5, reinforce=False
        )
        assert ids(r) == [mine.id], mode
    assert dense_vault.wait_for_vector_index()
    r = dense_vault.recall(
        "billing ledger postgres backups", mode="dense", agent_id="me", limit=5, reinforce=False
    )
    assert ids(r) == [mine.id]
    archived = dense_vault.remember("note", "gone", "billing ledger postgres backups", agent_id="me")
    dense_vault.forget(archived.id)
    r = dense_vault.recall("billing ledger postgres backups", mode="dense", agent_id="me", reinforce=False)
    assert archived.id not in ids(r)


def test_knobs_work_in_every_mode(dense_vault: Vault, clock: Clock) -> None:
    old = dense_vault.remember("note", "old", "rotation policy for secrets")
    clock.advance(20 * DAY_MS)
    new = dense_vault.remember("note", "new", "rotation policy for keys", verified=True)
    for i in range(10):
        dense_vault.remember("filler", f"f{i}", f"unrelated filler {i}")
    for mode in ("fts5", "dense", "hybrid"):
        plain = dense_vault.recall("rotation policy", mode=mode, trust_weight=0, reinforce=False)
        trusted = dense_vault.recall("rotation policy", mode=mode, trust_weight=2.0, reinforce=False)
        assert trusted.items[0].id == new.id, mode
        timed = dense_vault.recall(
            "rotation policy", mode=mode, trust_weight=0, recency_half_life_secs=86_400, reinforce=False
        )
        assert timed.items[0].id == new.id, mode
        capped = dense_vault.recall("rotation policy", mode=mode, preview_cap=8, reinforce=False)
        assert all(
            len(i.content) < 250 and "get_entity" in i.content
            for i in capped.items
            if len(dense_vault.get_entity(i.id).content) > 8
        )
        assert plain.items and old.id in ids(plain)


def test_startup_reranks_by_actionability_and_is_off_by_default(dense_vault: Vault) -> None:
    vague = dense_vault.remember("note", "vague", "billing stuff, maybe")
    concrete = dense_vault.remember(
        "note", "concrete", "Billing: decided to retry failed charges, see ENG-41 and src/billing/retry.py"
    )
    for mode in ("fts5", "dense", "hybrid"):
        base = dense_vault.recall("billing", mode=mode, reinforce=False)
        again = dense_vault.recall("billing", mode=mode, reinforce=False, startup=False)
        assert base.model_dump_json() == again.model_dump_json()
        assert "actionability" not in base.model_dump()["items"][0]
        started = dense_vault.recall("billing", mode=mode, startup=True, reinforce=False)
        assert started.items[0].id == concrete.id, mode
        by_id = {i.id: i.actionability for i in started.items}
        assert by_id[concrete.id] > by_id[vague.id]


def test_validity_profile_annotates_and_reranks_hybrid(dense_vault: Vault, clock: Clock) -> None:
    stale = dense_vault.remember("note", "stale", "incident runbook for the payment gateway")
    clock.advance(100 * DAY_MS)  # over three half-lives: freshness below 1/8
    fresh = dense_vault.remember("note", "fresh", "incident runbook for the payment gateway, revised")
    for i in range(10):
        dense_vault.remember("filler", f"f{i}", f"unrelated filler {i}")
    plain = dense_vault.recall("incident runbook payment gateway", mode="hybrid", reinforce=False)
    assert "validity" not in plain.model_dump()["items"][0]
    annotated = dense_vault.recall(
        "incident runbook payment gateway", mode="fts5", validity_annotate=True, reinforce=False, curate=False
    )
    grades = {i.id: i.validity.grade for i in annotated.items if i.validity}
    assert grades[stale.id] == "context_invalid" and grades[fresh.id] == "valid"
    ranked = dense_vault.recall(
        "incident runbook payment gateway",
        mode="hybrid",
        profile="validity",
        limit=50,
        reinforce=False,
        curate=False,
    )  # the validity multiplier alone
    assert ranked.items[0].id == fresh.id
    assert {i.id for i in ranked.items} >= {stale.id, fresh.id}  # re-ranks, never excludes


def test_point_in_time_dense_recall_uses_the_vectors_of_that_time(dense_vault: Vault, clock: Clock) -> None:
    e = dense_vault.remember("note", "k", "postgres replication lag")
    before = clock.now
    clock.advance(1000)
    dense_vault.remember("note", "k", "gardening tips for spring")
    for i in range(5):
        dense_vault.remember("filler", f"f{i}", f"other words {i}")
    now = dense_vault.recall("postgres replication", mode="dense", limit=1, reinforce=False)
    then = dense_vault.recall("postgres replication", mode="dense", limit=1, as_of_unix_ms=before)
    assert then.items[0].id == e.id and then.items[0].content == "postgres replication lag"
    assert now.items[0].content != "postgres replication lag"


def test_a_vault_without_an_embedder_refuses_meaning_modes(
    db_path, clock: Clock, fake_embedder: FakeEmbedder
) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, clock=clock, embedder=fake_embedder) as vault:
        vault.remember("note", "k", "vectors exist")
    with Vault(db_path, clock=clock, embedder=False) as keyword_only:
        assert keyword_only.recall("vectors").search_mode == "fts5"
        with pytest.raises(NotSupported, match="embedding model"):
            keyword_only.recall("vectors", mode="dense")


def test_keyword_recall_does_not_need_a_reachable_provider(db_path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    with Vault(db_path, embedder=False) as vault:
        vault.remember("note", "k", "alpha beta")
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "ollama:x@http://127.0.0.1:9")
    with Vault(db_path) as vault:
        assert vault.recall("alpha", mode="fts5").items
        assert vault.recall("alpha").search_mode == "fts5"  # no vectors: auto never asks the provider


def _child_recall(path: str, out: Any) -> None:
    from tests.conftest import FakeEmbedder as _Fake

    with Vault(path, embedder=_Fake()) as vault:
        out.put(len(vault.recall("billing", mode="hybrid").items))


def test_hybrid_recall_works_in_a_forked_child(db_path, fake_embedder: FakeEmbedder) -> None:  # type: ignore[no-untyped-def]
    import multiprocessing

    with Vault(db_path, embedder=fake_embedder) as vault:
        vault.remember("note", "k", "billing ledger")
        assert vault.recall("billing", mode="hybrid").items  # the parent starts its embedding pool
        # and its index builds, which may still run as it forks (tests/core/primitives/test_forking.py)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child_recall, args=(str(db_path), out))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and out.get(timeout=5) == 1


def test_absolute_scores_leave_unrelated_memories_out_with_the_bundled_model(
    tmp_path: Any, real_embedder: Any
) -> None:
    with Vault(tmp_path / "real.db", embedder=real_embedder) as vault:
        deploys = vault.remember(
            "ops", "deploys", "Deploys go out on Tuesdays after the standup.", verified=True
        )
        db = vault.remember("decision", "db-engine", "We chose Postgres for multi-writer scaling.")
        vault.remember("note", "lunch", "Team lunch is on Fridays at the Thai place.")
        # A boost never outranks meaning: the verified deploy note stays below the answer.
        assert [i.id for i in vault.recall("which database did we pick", reinforce=False).items][0] == db.id
        # A nonsense query over an unrelated store: nothing above the threshold prepare uses.
        assert vault.recall("kubernetes helm chart", min_score="auto", reinforce=False).items == []
        assert vault.prepare("kubernetes helm chart").related == []
        # Scores mean the same in every query: a real answer scores above the best of nonsense.
        answer = vault.recall("which database did we pick", reinforce=False).items[0].score
        nonsense = vault.recall("kubernetes helm chart", reinforce=False, min_score=None).items[0].score
        assert answer > 2 * nonsense and deploys.id != db.id


def test_what_only_the_bundled_model_finds_is_trusted_when_it_stands_out(
    tmp_path: Any, real_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paraphrase shares no word with its answer: the model alone finds it, well ahead of its second, while the
    query's words match memories weakly on an incidental word ("apps": "the mobile app"). Hybrid trusts the
    model there (fusion.trusted); a memory the model finds no more related than nonsense is never lifted. What is
    trusted is read before any filter, like the weights: a filter only removes memories."""
    memories = {
        "secrets": "Secrets live in AWS Secrets Manager, synced into pods by External Secrets Operator.",
        "focus": "User keeps Wednesday mornings meeting-free for focus work.",
        "ticket": "ENG-260 - Password reset emails land in spam for Outlook/M365 tenants. Service: notifier.",
        "mobile": "Raj Iyer owns the mobile app.",
        "logs": "Logs in Grafana Loki instead of CloudWatch: same UI as our metrics and a tenth of the cost.",
        "deploys": "Deploys go out on Tuesdays after the standup.",
        "retro": "Sprint 36 retro. Good: Typesense cutover without downtime. Bad: nobody owned the Kafka shutdown.",
    }
    paraphrase, unrelated = (
        "Where do we keep passwords and tokens for the apps?",
        "How do I undo a bad release?",
    )
    trusts: list[int | None] = []

    def recorded(*args: Any) -> int | None:
        trusts.append(fusion.trusted(*args))
        return trusts[-1]

    monkeypatch.setattr(pipeline, "trusted", recorded)
    with Vault(tmp_path / "real.db", embedder=real_embedder) as vault:
        key = {
            vault.remember("fact" if k in ("secrets", "logs") else "note", k, text).id: k
            for k, text in memories.items()
        }

        def first(query: str) -> tuple[str, dict[str, int]]:
            top = vault.recall(query, mode="hybrid", reinforce=False, min_score=None).items[0]
            return key[top.id], top.ranks

        assert first(paraphrase) == ("secrets", {"dense": 1})
        everything = [
            key[i.id] for i in vault.recall(paraphrase, mode="hybrid", reinforce=False, min_score=None).items
        ]
        for narrowed in ({"category": "note"}, {"where": {"category": "fact"}}):
            kept = vault.recall(paraphrase, mode="hybrid", reinforce=False, min_score=None, **narrowed).items
            assert [key[i.id] for i in kept] == [k for k in everything if k in {key[i.id] for i in kept}]
        assert len(trusts) == 4 and set(trusts) == {trusts[0]} and key[trusts[0]] == "secrets"  # type: ignore[index]
        assert first(unrelated)[0] == "retro"  # the model's best (a cosine of nonsense) is not trusted
        monkeypatch.setattr(fusion, "TRUST_MARGIN", 1.0)  # trusting nothing: the incidental word wins
        assert first(paraphrase)[0] == "mobile"


def test_a_question_about_nothing_is_never_fed_back_toward_the_documents(
    tmp_path: Any, real_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Feedback moves the query only toward documents related to it as asked: on a store of documents, a
    question about nothing still finds nothing under ``min_score="auto"``, and relatedness is judged on the
    question's own cosines."""
    topics = {
        "glaciers": "Glaciers in the Alps lose ice every summer as temperatures rise and meltwater feeds the rivers.",
        "ice sheets": "The Greenland ice sheet melts faster in warm summers, and its meltwater raises the sea.",
        "proteins": "Proteins fold into shapes that decide their function, and misfolded proteins cause disease.",
        "bridges": "Suspension bridges hang the deck from cables anchored in towers that carry the load to rock.",
        "bees": "Honey bees forage for nectar and pollen and tell each other where flowers are by dancing.",
    }
    moved: list[int] = []

    def recorded(query: np.ndarray, best: list[np.ndarray]) -> np.ndarray:
        moved.append(len(best))
        return fusion.fed_back(query, best)

    monkeypatch.setattr(pipeline, "fed_back", recorded)
    with Vault(tmp_path / "docs.db", embedder=real_embedder) as vault:
        for key, sentence in topics.items():  # a document: the sentence over and over, some hundred words
            vault.remember("paper", key, " ".join([sentence] * 6))
        assert vault.recall("how do I reset the wifi router password", reinforce=False).items == []
        assert moved == []  # nothing related: the query stayed as asked
        found = vault.recall("why do glaciers melt in summer", reinforce=False).items
        assert moved == [2] and {i.key for i in found[:2]} == {"glaciers", "ice sheets"}


def test_a_recall_reads_the_stored_model_once_and_a_keyword_recall_not_at_all(
    dense_vault: Vault, dense_notes: dict[str, int], backend: str
) -> None:
    if backend == "postgres":
        pytest.skip("counts SQLite's statements (a Postgres snapshot reads the model with its BEGIN)")
    dense_vault.recall("billing ledger", mode="dense", reinforce=False)  # the indexes warm first
    statements: list[str] = []
    conn = dense_vault.engine.conn()
    conn.set_trace_callback(statements.append)
    try:
        reads = {}
        for mode in ("dense", "hybrid", None, "fts5"):
            statements.clear()
            assert dense_vault.recall("billing ledger", mode=mode, reinforce=False).items
            reads[mode] = sum("embedding_model" in s for s in statements)
    finally:
        conn.set_trace_callback(None)
    assert reads == {"dense": 1, "hybrid": 1, None: 1, "fts5": 0}
