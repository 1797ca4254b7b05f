"""Curation (perseus_vault_core/recall/curation.py, recall's curated window; docs/curation.md): duplicates
collapse, a newer fact goes first and marks the older, a long document is compared by its start, and
nothing is ever hidden for good (what a write judges, exact repeats included, is
features/test_remembering.py's). The pair rules run on the bundled model's vectors (``real_embedder``),
as they do for a user; the pure functions on their own inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perseus_vault_core import Vault
from perseus_vault_core.primitives.query import tokenize
from perseus_vault_core.recall import curation
from perseus_vault_core.recall.curation import Candidate, Said, asked, curate, held, pins, relation, said

from ...conftest import Clock

pytestmark = pytest.mark.both_backends
DAY_MS = 86_400_000


# --- the pure rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a, b, cosine, expected",
    [
        ("We deploy on Tuesdays.", "we  deploy on TUESDAYS.", None, "duplicate"),  # the same text, normalised
        (
            "Production runs in us-east-1.",
            "Production runs in eu-west-1.",
            0.78,
            "update",
        ),  # a value replaced
        (
            "The user prefers dark mode in every editor.",
            "In all my editors I like the dark theme.",
            0.70,
            "duplicate",
        ),
        (
            "ENG-1412: checkout button broken on Safari. Assignee: Aisha.",
            "ENG-1419: checkout button broken on Firefox. Assignee: Marco.",
            0.93,
            None,
        ),  # two records
        (
            "Web team standup 10:15.",
            "Mobile team standup 9:45.",
            0.72,
            None,
        ),  # another subject, not an update
        (
            "Aisha prefers Slack over email.",
            "Marco prefers email over Slack.",
            0.80,
            None,
        ),  # a name exchanged
        ("Production runs in us-east-1.", "The lunch menu changes on Fridays.", 0.10, None),  # unrelated
    ],
)
def test_pairs(a: str, b: str, cosine: float | None, expected: str | None) -> None:
    assert relation(said(a), said(b), cosine) == expected


def test_an_anchor_is_held_in_another_spelling() -> None:
    text = said("We went with PostgreSQL 15 in production, from February.")
    assert all(text.holds(x) for x in ("postgres", "15", "feb", "prod"))
    assert not text.holds("16") and not text.holds("mysql")


def _held_by_scanning(text: Said, anchor: str) -> bool:
    """holds() as first written: a scan of the text's tokens for each part of the anchor."""
    if anchor.startswith("-") or any(a == "-" + anchor for a in text.anchors):
        return anchor in text.anchors
    return all(
        part in text.tokens
        or (
            len(part) >= 3
            and not part.isdigit()
            and any(
                (t.startswith(part) or part.startswith(t)) and len(t) >= 3 and not t.isdigit()
                for t in text.tokens
            )
        )
        for part in tokenize(anchor)
    )


SPELLINGS = [
    "Postgres",
    "PostgreSQL",
    "pg",
    "Feb",
    "February",
    "prod",
    "production",
    "w123",
    "w12",
    "-5",
    "5",
    "v1.2",
    "eu-west-1",
    "us",
    "ENG-142",
    "$12",
    "x",
    "abc",
    "abcd",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(SPELLINGS), min_size=1, max_size=8), st.sampled_from(SPELLINGS))
