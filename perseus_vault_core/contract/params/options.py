"""Keyword options of Vault's verbs, one TypedDict per params model (generated: do not edit).

Regenerate with ``python -m perseus_vault_core.contract.params.signatures > perseus_vault_core/contract/params/options.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, TypedDict

from .reading import Expansion
from .reading import Fusion


class RememberOptions(TypedDict, total=False):
    """RememberParams's fields but category, key, content."""

    summary: str | None
    type: str
    topic_path: str | None
    body: dict[str, Any] | None
    agent_id: str | None
    workspace_hash: str | None
    source: str | None
    verified: bool
    certainty: float | None
    provenance_class: str | None
    recall_when: list[str]
    valid_from_ms: int | str | dt.datetime | None
    valid_to_ms: int | str | dt.datetime | None
    expires_at_ms: int | str | dt.datetime | None
    keep_duplicate: bool


class RecallOptions(TypedDict, total=False):
    """RecallParams's fields but query."""

    agent_id: str | None
    workspace_hash: str | None
    type: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None
    include_archived: bool
    min_decay: float | None
    as_of_unix_ms: int | str | dt.datetime | None
    valid_at_unix_ms: int | str | dt.datetime | None
    query_time_unix_ms: int | str | dt.datetime | None
    mode: Literal['fts5', 'dense', 'hybrid'] | None
    limit: int
    offset: int
    min_score: float | Literal['auto'] | None
    preview_cap: int | None
    startup: bool
    profile: Literal['validity'] | None
    validity_annotate: bool
    expansion: bool | Expansion | dict[str, Any] | None
    trust_weight: float
    content_weight: float
    diversity_halving: float
    recency_half_life_secs: float | None
    reinforce: bool
    fusion: Fusion | dict[str, Any] | None
    curate: bool
    include_outdated: bool
    follow_links: bool


class SearchOptions(TypedDict, total=False):
    """RecallParams's fields but query, type."""

    agent_id: str | None
    workspace_hash: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None
    include_archived: bool
    min_decay: float | None
    as_of_unix_ms: int | str | dt.datetime | None
    valid_at_unix_ms: int | str | dt.datetime | None
    query_time_unix_ms: int | str | dt.datetime | None
    mode: Literal['fts5', 'dense', 'hybrid'] | None
    limit: int
    offset: int
    min_score: float | Literal['auto'] | None
    preview_cap: int | None
    startup: bool
    profile: Literal['validity'] | None
    validity_annotate: bool
    expansion: bool | Expansion | dict[str, Any] | None
    trust_weight: float
    content_weight: float
    diversity_halving: float
    recency_half_life_secs: float | None
    reinforce: bool
    fusion: Fusion | dict[str, Any] | None
    curate: bool
    include_outdated: bool
    follow_links: bool


class RecallByVectorOptions(TypedDict, total=False):
    """RecallParams's fields but query, mode."""

    agent_id: str | None
    workspace_hash: str | None
    type: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None
    include_archived: bool
    min_decay: float | None
    as_of_unix_ms: int | str | dt.datetime | None
    valid_at_unix_ms: int | str | dt.datetime | None
    query_time_unix_ms: int | str | dt.datetime | None
    limit: int
    offset: int
    min_score: float | Literal['auto'] | None
    preview_cap: int | None
    startup: bool
    profile: Literal['validity'] | None
    validity_annotate: bool
    expansion: bool | Expansion | dict[str, Any] | None
    trust_weight: float
    content_weight: float
    diversity_halving: float
    recency_half_life_secs: float | None
    reinforce: bool
    fusion: Fusion | dict[str, Any] | None
    curate: bool
    include_outdated: bool
    follow_links: bool


class ScanOptions(TypedDict, total=False):
    """ScanParams's fields but cursor, limit."""

    agent_id: str | None
    workspace_hash: str | None
    type: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None
    include_archived: bool
    min_decay: float | None
    as_of_unix_ms: int | str | dt.datetime | None
    valid_at_unix_ms: int | str | dt.datetime | None
    query_time_unix_ms: int | str | dt.datetime | None
    status: Literal['active', 'archived', 'expired', 'superseded'] | None


class TraverseOptions(TypedDict, total=False):
    """TraverseParams's fields but start, depth, relations, direction."""

    agent_id: str | None
    workspace_hash: str | None
    type: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None
    include_archived: bool
    min_decay: float | None
    as_of_unix_ms: int | str | dt.datetime | None
    valid_at_unix_ms: int | str | dt.datetime | None
    query_time_unix_ms: int | str | dt.datetime | None
    inferred: bool


class HygieneOptions(TypedDict, total=False):
    """HygieneParams's fields but limit, min_age_days."""

    agent_id: str | None
    workspace_hash: str | None
    type: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None


class CommunitiesOptions(TypedDict, total=False):
    """CommunitiesParams's fields."""

    agent_id: str | None
    workspace_hash: str | None
    type: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None
    include_archived: bool
    min_decay: float | None
    as_of_unix_ms: int | str | dt.datetime | None
    valid_at_unix_ms: int | str | dt.datetime | None
    query_time_unix_ms: int | str | dt.datetime | None
    method: Literal['label_propagation', 'modularity']
    min_size: int
    limit: int
    central: int
    containing: list[int] | None


class CountsOptions(TypedDict, total=False):
    """CountsParams's fields."""

    agent_id: str | None
    workspace_hash: str | None
    type: str | None
    category: str | None
    topic_path: str | None
    where: dict[str, Any] | None
    include_archived: bool
    min_decay: float | None
    as_of_unix_ms: int | str | dt.datetime | None
    valid_at_unix_ms: int | str | dt.datetime | None
    query_time_unix_ms: int | str | dt.datetime | None
    top: int


class CommunitySummaryOptions(TypedDict, total=False):
    """CommunitySummaryParams's fields but community_id."""

    agent_id: str | None
    workspace_hash: str | None
    method: Literal['label_propagation', 'modularity']
    max_chars: int
    refresh: bool


class GlobalRecallOptions(TypedDict, total=False):
    """GlobalRecallParams's fields but query."""

    agent_id: str | None
    workspace_hash: str | None
    mode: Literal['fts5', 'dense', 'hybrid'] | None
    communities: int
    per_community: int
    max_chars: int
    where: dict[str, Any] | None
    min_score: float | Literal['auto'] | None
    method: Literal['label_propagation', 'modularity']
    min_size: int
    reinforce: bool


class RecallWhenOptions(TypedDict, total=False):
    """RecallWhenParams's fields but context."""

    agent_id: str | None
    workspace_hash: str | None
    limit: int
    type: str | None
    category: str | None
    topic_path: str | None
    semantic: bool | None
    where: dict[str, Any] | None
    min_similarity: float
    query_time_unix_ms: int | str | dt.datetime | None
    reinforce: bool


class PrepareOptions(TypedDict, total=False):
    """PrepareParams's fields but context."""

    agent_id: str | None
    workspace_hash: str | None
    max_chars: int
    triggered: int
    related: int
    mode: Literal['fts5', 'dense', 'hybrid'] | None
    where: dict[str, Any] | None
    min_score: float | Literal['auto'] | None
    semantic: bool | None
    reinforce: bool
    include_outdated: bool
