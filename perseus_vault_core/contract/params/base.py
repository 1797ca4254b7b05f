"""The shared parts of every verb's params: limits, value types, scope and filters, and validation."""

from __future__ import annotations

import datetime as dt
import difflib
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
)

from ..errors import InvalidInput
from ..text import line_break, problem
from ..where import parse as parse_where

# --- documented size limits (docs/limits.md) -------------------------------------------------
MAX_CATEGORY_CHARS = 128
MAX_KEY_CHARS = 512
MAX_TYPE_CHARS = 64
MAX_TOPIC_PATH_CHARS = 512
MAX_SCOPE_CHARS = 256
MAX_BODY_BYTES = 256 * 1024  # content + summary + other body fields, as UTF-8 JSON
MAX_BODY_DEPTH = 32
MAX_RECALL_WHEN = 32
MAX_TRIGGER_CHARS = 256
MAX_BATCH = 10_000
MAX_QUERY_CHARS = 4_096
MAX_CONTEXT_CHARS = 32_768  # what prepare and recall_when read of a context: its end
MAX_CONTEXT_INPUT_CHARS = (
    1_048_576  # a context they take (a hook passes the raw prompt, pasted files and all)
)
MAX_LIMIT = 1_000
MAX_OFFSET = 10_000
MAX_RELATION_CHARS = 128
MAX_WEIGHT = 1_000_000.0
MAX_SECTION_CHARS = 256
MAX_ENTRY_CHARS = 65_536
MAX_SESSION_CHARS = 200  # "conversation/" + it is a topic path, "<session>#<turn>" a key (both within limits)
MAX_SPEAKER_CHARS = 128
MAX_MESSAGE_CHARS = 60_000  # four bytes a character at worst: a turn stays within MAX_BODY_BYTES
MAX_MESSAGE_ID_CHARS = 256
# The response budget: characters of memory text one answer carries whole; items past it come as
# previews of OVERFLOW_PREVIEW_CHARS, pages end early (docs/limits.md).
RESPONSE_BUDGET_CHARS = 2_000_000
OVERFLOW_PREVIEW_CHARS = 500
# Ids and unix-millisecond times: any JSON number a client can hold exactly (2**53 - 1).
MAX_INT = 2**53 - 1

Mode = Literal["fts5", "dense", "hybrid"]
Direction = Literal["out", "in", "both"]
CommunityMethod = Literal["label_propagation", "modularity"]

# Validators are built on first use (defer_build): a one-shot CLI call then pays only for the
# models it touches, not for all of them at import.
_STRICT_IN = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)
ADVANCED = "advanced"


def advanced(default: Any = None, **kwargs: Any) -> Any:
    """A field for a rarely needed knob (grouped under ``options`` in the MCP tools)."""
    return Field(default, json_schema_extra={ADVANCED: True}, **kwargs)


def is_advanced(field: Any) -> bool:
    extra = field.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get(ADVANCED))


# --- value types -------------------------------------------------------------------------------


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_TIME_FORMS = "unix milliseconds, or an ISO 8601 time such as 2026-01-31T09:30:00Z"  # what an error says
_TIME_HELP = "unix ms or ISO 8601"  # what a description says (a model reads every one, in every session)


def to_unix_ms(value: Any) -> Any:
    """An ISO 8601 string or a datetime as unix milliseconds (UTC when no offset is given); any
    other value is returned as it is, for the integer check that follows."""
    if isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:  # a calendar date: its midnight, UTC
                value = dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), dt.UTC)
            else:
                value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"must be {_TIME_FORMS} (got {value[:40]!r})") from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return (value - _EPOCH) // dt.timedelta(milliseconds=1)
    return value


# A relevance threshold: a score (absolute, see docs/recall.md), or "auto" for the mode's own.
MinScore = Annotated[float, Field(ge=-1.0, le=2.0)] | Literal["auto"] | None

# A point in time: unix ms, or ISO 8601 text (converted to unix ms on the way in).
UnixMs = Annotated[
    int, Field(ge=0, le=MAX_INT), BeforeValidator(to_unix_ms), WithJsonSchema({"type": ["integer", "string"]})
]
Id = Annotated[int, Field(ge=1, le=MAX_INT)]


