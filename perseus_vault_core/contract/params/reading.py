"""Reading: recall, scan, time travel, graph walks, communities, proactive recall."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .base import (
    _STRICT_IN,
    _TIME_HELP,
    MAX_CATEGORY_CHARS,
    MAX_CONTEXT_CHARS,
    MAX_CONTEXT_INPUT_CHARS,
    MAX_INT,
    MAX_KEY_CHARS,
    MAX_LIMIT,
    MAX_OFFSET,
    MAX_QUERY_CHARS,
    MAX_RELATION_CHARS,
    MAX_TOPIC_PATH_CHARS,
    MAX_TYPE_CHARS,
    CommunityMethod,
    Direction,
    Filters,
    Id,
    MinScore,
    Mode,
    ScopeParams,
    UnixMs,
    Where,
    _optional_text,
    _words,
    advanced,
    check_text,
    where_field,
)

# --- reading -----------------------------------------------------------------------------------

StatusName = Literal["active", "archived", "expired", "superseded"]  # as a memory shows it (models.Status)


class Expansion(BaseModel):
    """Query expansion by indexed stem variants."""

    model_config = _STRICT_IN

    enabled: bool = True
    max_variants: int = Field(default=8, ge=0, le=64)
    min_stem_chars: int = Field(default=4, ge=2, le=32)


# recall/fusion.py combines the arms' scores with these, each scaled by how far its arm reaches for the query:
# keyword weight x keyword score + dense weight x cosine.
class Fusion(BaseModel):
    """Hybrid recall's base weights for the keyword score and the cosine (each query scales them by how far its
    arms reach: docs/recall.md#hybrid-fusion)."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    keyword_weight: float = Field(default=0.5, ge=0.0, le=1.0)
    dense_weight: float = Field(default=0.5, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _some_weight(self) -> Fusion:
        if self.keyword_weight == 0 and self.dense_weight == 0:
            raise ValueError("keyword_weight and dense_weight cannot both be 0")
        return self


class RecallParams(Filters):
    """Every parameter of ``recall``, with its default (docs/recall.md)."""

    query: str = Field(
        max_length=MAX_QUERY_CHARS,
        description=("What to find (words are OR'd); '' lists everything in scope"),
    )
    mode: Mode | None = Field(
        default=None,
        description=("fts5 (keyword), dense (meaning) or hybrid (both; the default with vectors)"),
    )
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, description="Most results to return")
    offset: int = Field(default=0, ge=0, le=MAX_INT, description="Results to skip (clamped at 10,000)")
    min_score: MinScore = Field(
        default="auto",
        description=(
            "Leave out memories less relevant than this ('auto': what the arms judge unrelated; null or none: the "
            "plain top-k)"
        ),
    )
    preview_cap: int | None = Field(
        default=None, ge=1, le=MAX_INT, description=("Cut each memory to about N characters")
    )
    startup: bool = advanced(
        False, description="Re-rank by actionability (concrete beats vague); adds actionability"
    )
    profile: Literal["validity"] | None = advanced(
        description=("Re-rank by freshness, provenance and expiry; adds validity")
    )
    validity_annotate: bool = advanced(False, description="Add validity without re-ranking")
    expansion: bool | Expansion | None = advanced(description="Add indexed stem variants of query words")
    trust_weight: float = advanced(
        0.15, ge=0.0, le=10.0, description="Boost for verified or certain provenance"
    )
    content_weight: float = advanced(
        0.0, ge=0.0, le=10.0, description="Boost for content with the query words"
    )
    diversity_halving: float = advanced(1.0, gt=0.0, le=1.0, description="Per-keyword quota factor (1 = off)")
    recency_half_life_secs: float | None = advanced(gt=0.0, description="Multiply scores by 0.5^(age / this)")
    reinforce: bool = advanced(True, description="Count this retrieval (retrieval_count, last_accessed_ms)")
    fusion: Fusion | None = advanced(description="Hybrid fusion weights")
    curate: bool = advanced(
        True,
        description=(
            "Collapse memories kept as duplicates (the others' ids in duplicates); a newer fact goes before the "
            "older it updates (marked outdated_by)"
        ),
    )
    include_outdated: bool = advanced(
        True,
        description=(
            "Keep memories a newer one may update (marked outdated_by); false leaves out confirmed ones"
        ),
    )
    follow_links: bool = advanced(
        False, description=("Also rank memories linked to the best hits (one hop; docs/recall.md)")
    )

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

    cursor: str | None = Field(
        default=None,
        max_length=256,
        description=("next_cursor of the previous page (omit for the first page)"),
    )
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Most memories per page")
    status: StatusName | None = Field(
        default=None,
        description=("Only memories with this status (others than active included when asked for)"),
    )


class FactParams(ScopeParams):
    """A fact addressed by (category, key) within its scope."""

    category: str = Field(min_length=1, max_length=MAX_CATEGORY_CHARS, description="The fact's category")
    key: str = Field(min_length=1, max_length=MAX_KEY_CHARS, description="The fact's key")

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
        default=None, max_length=100, description="Follow only links of these types (omit for all)"
    )
    direction: Direction = Field(default="both", description="Follow links out of, into, or both ways")
    inferred: bool = advanced(True, description="Also follow inferred links (docs/curation.md)")


