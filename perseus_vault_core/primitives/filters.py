"""Which entity versions a read may see: the scope and time rules below, as SQL.

Every read path (recall, scan, traverse, ...) builds its WHERE clause here, so the tenancy
and time rules live in one place and are applied inside each query, never after it.
Queries alias ``entity_versions`` as ``v`` and ``entities`` as ``e``.

Views:

- current (no ``as_of_unix_ms`` / ``valid_at_unix_ms``): the head version of each entity.
- as of T: the version believed at T (``recorded_from <= T < recorded_to``).
- valid at V (believed at T, default now): for each entity, take the most recently recorded
  version, among those recorded by T, whose ``valid_from_ms`` is at or before V; the entity is
  in the view when that version's valid interval still contains V. (A newer version speaks
  for valid time from its own ``valid_from_ms`` on, so an update that starts later leaves the
  older version true before it, and an update that ends earlier ends the fact.)

In each view an entity is visible when it is ``active``, not expired and valid at the view's
instant, unless ``include_archived`` (which shows archived, expired and superseded ones;
validity still applies). A new entity's ``valid_from_ms`` is its creation time, so entities
created after an instant do not exist in that instant's view.

The current view judges each entity by its head: an update whose ``valid_from_ms`` lies in the
future hides the entity until then, even though the older version is still true meanwhile.
``valid_at_unix_ms=now`` answers that question by the rule above.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..contract import where as where_filter
from ..contract.params import Filters
from . import where_sql
from .dialect import Dialect, dialect
from .scopes import scope_key

# Every join between two scoped tables also equates their scope keys (scopes.py): the same rows (a version
# is in its entity's scope), and on a distributed PostgreSQL a join that stays inside one shard.
FROM = "entity_versions v JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope"
# Join orders pinned with CROSS JOIN (SQLite keeps that order): otherwise a scope equality lets
# the planner start from the scope index and visit every row of the tenant.
FROM_VERSIONS_FIRST = "entity_versions v CROSS JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope"


@cache
def _from_vids(d: Dialect) -> str:
    return (
        f"{d.ids(':vids')} j CROSS JOIN entity_versions v ON v.vid = j.value "
        "CROSS JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope"
    )


@cache
def _from_ids(d: Dialect) -> str:
    return (
        f"{d.ids(':ids')} j CROSS JOIN entities e ON e.id = j.value "
        "CROSS JOIN entity_versions v ON v.entity_id = e.id AND v.scope = e.scope"
    )


def from_vids(conn: Any) -> str:
    """``FROM`` the versions listed in ``:vids`` (an :func:`id_list`) with their entities, in ``conn``'s dialect."""
    return _from_vids(dialect(conn))


def from_ids(conn: Any) -> str:
    """``FROM`` the entities listed in ``:ids`` (an :func:`id_list`) with their versions, in ``conn``'s dialect."""
    return _from_ids(dialect(conn))


def id_list(ids: list[int]) -> str:
    """A JSON array of ids (read with :meth:`Dialect.ids`): one bound parameter however many ids."""
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


def _valid_at(alias: str, param: str) -> str:
    return (
        f"({alias}.valid_from_ms IS NULL OR {alias}.valid_from_ms <= :{param}) "
        f"AND ({alias}.valid_to_ms IS NULL OR {alias}.valid_to_ms > :{param})"
    )


# What the current view's rule reads of a head, in this order: the columns of :attr:`View.rule`. The first
# nine are the view's own; the others are what else a where may name (where.COLUMNS), so that a where on
# those alone is judged in memory too.
RULE_COLUMNS = (
    "v.valid_from_ms",
    "v.valid_to_ms",
    "v.status",
    "v.expires_at_ms",
    "e.agent_id",
    "e.workspace_hash",
    "e.category",
    "v.type",
    "v.topic_path",
    *dict.fromkeys(
        c
        for c, _ in where_filter.COLUMNS.values()
        if c
        not in (
            "v.valid_from_ms",
            "v.valid_to_ms",
            "v.status",
            "v.expires_at_ms",
            "e.agent_id",
            "e.workspace_hash",
            "e.category",
            "v.type",
            "v.topic_path",
        )
    ),
)
_RULE_AT = {name: RULE_COLUMNS.index(column) for name, (column, _) in where_filter.COLUMNS.items()}
Rule = Callable[[Sequence[Any]], bool]


