"""What callers pass in: one strict pydantic model per verb, with its limits.

These models are the single description of every verb's arguments: their names (the wire names
used by every interface), types, bounds, defaults and meanings. The Python API validates each
call against them, the MCP server generates its tools' input schemas from them (see
:mod:`verbs`), and the reference pages are generated from those schemas.

Every model is strict: an unknown or misspelled field is refused, ``"5"`` is not coerced to ``5``,
NaN and infinities are refused, and text must be valid Unicode. :func:`validate` turns a pydantic
failure into :class:`InvalidInput` naming the offending field, in one line.

Times are unix milliseconds; wherever a time is taken, an ISO 8601 string
(``"2026-01-31T09:30:00Z"``, ``"2026-01-31"``; UTC when no offset is given) or a timezone-aware
``datetime`` is accepted too and converted to unix milliseconds.

A field marked :func:`advanced` is a knob an agent rarely needs: the MCP tools group such fields
under one ``options`` argument, so that they do not crowd every tool's schema.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from .errors import InvalidInput
from .fusion import Fusion

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
MAX_CONTEXT_CHARS = 32_768
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


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_TIME_HELP = "unix milliseconds, or an ISO 8601 time such as 2026-01-31T09:30:00Z"


def to_unix_ms(value: Any) -> Any:
    """An ISO 8601 string or a datetime as unix milliseconds (UTC when no offset is given); any
    other value is returned as it is, for the integer check that follows."""
    if isinstance(value, str):
        text = value.strip()
        try:
            if len(text) == 10:  # a calendar date: its midnight, UTC
                value = dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), dt.timezone.utc)
            else:
                value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"must be {_TIME_HELP} (got {value[:40]!r})") from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return (value - _EPOCH) // dt.timedelta(milliseconds=1)
    return value


# A relevance threshold: a score (absolute, see docs/recall.md), or "auto" for the mode's own.
MinScore = Annotated[float, Field(ge=-1.0, le=2.0)] | Literal["auto"] | None

# A point in time: unix ms, or ISO 8601 text (converted to unix ms on the way in).
UnixMs = Annotated[int, Field(ge=0, le=MAX_INT), BeforeValidator(to_unix_ms),
                   WithJsonSchema({"type": ["integer", "string"]})]
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
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("contains an unpaired surrogate; text must be valid Unicode") from exc
    return value


def _optional_text(value: str | None) -> str | None:
    return None if value is None else check_text(value)


def _words(value: str) -> str:
    if not value.strip():
        raise ValueError("must contain a word")
    return check_text(value)


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

    type: str | None = Field(default=None, max_length=MAX_TYPE_CHARS, description="Only this type, e.g. decision")
    category: str | None = Field(default=None, max_length=MAX_CATEGORY_CHARS, description="Only this category")
    topic_path: str | None = Field(default=None, max_length=MAX_TOPIC_PATH_CHARS,
                                   description="Only under this topic path prefix")
    include_archived: bool = advanced(False, description="Also archived, expired and superseded memories")
    min_decay: float | None = advanced(ge=0.0, le=1.0, description="Only memories at least this fresh (0..1)")
    as_of_unix_ms: UnixMs | None = advanced(description="The store as believed then (unix ms or ISO 8601)")
    valid_at_unix_ms: UnixMs | None = advanced(description="What was true in the world at this time")
    query_time_unix_ms: UnixMs | None = advanced(description="The 'now' for decay and expiry (replay)")

    @field_validator("type", "category", "topic_path")
    @classmethod
    def _filter_text(cls, value: str | None) -> str | None:
        return _optional_text(value)

    @property
    def time_travel(self) -> bool:
        return self.as_of_unix_ms is not None or self.valid_at_unix_ms is not None


# --- writing -----------------------------------------------------------------------------------


class RememberInput(BaseModel):
    """One memory to create or update, addressed by (category, key) within its scope."""

    model_config = _STRICT_IN

    category: str = Field(min_length=1, max_length=MAX_CATEGORY_CHARS,
                          description="e.g. decision, preference, architecture")
    key: str = Field(min_length=1, max_length=MAX_KEY_CHARS,
                     description="Its stable name in the category, e.g. 'db-engine'; the same key updates it")
    content: str = Field(description="What to remember, in a sentence or a few")
    summary: str | None = Field(default=None, description="A one-line summary (searched with the content)")
    type: str = Field(default="note", min_length=1, max_length=MAX_TYPE_CHARS,
                      description="e.g. note, fact, decision, insight, reference")
    topic_path: str | None = Field(default=None, max_length=MAX_TOPIC_PATH_CHARS,
                                   description="Slash path, e.g. architecture/storage (filters match by prefix)")
    body: dict[str, Any] | None = Field(default=None, validate_default=True,
                                        description="Other structured fields to keep with it (a JSON object)")
    agent_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS, description="The agent it belongs to")
    workspace_hash: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS,
                                       description="The workspace it belongs to")
    source: str | None = advanced(max_length=1024, description="Where it came from (a URL, file, person or tool)")
    verified: bool = advanced(False, description="A person or trusted source confirmed it (ranks it higher)")
    certainty: float | None = advanced(ge=0.0, le=1.0, description="How sure the writer is, 0 to 1")
    provenance_class: str | None = advanced(max_length=64, description="e.g. human, tool, ai_draft, imported")
    recall_when: list[str] = Field(default_factory=list, max_length=MAX_RECALL_WHEN, description=(
        "Trigger phrases: when a later context matches one, it comes back unasked"))
    valid_from_ms: UnixMs | None = advanced(description="When it became true in the world")
    valid_to_ms: UnixMs | None = advanced(description="When it stopped being true in the world")
    expires_at_ms: UnixMs | None = advanced(description="When the vault should stop recalling it")

    @field_validator("category", "key", "type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return check_text(value)

    @field_validator("content", "summary", "topic_path", "agent_id", "workspace_hash", "source", "provenance_class")
    @classmethod
    def _valid_text(cls, value: str | None) -> str | None:
        return _optional_text(value)

    @field_validator("topic_path")
    @classmethod
    def _topic(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().strip("/")
        return value or None

    @field_validator("recall_when")
    @classmethod
    def _triggers(cls, value: list[str]) -> list[str]:
        out = []
        for phrase in value:
            check_text(phrase)
            if len(phrase) > MAX_TRIGGER_CHARS:
                raise ValueError(f"a trigger phrase is longer than {MAX_TRIGGER_CHARS} characters")
            if phrase.strip():
                out.append(phrase.strip())
        return out

    @field_validator("body")
    @classmethod
    def _body(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        content = info.data.get("content") or ""
        summary = info.data.get("summary") or ""
        if value:
            if _depth(value) > MAX_BODY_DEPTH:
                raise ValueError(f"is nested deeper than {MAX_BODY_DEPTH} levels")
            for name in ("content", "summary"):
                if name in value and value[name] != info.data.get(name):
                    raise ValueError(f"body.{name} conflicts with the {name} argument; pass it once")
            try:
                json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
            except (TypeError, ValueError, UnicodeEncodeError) as exc:
                raise ValueError(f"must be a JSON object of finite numbers and valid text ({exc})") from exc
        return value

    @model_validator(mode="after")
    def _size(self) -> RememberInput:
        """Content, summary and body together within MAX_BODY_BYTES; without a body, the text is to blame."""
        size = len(self.content.encode("utf-8", "surrogatepass")) + len((self.summary or "").encode("utf-8", "surrogatepass"))
        if self.body:
            size += len(json.dumps(self.body, allow_nan=False, ensure_ascii=False).encode("utf-8"))
        if size > MAX_BODY_BYTES:  # InvalidInput names its field, under the item's path (see invalid())
            if not self.body:
                raise InvalidInput("content", f"is {size} bytes with the summary; the limit is {MAX_BODY_BYTES}")
            raise InvalidInput("body", f"is {size} bytes with content and summary; the limit is {MAX_BODY_BYTES}")
        return self

    @field_validator("valid_to_ms")
    @classmethod
    def _valid_window(cls, value: int | None, info: ValidationInfo) -> int | None:
        start = info.data.get("valid_from_ms")
        if value is not None and start is not None and value <= start:
            raise ValueError("must be later than valid_from_ms")
        return value

    def extra_body(self) -> dict[str, Any]:
        """Body fields other than content and summary (those have their own columns)."""
        return {k: v for k, v in (self.body or {}).items() if k not in ("content", "summary")}


class RememberManyParams(BaseModel):
    """``remember_many``: a batch written in one transaction (all or none)."""

    model_config = _STRICT_IN

    items: list[RememberInput] = Field(max_length=MAX_BATCH, description=(
        "The memories to store, each with remember's fields (category, key, content, ...)"))


class EntityParams(ScopeParams):
    """One memory by id (``get_entity``, ``forget``, ``purge``); scope fields, when given, must match it."""

    id: Id = Field(description="The memory's id")


class SupersedeParams(ScopeParams):
    old_id: Id = Field(description="The memory being replaced")
    new_id: Id = Field(description="The memory that replaces it")


class LinkParams(ScopeParams):
    from_id: Id = Field(description="The memory the link starts from")
    to_id: Id = Field(description="The memory the link points to")
    relation: str = Field(default="related", min_length=1, max_length=MAX_RELATION_CHARS,
                          description="The link's type, e.g. related, depends_on, caused_by")
    # Bounded: a stored weight feeds sums (centrality, community edges) that must stay finite for every reader.
    weight: float = Field(default=1.0, ge=-MAX_WEIGHT, le=MAX_WEIGHT,
                          description="The link's strength (communities and traverse use it)")
    source: str | None = Field(default=None, max_length=1024, description="Where the link came from")

    @field_validator("relation")
    @classmethod
    def _relation(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return check_text(value)

    @field_validator("source")
    @classmethod
    def _source(cls, value: str | None) -> str | None:
        return _optional_text(value)


class UnlinkParams(ScopeParams):
    from_id: Id = Field(description="The memory the link starts from")
    to_id: Id = Field(description="The memory the link points to")
    relation: str | None = Field(default=None, max_length=MAX_RELATION_CHARS,
                                 description="Close only links of this type (omit for every link between the two)")

    @field_validator("relation")
    @classmethod
    def _relation(cls, value: str | None) -> str | None:
        return _optional_text(value)


class EmbedParams(BaseModel):
    model_config = _STRICT_IN

    reembed: bool = Field(default=False, description=(
        "Re-embed every memory (after a model change), not only those without a vector"))


class NoParams(BaseModel):
    """A verb without arguments (``stats``)."""

    model_config = _STRICT_IN


# --- reading -----------------------------------------------------------------------------------


class Expansion(BaseModel):
    """Query expansion by indexed stem variants."""

    model_config = _STRICT_IN

    enabled: bool = True
    max_variants: int = Field(default=8, ge=0, le=64)
    min_stem_chars: int = Field(default=4, ge=2, le=32)


class RecallParams(Filters):
    """Every parameter of ``recall``, with its default (docs/recall.md)."""

    query: str = Field(max_length=MAX_QUERY_CHARS, description=(
        "What to find (words are OR'd); '' lists everything in scope"))
    mode: Mode | None = Field(default=None, description=(
        "fts5 (keyword), dense (meaning) or hybrid (both; the default with vectors)"))
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, description="Most results to return")
    offset: int = Field(default=0, ge=0, le=MAX_INT, description="Results to skip (clamped at 10,000)")
    min_score: MinScore = Field(default=None, description=(
        "Leave out memories scoring below this ('auto': the mode's threshold)"))
    preview_cap: int | None = Field(default=None, ge=1, le=MAX_INT, description=(
        "Cut each memory to about N characters"))
    startup: bool = advanced(False, description="Re-rank by actionability (concrete beats vague); adds actionability")
    profile: Literal["validity"] | None = advanced(description=(
        "validity: re-rank by freshness, provenance and expiry; adds validity"))
    validity_annotate: bool = advanced(False, description="Add the validity block without re-ranking")
    expansion: bool | Expansion | None = advanced(description="Add indexed stem variants of query words")
    trust_weight: float = advanced(0.15, ge=0.0, le=10.0, description="Boost for verified or certain provenance")
    content_weight: float = advanced(0.0, ge=0.0, le=10.0, description="Boost for content holding the query words")
    diversity_halving: float = advanced(1.0, gt=0.0, le=1.0, description="Per-keyword quota factor (1 = off)")
    recency_half_life_secs: float | None = advanced(gt=0.0, description="Multiply scores by 0.5^(age / this)")
    reinforce: bool = advanced(True, description="Count this retrieval (retrieval_count, last_accessed_ms)")
    fusion: Fusion | None = advanced(description="Hybrid fusion weights for this call")

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str) -> str:
        return check_text(value)

    @field_validator("offset")
    @classmethod
    def _clamp_offset(cls, value: int) -> int:
        return min(value, MAX_OFFSET)

    def expansion_config(self) -> Expansion | None:
        if self.expansion is None or self.expansion is False:
            return None
        if self.expansion is True:
            return Expansion()
        return self.expansion if self.expansion.enabled else None


class ScanParams(Filters):
    """``scan``: a keyset page of every visible memory by ascending id."""

    cursor: str | None = Field(default=None, max_length=256, description=(
        "next_cursor of the previous page (omit for the first page)"))
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Most memories per page")


class FactParams(ScopeParams):
    """A fact addressed by (category, key) within its scope."""

    category: str = Field(min_length=1, max_length=MAX_CATEGORY_CHARS, description="The fact's category")
    key: str = Field(min_length=1, max_length=MAX_KEY_CHARS, description="The fact's key within its category")

    @field_validator("category", "key")
    @classmethod
    def _address(cls, value: str) -> str:
        return check_text(value)


class HistoryParams(FactParams):
    limit: int = Field(default=20, ge=1, le=MAX_LIMIT, description="Most versions to return")
    offset: int = Field(default=0, ge=0, le=MAX_INT, description="Versions to skip (newest first)")


class AsOfParams(FactParams):
    as_of_unix_ms: UnixMs = Field(description="The instant of the vault's belief (" + _TIME_HELP + ")")


class ValidAtParams(FactParams):
    valid_at_unix_ms: UnixMs = Field(description="The instant in the world (" + _TIME_HELP + ")")


class BitemporalParams(FactParams):
    as_of_unix_ms: UnixMs = Field(description="The instant of the vault's belief (" + _TIME_HELP + ")")
    valid_at_unix_ms: UnixMs = Field(description="The instant in the world (" + _TIME_HELP + ")")


class TraverseParams(Filters):
    """``traverse``: a breadth-first walk of the link graph; scope and time rules apply on every hop."""

    start: Id = Field(description="The memory to walk from")
    depth: int = Field(default=2, ge=0, le=10, description="How many hops to walk")
    relations: list[Annotated[str, Field(max_length=MAX_RELATION_CHARS)]] | None = Field(
        default=None, max_length=100, description="Follow only links of these types (omit for all)")
    direction: Direction = Field(default="both", description="Follow links out of, into, or both ways")


class HygieneParams(ScopeParams):
    """``hygiene``: which memories to examine and how many flagged ones to return."""

    type: str | None = Field(default=None, max_length=MAX_TYPE_CHARS, description="Only memories of this type")
    category: str | None = Field(default=None, max_length=MAX_CATEGORY_CHARS, description="Only this category")
    topic_path: str | None = Field(default=None, max_length=MAX_TOPIC_PATH_CHARS,
                                   description="Only under this topic path prefix")
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Most flagged memories to return")
    min_age_days: int = Field(default=7, ge=0, le=1_000_000,
                              description="Flag 'never retrieved' only for memories at least this old")

    @field_validator("type", "category", "topic_path")
    @classmethod
    def _filter_text(cls, value: str | None) -> str | None:
        return _optional_text(value)


class CommunitiesParams(Filters):
    """``communities``: which graph (the filters), how to cluster it, and how much to return."""

    method: CommunityMethod = Field(default="label_propagation", description=(
        "label_propagation (fast, incremental) or modularity (Louvain)"))
    min_size: int = Field(default=2, ge=1, le=MAX_INT, description="Smallest community to report")
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Most communities to return")
    central: int = Field(default=5, ge=0, le=100, description="Most central members listed per community")

    @field_validator("min_decay")
    @classmethod
    def _no_decay(cls, value: float | None) -> float | None:
        if value is not None:
            raise ValueError("does not apply to communities (decay changes with every read)")
        return value


class CommunitySummaryParams(ScopeParams):
    community_id: str = Field(min_length=1, max_length=64, description="A community's id, from communities")
    method: CommunityMethod = Field(default="label_propagation", description="The clustering the id comes from")
    max_chars: int = Field(default=1_200, ge=200, le=20_000, description="Size budget of the summary")
    refresh: bool = Field(default=False, description="Rewrite the summary even if a current one exists")


class GlobalRecallParams(ScopeParams):
    """``global_recall``: the question, how many communities to open and how deep, and the budget."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="A broad question spanning many memories")
    mode: Mode | None = Field(default=None, description="How summaries and members are matched (as recall's mode)")
    communities: int = Field(default=3, ge=1, le=50, description="How many communities to open")
    per_community: int = Field(default=5, ge=1, le=100, description="Most evidence memories per community")
    max_chars: int = Field(default=4_000, ge=200, le=100_000, description="Size budget of the answer context")
    min_score: MinScore = advanced(description="Evidence scoring below this is left out ('auto': the mode's threshold)")
    method: CommunityMethod = advanced("label_propagation", description="Clustering method")
    min_size: int = advanced(2, ge=1, le=MAX_INT, description="Smallest community considered")
    reinforce: bool = advanced(True, description="Count the evidence as retrieved")

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str) -> str:
        return _words(value)