def _depth(value: Any) -> int:
    """Nesting depth of JSON-like data, without recursion (hostile input may nest very deeply)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
            deepest = max(deepest, level + 1)
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
            deepest = max(deepest, level + 1)
    return deepest


def check_text(value: str) -> str:
    """``value``, if a vault may store it (no NUL, no unpaired surrogate: :mod:`..text`)."""
    why = problem(value)
    if why is not None:
        raise ValueError(why)
    return value


def check_line(value: str) -> str:
    """``value``, if it may also head a line of what an agent reads: text without a line break."""
    found = line_break(check_text(value))
    if found is not None:
        raise ValueError(f"must be one line: it holds {found}")
    return value


def texts_problem(value: Any) -> str | None:
    """Why a JSON-like value cannot be stored: a text in it, a field name or a value at any depth, that
    :func:`check_text` refuses, and where it is. Without recursion (hostile input may nest very deeply)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, at = stack.pop()
        if isinstance(item, str):
            why = problem(item)
            if why is not None:
                return f"the text at {at or 'the top'} {why}"
        elif isinstance(item, dict):
            for name, inner in item.items():
                why = problem(name) if isinstance(name, str) else None
                if why is not None:
                    return f"a field name {'under ' + at + ' ' if at else ''}{why}"
                stack.append((inner, f"{at}.{name}" if at else str(name)))
        elif isinstance(item, list):
            stack.extend((inner, f"{at}.{i}" if at else str(i)) for i, inner in enumerate(item))
    return None


def _optional_text(value: str | None) -> str | None:
    return None if value is None else check_text(value)


def _words(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain a word")
    return check_text(value)


def _where(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is not None:
        parse_where(value)  # InvalidInput naming the part it does not take (under "where.")
    return value


# A filter over stored fields (docs/filters.md), checked here so every interface refuses the same ones.
Where = Annotated[dict[str, Any] | None, AfterValidator(_where)]
WHERE_HELP = 'Field filter, e.g. {"prio": {"$gte": 2}} or {"content": {"$contains": "sqlite"}}'


def where_field() -> Any:
    return Field(default=None, description=WHERE_HELP)


# --- shared parts ------------------------------------------------------------------------------

_AGENT = "Only this agent's memories"
_WORKSPACE = "Only this workspace's memories"


class ScopeParams(BaseModel):
    """The scope a call reads or writes in; an omitted field is no filter (a server bound to a
    scope fills it in and refuses another)."""

    model_config = _STRICT_IN

    agent_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS, description=_AGENT)
    workspace_hash: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS, description=_WORKSPACE)

    @field_validator("agent_id", "workspace_hash")
    @classmethod
    def _scope_text(cls, value: str | None) -> str | None:
        return _optional_text(value)


class Filters(ScopeParams):
    """Which entities a read may see: scope, attributes, status and the point in time."""

    type: str | None = Field(
        default=None, max_length=MAX_TYPE_CHARS, description="Only this type, e.g. decision"
    )
    category: str | None = Field(
        default=None, max_length=MAX_CATEGORY_CHARS, description="Only this category"
    )
    topic_path: str | None = Field(
        default=None, max_length=MAX_TOPIC_PATH_CHARS, description="Only under this topic path prefix"
    )
    where: Where = where_field()
    include_archived: bool = advanced(False, description="Also archived, expired and superseded memories")
    min_decay: float | None = advanced(ge=0.0, le=1.0, description="Only memories at least this fresh (0..1)")
    as_of_unix_ms: UnixMs | None = advanced(description="The store as believed then")
    valid_at_unix_ms: UnixMs | None = advanced(description="What was true in the world then")
    query_time_unix_ms: UnixMs | None = advanced(description="The 'now' for decay and expiry (replay)")

    @field_validator("type", "category", "topic_path")
    @classmethod
    def _filter_text(cls, value: str | None) -> str | None:
        return _optional_text(value)

    @property
    def time_travel(self) -> bool:
        return self.as_of_unix_ms is not None or self.valid_at_unix_ms is not None


