"""``counts``: how many memories a view holds, by status, scope, type and category (docs/scan.md).

One grouped pass over the view's versions (recall's filters, time travel included) with every status
admitted, so that ``by_status`` can say how many memories were archived, expired or superseded while the
other breakdowns count only what the view shows (active memories unless ``include_archived``). The groups
are few (scopes x types x categories x statuses), so the breakdowns are summed here rather than by one
query each. Read-only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from typing import TypeVar

from ..contract.models import Counts, ScopeCount
from ..contract.params import CountsParams
from ..engine.engine import Engine
from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from ..primitives.filters import FROM_VERSIONS_FIRST, view
from ..records import store

K = TypeVar("K", bound=Hashable)


def counts(engine: Engine, p: CountsParams) -> Counts:
    """The ``counts`` verb, in one read snapshot."""
    with engine.reading() as conn:
        return tally(conn, p, engine.now())


def tally(conn: Connection, p: CountsParams, now_ms: int) -> Counts:
    v = view(p.model_copy(update={"include_archived": True}), now_ms, dialect(conn))
    sql = (
        f"SELECT e.agent_id, e.workspace_hash, v.type, e.category, {store.SHOWN_STATUS}, count(*) "
        f"FROM {FROM_VERSIONS_FIRST} WHERE {v.where} GROUP BY 1, 2, 3, 4, 5"
    )
    by_status: Counter[str] = Counter()
    scopes: Counter[tuple[str, str]] = Counter()
    types: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    for agent, workspace, kind, category, status, n in conn.execute(sql, v.params):
        by_status[status] += n
        if p.include_archived or status == "active":
            scopes[(agent, workspace)] += n
            types[kind] += n
            categories[category] += n
    return Counts(
        total=sum(types.values()),
        by_status=dict(largest(by_status, len(by_status))),
        by_scope=[
            ScopeCount(agent_id=a or None, workspace_hash=w or None, count=n)
            for (a, w), n in largest(scopes, p.top)
        ],
        by_type=dict(largest(types, p.top)),
        by_category=dict(largest(categories, p.top)),
        scopes=len(scopes),
        types=len(types),
        categories=len(categories),
    )


def largest(counter: Counter[K], n: int) -> list[tuple[K, int]]:
    """The ``n`` largest counts, ties in the order of their values (the same store, the same answer)."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0])))[:n]