class _ContextInput(ScopeParams):
    """Inputs that match against a context (the agent's coming turn) rather than a query."""

    context: str = Field(max_length=MAX_CONTEXT_CHARS, description=(
        "The coming turn: the user's message and what you are about to do"))

    @field_validator("context")
    @classmethod
    def _context_text(cls, value: str) -> str:
        return check_text(value)


class RecallWhenParams(_ContextInput):
    """``recall_when``: the context to match triggers against, the filters, and how to match."""

    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, description="Most memories to return")
    type: str | None = Field(default=None, max_length=MAX_TYPE_CHARS, description="Only memories of this type")
    category: str | None = Field(default=None, max_length=MAX_CATEGORY_CHARS, description="Only this category")
    topic_path: str | None = Field(default=None, max_length=MAX_TOPIC_PATH_CHARS,
                                   description="Only under this topic path prefix")
    semantic: bool | None = Field(default=None, description=(
        "Also match trigger phrases by meaning (default: when the vault has vectors)"))
    min_similarity: float = advanced(0.6, ge=-1.0, le=1.0, description="Cosine a meaning match needs")
    query_time_unix_ms: UnixMs | None = advanced(description="The 'now' expiry is judged at (replay)")
    reinforce: bool = advanced(False, description="Count the matches as retrieved")


