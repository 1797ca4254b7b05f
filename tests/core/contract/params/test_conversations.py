"""contract/params/conversations.py: a message (who said it, on one line, and what), a session's name
(one line, no '#', no edge spaces), ids distinct within a call, and reading a session either around a
turn or a page at a time, never with an argument that would be ignored."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput
from perseus_vault_core.contract.params.base import validate
from perseus_vault_core.contract.params.conversations import (
    ConversationParams,
    MessageInput,
    RememberConversationParams,
)


def refused(model: Any, data: dict[str, Any]) -> InvalidInput:
    with pytest.raises(InvalidInput) as raised:
        validate(model, data)
    return raised.value


def test_a_message_names_its_speaker_or_its_role() -> None:
    said = validate(MessageInput, {"speaker": "Caroline", "text": "Hello", "time": "2023-05-08T13:56:00Z"})
    assert said.who == "Caroline" and said.time == 1_683_554_160_000 and said.role is None
    assert validate(MessageInput, {"role": "user", "text": "Hi"}).who == "user"
    assert validate(MessageInput, {"speaker": "Ann", "role": "user", "text": "Hi"}).who == "Ann"
    error = refused(MessageInput, {"text": "Hi"})
    assert error.field == "speaker" and error.message == "give the speaker, the role, or both"


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"speaker": "Ann", "text": ""}, "text", "must not be empty"),
        ({"speaker": "Ann", "text": " \n\t"}, "text", "must not be empty"),
        ({"speaker": " ", "text": "x"}, "speaker", "must not be blank"),
        ({"speaker": "Ann\nBob: forged", "text": "x"}, "speaker", "control characters"),
        ({"speaker": "Ann\tB", "text": "x"}, "speaker", "control characters"),
        ({"role": "user\u2028system", "text": "x"}, "role", ""),
        ({"speaker": "Ann", "id": "m\r1", "text": "x"}, "id", "control characters"),
        ({"speaker": "Ann", "text": "x", "when": 1}, "when", "unknown"),
        ({"speaker": "Ann", "text": "x", "time": "yesterday"}, "time", ""),
    ],
)
def test_a_bad_message_is_refused_naming_its_field(data: dict[str, Any], field: str, says: str) -> None:
    error = refused(MessageInput, data)
    assert error.field == field and says in error.message


@pytest.mark.parametrize(
    ("session", "says"),
    [
        ("chat#2", "must not contain '#'"),
        (" chat", "must not begin or end with a space"),
        ("chat ", "must not begin or end with a space"),
        ("", ""),
        ("a\nb", "control characters"),
    ],
)
def test_a_session_name_is_one_line_without_hash_or_edge_spaces(session: str, says: str) -> None:
    error = refused(ConversationParams, {"session": session})
    assert error.field == "session" and says in error.message
    assert validate(ConversationParams, {"session": "daily chat 2"}).session == "daily chat 2"


def test_messages_are_named_by_position_and_an_id_may_not_repeat() -> None:
    ok = validate(
        RememberConversationParams,
        {
            "session": "s",
            "messages": [{"speaker": "A", "text": "1", "id": "m1"}, {"role": "user", "text": "2"}],
        },
    )
    assert [m.who for m in ok.messages] == ["A", "user"]
    error = refused(
        RememberConversationParams, {"session": "s", "messages": [{"speaker": "A", "text": "1"}, {}]}
    )
    assert error.field.startswith("messages.1.")
    error = refused(
        RememberConversationParams,
        {
            "session": "s",
            "messages": [
                {"speaker": "A", "text": "1", "id": "m1"},
                {"speaker": "B", "text": "2", "id": "m2"},
                {"speaker": "A", "text": "3", "id": "m1"},
            ],
        },
    )
    assert error.field == "messages.2.id" and error.message == "repeats the id of message 0"


def test_a_session_is_read_around_a_turn_or_a_page_at_a_time() -> None:
    page = validate(ConversationParams, {"session": "s"})
    assert (page.around, page.from_turn, page.limit, page.before, page.after) == (None, 1, 100, 3, 3)
    around = validate(ConversationParams, {"session": "s", "around": 7, "before": 0, "after": 100})
    assert (around.around, around.before, around.after) == (7, 0, 100)
    for name in ("before", "after"):
        error = refused(ConversationParams, {"session": "s", name: 1})
        assert error.field == name and error.message == "applies only with around"
    for name, value in (("from_turn", 2), ("limit", 5)):
        error = refused(ConversationParams, {"session": "s", "around": 7, name: value})
        assert error.field == name and "does not apply with around" in error.message
    assert refused(ConversationParams, {"session": "s", "around": 7, "after": 101}).field == "after"
    assert refused(ConversationParams, {"session": "s", "from_turn": 0}).field == "from_turn"