# --- validation --------------------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any, *, prefix: str = "") -> M:
    """Validate ``data`` as ``model`` or raise :class:`InvalidInput` naming the first bad field."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid(exc, prefix=prefix, model=model) from None


def invalid(exc: ValidationError, *, prefix: str = "", model: type[BaseModel] | None = None) -> InvalidInput:
    """The first error of a pydantic failure as one :class:`InvalidInput` line naming the field
    (for a misspelled argument, with the closest valid name). For a value that may take several
    forms (``expansion``: true/false or an object), the most specific reason: a constraint the
    value broke in the form it has, else the forms it may take."""
    errors = _misspelled_first(exc.errors(include_url=False), model)
    loc = _path(errors[0].get("loc", ()))
    alternatives = [e for e in errors if _path(e.get("loc", ()))[: len(loc)] == loc and _is_union(e)]
    err = errors[0]
    if len(alternatives) > 1:
        broke = [e for e in alternatives if e.get("type") not in _TYPE_ERRORS]
        if broke:
            err = max(broke, key=lambda e: len(e.get("loc", ())))
            loc = _path(err.get("loc", ()))
    path = ".".join(loc)
    field = f"{prefix}{'.' if prefix and path else ''}{path}" or prefix or "argument"
    message = err.get("msg", "invalid value")
    kind = err.get("type")
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, InvalidInput):  # a model-level rule that names its own field (under its path)
        own = "" if cause.field == (loc[-1] if loc else "") else cause.field  # "where", not "where.where"
        return InvalidInput(".".join(p for p in (prefix, path, own) if p), cause.message)
    if len(alternatives) > 1 and kind in _TYPE_ERRORS:
        forms = [
            _MESSAGES.get(str(e.get("type")), "").removeprefix("must be ").format(**(e.get("ctx") or {}))
            for e in alternatives
        ]
        return InvalidInput(field, "must be " + " or ".join(f for f in forms if f))
    if kind == "extra_forbidden":
        message = "unknown argument" if len(loc) == 1 else "unknown field"
        if model is not None and len(loc) == 1:
            near = difflib.get_close_matches(loc[0], list(model.model_fields), n=1, cutoff=0.6)
            if near:
                message += f" (did you mean {near[0]}?)"
    elif kind in _MESSAGES:
        message = _MESSAGES[kind].format(**(err.get("ctx") or {}))
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return InvalidInput(field, message)


def _misspelled_first(errors: list[Any], model: type[BaseModel] | None) -> list[Any]:
    """``errors`` with a misspelled argument first when it is the missing one's near name: ``qury`` for
    ``query`` is the caller's slip, better named than "query: is required"."""
    if model is None or errors[0].get("type") != "missing":
        return errors
    missing = {str(e["loc"][0]) for e in errors if e.get("type") == "missing" and len(e.get("loc", ())) == 1}
    for e in errors:
        loc = e.get("loc", ())
        if (
            e.get("type") == "extra_forbidden"
            and len(loc) == 1
            and difflib.get_close_matches(str(loc[0]), sorted(missing), n=1, cutoff=0.6)
        ):
            return [e] + [other for other in errors if other is not e]
    return errors


def _is_tag(part: Any) -> bool:
    """A part of an error's location that names a form of a union (``bool``, ``Expansion``,
    ``literal['auto']``, ``constrained-float``), not a field."""
    return isinstance(part, str) and (
        part[:1].isupper() or any(c in part for c in "[]-'") or part in _TYPE_TAGS
    )


def _path(loc: Any) -> list[str]:
    return [str(p) for p in loc if not _is_tag(p) and p not in ("function-after", "function-before")]


def _is_union(err: Any) -> bool:
    return any(_is_tag(p) for p in err.get("loc", ()))


_TYPE_TAGS = frozenset({"bool", "int", "str", "float", "dict", "list", "none"})
_TYPE_ERRORS = frozenset(
    {
        "bool_type",
        "int_type",
        "float_type",
        "string_type",
        "list_type",
        "dict_type",
        "model_type",
        "literal_error",
        "none_required",
    }
)


# pydantic's messages, in the engine's words ("limit: must be at least 1").
_MESSAGES = {
    "missing": "is required",
    "finite_number": "must be a finite number (not NaN or infinity)",
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be greater than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "string_too_long": "must be at most {max_length} characters",
    "string_too_short": "must be at least {min_length} character(s)",
    "too_long": "has {actual_length} items; the limit is {max_length}",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "string_unicode": (
        "contains an unpaired surrogate; text must be valid Unicode"  # as check_text says it
        " (on a command line: bytes that are not UTF-8)"
    ),
    "list_type": "must be a list",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "none_required": "must be null",
    "literal_error": "must be {expected}",
}