def test_a_spelling_is_looked_up_as_a_scan_would_find_it(words: list[str], anchor: str) -> None:
    text = said("Note: " + " ".join(words))
    for a in {anchor.lower(), *text.anchors}:
        assert text.holds(a) == _held_by_scanning(text, a), a


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="abcpPq01-5.:/#@$ ", max_size=40),
    st.text(alphabet="abcpPq01-5.:/#@$", min_size=1, max_size=8),
)
def test_any_anchor_is_held_as_a_scan_would_find_it(words: str, anchor: str) -> None:
    """holds() refuses most anchors by one look-up in the text's reach before its rule: never one the rule holds."""
    text = said("Note: " + words)
    for a in {anchor.lower(), anchor.lower().strip(".-:"), *text.anchors}:
        assert text.holds(a) == _held_by_scanning(text, a), a


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(SPELLINGS + ["-12", "12", "v16", "Postgres-15", "1:30", "#77"]), max_size=10),
    st.lists(st.sampled_from(SPELLINGS + ["-12", "12", "v16", "Postgres-15", "1:30", "#77"]), max_size=10),
    st.integers(1, 4),
)
def test_the_anchors_held_are_counted_as_holds_counts_them(
    one: list[str], other: list[str], most: int
) -> None:
    """held() counts by set operations what asking holds() of each anchor counts."""
    a, b = said("Note: " + " ".join(one)), said("Note: " + " ".join(other))
    assert held(a, b, most) == min(most, sum(b.holds(x) for x in a.anchors))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcpPq01-5.:/#@$ ", max_size=40), st.text(alphabet="abcpPq01-5.:/#@$ ", max_size=40))
def test_any_anchors_held_are_counted_as_holds_counts_them(one: str, other: str) -> None:
    a, b = said("Note: " + one), said("Note: " + other)
    assert held(a, b, 3) == min(3, sum(b.holds(x) for x in a.anchors))


def _candidate(i: int, relevance: float, day: int, text: str, scope: str = "") -> Candidate:
    return Candidate(i, relevance, True, day * DAY_MS, False, pins(text), (scope, ""))


def test_curate_arranges_by_the_kept_relations_only() -> None:
    """Duplicates kept as such collapse into the newest wording at the group's best place; the older of an
    ``updates`` pair is marked and goes after the newer; memories with no kept relation keep their places,
    however alike their texts (nothing is judged at read time)."""
    ranked = [
        _candidate(1, 0.9, 1, "Production runs in us-east-1."),
        _candidate(2, 0.8, 3, "Deploys go out on Tuesdays."),
        _candidate(3, 0.7, 5, "Production runs in eu-west-1."),
        _candidate(4, 0.6, 4, "deploys go out on tuesdays"),
        _candidate(
            5, 0.5, 9, "Production runs in eu-west-1."
        ),  # the same text as 3, but nothing kept: left be
    ]
    done = curate(ranked, [(3, 1, "updates"), (4, 2, "duplicates")])
    assert done.order == [3, 1, 4, 5]  # the update before the fact it updates; 4 stands for 2 (newer wording)
    assert done.duplicates == {4: [2]} and done.outdated_by == {1: 3}
    assert done.apply(ranked, include_outdated=False) == [
        ranked[2],
        ranked[0],
        ranked[3],
        ranked[4],
    ]  # inferred
    stated = curate(ranked, [(3, 1, "updates"), (4, 2, "duplicates")], confirmed=frozenset({(3, 1)}))
    assert stated.apply(ranked, include_outdated=False) == [
        ranked[2],
        ranked[3],
        ranked[4],
    ]  # someone said so
    assert stated.left_out(include_outdated=False) == {2, 1} and stated.left_out() == {2} == done.left_out()
    later = [
        _candidate(9, 0.95, 1, "Lunch is at noon."),
        *ranked,
    ]  # the window found anywhere in what is applied
    assert [c.id for c in done.apply(later)] == [3, 1, 4, 5, 9]
    assert curate(ranked, []).order == [1, 2, 3, 4, 5]
    # a write's judgement knows which of two is newer, whatever dates they carry: the link goes from the newer
    assert curate(ranked, [(1, 3, "updates")], directed=frozenset({(1, 3)})).outdated_by == {3: 1}


