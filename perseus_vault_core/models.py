"""Typed values that cross the vault's API: what callers pass in and what they get back.

These pydantic models are the contract shared by the Python API, the CLI's ``--json``
output and (later) the MCP tool schemas, so the three cannot drift. Field names are
the wire names of SPEC section 2.

Inputs are strict (no silent coercion of ``"5"`` to ``5``), forbid unknown fields and
refuse NaN; :func:`validate` turns a pydantic failure into :class:`InvalidInput`
naming the offending field.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
)

from .errors import InvalidInput
from .fusion import Fusion
from .validity import Validity

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
MAX_LIMIT = 1_000
MAX_OFFSET = 10_000
# Ids and unix-millisecond times: any JSON number a client can hold exactly (2**53 - 1).
MAX_INT = 2**53 - 1

Status = Literal["active", "archived", "expired", "superseded"]
Mode = Literal["fts5", "dense", "hybrid"]
Direction = Literal["out", "in", "both"]

# Validators are built on first use (defer_build): a one-shot CLI call then pays only for the
# models it touches, not for all of them at import.
_STRICT_IN = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)


class _Out(BaseModel):
    model_config = ConfigDict(defer_build=True)


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


def _check_text(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("contains an unpaired surrogate; text must be valid Unicode") from exc
    return value


# --- inputs ------------------------------------------------------------------------------------


class RememberInput(BaseModel):
    """One memory to create or update, addressed by (category, key) within its scope."""

    model_config = _STRICT_IN

    category: str = Field(min_length=1, max_length=MAX_CATEGORY_CHARS)
    key: str = Field(min_length=1, max_length=MAX_KEY_CHARS)
    content: str
    summary: str | None = None
    type: str = Field(default="note", min_length=1, max_length=MAX_TYPE_CHARS)
    topic_path: str | None = Field(default=None, max_length=MAX_TOPIC_PATH_CHARS)
    body: dict[str, Any] | None = Field(default=None, validate_default=True)
    agent_id: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    workspace_hash: str | None = Field(default=None, max_length=MAX_SCOPE_CHARS)
    source: str | None = Field(default=None, max_length=1024)
    verified: bool = False
    certainty: float | None = Field(default=None, ge=0.0, le=1.0)
    provenance_class: str | None = Field(default=None, max_length=64)
    recall_when: list[str] = Field(default_factory=list, max_length=MAX_RECALL_WHEN)
    valid_from_ms: int | None = Field(default=None, ge=0, le=MAX_INT)
    valid_to_ms: int | None = Field(default=None, ge=0, le=MAX_INT)
    expires_at_ms: int | None = Field(default=None, ge=0, le=MAX_INT)

    @field_validator("category", "key", "type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return _check_text(value)

    @field_validator("content", "summary", "topic_path", "agent_id", "workspace_hash", "source", "provenance_class")
    @classmethod
    def _valid_text(cls, value: str | None) -> str | None:
        return None if value is None else _check_text(value)

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
            _check_text(phrase)
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
        size = len(content.encode("utf-8", "surrogatepass")) + len(summary.encode("utf-8", "surrogatepass"))
        if value:
            if _depth(value) > MAX_BODY_DEPTH:
                raise ValueError(f"is nested deeper than {MAX_BODY_DEPTH} levels")
            for name in ("content", "summary"):
                if name in value and value[name] != info.data.get(name):
                    raise ValueError(f"body.{name} conflicts with the {name} argument; pass it once")
            try:
                size += len(json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8"))
            except (TypeError, ValueError, UnicodeEncodeError) as exc:
                raise ValueError(f"must be a JSON object of finite numbers and valid text ({exc})") from exc
        if size > MAX_BODY_BYTES:
            raise ValueError(f"is {size} bytes with content and summary; the limit is {MAX_BODY_BYTES}")
        return value

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


class Expansion(BaseModel):
    """Query expansion: add indexed words that extend a query word's stem (``connect`` -> ``connector``)."""

    model_config = _STRICT_IN

    enabled: bool = True
    max_variants: int = Field(default=8, ge=0, le=64)
    min_stem_chars: int = Field(default=4, ge=2, le=32)


