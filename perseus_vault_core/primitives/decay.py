"""A memory's decay: how fresh it still is, from when it was last used or changed and how often it was
recalled. Pure.

Every memory carries it (``Entity.decay``), ``min_decay`` filters by it, and the backends compute it
inside their queries: SQLite through the function the connection registers (``pv_decay``, this one),
PostgreSQL through the same formula written in SQL (storage/postgres/schema.py).
"""

from __future__ import annotations

import math

DAY_MS = 86_400_000
DECAY_HALF_LIFE_DAYS = 30.0


def decay(now_ms: int, last_accessed_ms: int | None, updated_at_ms: int, retrieval_count: int) -> float:
    """Freshness in (0, 1]: halves every half-life of idleness; use lengthens the half-life.

    idle      = now - max(last access, last update), never negative
    half-life = 30 days x (1 + log2(1 + retrieval_count))
    decay     = 0.5 ** (idle / half-life)

    Anchored by ``now_ms`` (``query_time_unix_ms``), so a result can be replayed exactly.
    """
    last = max(last_accessed_ms or 0, updated_at_ms)
    idle_days = max(0, now_ms - last) / DAY_MS
    half_life = DECAY_HALF_LIFE_DAYS * (1.0 + math.log2(1 + max(0, retrieval_count)))
    return float(0.5 ** (idle_days / half_life))