def test_the_newer_of_two_memories_of_one_subject_goes_first_unless_the_query_names_a_value_only_the_older_holds() -> (
    None
):
    older = _candidate(1, 0.50, 1, "User takes coffee black.")
    newer = _candidate(2, 0.45, 9, "Coffee order now: decaf oat latte.")
    kept = [(2, 1, "same_subject")]
    assert curate([older, newer], kept, asked("what coffee does the user order")).order == [2, 1]
    assert curate([older, newer], [(2, 1, "updates")], asked("what coffee does the user order")).order == [
        2,
        1,
    ]
    # kept only as related (a shared name or topic: two attributes of one thing): the ranking stands
    assert curate([older, newer], [(2, 1, "related")], asked("what coffee does the user order")).order == [
        1,
        2,
    ]
    slo = _candidate(1, 0.50, 1, "dispatch SLO: 99.9% of assign-job calls under 500 ms.")
    ticket = _candidate(2, 0.45, 9, "ENG-345 - Assign-job p95 above 500 ms at Monday peak.")
    assert curate([slo, ticket], kept, asked("what is the SLO for dispatch")).order == [
        1,
        2,
    ]  # a ticket restates no fact
    assert curate([older, newer], kept, asked("does the user take coffee black")).order == [
        2,
        1,
    ]  # words: no value
    priced = _candidate(1, 0.50, 1, "Pro plan is $12 a seat.")
    raised = _candidate(2, 0.45, 9, "Pro plan now costs $15 a seat.")
    assert curate([priced, raised], kept, asked("what does the Pro plan cost")).order == [2, 1]
    assert curate([priced, raised], kept, asked("is the Pro plan still $12")).order == [
        1,
        2,
    ]  # a value only the older holds
    far = _candidate(2, 0.15, 9, "Coffee order now: decaf oat latte.")  # far less relevant: keeps its place
    assert curate([older, far], kept, asked("what coffee does the user order")).order == [1, 2]
    other = _candidate(2, 0.45, 9, "Coffee order now: decaf oat latte.", scope="b")  # another tenant's
    assert curate([older, other], kept, asked("what coffee does the user order")).order == [1, 2]


def test_turns_are_never_curated() -> None:
    turn = [Candidate(i, 0.5, True, i * DAY_MS, True, pins("ok, sounds good")) for i in (1, 2)]
    assert curate(turn, [(2, 1, "duplicates")]).order == [1, 2] and curate(turn, []).duplicates == {}


# --- in the vault, with the bundled model -------------------------------------------------------------


def test_an_update_is_kept_when_written_and_marks_the_older_for_every_query(
    model_vault: Vault, clock: Clock
) -> None:
    """A value replaced in the same statement: judged ``update`` when the newer is written, kept, and from then
    on the older is marked for every query that returns both, whatever its words."""
    older = model_vault.remember("fact", "prod-region", "Production runs in us-east-1.")
    clock.advance(180 * DAY_MS)
    newer = model_vault.remember("fact", "prod-region-now", "Production runs in eu-west-1.")
    assert [(s.id, s.relation) for s in newer.similar] == [(older.id, "update")]  # told to the agent at write
    for query in ("where does production run", "production region", "which AWS region hosts prod"):
        items = model_vault.recall(query, reinforce=False).items
        assert [i.id for i in items[:2]] == [newer.id, older.id], query
        assert items[1].outdated_by == newer.id and items[0].outdated_by is None
    plain = model_vault.recall("where does production run", curate=False, reinforce=False).items
    assert all(i.outdated_by is None for i in plain)
    # A mark the vault inferred orders and annotates and never hides: the rule cannot tell an update from two
    # true facts ("Room 101 seats 12" and "Room 102 seats 12"), so prepare shows both, the newer first, dated.
    assert older.id in [
        i.id
        for i in model_vault.recall(
            "where does production run", include_outdated=False, reinforce=False
        ).items
    ]
    block = model_vault.prepare("where does production run?", triggered=0).markdown
    assert block.index("eu-west-1") < block.index("us-east-1")
    # Someone's word hides it: the agent's own updates link (or a judge's verdict, which supersedes).
    model_vault.link(newer.id, older.id, "updates")
    assert older.id not in [
        i.id
        for i in model_vault.recall(
            "where does production run", include_outdated=False, reinforce=False
        ).items
    ]
    block = model_vault.prepare("where does production run?", triggered=0).markdown
    assert "eu-west-1" in block and "us-east-1" not in block  # prepare leaves the confirmed outdated out
    assert (
        "us-east-1"
        in model_vault.prepare("where does production run?", triggered=0, include_outdated=True).markdown
    )