class Filters(BaseModel):
    """Which entities a read may see: scope, attributes, status and the point in time."""

    model_config = _STRICT_IN

    type: str | None = Field(default=None, description="Only entities of this type, e.g. 'decision' or 'insight'")
    category: str | None = Field(default=None, description="Only entities of this category")
    topic_path: str | None = Field(default=None, description="Only entities under this topic path, e.g. 'architecture'")
    agent_id: str | None = Field(default=None, description="Only this agent's entities (omit: no agent filter)")
    workspace_hash: str | None = Field(default=None, description="Only this workspace's entities (omit: no filter)")
    include_archived: bool = Field(default=False, description="Also archived, expired and superseded entities")
    min_decay: float | None = Field(default=None, ge=0.0, le=1.0,
                                    description="Only entities at least this fresh (decay 0..1, 1 = fresh)")
    as_of_unix_ms: int | None = Field(default=None, ge=0, le=MAX_INT,
                                      description="What the vault believed at this instant (unix ms)")
    valid_at_unix_ms: int | None = Field(default=None, ge=0, le=MAX_INT,
                                         description="What was true in the world at this instant (unix ms)")
    query_time_unix_ms: int | None = Field(default=None, ge=0, le=MAX_INT,
                                           description="The 'now' that decay, recency and expiry are judged at (replay)")

    @field_validator("type", "category", "topic_path", "agent_id", "workspace_hash")
    @classmethod
    def _valid_text(cls, value: str | None) -> str | None:
        return None if value is None else _check_text(value)

    @property
    def time_travel(self) -> bool:
        return self.as_of_unix_ms is not None or self.valid_at_unix_ms is not None


class RecallParams(Filters):
    """Every parameter of ``recall`` (SPEC 5.1), with its default."""

    query: str = Field(max_length=MAX_QUERY_CHARS, description=(
        "What to find; words are OR'd, stopwords never match alone; '' lists everything in scope"))
    mode: Mode | None = Field(default=None, description=(
        "fts5 (keyword), dense (meaning) or hybrid (both fused); omit for hybrid when the vault has vectors"))
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, description="Most results to return")
    offset: int = Field(default=0, ge=0, le=MAX_INT, description="Results to skip (clamped at 10,000)")
    expansion: bool | Expansion | None = Field(default=None, description="Add indexed stem variants of query words")
    preview_cap: int | None = Field(default=None, ge=1, description=(
        "Cut each content at N characters, with a footer saying how to fetch the whole entity"))
    trust_weight: float = Field(default=0.15, ge=0.0, le=10.0, description=(
        "Boost for verified (full) or certain (scaled) provenance; never penalizes; 0 turns it off"))
    content_weight: float = Field(default=0.0, ge=0.0, le=10.0, description=(
        "Boost for content that literally contains query words, damped by length"))
    diversity_halving: float = Field(default=1.0, gt=0.0, le=1.0, description=(
        "Per-keyword quota factor: each distinct matched word gets ceil(N x h^n) slots (1.0 = off)"))
    recency_half_life_secs: float | None = Field(default=None, gt=0.0, description=(
        "Multiply scores by 0.5^(age / this), so recent memories outrank older similar ones"))
    startup: bool = Field(default=False, description=(
        "Re-rank by actionability (tickets, paths, decisions beat vague or date-only notes); adds 'actionability'"))
    profile: Literal["validity"] | None = Field(default=None, description=(
        "'validity': weigh freshness, scope, provenance, supersession and expiry; adds 'validity'"))
    validity_annotate: bool = Field(default=False, description="Add the 'validity' block without re-ranking")
    reinforce: bool = Field(default=True, description="Count this retrieval (retrieval_count, last_accessed_ms)")
    fusion: Fusion | None = Field(default=None, description="Hybrid fusion weights for this call (k, weights)")

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str) -> str:
        return _check_text(value)

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
    cursor: str | None = None
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT)


