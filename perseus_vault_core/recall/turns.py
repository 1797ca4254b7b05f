"""Which memories are a conversation's turns, known by their shape (docs/conversations.md, "Which memories
are turns").

A chat reaches the vault in several shapes: ``remember_conversation`` numbers its turns, an agent pastes a
transcript line by line through ``remember_many``, a framework stores its own message objects. A turn is an
event (two turns may say the same words, and both were said), so a write never judges it as a repeat or an
update of anything (features/remembering.py, features/backfill.py), recall never curates it
(recall/curated.py), and recall reads it beside the turns around it (recall/context.py). All three ask this
module, so a memory is a turn, or not, the same at write time and at read time. :func:`shape` is the one
definition; a memory is a turn when, in this order:

1. **numbered**: its type is ``turn`` and its key ``<session>#<n>`` (what ``remember_conversation`` writes):
   its session and number are known;
2. **in a session**: its body names a speaker, in ``speaker``, or in ``role`` beside the message itself
   (``message`` or ``text``: :data:`MESSAGE_KEYS`; a role alone is a profile's as often as a message's), the first that holds a string of more than spaces, and a session, in ``session``,
   ``session_id``, ``conversation_id`` or ``thread_id`` (:data:`SESSION_KEYS`: the first that holds such a
   string, or an integer, read as its digits; a number with a fraction, a boolean, a list or an object names
   none). LangChain's chat messages (``{message, session_id, role}``), thread messages (``{role, text,
   thread_id}``) and a hand-written ``{speaker, session}`` all count; its session is
   known, its number is not;
3. **labelled**: its content opens ``Speaker: text``, a label (primitives/labels.py: one to three capitalised
   words without digits, ``Caroline``, ``Dr. Ada Lovelace``), a colon, a space, then text;
4. **labelled on a line**: its content's first line is such a label and nothing else, and the next line
   opens with text (``Caroline``, a line break, ``I went to the support group``).
   A note looks the same as often (``Main DB: PostgreSQL 16.2``, ``Pricing`` over a paragraph), so shapes 3
   and 4 place a memory in a dialogue for recall's context only (:attr:`Turn.labelled`): a write judges it and
   recall curates it as a note (:func:`is_turn` says no);
5. any other memory of type ``turn``: a turn its writer declared, with no place in a dialogue known.

A turn's session is a name within its scope and category: a numbered turn's session and a body's session of
the same name there are one session. Anything else (a note, a fact, a document) is not a turn, so a body
naming a role alone (a profile's ``{"role": "admin", "thread_id": ...}``), or a session alone, is not one. A
labelled memory is lifted by recall only beside a labelled memory of another label. Shapes 3 and 4 read only the first ``HEAD_CHARS`` (primitives/labels.py)
characters of the content, and shape 2 only the body's :data:`BODY_KEYS`, which recall reads in SQL
(:func:`body_sql`) without fetching whole bodies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..primitives.dialect import Dialect
from ..primitives.labels import on_a_line, said

TURN_TYPE = "turn"  # what remember_conversation writes (features/conversations.py)
SPEAKER_KEYS = ("speaker", "role")
SESSION_KEYS = ("session", "session_id", "conversation_id", "thread_id")
MESSAGE_KEYS = (
    "message",
    "text",
)  # a role names a speaker beside one of these (a body's content is the memory's)
BODY_KEYS = (*SPEAKER_KEYS, *SESSION_KEYS, *MESSAGE_KEYS)
# A body holds a speaker only if its text holds one of these (the vault writes bodies with json.dumps, so a key is
# spelled as it is): a body without them is not parsed, in Python or in SQL.
_SPEAKER_MARKS = tuple(f'"{k}"' for k in SPEAKER_KEYS)
_TURN_KEY = re.compile(r"^(.+)#(\d+)$")


@dataclass(frozen=True)
class Turn:
    """What a memory's shape says of it as a turn: its session (``None`` for a labelled turn), its number in
    the session (a numbered turn's only) and its speaker (a label or a body's; ``None`` when unknown)."""

    session: str | None
    number: int | None
    speaker: str | None
    labelled: bool = False  # known only by a label in its text: a note looks the same (context only)


def shape(kind: str, key: str, content: str, body: Mapping[str, Any] | str | None) -> Turn | None:
    """The memory as a turn, or ``None`` when it is not one (the rules in the module docstring, in their
    order). ``kind``: its type; ``body``: its body, as a mapping (only :data:`BODY_KEYS` are read, so the
    fields recall read in SQL do) or as the JSON text the vault stores; ``content`` may be cut to its first
    ``HEAD_CHARS`` characters (primitives/labels.py)."""
    fields = body_fields(body)
    if not fields and kind != TURN_TYPE:  # most memories: only a label in the text can make one a turn
        return _labelled(content)
    speaker = _speaker(fields.get("speaker"))
    if speaker is None and any(fields.get(k) is not None for k in MESSAGE_KEYS):
        speaker = _speaker(fields.get("role"))  # a role beside a message: the message's speaker
    if kind == TURN_TYPE:
        numbered = _TURN_KEY.match(key)
        if numbered is not None:
            return Turn(numbered.group(1), int(numbered.group(2)), speaker)
    session = _first(fields, SESSION_KEYS, _session)
    if speaker is not None and session is not None:
        return Turn(session, None, speaker)
    labelled = _labelled(content)
    if kind == TURN_TYPE:  # declared a turn by its writer, whatever its text looks like
        return Turn(None, None, labelled.speaker) if labelled is not None else Turn(None, None, None)
    return labelled


def _labelled(content: str) -> Turn | None:
    label = said(content)
    if label is None:
        lined = on_a_line(content)
        label = lined[0] if lined is not None else None
    return Turn(None, None, label, labelled=True) if label is not None else None


def is_turn(kind: str, content: str, body: Mapping[str, Any] | str | None) -> bool:
    """Whether a memory is a conversation's turn (:func:`shape`, but for a label in its text, which a note
    shares; its key only places a turn, it never makes one: a memory of type ``turn`` is one whatever its key). Turns are events: never judged as repeats or updates at write time, never collapsed or
    ordered by time in recall."""
    turn = shape(kind, "", content, body)
    return turn is not None and not turn.labelled


def body_fields(body: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """The fields of a body that :func:`shape` reads (:data:`BODY_KEYS`), from the body or the JSON text the
    vault stores it as; ``{}`` for none. A text that is not a JSON object is refused: bodies are objects."""
    if not body or body == "{}":
        return {}
    if isinstance(body, str):
        if not any(mark in body for mark in _SPEAKER_MARKS):  # no speaker: nothing to read (a large document)
            return {}
        try:
            body = json.loads(body)
        except ValueError as error:
            raise ValueError(f"body: not JSON ({error})") from None
    if not isinstance(body, Mapping):
        raise TypeError(f"body: must be a JSON object, not {type(body).__name__}")
    return {k: body[k] for k in BODY_KEYS if k in body}


def body_sql(d: Dialect, column: str = "v.body") -> str:
    """An SQL expression of a body column's :data:`BODY_KEYS`, as a JSON array's text (:func:`read_body_sql`
    reads it back); null for a body that names no speaker (an empty one, most documents), which no statement
    parses."""
    find = "instr" if d.name == "sqlite" else "strpos"
    marks = " OR ".join(f"{find}({column}, '{mark}') > 0" for mark in _SPEAKER_MARKS)
    return (
        f"CASE WHEN {column} = '{{}}' OR NOT ({marks}) THEN NULL ELSE {d.fields_json(column, BODY_KEYS)} END"
    )


def read_body_sql(value: str | None) -> dict[str, Any]:
    """The fields :func:`body_sql` read from one row, by name (a field the body lacks is absent)."""
    if value is None:
        return {}
    values = json.loads(value)
    return {k: v for k, v in zip(BODY_KEYS, values, strict=True) if v is not None}


def _first(fields: Mapping[str, Any], keys: tuple[str, ...], read: Callable[[Any], str | None]) -> str | None:
    """The first value of ``keys`` in ``fields`` that ``read`` accepts, as it reads it; ``None`` when none
    does (a field holding null or a blank string is passed over, as an absent one is)."""
    for k in keys:
        value = read(fields.get(k))
        if value is not None:
            return value
    return None


def _speaker(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _session(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _speaker(value)
