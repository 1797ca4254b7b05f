"""Is a hit still valid for the asking context? Freshness, scope, provenance, supersession, expiry. Pure.

The figures (for users in docs/recall.md, "Startup ranking and the validity profile"):

    freshness   0.5 ^ (age since last update / 30 days)
    multiplier  freshness
                x 1.10 when the memory's workspace is the query's
                x 1.15 when verified (or provenance_class "corroborated"); weaker provenance is never penalised
                x 0.35 when superseded or expired
                x 0.70 when it expires within one half-life (30 days)
    grade       context_invalid: expired, superseded, or freshness < 0.125
                stale: expiring within a half-life, or freshness < 0.5
                valid: otherwise

The multiplier re-ranks hybrid results (it never excludes anything); other modes only annotate.
"""

from __future__ import annotations

from typing import Literal

from ..contract.models import Validity

HALF_LIFE_MS = 30 * 86_400_000


def validity(
    *,
    now_ms: int,
    updated_at_ms: int,
    status: str,
    superseded_by: int | None,
    expires_at_ms: int | None,
    verified: bool,
    provenance_class: str | None,
    workspace_hash: str | None,
    query_workspace: str | None,
) -> Validity:
    freshness = 0.5 ** (max(0, now_ms - updated_at_ms) / HALF_LIFE_MS)
    scope_match = query_workspace is not None and workspace_hash == query_workspace
    corroborated = verified or provenance_class == "corroborated"
    superseded = status == "superseded" or superseded_by is not None
    expired = status == "expired" or (expires_at_ms is not None and expires_at_ms <= now_ms)
    expiring_soon = not expired and expires_at_ms is not None and expires_at_ms - now_ms <= HALF_LIFE_MS
    multiplier = freshness
    if scope_match:
        multiplier *= 1.10
    if corroborated:
        multiplier *= 1.15
    if superseded or expired:
        multiplier *= 0.35
    if expiring_soon:
        multiplier *= 0.70
    if expired or superseded or freshness < 0.125:
        grade: Literal["valid", "stale", "context_invalid"] = "context_invalid"
    elif expiring_soon or freshness < 0.5:
        grade = "stale"
    else:
        grade = "valid"
    return Validity(
        multiplier=round(multiplier, 6),
        grade=grade,
        freshness=round(freshness, 6),
        scope_match=scope_match,
        corroborated=corroborated,
        superseded=superseded,
        expired=expired,
        expiring_soon=expiring_soon,
    )
