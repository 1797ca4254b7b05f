"""contract/params/overview.py: ``counts`` (recall's filters and how many values each breakdown lists) and
``recent`` (a scope and a keyset page), their defaults and bounds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from perseus_vault_core import InvalidInput
from perseus_vault_core.contract.params.base import MAX_LIMIT, validate
from perseus_vault_core.contract.params.overview import CountsParams, RecentParams


def test_the_defaults() -> None:
    counts = validate(CountsParams, {})
    assert counts.top == 20 and counts.category is None and not counts.time_travel
    recent = validate(RecentParams, {})
    assert (recent.cursor, recent.limit, recent.agent_id) == (None, 20, None)


def test_counts_take_recalls_filters() -> None:
    counts = validate(CountsParams, {"top": MAX_LIMIT, "category": "note", "as_of_unix_ms": "2026-01-01"})
    assert counts.top == MAX_LIMIT and counts.category == "note" and counts.time_travel


@pytest.mark.parametrize(
    ("model", "data", "field", "says"),
    [
        (CountsParams, {"top": 0}, "top", "must be at least 1"),
        (CountsParams, {"top": MAX_LIMIT + 1}, "top", f"must be at most {MAX_LIMIT}"),
        (CountsParams, {"top": "5"}, "top", "must be an integer"),
        (CountsParams, {"cursor": "x"}, "cursor", "unknown argument"),
        (RecentParams, {"limit": 0}, "limit", "must be at least 1"),
        (RecentParams, {"limit": MAX_LIMIT + 1}, "limit", f"must be at most {MAX_LIMIT}"),
        (RecentParams, {"cursor": "c" * 257}, "cursor", "must be at most 256 characters"),
        (RecentParams, {"category": "note"}, "category", "unknown argument"),
    ],
)
def test_out_of_bounds_is_refused_by_name(
    model: type[BaseModel], data: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        validate(model, data)
    assert raised.value.field == field
    assert says in raised.value.message