def test_a_new_version_of_an_old_key_is_the_newer_of_its_pair(model_vault: Vault, clock: Clock) -> None:
    """From the review: a key written again is the newest statement, whatever date its first version carries."""
    first = model_vault.remember("fact", "deploy", "Deploys go out at 10:00 on Tuesdays.")
    clock.advance(DAY_MS)
    other = model_vault.remember("fact", "deploy-new", "Deploys go out at 14:00 on Tuesdays.")
    clock.advance(DAY_MS)
    again = model_vault.remember("fact", "deploy", "Deploys go out at 09:00 on Tuesdays.")
    assert again.id == first.id
    items = model_vault.recall("when do deploys go out", reinforce=False).items
    assert [i.id for i in items[:2]] == [first.id, other.id]
    assert items[0].outdated_by is None


def test_an_update_phrased_another_way_is_a_candidate_and_comes_first(
    model_vault: Vault, clock: Clock
) -> None:
    older = model_vault.remember("fact", "prod-region", "Production runs in eu-west-1 on EKS.")
    model_vault.remember("fact", "billing-owner", "Carol owns the billing service.")
    clock.advance(180 * DAY_MS)
    newer = model_vault.remember("fact", "region-move", "Production moved to us-east-2 in July.")
    assert older.id in [s.id for s in newer.similar[:3]]
    assert next(s for s in newer.similar if s.id == older.id).text == "Production runs in eu-west-1 on EKS."
    items = [i.id for i in model_vault.recall("production region", reinforce=False).items]
    assert items.index(newer.id) < items.index(older.id)
    # the pair's order is the pair's, not the query's words': "run" is only in the older, and the newer still leads
    items = [i.id for i in model_vault.recall("where does production run", reinforce=False).items]
    assert items.index(newer.id) < items.index(older.id)
    paraphrase = model_vault.remember(
        "fact", "prod-cluster", "Our prod cluster is hosted in AWS eu-west-1 (Ireland)."
    )
    assert older.id in [s.id for s in paraphrase.similar]  # reported for the agent to judge, never merged
    assert not paraphrase.repeated


def test_a_paraphrase_is_never_merged_on_a_guess_but_is_with_a_judge(
    tmp_path: Path, clock: Clock, real_embedder: Any
) -> None:
    with Vault(tmp_path / "a.db", clock=clock, embedder=real_embedder) as vault:
        first = vault.remember("pref", "editor", "The user prefers dark mode in every editor.")
        clock.advance(DAY_MS)
        second = vault.remember("pref", "editor-theme", "In all my editors I like the dark theme.")
        assert first.id in [s.id for s in second.similar] and not second.repeated
        items = vault.recall("which editor theme does the user like", reinforce=False).items
        assert {first.id, second.id} <= {i.id for i in items} and not any(i.duplicates for i in items)

    def judge(memory: Any, candidates: list[Any]) -> dict[int, str]:
        return {c.id: "duplicate" for c in candidates if "dark" in c.text}

    with Vault(tmp_path / "b.db", clock=clock, embedder=real_embedder, judge=judge) as vault:
        first = vault.remember("pref", "editor", "The user prefers dark mode in every editor.")
        clock.advance(DAY_MS)
        second = vault.remember("pref", "editor-theme", "In all my editors I like the dark theme.")
        assert [(s.id, s.relation) for s in second.similar] == [(first.id, "duplicate")]
        items = vault.recall("which editor theme does the user like", reinforce=False).items
        assert items[0].id == second.id and items[0].duplicates == [
            first.id
        ]  # the newest wording stands for both
        assert first.id not in [i.id for i in items]


def test_unicode_canonical_forms_are_one_text() -> None:
    composed, decomposed = "caf\u00e9 au lait", "cafe\u0301 au lait"
    assert curation.normal(composed) == curation.normal(decomposed)
    assert curation.normal("x\u00b2") != curation.normal("x2")  # a compatibility form is another text