@dataclass
class View:
    """A WHERE clause over ``v``/``e`` with its named parameters.

    ``rule``: the same clause as a test of one head version's :data:`RULE_COLUMNS`, for the current view
    (no time travel, no ``min_decay``: everything it reads is fixed once a version is written); ``None``
    for the others. A search whose candidates are all heads (an index's) checks them with it in memory
    instead of a statement (:func:`hits.visible_hits`); a test holds it to the SQL."""

    where: str
    params: dict[str, Any] = field(default_factory=dict)
    instant: int = 0  # the view's "now": validity, expiry and decay are judged here
    historical: bool = False
    narrowed: bool = False  # limited to a list of entities (``:only_ids``, see :func:`narrow`)
    rule: Rule | None = None
    condition: where_filter.Node | None = None  # the caller's where filter, parsed (its SQL is in ``where``)
    condition_sql: tuple[str, dict[str, Any]] | None = None  # that filter alone, as SQL with its parameters

    @property
    def scope(self) -> tuple[str | None, str | None]:
        """(agent_id, workspace_hash) as given; ``None`` is no filter on that field."""
        return self.params.get("agent_id"), self.params.get("workspace_hash")

    @property
    def scoped(self) -> bool:
        """Whether the view is limited to one agent or workspace (keyword statistics are then the scope's)."""
        return self.scope != (None, None)


# What narrows a view within its scope, status and point in time (the clauses :func:`view` adds for them).
NARROWING = ("category", "type", "topic_path", "where", "min_decay")


def narrows(filters: Filters) -> bool:
    """Whether ``filters`` narrow the view within its scope (:data:`NARROWING`)."""
    return any(getattr(filters, name) is not None for name in NARROWING)


def widened(filters: Filters, now_ms: int, d: Dialect) -> View:
    """The view of ``filters`` without what narrows it: its scope, status and point in time only."""
    return view(filters.model_copy(update=dict.fromkeys(NARROWING)), now_ms, d)


def view(filters: Filters, now_ms: int, d: Dialect | None = None) -> View:
    """Build the visibility clause for ``filters``, judging time at ``now_ms`` unless told otherwise.
    ``d``: the dialect of the connection that will run it (:func:`dialect.dialect`), which a ``where``
    filter needs."""
    now = filters.query_time_unix_ms if filters.query_time_unix_ms is not None else now_ms
    params: dict[str, Any] = {}
    clauses: list[str] = []
    as_of = filters.as_of_unix_ms
    valid_at = filters.valid_at_unix_ms
    if valid_at is not None:
        believed = as_of if as_of is not None else now
        params.update(believed=believed, valid_at=valid_at)
        clauses.append("v.recorded_from_ms <= :believed")
        clauses.append(_valid_at("v", "valid_at"))
        clauses.append(
            "NOT EXISTS (SELECT 1 FROM entity_versions w WHERE w.entity_id = v.entity_id AND w.scope = v.scope "
            "AND w.version > v.version AND w.recorded_from_ms <= :believed "
            "AND (w.valid_from_ms IS NULL OR w.valid_from_ms <= :valid_at))"
        )
        instant = valid_at
    elif as_of is not None:
        params["as_of"] = as_of
        clauses.append(
            "v.recorded_from_ms <= :as_of AND (v.recorded_to_ms IS NULL OR v.recorded_to_ms > :as_of)"
        )
        clauses.append(_valid_at("v", "as_of"))
        instant = as_of
    else:
        params["now"] = now
        clauses.append("v.recorded_to_ms IS NULL")
        clauses.append(_valid_at("v", "now"))
        instant = now
    params["instant"] = instant
    if not filters.include_archived:
        clauses.append("v.status = 'active' AND (v.expires_at_ms IS NULL OR v.expires_at_ms > :instant)")
    clauses.extend(scope_clauses(filters.agent_id, filters.workspace_hash, params, d))
    if filters.category is not None:
        clauses.append("e.category = :category")
        params["category"] = filters.category
    if filters.type is not None:
        clauses.append("v.type = :type")
        params["type"] = filters.type
    if filters.topic_path is not None:
        prefix = filters.topic_path.strip().strip("/")
        if prefix:
            # Segment prefix: "architecture" matches "architecture" and "architecture/storage".
            clauses.append("(v.topic_path = :topic OR substr(v.topic_path, 1, :topic_len) = :topic_slash)")
            params.update(topic=prefix, topic_slash=prefix + "/", topic_len=len(prefix) + 1)
    if filters.min_decay is not None:
        clauses.append(
            "pv_decay(:decay_now, e.last_accessed_ms, v.updated_at_ms, e.retrieval_count) >= :min_decay"
        )
        params.update(decay_now=now, min_decay=filters.min_decay)
    condition, condition_sql = None, None
    if filters.where is not None:
        if d is None:
            raise TypeError("view(): a where filter needs the connection's dialect")
        condition_sql = where_sql.sql(filters.where, d)
        clauses.append(condition_sql[0])
        params.update(condition_sql[1])
        condition = where_filter.parse(filters.where)
    # The rule judges a head by its columns: a where that reads a body field is left to SQL.
    current = (
        not filters.time_travel
        and filters.min_decay is None
        and (condition is None or where_filter.columns_only(condition))
    )
    return View(
        " AND ".join(clauses),
        params,
        instant,
        historical=filters.time_travel,
        rule=head_rule(filters, now, condition) if current else None,
        condition=condition,
        condition_sql=condition_sql,
    )