class PrepareParams(_ContextInput):
    """``prepare``: the context of the coming turn and the size of the block to inject."""

    max_chars: int = Field(default=1_500, ge=100, le=100_000, description="Character budget of the block")
    triggered: int = Field(default=5, ge=0, le=100, description="Most triggered memories in the block")
    related: int = Field(default=5, ge=0, le=100, description="Most other relevant memories in the block")
    mode: Mode | None = Field(default=None, description="How related memories are found (as recall's mode)")
    min_score: MinScore = advanced("auto", description=(
        "Leave out related memories scoring below this ('auto': the mode's)"))
    semantic: bool | None = advanced(description="Also match trigger phrases by meaning (default: when possible)")
    reinforce: bool = advanced(False, description="Count the memories shown as retrieved")


# --- memory files ------------------------------------------------------------------------------


def _file_name(value: str) -> str:
    from .memory import check_name  # the memory layer owns what a file name may be

    why = check_name(check_text(value))
    if why is not None:
        raise ValueError(why)
    return value


def _section_title(value: str) -> str:
    if not value.strip() or "\n" in value or "\r" in value:
        raise ValueError("must be a one-line heading text")
    return check_text(value)


def _entry_date(value: str | None) -> str | None:
    from .memory import valid_date

    if value is not None and not valid_date(value):
        raise ValueError("must be a date as YYYY-MM-DD (or YYYY-MM)")
    return value


