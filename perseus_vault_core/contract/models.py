"""Typed values the vault returns: what every verb gives back.

These pydantic models are the contract shared by the Python API, the CLI's ``--json`` output and
the MCP tools' output schemas, so the three cannot drift. Field names are the wire names of
docs/remember.md and docs/recall.md. What callers pass in is in :mod:`params`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer, model_validator

Status = Literal["active", "archived", "expired", "superseded"]


class _Out(BaseModel):
    model_config = ConfigDict(defer_build=True)


class Entity(_Out):
    """One memory, as stored (or as it was at a past instant, for history and time travel).

    ``content`` and ``summary`` are its text; ``body`` holds its other stored fields. Each body
    field is also an attribute at top level (``entity.model_extra``), unless its name is one of
    the result fields of any item model (:data:`RESULT_FIELDS`: ``id``, ``score``, ``validity``,
    ...): a stored field can never break or forge a result field.

    On the wire (``model_dump``, JSON, MCP) every field appears once: a body field shown at top
    level is not repeated inside ``body``, which keeps only the fields that could not be shown
    there; reading such a dump back (``model_validate``) puts them together again.
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

    @model_validator(mode="before")
    @classmethod
    def _gather_body(cls, data: Any) -> Any:
        """A wire dump back into one ``body``: top-level fields the model does not define are body fields."""
        if isinstance(data, dict):
            fields = cls.__pydantic_fields__  # (``model_fields`` is a descriptor: slow in a loop)
            extra = [k for k in data if k not in fields]
            if extra:
                body = dict(data.get("body") or {})
                for name in extra:
                    body.setdefault(name, data[name])
                data = {k: v for k, v in data.items() if k in fields}
                data["body"] = body
        return data

    @model_validator(mode="after")
    def _spread_body(self) -> Entity:
        extra = self.__pydantic_extra__
        if extra is not None:
            for name, value in self.body.items():
                if name not in RESULT_FIELDS:
                    extra[name] = value
        return self

    @model_serializer(mode="wrap")
    def _wire(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        body = data.get("body")
        if body:  # shown at top level already: not twice
            data["body"] = {k: v for k, v in body.items() if k in RESULT_FIELDS}
        for name in (
            "actionability",
            "validity",
            "duplicates",
            "outdated_by",
        ):  # carried only when they say something
            if name in data and data[name] is None:
                del data[name]
        return data


class SimilarMemory(_Out):
    """A memory in the same scope that a new one may repeat, update or contradict: a candidate for the agent
    (or a judge) to decide on, with its text and when it became true (docs/curation.md)."""

    id: int
    category: str
    key: str
    similarity: float  # the candidate's score: the cosine of the two vectors (else the words' Jaccard), plus
    # what the two share beyond meaning (recall/candidates.py)
    relation: Literal[
        "duplicate", "update", "same_subject", "related", "distinct"
    ]  # a judge's verdict when there is one
    text: str = ""  # its summary and content on one line (the first 300 characters)
    true_from_ms: int | None = None  # when it became true: its valid_from, else its write
    true_to_ms: int | None = None  # when it stopped being true, if it did


class Remembered(Entity):
    """What ``remember`` stored, or, with ``repeated``, the memory in scope that already says exactly this
    (nothing was written); ``similar``: its candidates, memories of the scope it may repeat, update or
    contradict, best first, for the agent (or a judge) to decide on."""

    repeated: bool = False
    written: bool = True  # False: nothing was written (a repeat, or the same key with the same fields)
    similar: list[SimilarMemory] = []


# How valid a hit still is for the asking context: recall/validity.py gives the figures. (No docstring: it would
# become the description in the MCP output schemas.)
class Validity(BaseModel):
    multiplier: float
    grade: Literal["valid", "stale", "context_invalid"]
    freshness: float
    scope_match: bool
    corroborated: bool
    superseded: bool
    expired: bool
    expiring_soon: bool


class RecallItem(Entity):
    """A hit: the entity, its ``score``, and its rank in each arm that ran (``{"fts5": 3, "dense": 1}``).

    ``actionability`` appears with ``startup=True`` and ``validity`` with ``profile="validity"`` or
    ``validity_annotate=True``; without those flags the item carries neither key at all. ``duplicates``
    (the ids of memories saying the same thing, collapsed into this one) and ``outdated_by`` (a newer
    memory that may update this one) appear only when curation found them (docs/curation.md).
    """

    score: float
    ranks: dict[str, int]
    actionability: float | None = None
    validity: Validity | None = None
    duplicates: list[int] | None = None  # memories saying the same thing, collapsed into this one
    outdated_by: int | None = None  # a newer memory that may update this one (docs/curation.md)


class RecallResult(_Out):
    """``total`` counts the items returned; ``variants`` the expansion terms used."""

    items: list[RecallItem]
    total: int
    variants: int
    search_mode: str


class ScanPage(_Out):
    items: list[Entity]
    next_cursor: str | None
    has_more: bool


class ScopeCount(_Out):
    agent_id: str | None
    workspace_hash: str | None
    count: int


class Counts(_Out):
    """How many memories a view holds. ``total``, ``by_scope``, ``by_type`` and ``by_category`` count the
    memories the view shows (active ones unless ``include_archived``), ``by_status`` every memory its other
    rules select, whatever its status. Each breakdown lists its ``top`` largest values, largest first;
    ``scopes``, ``types`` and ``categories`` say how many values there are in all."""

    total: int
    by_status: dict[str, int]
    by_scope: list[ScopeCount]
    by_type: dict[str, int]
    by_category: dict[str, int]
    scopes: int
    types: int
    categories: int


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
    """A memory file, or one of its sections, verbatim; ``entries``, when asked for, its entries in file order."""

    file: str
    section: str | None
    text: str
    entries: list[MemoryEntry] | None = None


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


class ConversationTurn(_Out):
    """One turn of a conversation: its number in the session (from 1), who said it and when (``at_ms``:
    the message's time, else when it was remembered), and the memory that holds it (its text is the
    memory's ``content``)."""

    turn: int
    speaker: str
    role: str | None
    at_ms: int
    message_id: str | None
    entity: Entity


class ConversationResult(_Out):
    """Turns of one session in order. ``total`` counts the session's turns; ``next_turn`` is the number
    of the first turn after those returned (pass it as ``from_turn`` to read on), null at the end."""

    session: str
    agent_id: str | None
    workspace_hash: str | None
    turns: list[ConversationTurn]
    total: int
    next_turn: int | None


class TurnWritten(_Out):
    """A message as ``remember_conversation`` stored it: its turn's memory ``id`` and number, and what
    the call did to it (``unchanged``: its message id was already stored just so; ``skipped``: its
    message id is a turn that was forgotten or superseded, which a resend leaves as it is)."""

    id: int
    turn: int
    speaker: str
    message_id: str | None
    change: Literal["created", "updated", "unchanged", "skipped"]


class ConversationWrite(_Out):
    """What ``remember_conversation`` did: each message's turn, in the order given, the counts, and the
    session's last turn number after the call."""

    session: str
    agent_id: str | None
    workspace_hash: str | None
    turns: list[TurnWritten]
    created: int
    updated: int
    unchanged: int
    skipped: int
    last_turn: int


class PurgeResult(_Out):
    id: int
    versions: int
    links: int


class ImportReport(_Out):
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    links: int = 0


class RoleBinding(_Out):
    """A database role bound to one scope (PostgreSQL's row-level security). ``temporary_objects``: whether the role
    may still create temporary tables, views or functions on the database, which binding takes away where the vault's
    role owns the database; elsewhere its owner may (docs/postgres.md). The scope holds either way."""

    role: str
    agent_id: str
    workspace_hash: str
    temporary_objects: bool


class MigrateReport(_Out):
    """What ``migrate`` copied, and the export both vaults give (``lines``, ``sha256``: the same for both)."""

    source: str
    target: str
    entities: int
    versions: int
    links: int
    vectors: int
    phrase_vectors: int
    # Framework state (checkpoints, key-value entries) copied row for row: not memories, not in the export.
    state_rows: int = 0
    lines: int
    sha256: str


class Stats(_Out):
    """``path``: the file, or the database's URL without its password; on Postgres the ``sqlite_*`` fields
    name the driver (psycopg), the server's version and pgvector's."""

    path: str
    backend: Literal["sqlite", "postgres"] = "sqlite"
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


HygieneReason = Literal[
    "vague", "date-only", "very short", "duplicate", "near-duplicate", "expired", "never retrieved"
]


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


class HygieneConflict(_Out):
    """Two memories that may state one fact two ways (kept as ``updates`` or ``same_subject`` when the newer was
    written), neither superseding the other and neither confirmed distinct (an ``unlink`` of their inferred
    link, or a judge's verdict, settles it): the newer (valid later) and the older, with their texts' first 200
    characters and when each became true."""

    newer: int
    older: int
    relation: str
    newer_preview: str
    older_preview: str
    newer_true_from_ms: int
    older_true_from_ms: int


class HygieneReport(_Out):
    """``items``: flagged memories, least actionable first, up to ``limit``. ``total`` counts every
    flagged memory, ``scanned`` every active memory examined, ``counts`` each reason over all flagged.
    ``conflicts``: pairs that may state one fact two ways, newest first, up to ``limit``."""

    items: list[HygieneItem]
    total: int
    scanned: int
    counts: dict[str, int]
    conflicts: list[HygieneConflict] = []


class CheckReport(_Out):
    ok: bool
    problems: list[str]


class ReindexReport(CheckReport):
    """``check`` after ``reindex``; ``relations_judged``: memories written before writes judged their relations
    (by an earlier version), judged now."""

    relations_judged: int = 0


# The names a stored body field can never take at top level: every field of every item model.
RESULT_FIELDS: frozenset[str] = frozenset(
    name
    for model in (Entity, Remembered, RecallItem, TriggeredItem, EvidenceItem)
    for name in model.model_fields
)
