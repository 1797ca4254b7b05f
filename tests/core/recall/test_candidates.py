"""recall/candidates.py: a new memory's candidates, scored and cut, and the relation each is kept as. Pure, on
given features; the whole path (remember, the arms, the links) is in tests/core/features/test_relations.py."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perseus_vault_core import Vault
from perseus_vault_core.recall import candidates
from perseus_vault_core.recall.candidates import Found, Memory, judge, relation, replaced
from perseus_vault_core.recall.curation import normal, said

from ...conftest import FakeEmbedder


def memory(i: int, text: str, category: str = "fact", key: str = "k", day: int = 1) -> Memory:
    return Memory(i, said(text), category, key, None, day * 86_400_000)


@pytest.mark.parametrize(
    "a, b, cosine, expected",
    [
        ("Production runs in us-east-1.", "Production runs in eu-west-1.", 0.78, True),  # one value replaced
        ("Temperature is -5 C.", "Temperature is 5 C.", 0.95, True),
        (
            "1:1 with Aisha: Tuesdays 15:30.",
            "1:1 with Marco: Tuesdays 15:00.",
            0.85,
            False,
        ),  # a name: two meetings
        ("Q2 retro is on July 3.", "Q1 retro is on April 4.", 0.80, False),  # more than one value
        (
            "ENG-1412: checkout broken on Safari.",
            "ENG-1419: checkout broken on Safari.",
            0.97,
            False,
        ),  # two records
        ("Production runs in us-east-1.", "The lunch menu changes on Fridays.", 0.1, False),
    ],
)
def test_an_update_is_one_value_replaced_in_the_same_statement(
    a: str, b: str, cosine: float, expected: bool
) -> None:
    assert replaced(said(a), said(b), cosine) is expected


@pytest.mark.parametrize(
    "a, b",
    [
        ("The engine is written in C++.", "The engine is written in C#."),
        ("Temperature is -5 C.", "Temperature is 5 C."),
        (":", ";"),
    ],
)
def test_a_symbol_or_a_sign_makes_another_text(a: str, b: str) -> None:
    assert normal(a) != normal(b) and relation(said(a), said(b), 0.99, 0.99) != "duplicate"


def test_the_best_few_above_the_floor_best_first_and_never_the_memory_itself() -> None:
    new = memory(10, "Production moved to us-east-2 in July.", key="region-move")
    found = [
        Found(memory(1, "Production runs in eu-west-1 on EKS.", key="prod-region"), 0.53, 0.2),
        Found(memory(2, "Staging runs in us-west-2.", key="staging-region"), 0.65),
        Found(memory(3, "Lunch is at noon.", category="note"), 0.05),
        Found(memory(4, "Carol owns billing.", category="person"), 0.30),
        Found(memory(10, "Production moved to us-east-2 in July."), 1.0),
    ]  # its own entity (an update)
    chosen = judge(new, found)
    assert [c.id for c in chosen] == [1, 2] or [c.id for c in chosen] == [2, 1]
    assert all(c.score >= candidates.FLOOR for c in chosen) and len(chosen) <= candidates.MOST
    assert [c.relation for c in chosen] == ["related", "related"] or chosen[0].relation in (
        "related",
        "same_subject",
    )


def test_a_memory_found_twice_is_one_candidate() -> None:
    """Two look-ups (or the store and the batch, for a batch item that updates a stored memory) may find the same
    memory: it is judged once, at its better score."""
    new = memory(10, "Production moved to us-east-2 in July.", key="region-move")
    older = memory(1, "Production runs in eu-west-1 on EKS.", key="prod-region")
    chosen = judge(
        new,
        [Found(older, 0.40), Found(older, 0.53, 0.2), Found(memory(2, "Staging runs in us-west-2."), 0.6)],
    )
    assert sorted(c.id for c in chosen) == [1, 2]
    assert next(c for c in chosen if c.id == 1).cosine == 0.53


VALUES = [
    "eu-west-1",
    "us-east-2",
    "v16",
    "ENG-142",
    "Postgres",
    "Aisha",
    "$12",
    "-5",
    "5",
    "July",
    "port 8080",
]
PLAIN = [
    "production",
    "runs",
    "cluster",
    "billing",
    "price",
    "team",
    "owner",
    "deploys",
    "on",
    "the",
    "weekly",
]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_scoring_only_as_far_as_needed_picks_what_scoring_everything_picks(data: st.DataObject) -> None:
    """judge counts a found memory's values only while its score could still reach the first three: it must pick
    exactly what scoring every found memory in full picks, in the same order, with the same scores."""

    def text() -> str:
        return " ".join(data.draw(st.lists(st.sampled_from(VALUES + PLAIN), min_size=1, max_size=8)))

    vectors = data.draw(st.booleans())  # a vault with vectors, or a keyword-only one (the words' floor)
    new = memory(100, text(), key=data.draw(st.sampled_from(["prod-region", "price", "k"])))
    found = [
        Found(
            memory(
                data.draw(st.integers(1, 12)),
                text(),
                data.draw(st.sampled_from(["fact", "note"])),
                data.draw(st.sampled_from(["prod-region", "price", "k", "team"])),
            ),
            data.draw(st.floats(-0.2, 1.0)) if vectors else None,
            data.draw(st.floats(0.0, 1.0)),
        )
        for _ in range(data.draw(st.integers(0, 25)))
    ]
    found = [f for f in found if f.memory.said.normal != new.said.normal]  # an exact repeat is reported apart
    full = sorted(((candidates.score(new, f), f) for f in found), key=lambda p: (-p[0], p[1].memory.id))
    floor = candidates.FLOOR if vectors else candidates.WORDS_FLOOR
    expected: list[tuple[int, float]] = []
    for value, f in full:
        if len(expected) < candidates.MOST and value >= floor and all(i != f.memory.id for i, _ in expected):
            expected.append((f.memory.id, round(value, 4)))
    assert [(c.id, c.score) for c in judge(new, found)] == expected


def test_an_exact_repeat_is_a_candidate_whatever_it_scores() -> None:
    new = memory(9, "  :  ")
    chosen = judge(new, [Found(memory(1, ":"), None), Found(memory(2, ";"), None)])
    assert [(c.id, c.relation) for c in chosen] == [(1, "duplicate")]


TEXT = st.text(
    alphabet=string.ascii_letters + string.digits + string.punctuation + " -+#", min_size=1, max_size=30
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, data=st.data())
def test_a_repeat_is_exactly_the_same_text_case_and_whitespace_aside(
    tmp_path_factory: pytest.TempPathFactory, text: str, data: st.DataObject
) -> None:
    """Written under a new key after ``text``: a variant in letter case and whitespace only is not stored again;
    a text with one character changed (a symbol, a sign, a digit, a letter) is stored, whatever it holds."""
    if not text.strip():
        return
    position = data.draw(st.integers(0, len(text) - 1))
    other = data.draw(st.sampled_from(string.ascii_letters + string.digits + string.punctuation))
    changed = text[:position] + other + text[position + 1 :]
    variant = "  " + text.swapcase().replace(" ", "   ") + "\n"
    with Vault(tmp_path_factory.mktemp("v") / "v.db", embedder=FakeEmbedder()) as vault:
        first = vault.remember("fact", "a", text)
        again = vault.remember("fact", "b", variant)
        assert again.repeated == (normal(variant) == normal(text))
        if normal(changed) != normal(text):
            stored = vault.remember("fact", "c", changed)
            assert (
                not stored.repeated
                and stored.id != first.id
                and vault.get_entity(stored.id).content == changed
            )