def _entry_text(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be empty")
    return _optional_text(value)


FileName = Annotated[str, AfterValidator(_file_name)]
SectionTitle = Annotated[str, Field(max_length=MAX_SECTION_CHARS), AfterValidator(_section_title)]
EntryDate = Annotated[str | None, Field(max_length=32), AfterValidator(_entry_date)]
_FILE = "The memory file's name without .md (list_memory_files names them)"
_SECTION = "The section's heading text (without ##)"


class MemoryRecallParams(ScopeParams):
    query: str = Field(max_length=MAX_QUERY_CHARS, description=(
        "The topic, in content words ('testing philosophy')"))
    file: str | None = Field(default=None, max_length=4_096, description=(
        "Only this memory file (exact case, without .md); omit for all files"))
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT, description=(
        "Most entries (the least relevant are dropped)"))

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str) -> str:
        return _words(value)

    @field_validator("file")
    @classmethod
    def _file_text(cls, value: str | None) -> str | None:
        return _optional_text(value)


class ListMemoryFilesParams(ScopeParams):
    """``list_memory_files``: the memory files of a scope."""


class GetMemoryParams(ScopeParams):
    file: FileName = Field(description=_FILE)
    section: str | None = Field(default=None, max_length=MAX_SECTION_CHARS, description=(
        "One section's heading text (without ##); omit for the whole file"))

    @field_validator("section")
    @classmethod
    def _section(cls, value: str | None) -> str | None:
        return _optional_text(value)


