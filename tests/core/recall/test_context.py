"""Recall judges a dialogue's turns in context (perseus_vault_core/recall/context.py): a turn beside a strong
match is lifted (found even when it shares no word with the query), and a session's turns rise with its
best one. Only turns, in every shape recall/turns.py knows: written by remember_conversation, as ``Speaker:
text`` or with the speaker on a line of its own, or with a speaker and a session in the body (LangChain's chat
messages); never another memory, and never a neighbour the caller's view hides."""

from __future__ import annotations

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.recall.context import NEIGHBOUR, SESSION, Place
from perseus_vault_core.storage import Connection

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


def test_a_chat_written_with_each_speaker_on_a_line_of_their_own_has_neighbours_too(vault: Vault) -> None:
    lines = [
        "Caroline\nDid you paint anything this summer?",
        "Melanie\nYes, a lake at sunrise, it took me weeks.",
        *(f"Caroline\n{t}" for t in FILLER),
    ]
    ids = [
        e.id
        for e in vault.remember_many(
            [{"category": "chat", "key": f"t{i}", "content": c} for i, c in enumerate(lines)]
        )
    ]
    assert _ids(vault, "paint summer")[:2] == ids[:2]


def _message(i: int, text: str, session: str, role: str = "human", **more: object) -> dict[str, object]:
    """A chat message as LangChain's chat history stores it: its text, and its session and role in the body."""
    body = {"message": {"type": role, "data": {"content": text}}, "session_id": session, "role": role}
    return {"category": "chat", "key": f"m{i}", "type": "chat_message", "content": text, "body": body, **more}


def test_messages_whose_bodies_name_their_session_are_neighbours_whoever_speaks(vault: Vault) -> None:
    said = [
        _message(0, "Did you paint anything this summer?", "s1"),
        _message(1, "Yes, a lake at sunrise, it took me weeks.", "s1"),  # the same role: still a neighbour
        _message(2, "A lake at sunrise is lovely, and it took weeks?", "s2", "ai"),  # another session's
        *(_message(3 + i, t, "s2") for i, t in enumerate(FILLER)),
    ]
    ids = [e.id for e in vault.remember_many(said)]
    assert _ids(vault, "paint summer") == ids[:2]  # the answer found beside it; the next session's is not
    assert _ids(vault, "paint summer", workspace_hash="elsewhere") == []


def _lifted(vault: Vault, relevance: dict[int, float]) -> dict[int, float]:
    """Each memory's relevance after :func:`lift`, given the arms' relevance of some (those it adds: 0)."""
    from perseus_vault_core.contract.params import Filters
    from perseus_vault_core.primitives.dialect import dialect
    from perseus_vault_core.primitives.filters import view
    from perseus_vault_core.recall.context import lift
    from perseus_vault_core.recall.ranking import Scored

    def run(conn: Connection) -> dict[int, float]:
        vids = {
            int(i): int(vid)
            for i, vid in conn.execute(
                "SELECT entity_id, vid FROM entity_versions WHERE recorded_to_ms IS NULL"
            )
        }
        scored = [Scored(i, r, r) for i, r in relevance.items()]
        chosen = {i: vids[i] for i in relevance}
        v = view(Filters(), vault.engine.now(), dialect(conn))
        out = lift(
            conn, v, scored, chosen, lambda fresh: dict.fromkeys(fresh, 0.0), dict.fromkeys(relevance, True)
        )
        return {s.id: round(s.relevance, 9) for s in out}

    return vault.engine.read(run)


def test_a_session_named_in_bodies_rises_with_its_best_turn_and_a_labelled_turn_has_none(
    vault: Vault,
) -> None:
    m = [
        e.id
        for e in vault.remember_many(
            [
                *(_message(i, f"said {i}", "s1") for i in range(3)),
                *(_message(i, f"said {i}", "s2") for i in range(3, 5)),
                {
                    "category": "chat",
                    "key": "l6",
                    "content": "Ann: labelled",
                },  # beside s2's last: no neighbour
                {"category": "chat", "key": "l7", "content": "Bob: labelled"},
            ]
        )
    ]
    lifted = _lifted(vault, {m[0]: 1.0, m[2]: 0.2, m[3]: 0.5, m[5]: 0.5})
    assert lifted == {
        m[0]: round(1.0 + SESSION * 1.0, 9),
        m[1]: round(NEIGHBOUR * 1.0 + SESSION * 1.0, 9),  # added beside m0 (and m2), in s1
        m[2]: round(0.2 + SESSION * 1.0, 9),  # not beside m0: its session lifts it
        m[3]: round(0.5 + SESSION * 0.5, 9),
        m[4]: round(NEIGHBOUR * 0.5 + SESSION * 0.5, 9),
        m[5]: 0.5,  # labelled: no session; its neighbour m6 is no anchor, m4 another dialogue's
        m[6]: round(NEIGHBOUR * 0.5, 9),
    }


@pytest.mark.parametrize(
    ("a", "b", "beside"),
    [
        (("s", 1, "Ann"), ("s", 2, "Ann"), True),  # numbered, one apart, whoever speaks
        (("s", 1, "Ann"), ("s", 3, "Bob"), False),  # numbered, two apart
        (("s", None, "user"), ("s", None, "user"), True),  # a session named in bodies: any speakers
        (("s", None, "user"), ("t", None, "ai"), False),  # another session
        (("s", 4, "Ann"), ("s", None, "ai"), True),  # one numbered, one named in its body: the same session
        ((None, None, "Ann"), (None, None, "Bob"), True),  # labelled, by two speakers
        ((None, None, "Decision"), (None, None, "Decision"), False),  # one label twice: notes, not a dialogue
        ((None, None, "Ann"), ("s", None, "Bob"), False),  # a labelled turn and a session's
        ((None, None, None), (None, None, "Bob"), False),  # a turn typed so, with no place in a dialogue
    ],
)
def test_which_turns_are_beside_each_other(
    a: tuple[str | None, int | None, str | None], b: tuple[str | None, int | None, str | None], beside: bool
) -> None:
    scope = ("agent", "", "chat")
    one, two = Place(7, 70, scope, *a), Place(8, 80, scope, *b)
    assert one.adjacent(two) is beside and two.adjacent(one) is beside
    assert not one.adjacent(Place(9, 90, scope, *b))  # not written next to it
    assert not one.adjacent(Place(8, 80, ("agent", "", "other"), *b))  # another category
