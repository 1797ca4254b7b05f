"""The shape of the store at a glance: ``counts`` (how many memories of each kind) and ``recent``
(the latest writes); what an overview shows before anyone searches (docs/scan.md, docs/time.md)."""

from __future__ import annotations

from pydantic import Field

from .base import MAX_LIMIT, Filters, ScopeParams


class CountsParams(Filters):
    """``counts``: the memories a view holds (recall's filters), counted by status, scope, type and category."""

    top: int = Field(
        default=20, ge=1, le=MAX_LIMIT, description="Most values listed per breakdown, largest first"
    )


class RecentParams(ScopeParams):
    """``recent``: every write (each version, as written), newest first, a keyset page at a time."""

    cursor: str | None = Field(
        default=None,
        max_length=256,
        description=("next_cursor of the previous page (omit for the newest writes)"),
    )
    limit: int = Field(default=20, ge=1, le=MAX_LIMIT, description="Most versions per page")