CommunityMethod = Literal["label_propagation", "modularity"]
MAX_CONTEXT_CHARS = 32_768


class CommunitiesParams(Filters):
    """``communities``: which graph (the filters), how to cluster it, and how much to return."""

    method: CommunityMethod = "label_propagation"
    min_size: int = Field(default=2, ge=1, le=MAX_INT)
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT)
    central: int = Field(default=5, ge=0, le=100)

    @field_validator("min_decay")
    @classmethod
    def _no_decay(cls, value: float | None) -> float | None:
        if value is not None:
            raise ValueError("does not apply to communities (decay changes with every read)")
        return value


class CommunitySummaryParams(BaseModel):
    model_config = _STRICT_IN

    community_id: str = Field(min_length=1, max_length=64)
    method: CommunityMethod = "label_propagation"
    max_chars: int = Field(default=1_200, ge=200, le=20_000)
    refresh: bool = False
    agent_id: str | None = None
    workspace_hash: str | None = None


class GlobalRecallParams(BaseModel):
    """``global_recall``: the question, how many communities to open and how deep, and the budget."""

    model_config = _STRICT_IN

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    mode: Mode | None = None
    communities: int = Field(default=3, ge=1, le=50)
    per_community: int = Field(default=5, ge=1, le=100)
    max_chars: int = Field(default=4_000, ge=200, le=100_000)
    method: CommunityMethod = "label_propagation"
    min_size: int = Field(default=2, ge=1, le=MAX_INT)
    agent_id: str | None = None
    workspace_hash: str | None = None
    reinforce: bool = True

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain a word")
        return _check_text(value)


class _ContextInput(BaseModel):
    """Inputs that match against a context (the agent's coming turn) rather than a query."""

    model_config = _STRICT_IN

    context: str = Field(max_length=MAX_CONTEXT_CHARS)

    @field_validator("context")
    @classmethod
    def _context_text(cls, value: str) -> str:
        return _check_text(value)


class RecallWhenParams(_ContextInput):
    """``recall_when``: the context to match triggers against, the filters, and how to match."""

    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    type: str | None = None
    category: str | None = None
    topic_path: str | None = None
    agent_id: str | None = None
    workspace_hash: str | None = None
    semantic: bool | None = None
    min_similarity: float = Field(default=0.6, ge=-1.0, le=1.0)
    query_time_unix_ms: int | None = Field(default=None, ge=0, le=MAX_INT)
    reinforce: bool = False


class PrepareParams(_ContextInput):
    """``prepare``: the context of the coming turn and the size of the block to inject."""

    max_chars: int = Field(default=1_500, ge=100, le=100_000)
    triggered: int = Field(default=5, ge=0, le=100)
    related: int = Field(default=5, ge=0, le=100)
    mode: Mode | None = None
    agent_id: str | None = None
    workspace_hash: str | None = None
    semantic: bool | None = None
    reinforce: bool = False


# --- outputs -----------------------------------------------------------------------------------