def head_rule(filters: Filters, now: int, condition: where_filter.Node | None = None) -> Rule:
    """The current view's clause (above) as a test of a head's :data:`RULE_COLUMNS`, operation for
    operation; a NULL compares false, as in SQL. ``condition``: a where on columns only
    (:func:`where.columns_only`), judged by :func:`.where_sql.evaluate`."""
    archived, agent, workspace = filters.include_archived, filters.agent_id, filters.workspace_hash
    category, kind = filters.category, filters.type
    prefix = (filters.topic_path or "").strip().strip("/") or None
    under = f"{prefix}/" if prefix else ""

    def rule(row: Sequence[Any]) -> bool:
        valid_from, valid_to, status, expires, agent_id, workspace_hash, cat, typ, topic = row[:9]
        if (valid_from is not None and valid_from > now) or (valid_to is not None and valid_to <= now):
            return False
        if not archived and (status != "active" or (expires is not None and expires <= now)):
            return False
        if (agent is not None and agent_id != agent) or (
            workspace is not None and workspace_hash != workspace
        ):
            return False
        if (category is not None and cat != category) or (kind is not None and typ != kind):
            return False
        if prefix is not None and (topic is None or (topic != prefix and topic[: len(under)] != under)):
            return False
        return condition is None or where_sql.evaluate(condition, lambda name: row[_RULE_AT[name]])

    return rule


def narrow(v: View, ids: list[int], d: Dialect) -> View:
    """``v`` restricted to the entities ``ids`` (global recall drills into chosen communities so).

    Searches over a narrowed view start from the ids (exact, and cheap for a short list) instead
    of ranking the whole store and walking down to them."""
    where = f"{v.where} AND e.id IN (SELECT value FROM {d.ids(':only_ids')} j)"
    return View(
        where,
        dict(v.params, only_ids=id_list(ids)),
        v.instant,
        v.historical,
        narrowed=True,
        condition=v.condition,
        condition_sql=v.condition_sql,
    )


def scope_clauses(
    agent_id: str | None, workspace_hash: str | None, params: dict[str, Any], d: Dialect | None = None
) -> list[str]:
    """Equality on each scope field that is given; an omitted field means no filter. With both, in a
    dialect that :attr:`~dialect.Dialect.routes_by_scope`, also on the scope key (``:scope``), by which a
    distributed PostgreSQL sends the query to one shard."""
    out = []
    if agent_id is not None:
        out.append("e.agent_id = :agent_id")
        params["agent_id"] = agent_id
    if workspace_hash is not None:
        out.append("e.workspace_hash = :workspace_hash")
        params["workspace_hash"] = workspace_hash
    if agent_id is not None and workspace_hash is not None and d is not None and d.routes_by_scope:
        out.append("e.scope = :scope")
        params["scope"] = scope_key(agent_id, workspace_hash)
    return out