class AddMemoryParams(ScopeParams):
    file: FileName = Field(description="The memory file's name without .md; created if missing")
    section: SectionTitle = Field(description=_SECTION)
    text: Annotated[str, AfterValidator(_entry_text)] = Field(max_length=MAX_ENTRY_CHARS, description="The entry's text")
    date: EntryDate = Field(default=None, description="The entry's date, YYYY-MM-DD (default today, UTC)")


class DeleteMemoryParams(ScopeParams):
    file: FileName = Field(description=_FILE)
    section: SectionTitle = Field(description=_SECTION)
    date: str | None = Field(default=None, max_length=32, description="The entry's date, YYYY-MM-DD")
    text: Annotated[str | None, AfterValidator(_entry_text)] = Field(default=None, max_length=MAX_ENTRY_CHARS, description=(
        "The entry's text, or a part of it that only that entry contains (not empty: that would match every entry)"))

    @model_validator(mode="after")
    def _chosen(self) -> DeleteMemoryParams:
        if self.date is None and self.text is None:  # InvalidInput names its field (see invalid())
            raise InvalidInput("date", "give the entry's date, its text, or both")
        return self


# --- conversations -----------------------------------------------------------------------------


def _one_line_name(value: str) -> str:
    """A name shown at the head of a line (a speaker, a role, a message id): not blank, one line."""
    if not value.strip():
        raise ValueError("must not be blank")
    if any(ord(c) < 0x20 or c == "\x7f" for c in value):  # a line break would forge turns in a transcript
        raise ValueError("must not contain control characters (line breaks, tabs, ...)")
    return check_text(value)


