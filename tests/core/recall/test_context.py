"""Recall judges a dialogue's turns in context (perseus_vault_core/recall/context.py): a turn beside a strong
match is lifted (found even when it shares no word with the query), and a session's turns rise with its
best one. Only turns: written by remember_conversation, or as ``Speaker: text``; never another memory,
and never a neighbour the caller's view hides."""

from __future__ import annotations

import pytest

from perseus_vault_core import Vault

pytestmark = pytest.mark.both_backends

FILLER = [
    "The weather was grey all week.",
    "I started a new puzzle with the kids.",
    "Work has been busy lately.",
    "We might visit my parents soon.",
    "The car needs new tyres.",
]


def _ids(vault: Vault, query: str, **more: object) -> list[int]:
    return [i.id for i in vault.recall(query, reinforce=False, **more).items]


def test_the_turn_after_a_question_is_found_beside_it(vault: Vault) -> None:
    said = vault.remember_conversation(
        "s1",
        [
            {"speaker": "Caroline", "text": "Did you paint anything this summer?"},
            {"speaker": "Melanie", "text": "Yes, a lake at sunrise, it took me weeks."},
            *({"speaker": "Caroline" if i % 2 else "Melanie", "text": t} for i, t in enumerate(FILLER)),
        ],
    )
    question, answer = said.turns[0].id, said.turns[1].id
    found = _ids(vault, "paint summer")  # keyword-only: the answer holds neither word
    assert found[:2] == [question, answer]
    assert _ids(vault, "paint summer", category="conversation", topic_path="conversation/s1")[:2] == [
        question,
        answer,
    ]


def test_a_chat_written_as_speaker_lines_has_neighbours_too(vault: Vault) -> None:
    lines = [
        "Caroline: Did you paint anything this summer?",
        "Melanie: Yes, a lake at sunrise, it took me weeks.",
        *(f"Caroline: {t}" for t in FILLER),
    ]
    ids = [
        e.id
        for e in vault.remember_many(
            [{"category": "chat", "key": f"t{i}", "content": c} for i, c in enumerate(lines)]
        )
    ]
    assert _ids(vault, "paint summer")[:2] == ids[:2]


def test_other_memories_and_hidden_neighbours_are_left_alone(vault: Vault) -> None:
    notes = vault.remember_many(
        [
            {"category": "note", "key": "a", "content": "paint the fence in summer"},
            {"category": "note", "key": "b", "content": "a lake at sunrise"},
        ]
    )
    assert _ids(vault, "paint summer") == [notes[0].id]  # not a dialogue: no neighbour lifted
    other = vault.remember_many(
        [
            {
                "category": "chat",
                "key": "x",
                "content": "Caroline: Did you paint this summer?",
                "workspace_hash": "w1",
            },
            {
                "category": "chat",
                "key": "y",
                "content": "Melanie: Yes, a lake at sunrise.",
                "workspace_hash": "w2",
            },
        ]
    )
    assert _ids(vault, "paint summer", workspace_hash="w1") == [
        other[0].id
    ]  # its neighbour is another scope's
    assert other[1].id not in _ids(vault, "paint summer")  # adjacent, but not the same scope: no neighbour
