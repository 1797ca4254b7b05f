"""Conversation turns linked to the earlier turns about the same thing (features/turn_topics.py)."""

from __future__ import annotations

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.features import turn_topics

pytestmark = pytest.mark.both_backends

GARDEN = [
    ("Ana", "I planted tomatoes and basil in the garden this spring"),
    ("Ben", "Which bank should I open an account with"),
    ("Ana", "The garden tomatoes and basil need water every morning"),
]


def _topics(vault: Vault, entity_id: int) -> set[tuple[int, int]]:
    return {
        (e.from_id, e.to_id) for e in vault.traverse(entity_id, 1).edges if e.relation == turn_topics.RELATION
    }


def test_a_turn_is_linked_to_the_earlier_turns_about_the_same_thing(dense_vault: Vault) -> None:
    first = dense_vault.remember_conversation("s1", [{"speaker": s, "text": t} for s, t in GARDEN[:2]])
    later = dense_vault.remember_conversation("s2", [{"speaker": s, "text": t} for s, t in GARDEN[2:]])
    garden, bank = first.turns[0].id, first.turns[1].id
    again = later.turns[0].id
    assert _topics(dense_vault, again) == {(again, garden)}  # across sessions, from the later turn
    edge = next(e for e in dense_vault.traverse(again, 1).edges if e.to_id == garden)
    assert edge.source == "inferred" and turn_topics.FLOOR <= edge.weight <= 1.0
    assert _topics(dense_vault, bank) == set()
    assert dense_vault.traverse(again, 1, inferred=False).edges == []


def test_turns_of_one_call_are_linked_too_and_never_across_scopes(dense_vault: Vault) -> None:
    ours = dense_vault.remember_conversation(
        "s1", [{"speaker": s, "text": t} for s, t in GARDEN], agent_id="a"
    )
    theirs = dense_vault.remember_conversation(
        "s1", [{"speaker": s, "text": t} for s, t in GARDEN], agent_id="b"
    )
    a0, a2 = ours.turns[0].id, ours.turns[2].id
    assert _topics(dense_vault, a2) == {(a2, a0)}
    b0, b2 = theirs.turns[0].id, theirs.turns[2].id
    assert _topics(dense_vault, b2) == {(b2, b0)}  # its own scope's turn, not the other agent's


def test_a_resent_turn_is_not_judged_again_and_an_edited_one_is(dense_vault: Vault) -> None:
    said = [{"speaker": s, "text": t, "id": f"m{n}"} for n, (s, t) in enumerate(GARDEN)]
    first = dense_vault.remember_conversation("s1", said)
    garden, last = first.turns[0].id, first.turns[2].id
    before = dense_vault.traverse(last, 1).edges
    assert dense_vault.remember_conversation("s1", said).unchanged == 3
    assert dense_vault.traverse(last, 1).edges == before
    retimed = [*said[:2], {**said[2], "time": "2026-01-02T10:00:00Z"}]  # its words unchanged: its links stay
    assert dense_vault.remember_conversation("s1", retimed).updated == 1
    assert dense_vault.traverse(last, 1).edges == before
    edited = [*said[:2], {**said[2], "text": "Which bank should I open an account with today"}]
    dense_vault.remember_conversation("s1", edited)
    assert _topics(dense_vault, last) == {(last, first.turns[1].id)}
    assert (last, garden) not in _topics(dense_vault, garden)


def test_a_vault_without_vectors_links_no_turns(vault: Vault) -> None:
    written = vault.remember_conversation("s1", [{"speaker": s, "text": t} for s, t in GARDEN])
    assert all(vault.traverse(t.id, 1).edges == [] for t in written.turns)


def test_global_recall_finds_a_conversations_topics_nobody_linked(dense_vault: Vault) -> None:
    """GraphRAG on a conversation store: communities of turns about the same thing, with no link call."""
    dense_vault.remember_conversation("s1", [{"speaker": s, "text": t} for s, t in GARDEN])
    result = dense_vault.global_recall("what did we talk about the garden")
    assert result.communities
    members = result.communities[0].community.members
    assert len(members) == 2
    assert "garden" in result.context and "No community" not in result.context