def _optional_name(value: str | None) -> str | None:
    return None if value is None else _one_line_name(value)


OptionalName = Annotated[str | None, AfterValidator(_optional_name)]


def _session_name(value: str) -> str:
    _one_line_name(value)
    if "#" in value:  # a turn's key is "<session>#<turn>": the first '#' must end the session's name
        raise ValueError("must not contain '#'")
    if value != value.strip():
        raise ValueError("must not begin or end with a space")
    return value


def _message_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return check_text(value)


SessionName = Annotated[str, Field(min_length=1, max_length=MAX_SESSION_CHARS), AfterValidator(_session_name)]
_SESSION = "The conversation's name, e.g. a chat or thread id (no '#')"


class MessageInput(BaseModel):
    """One message of a conversation, as a chat agent has it."""

    model_config = _STRICT_IN

    speaker: OptionalName = Field(
        default=None, max_length=MAX_SPEAKER_CHARS, description="Who said it, e.g. 'Caroline' (default: the role)")
    text: Annotated[str, AfterValidator(_message_text)] = Field(
        max_length=MAX_MESSAGE_CHARS, description="What was said")
    time: UnixMs | None = Field(default=None, description="When it was said (" + _TIME_HELP + ")")
    role: OptionalName = Field(
        default=None, max_length=MAX_TYPE_CHARS, description="e.g. user, assistant, system")
    id: OptionalName = Field(
        default=None, max_length=MAX_MESSAGE_ID_CHARS, description=(
            "The message's own id: sending it again changes nothing (or updates the turn if its text changed)"))

    @model_validator(mode="after")
    def _someone(self) -> MessageInput:
        if self.speaker is None and self.role is None:  # InvalidInput names its field (see invalid())
            raise InvalidInput("speaker", "give the speaker, the role, or both")
        return self

    @property
    def who(self) -> str:
        return self.speaker if self.speaker is not None else str(self.role)


