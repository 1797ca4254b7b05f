"""What counts as a conversation's turn, by its shape (perseus_vault_core/recall/turns.py): numbered by
remember_conversation, a body naming a speaker and a session, ``Speaker: text``, ``Speaker`` on a line of its
own, or a memory its writer typed ``turn``; the body's fields read in SQL the same as in Python, on both
backends."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perseus_vault_core import Vault
from perseus_vault_core.primitives.dialect import dialect
from perseus_vault_core.primitives.labels import HEAD_CHARS
from perseus_vault_core.recall.turns import (
    BODY_KEYS,
    Turn,
    body_fields,
    body_sql,
    is_turn,
    read_body_sql,
    shape,
)

pytestmark = pytest.mark.both_backends


def test_each_shape_and_what_it_says_of_the_turn() -> None:
    body = {"session": "s1", "turn": 3, "speaker": "Caroline"}
    assert shape("turn", "s1#000003", "I went", body) == Turn("s1", 3, "Caroline")
    assert shape("chat_message", "k", "hi", {"message": {}, "session_id": "abc", "role": "human"}) == Turn(
        "abc", None, "human"
    )
    assert shape("note", "k", "hi", {"speaker": "Ann", "thread_id": 7}) == Turn("7", None, "Ann")
    # a label in the text: a note looks the same ("Main DB: PostgreSQL 16.2"), so a place in a dialogue only
    assert shape("note", "k", "Dr. Ada Lovelace: the engine runs", None) == Turn(
        None, None, "Dr. Ada Lovelace", labelled=True
    )
    lined = Turn(None, None, "Caroline", labelled=True)
    assert shape("note", "k", "Caroline\nI went to the support group", {}) == lined
    assert shape("note", "k", "Caroline\r\nI went", "{}") == lined
    assert not is_turn("note", "Caroline\nI went", None) and not is_turn("note", "Pricing\nPro is $15", None)
    assert not is_turn("note", "Caroline: I went", None) and not is_turn(
        "fact", "Main DB: PostgreSQL 16.2", None
    )
    assert is_turn("turn", "Caroline: I went", None)  # declared a turn by its writer
    # a role names a speaker beside the message it speaks; alone (a profile) it names nobody
    assert shape("note", "k", "hi", {"role": "admin", "thread_id": "ops-42"}) is None
    assert shape("note", "k", "hi", {"role": "user", "text": "hi", "thread_id": "t"}) == Turn(
        "t", None, "user"
    )
    assert shape("turn", "by-hand", "written by hand", None) == Turn(None, None, None)


def test_the_first_shape_that_fits_wins() -> None:
    # a numbered turn keeps its key's session over its body's; a body's session over a label
    assert shape("turn", "s1#2", "Ann: hi", {"session": "other", "speaker": "Ann"}) == Turn("s1", 2, "Ann")
    assert shape("note", "k", "Ann: hi", {"session": "s", "role": "user", "text": "hi"}) == Turn(
        "s", None, "user"
    )
    assert shape("note", "k", "Ann: hi", {"session": "s", "role": "user"}) == Turn(
        None, None, "Ann", labelled=True
    )
    # a type other than turn is never numbered by its key
    assert shape("note", "s1#2", "hello", None) is None
    assert shape("turn", "s1#x", "hello", {"session": "s", "speaker": "Ann"}) == Turn("s", None, "Ann")


def test_what_is_not_a_turn() -> None:
    for content in (
        "The team chose Postgres.",
        "caroline: lower case is no speaker",
        "R2D2: a label holds no digit",
        "One Two Three Four: four words are a sentence",
        "Caroline:no space after the colon",
        "Caroline: ",
        "Caroline\n",
        "Caroline \nthe label's line holds nothing else",
        "Caroline\n  an indented line is no text line",
        "Meeting notes, Tuesday\nWe agreed",
        "",
    ):
        assert shape("note", "k", content, None) is None, content
        assert not is_turn("note", content, None), content
    for body in (
        {"role": "user"},  # a role without a session
        {"session": "s"},  # a session without a speaker
        {"speaker": "  ", "session": "s"},
        {"speaker": "Ann", "session": ""},
        {"speaker": "Ann", "session": 1.5},
        {"speaker": "Ann", "session": True},
        {"speaker": "Ann", "session": ["s"]},
        {"speaker": {"name": "Ann"}, "session": "s"},
        {"speaker": 7, "session": "s"},
        {"name": "Ann", "channel": "s"},  # other keys name nothing
    ):
        assert shape("note", "k", "hello", body) is None, body


def test_a_field_passed_over_lets_the_next_one_speak() -> None:
    assert shape(
        "note", "k", "x", {"speaker": None, "role": "user", "session": "", "session_id": "s", "text": "x"}
    ) == Turn("s", None, "user")


def test_a_body_is_a_json_object_or_refused() -> None:
    assert body_fields('{"role": "ai", "session_id": "s", "message": {"a": 1}, "other": 2}') == {
        "role": "ai",
        "session_id": "s",
        "message": {"a": 1},
    }
    assert body_fields('{"session_id": "s", "doc": "' + "x" * 100_000 + '"}') == {}  # no speaker: not parsed
    with pytest.raises(TypeError, match="^body: must be a JSON object, not list"):
        body_fields('["speaker"]')
    with pytest.raises(ValueError, match="^body: not JSON"):
        body_fields('{"role": not json')
    with pytest.raises(TypeError, match="^body: must be a JSON object, not int"):
        shape("note", "k", "x", 3)  # type: ignore[arg-type]


LABEL = st.from_regex(r"[A-Z][a-z]{0,8}( [A-Z][a-z]{0,8}){0,2}", fullmatch=True)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["turn", "note", "chat_message"]),
    key=st.sampled_from(["s#1", "k", "a#b#12", "#3"]),
    label=LABEL,
    separator=st.sampled_from([": ", "\n", " ", ":\n", "\r\n"]),
    text=TEXT,
    body=st.dictionaries(st.sampled_from([*BODY_KEYS, "other"]), st.one_of(st.none(), st.integers(), TEXT)),
)
def test_a_turn_is_one_whatever_its_key_and_whatever_follows_its_first_characters(
    kind: str, key: str, label: str, separator: str, text: str, body: dict[str, Any]
) -> None:
    content = f"{label}{separator}{text}"
    found = shape(kind, key, content, body)
    assert is_turn(kind, content, body) is (kind == "turn" or (found is not None and not found.labelled))
    assert shape(kind, key, content[:HEAD_CHARS], body) == found
    assert shape(kind, key, content, json.dumps(body)) == found  # the stored text says what the body says
    if separator in (": ", "\n", "\r\n") and text[:1].strip() and found is not None and found.session is None:
        assert found.speaker == label


# --- the body's fields read in SQL -------------------------------------------------------------------

CHARS = st.characters(
    codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"
)  # what a vault stores
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(CHARS, max_size=20))
VALUE = st.recursive(
    SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(CHARS, max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
BODY = st.dictionaries(st.sampled_from([*BODY_KEYS, "message", "turn"]), VALUE, max_size=5)


def _sql_fields(vault: Vault, body: dict[str, Any]) -> dict[str, Any]:
    """The body's fields as recall reads them: stored, then read back by :func:`body_sql`."""
    memory = vault.remember("chat", "m", "hello", body=body, keep_duplicate=True)
    sql = "SELECT {} FROM entity_versions v WHERE v.entity_id = ? AND v.recorded_to_ms IS NULL"
    return vault.engine.read(
        lambda c: read_body_sql(c.execute(sql.format(body_sql(dialect(c))), (memory.id,)).fetchone()[0])
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODY)
def test_sql_reads_the_fields_python_reads_with_their_types(vault: Vault, body: dict[str, Any]) -> None:
    read = _sql_fields(vault, body)
    wanted = {k: v for k, v in body_fields(body).items() if v is not None}  # null is absent in SQL
    if not {"speaker", "role"} & set(body):  # a body naming no speaker is not read (it makes no turn)
        wanted = {}
    assert json.dumps(read, sort_keys=True) == json.dumps(wanted, sort_keys=True)  # true is not 1
    assert shape("chat", "m", "hello", read) == shape("chat", "m", "hello", body)


def test_an_empty_body_is_not_parsed_and_a_fraction_is_no_session(vault: Vault) -> None:
    assert _sql_fields(vault, {}) == {}
    read = _sql_fields(vault, {"speaker": "Ann", "session": 2.5, "session_id": 4})
    assert read == {"speaker": "Ann", "session": 2.5, "session_id": 4}
    assert shape("chat", "m", "hello", read) == Turn("4", None, "Ann")