def test_a_document_is_compared_by_its_start_and_repeated_only_whole(vault: Vault) -> None:
    """Curation reads a memory's first READ_CHARS characters (a 256 KiB body cost 0.35 s a remember when
    read whole); the exact-repeat check still reads all of it."""
    head = " ".join(
        f"section {i} of the runbook says step {i}." for i in range(700)
    )  # about 25,000 characters
    assert len(head) > curation.READ_CHARS
    a, b = said(head + " The end."), said(head + " Another end.")
    assert a.words == b.words and a.normal != b.normal
    first = vault.remember("doc", "runbook", head + " The end.")
    again = vault.remember("doc", "runbook-copy", head + " The end.")
    assert again.repeated and again.id == first.id
    other = vault.remember("doc", "runbook-2", head + " Another end.")
    assert not other.repeated and other.id != first.id
    assert [s.id for s in other.similar] == [first.id]  # for the agent to judge


def test_hygiene_flags_a_paraphrase_and_not_two_tickets(model_vault: Vault) -> None:
    a = model_vault.remember("pref", "editor", "The user prefers dark mode in every editor.")
    b = model_vault.remember("pref", "editor-theme", "In all my editors I like the dark theme.")
    t1 = model_vault.remember(
        "ticket",
        "eng-1412",
        "ENG-1412: Checkout button unresponsive on Safari 17. "
        "Assignee: Aisha. Component: web-checkout. Priority P2.",
    )
    t2 = model_vault.remember(
        "ticket",
        "eng-1419",
        "ENG-1419: Checkout button unresponsive on Firefox ESR. "
        "Assignee: Marco. Component: web-checkout. Priority P2.",
    )
    flagged = {i.id: i.duplicate_of for i in model_vault.hygiene().items if i.duplicate_of is not None}
    assert flagged == {b.id: a.id}
    assert t1.id not in flagged and t2.id not in flagged


def test_the_window_does_not_depend_on_the_limit(model_vault: Vault, clock: Clock) -> None:
    for i in range(40):
        model_vault.remember("fact", f"f{i}", f"Service {i} runs on port {8000 + i} in the staging cluster.")
        clock.advance(DAY_MS)
    deep = [
        i.id
        for i in model_vault.recall(
            "which port does the staging service use", limit=40, reinforce=False
        ).items
    ]
    for limit in (1, 5, 10, 25):
        top = [
            i.id
            for i in model_vault.recall(
                "which port does the staging service use", limit=limit, reinforce=False
            ).items
        ]
        assert top == deep[:limit]
    assert curation.WINDOW <= 40


def test_two_tenants_memories_are_never_collapsed_or_ordered_together(
    model_vault: Vault, clock: Clock
) -> None:
    a = model_vault.remember("fact", "region", "Production runs in us-east-1.", agent_id="a")
    clock.advance(90 * DAY_MS)
    b = model_vault.remember("fact", "region", "Production runs in us-east-1.", agent_id="b")
    clock.advance(90 * DAY_MS)
    c = model_vault.remember("fact", "region-2", "Production runs in eu-west-1.", agent_id="b")
    items = model_vault.recall("where does production run", reinforce=False).items  # unscoped: every tenant
    assert {a.id, b.id, c.id} <= {i.id for i in items}
    by_id = {i.id: i for i in items}
    assert by_id[a.id].outdated_by is None and not by_id[a.id].duplicates and not by_id[b.id].duplicates
    assert by_id[b.id].outdated_by == c.id  # within tenant b


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                ["ENG-1412", "-1234567", "#77", "deadbeef1", "v1.2", "SEC-9180.", "−42", "w123", "A1"]
            ),
            st.text(alphabet="abcXYZ019-#.:/ ", max_size=12),
        ),
        max_size=12,
    )
)
def test_a_text_s_pins_are_its_values_records_and_numbers(words: list[str]) -> None:
    text = " ".join(words)
    found, pinned = curation.values(text), curation.pins(text)
    assert pinned.records == found.records
    assert pinned.numbers == {a for a in found.anchors if any(c.isdigit() for c in a)}
    assert pinned.written == pinned.numbers | {t for t in found.tokens if any(c.isdigit() for c in t)}
    assert curation.asked(text) == pinned.numbers