class RememberConversationParams(ScopeParams):
    """``remember_conversation``: messages appended to a session as turns, in one transaction."""

    session: SessionName = Field(description=_SESSION)
    agent_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS, description="The agent the turns belong to")
    workspace_hash: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS,
                                       description="The workspace the turns belong to")
    messages: list[MessageInput] = Field(max_length=MAX_BATCH, description=(
        "The messages in the order they were said, each {speaker or role, text, time?, id?}"))

    @field_validator("messages")
    @classmethod
    def _distinct_ids(cls, value: list[MessageInput]) -> list[MessageInput]:
        seen: dict[str, int] = {}
        for n, message in enumerate(value):
            if message.id is not None:
                if message.id in seen:  # one message twice in a call is a caller's slip, not an edit
                    raise InvalidInput(f"{n}.id", f"repeats the id of message {seen[message.id]}")
                seen[message.id] = n
        return value


class ConversationParams(ScopeParams):
    """``conversation``: a session's turns in order, a page at a time or around one turn."""

    session: SessionName = Field(description=_SESSION)
    around: Id | None = Field(default=None, description=(
        "A turn's memory id (e.g. a recall hit): return it with the turns before and after it"))
    before: int = Field(default=3, ge=0, le=100, description="With around: how many turns before it")
    after: int = Field(default=3, ge=0, le=100, description="With around: how many turns after it")
    from_turn: int = Field(default=1, ge=1, le=MAX_INT, description=(
        "Without around: the first turn number to return (next_turn of the previous page)"))
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Without around: most turns per page")

    @model_validator(mode="after")
    def _one_way(self) -> ConversationParams:
        # An argument that would be ignored is refused, so that a caller never misreads the answer.
        given = self.model_fields_set
        for name in ("before", "after") if self.around is None else ("from_turn", "limit"):
            if name in given:
                raise InvalidInput(name, "applies only with around" if self.around is None else
                                   "does not apply with around (use before and after)")
        return self


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
    errors = exc.errors(include_url=False)
    loc = _path(errors[0].get("loc", ()))
    alternatives = [e for e in errors if _path(e.get("loc", ())) [: len(loc)] == loc and _is_union(e)]
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
        return InvalidInput(".".join(p for p in (prefix, path, cause.field) if p), cause.message)
    if len(alternatives) > 1 and kind in _TYPE_ERRORS:
        forms = [_MESSAGES.get(str(e.get("type")), "").removeprefix("must be ").format(**(e.get("ctx") or {}))
                 for e in alternatives]
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


def _is_tag(part: Any) -> bool:
    """A part of an error's location that names a form of a union (``bool``, ``Expansion``,
    ``literal['auto']``, ``constrained-float``), not a field."""
    return isinstance(part, str) and (part[:1].isupper() or any(c in part for c in "[]-'") or part in _TYPE_TAGS)


def _path(loc: Any) -> list[str]:
    return [str(p) for p in loc if not _is_tag(p) and p not in ("function-after", "function-before")]


def _is_union(err: Any) -> bool:
    return any(_is_tag(p) for p in err.get("loc", ()))


_TYPE_TAGS = frozenset({"bool", "int", "str", "float", "dict", "list", "none"})
_TYPE_ERRORS = frozenset({"bool_type", "int_type", "float_type", "string_type", "list_type", "dict_type",
                          "model_type", "literal_error", "none_required"})


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
    "list_type": "must be a list",
    "dict_type": "must be a JSON object",
    "model_type": "must be a JSON object",
    "none_required": "must be null",
    "literal_error": "must be {expected}",
}