class HygieneParams(ScopeParams):
    """``hygiene``: which memories to examine and how many flagged ones to return."""

    type: str | None = Field(
        default=None, max_length=MAX_TYPE_CHARS, description="Only memories of this type"
    )
    category: str | None = Field(
        default=None, max_length=MAX_CATEGORY_CHARS, description="Only this category"
    )
    topic_path: str | None = Field(
        default=None, max_length=MAX_TOPIC_PATH_CHARS, description="Only under this topic path prefix"
    )
    where: Where = where_field()
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Most flagged memories to return")
    min_age_days: int = Field(
        default=7, ge=0, le=1_000_000, description="Flag 'never retrieved' only if at least this old"
    )

    @field_validator("type", "category", "topic_path")
    @classmethod
    def _filter_text(cls, value: str | None) -> str | None:
        return _optional_text(value)

    def filters(self) -> Filters:
        """The memories to examine, as recall's filters."""
        return Filters(
            type=self.type,
            category=self.category,
            topic_path=self.topic_path,
            where=self.where,
            agent_id=self.agent_id,
            workspace_hash=self.workspace_hash,
        )


class CommunitiesParams(Filters):
    """``communities``: which graph (the filters), how to cluster it, and how much to return."""

    method: CommunityMethod = Field(
        default="label_propagation", description=("label_propagation (fast) or modularity (Louvain)")
    )
    min_size: int = Field(default=2, ge=1, le=MAX_INT, description="Smallest community to report")
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Most communities to return")
    central: int = Field(default=5, ge=0, le=100, description="Most central members listed per community")
    containing: list[Id] | None = Field(
        default=None, max_length=MAX_LIMIT, description=("Only the communities holding one of these memories")
    )

    @field_validator("min_decay")
    @classmethod
    def _no_decay(cls, value: float | None) -> float | None:
        if value is not None:
            raise ValueError("does not apply to communities (decay changes with every read)")
        return value


class CommunitySummaryParams(ScopeParams):
    community_id: str = Field(min_length=1, max_length=64, description="A community's id, from communities")
    method: CommunityMethod = Field(
        default="label_propagation", description="The clustering the id comes from"
    )
    max_chars: int = Field(default=1_200, ge=200, le=20_000, description="Size budget of the summary")
    refresh: bool = Field(default=False, description="Rewrite the summary even if a current one exists")


class GlobalRecallParams(ScopeParams):
    """``global_recall``: the question, how many communities to open and how deep, and the budget."""

    query: str = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, description="A broad question spanning many memories"
    )
    mode: Mode | None = Field(
        default=None, description="How summaries and members are matched (as recall's mode)"
    )
    communities: int = Field(default=3, ge=1, le=50, description="How many communities to open")
    per_community: int = Field(default=5, ge=1, le=100, description="Most evidence memories per community")
    max_chars: int = Field(default=4_000, ge=200, le=100_000, description="Size budget of the answer context")
    where: Where = Field(default=None, description="Only evidence whose fields match (as recall's where)")
    min_score: MinScore = advanced(
        description="Evidence scoring below this is left out ('auto': the mode's threshold)"
    )
    method: CommunityMethod = advanced("label_propagation", description="Clustering method")
    min_size: int = advanced(2, ge=1, le=MAX_INT, description="Smallest community considered")
    reinforce: bool = advanced(True, description="Count the evidence as retrieved")

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str) -> str:
        return _words(value)


class _ContextInput(ScopeParams):
    """Inputs that match against a context (the agent's coming turn) rather than a query."""

    context: str = Field(
        max_length=MAX_CONTEXT_INPUT_CHARS, description=("The user's message and what you are about to do")
    )

    @field_validator("context")
    @classmethod
    def _context_text(cls, value: str) -> str:
        """A context longer than MAX_CONTEXT_CHARS is read from its end: its most recent part."""
        return check_text(value)[-MAX_CONTEXT_CHARS:]


class RecallWhenParams(_ContextInput):
    """``recall_when``: the context to match triggers against, the filters, and how to match."""

    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, description="Most memories to return")
    type: str | None = Field(
        default=None, max_length=MAX_TYPE_CHARS, description="Only memories of this type"
    )
    category: str | None = Field(
        default=None, max_length=MAX_CATEGORY_CHARS, description="Only this category"
    )
    topic_path: str | None = Field(
        default=None, max_length=MAX_TOPIC_PATH_CHARS, description="Only under this topic path prefix"
    )
    semantic: bool | None = Field(
        default=None, description=("Also match triggers by meaning (default: when the vault has vectors)")
    )
    where: Where = where_field()
    min_similarity: float = advanced(0.6, ge=-1.0, le=1.0, description="Cosine a meaning match needs")
    query_time_unix_ms: UnixMs | None = advanced(description="The 'now' expiry is judged at (replay)")
    reinforce: bool = advanced(False, description="Count the matches as retrieved")


class PrepareParams(_ContextInput):
    """``prepare``: the context of the coming turn and the size of the block to inject."""

    max_chars: int = Field(default=1_500, ge=100, le=100_000, description="Character budget of the block")
    triggered: int = Field(default=5, ge=0, le=100, description="Most triggered memories in the block")
    related: int = Field(default=5, ge=0, le=100, description="Most other relevant memories in the block")
    mode: Mode | None = Field(default=None, description="How related memories are found (as recall's mode)")
    where: Where = where_field()
    min_score: MinScore = advanced(
        "auto", description=("Leave out related memories scoring below this ('auto': the mode's)")
    )
    semantic: bool | None = advanced(
        description="Also match trigger phrases by meaning (default: when possible)"
    )
    reinforce: bool = advanced(False, description="Count the memories shown as retrieved")
    include_outdated: bool = advanced(
        False, description=("Also show memories confirmed outdated (left out by default)")
    )