class Entity(_Out):
    """One memory, as stored (or as it was at a past instant, for history and time travel).

    Body fields other than ``content`` and ``summary`` are also returned at top level
    (unless their name collides with an entity field); ``body`` holds all of them.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    id: int
    category: str
    key: str
    type: str
    topic_path: str | None
    content: str
    summary: str | None
    body: dict[str, Any]
    agent_id: str | None
    workspace_hash: str | None
    source: str | None
    verified: bool
    certainty: float | None
    provenance_class: str | None
    recall_when: list[str]
    created_at_ms: int
    updated_at_ms: int
    last_accessed_ms: int | None
    retrieval_count: int
    decay: float
    status: Status
    valid_from_ms: int | None
    valid_to_ms: int | None
    expires_at_ms: int | None
    supersedes: int | None
    superseded_by: int | None
    version: int
    change: str
    recorded_from_ms: int
    recorded_to_ms: int | None


class RecallItem(Entity):
    """A hit: the entity, its ``score``, and its rank in each arm that ran (``{"fts5": 3, "dense": 1}``).

    ``actionability`` appears with ``startup=True`` and ``validity`` with ``profile="validity"`` or
    ``validity_annotate=True``; without those flags the item carries neither key at all.
    """

    score: float
    ranks: dict[str, int]
    actionability: float | None = None
    validity: Validity | None = None

    @model_serializer(mode="wrap")
    def _omit_unrequested(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in ("actionability", "validity"):
            if data.get(name) is None:
                data.pop(name, None)
        return data


class RecallResult(_Out):
    """``total`` counts the items returned (as the seed's schema defines it); ``variants`` the expansion terms used."""

    items: list[RecallItem]
    total: int
    variants: int
    search_mode: str


class ScanPage(_Out):
    items: list[Entity]
    next_cursor: str | None
    has_more: bool


class HistoryPage(_Out):
    """Versions of one fact, newest first; ``total`` counts every version."""

    items: list[Entity]
    total: int
    has_more: bool


class Link(_Out):
    id: int
    from_id: int
    to_id: int
    relation: str
    weight: float
    source: str | None
    created_at_ms: int
    recorded_from_ms: int
    recorded_to_ms: int | None


class TraverseNode(_Out):
    entity: Entity
    depth: int
    path: list[int]


class TraverseResult(_Out):
    start: int
    nodes: list[TraverseNode]
    edges: list[Link]


class CommunityMember(_Out):
    """A central member of a community: ``centrality`` is its weighted degree inside the community."""

    id: int
    category: str
    key: str
    title: str
    centrality: float


class Community(_Out):
    """A cluster of the link graph. ``id`` derives from the sorted member ids: same members, same id."""

    id: str
    size: int
    agent_id: str | None
    workspace_hash: str | None
    members: list[int]
    central: list[CommunityMember]
    summary_id: int | None


class CommunitiesResult(_Out):
    """``total`` counts the communities of at least ``min_size`` members; ``nodes``/``edges``: the graph clustered."""

    communities: list[Community]
    total: int
    method: str
    nodes: int
    edges: int


class CommunitySummary(_Out):
    """A community's summary entity. ``materialized``: written (or rewritten) by this call;
    ``polished``: its content came from the caller's ``polish`` function (the extractive text is in
    ``extractive``); ``replaced``: summaries of former communities this one replaced (now archived)."""

    community_id: str
    entity: Entity
    text: str
    extractive: str
    polished: bool
    materialized: bool
    members: list[int]
    replaced: list[int]


class EvidenceItem(RecallItem):
    """A member that supports a global answer: found by recall (``via="recall"``), reached over a
    link from such a hit (``via="link"``, ``hops`` away), or taken as a central member (``via="central"``)."""

    via: Literal["recall", "link", "central"]
    hops: int = 0


class GlobalCommunity(_Out):
    """One chosen community: its summary (``title``, ``summary`` text, entity ``summary_id``), the
    summary's recall ``score``, and the members that support the answer."""

    community: Community
    title: str
    summary: str
    summary_id: int
    score: float
    evidence: list[EvidenceItem]


class GlobalRecallResult(_Out):
    """Communities chosen for ``query`` (best first), their evidence, and ``context``: the answer
    material as markdown within the character budget."""

    query: str
    communities: list[GlobalCommunity]
    context: str
    search_mode: str


class TriggeredItem(RecallItem):
    """An entity whose ``recall_when`` trigger matched the context: which ``trigger`` and how
    (``phrase``: all its words in order; ``terms``: its stems, in any order; ``meaning``: by embedding)."""

    trigger: str
    match: Literal["phrase", "terms", "meaning"]


class RecallWhenResult(_Out):
    items: list[TriggeredItem]
    total: int
    semantic: bool


class PrepareResult(_Out):
    """The block to inject before an agent turn (``markdown``, at most ``max_chars``) and what is in it."""

    markdown: str
    triggered: list[int]
    related: list[int]
    chars: int
    search_mode: str


class MemoryEntry(_Out):
    """One dated entry of a memory file; ``text`` is its raw markdown (wikilinks intact, continuation lines included)."""

    file: str
    section: str
    date: str | None
    text: str


class MemoryRecallResult(_Out):
    """``entries`` oldest first; ``total`` counts every matched entry; ``truncated``: ``limit`` dropped the
    least relevant matches (never a date range); ``search_mode``: ``hybrid`` when meaning contributed,
    ``fts`` for keyword alone (the any-term fallback included); ``reranked``: a cross-encoder cut ran."""

    entries: list[MemoryEntry]
    total: int
    truncated: bool
    search_mode: str
    reranked: bool


class MemoryFileInfo(_Out):
    file: str
    entries: int
    sections: list[str]
    updated_at_ms: int


class MemoryFiles(_Out):
    files: list[MemoryFileInfo]
    bound_folder: str | None


class MemoryText(_Out):
    """A memory file, or one of its sections, verbatim."""

    file: str
    section: str | None
    text: str


class SkippedLine(_Out):
    file: str
    line: int
    text: str
    reason: str


class MemoryImportReport(_Out):
    """What a folder import did; ``skipped`` lists every line that is not part of an entry (nothing
    in the files is changed, so nothing is lost)."""

    files: int
    entries_created: int
    entries_archived: int
    entries_unchanged: int
    notes: int
    links: int
    skipped: list[SkippedLine]
    bound_folder: str | None


class MemoryChange(_Out):
    """The entry added or deleted, and the markdown file rewritten (when the vault is bound to a folder)."""

    file: str
    entry: MemoryEntry
    written: str | None


class MemoryExportReport(_Out):
    folder: str
    files: int


class PurgeResult(_Out):
    id: int
    versions: int
    links: int


class ImportReport(_Out):
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    links: int = 0


class Stats(_Out):
    path: str
    schema_version: int
    entities: int
    by_status: dict[str, int]
    versions: int
    links: int
    db_bytes: int
    sqlite_driver: str
    sqlite_version: str
    sqlite_vec_version: str
    keyword_index: str
    embedding_model: str | None
    embedding_dimension: int | None
    embedded: int
    embedding_coverage: float
    vector_index: str
    encrypted: bool = False  # encrypted at rest (SQLCipher); see docs/encryption.md


class EmbedReport(_Out):
    """What ``embed`` did: vectors written, with which model, and whether it replaced another."""

    embedded: int
    model: str
    dimension: int
    reembedded: bool


HygieneReason = Literal["vague", "date-only", "very short", "duplicate", "near-duplicate", "expired", "never retrieved"]


class HygieneItem(_Out):
    """One memory ``hygiene`` flags: why, and how actionable its text is (``preview``: the first 200
    characters of its content). ``duplicate_of`` names the earlier memory it repeats, if it does."""

    id: int
    category: str
    key: str
    preview: str
    actionability: float
    reasons: list[HygieneReason]
    duplicate_of: int | None
    retrieval_count: int
    created_at_ms: int


class HygieneReport(_Out):
    """``items``: flagged memories, least actionable first, up to ``limit``. ``total`` counts every
    flagged memory, ``scanned`` every active memory examined, ``counts`` each reason over all flagged."""

    items: list[HygieneItem]
    total: int
    scanned: int
    counts: dict[str, int]


class CheckReport(_Out):
    ok: bool
    problems: list[str]


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any, *, prefix: str = "") -> M:
    """Validate ``data`` as ``model`` or raise :class:`InvalidInput` naming the first bad field."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        path = ".".join(str(p) for p in err.get("loc", ()) if p not in ("function-after",))
        field = f"{prefix}{'.' if prefix and path else ''}{path}" or prefix or model.__name__
        message = err.get("msg", "invalid value")
        if err.get("type") == "extra_forbidden":
            message = "unknown field"
        elif err.get("type") == "missing":
            message = "is required"
        elif err.get("type") == "finite_number":
            message = "must be a finite number (not NaN or infinity)"
        message = message.removeprefix("Value error, ")
        raise InvalidInput(field, message) from None

