"""contract/params/reading.py: recall's parameters (the offset clamped, query expansion and fusion weights
read or refused), scan's status, a fact's address, communities without decay, and a context read from its
end; each refusal naming its field."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput
from perseus_vault_core.contract.params.base import MAX_CONTEXT_CHARS, MAX_OFFSET, MAX_QUERY_CHARS, validate
from perseus_vault_core.contract.params.reading import (
    CommunitiesParams,
    Expansion,
    GlobalRecallParams,
    HygieneParams,
    PrepareParams,
    RecallParams,
    RecallWhenParams,
    ScanParams,
)


def refused(model: Any, data: dict[str, Any]) -> InvalidInput:
    with pytest.raises(InvalidInput) as raised:
        validate(model, data)
    return raised.value


def test_recall_s_defaults_and_an_offset_clamped_at_its_limit() -> None:
    r = validate(RecallParams, {"query": "db"})
    assert (r.limit, r.offset, r.mode, r.min_score, r.fusion) == (10, 0, None, "auto", None)
    assert r.curate is True and r.include_outdated is True and r.startup is False
    assert validate(RecallParams, {"query": "db", "offset": MAX_OFFSET * 5}).offset == MAX_OFFSET
    assert validate(RecallParams, {"query": "", "min_score": None}).min_score is None  # the plain top-k


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"limit": 0}, "limit", "must be at least 1"),
        ({"offset": -1}, "offset", "must be at least 0"),
        ({"mode": "bm25"}, "mode", "must be 'fts5', 'dense' or 'hybrid'"),
        ({"min_score": 3.0}, "min_score", "must be at most 2.0"),
        ({"min_score": "high"}, "min_score", "must be a number or 'auto'"),
        ({"query": "x" * (MAX_QUERY_CHARS + 1)}, "query", "must be at most 4096 characters"),
        ({"profile": "fresh"}, "profile", "must be 'validity'"),
        ({"fusion": {"keyword_weight": 0.0, "dense_weight": 0.0}}, "fusion", "cannot both be 0"),
        ({"fusion": {"keyword_weight": 1.5}}, "fusion.keyword_weight", "must be at most 1"),
        (
            {"fusion": {"keyword_weight": "0.5"}},
            "fusion.keyword_weight",
            "must be a number",
        ),  # strict: no coercion
        ({"fusion": {"weight": 0.5}}, "fusion.weight", "unknown"),
        ({"expansion": {"max_variants": 65}}, "expansion.max_variants", "must be at most 64"),
        ({"expansion": {"min_stem_chars": 1}}, "expansion.min_stem_chars", ""),
        ({"querry": "db"}, "querry", "unknown"),
    ],
)
def test_a_bad_recall_argument_is_refused_naming_it(change: dict[str, Any], field: str, says: str) -> None:
    error = refused(RecallParams, {"query": "db", **change})
    assert error.field == field and says in error.message


@pytest.mark.parametrize(
    ("expansion", "config"),
    [
        (None, None),
        (False, None),
        (True, Expansion()),
        ({"enabled": False, "max_variants": 3}, None),
        ({"max_variants": 3}, Expansion(max_variants=3)),
    ],
)
def test_query_expansion_is_off_on_with_defaults_or_as_configured(expansion: Any, config: Any) -> None:
    assert validate(RecallParams, {"query": "db", "expansion": expansion}).expansion_config() == config


def test_scan_takes_a_memory_s_status_only() -> None:
    assert validate(ScanParams, {"status": "superseded"}).status == "superseded"
    error = refused(ScanParams, {"status": "deleted"})
    assert error.field == "status" and "'active', 'archived', 'expired' or 'superseded'" in error.message
    assert refused(ScanParams, {"cursor": "c" * 257}).field == "cursor"


def test_communities_refuse_a_decay_floor() -> None:
    error = refused(CommunitiesParams, {"min_decay": 0.5})
    assert error.field == "min_decay" and "does not apply to communities" in error.message
    assert validate(CommunitiesParams, {}).min_decay is None


def test_hygiene_s_filters_are_recall_s() -> None:
    h = validate(
        HygieneParams, {"type": "fact", "category": "ops notes", "agent_id": "ops", "min_age_days": 0}
    )
    f = h.filters()
    assert (f.type, f.category, f.topic_path, f.agent_id, f.workspace_hash) == (
        "fact",
        "ops notes",
        None,
        "ops",
        None,
    )
    error = refused(HygieneParams, {"category": "a\x00b"})
    assert error.field == "category"


def test_a_context_is_read_from_its_end() -> None:
    long = "old " * MAX_CONTEXT_CHARS + "the newest words"
    p = validate(PrepareParams, {"context": long})
    assert len(p.context) == MAX_CONTEXT_CHARS and p.context.endswith("the newest words")
    assert validate(RecallWhenParams, {"context": "short"}).context == "short"
    assert refused(RecallWhenParams, {}).field == "context"


def test_global_recall_needs_a_query() -> None:
    assert validate(GlobalRecallParams, {"query": "billing"}).query == "billing"
    assert refused(GlobalRecallParams, {}).field == "query"
    error = refused(GlobalRecallParams, {"query": "  "})
    assert error.field == "query" and error.message == "must contain a word"
