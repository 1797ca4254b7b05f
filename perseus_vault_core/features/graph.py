"""Links between entities and walks over them (docs/graph.md).

A link is a typed (``relation``), weighted, directed edge. Linking the same
(from, to, relation) again with the same weight and source is a no-op; with another weight or
source it closes the old row and opens a new one, and ``unlink`` closes rows. Closed rows are history:
a walk ``as_of`` T follows the links that were open at T.

Both ends of a link live in the same scope (agent and workspace), and ``traverse``
applies the caller's scope and time view to every node it reaches, so a walk can
neither start from nor pass through an entity the caller may not see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..contract.errors import InvalidInput, NotFound
from ..contract.models import Link, TraverseNode, TraverseResult
from ..contract.params import LinkParams, TraverseParams, UnlinkParams
from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from ..primitives.filters import View, from_ids, id_list, view
from ..primitives.scopes import scope_key
from ..recall.curation import INFERRED
from ..records import store
from ..storage.base import Backend

if TYPE_CHECKING:
    from ..engine.engine import Engine

LINK_COLUMNS = "id, from_id, to_id, relation, weight, source, created_at_ms, recorded_from_ms, recorded_to_ms"
MAX_DEPTH = 10
MAX_NODES = 1_000


def _link(row: Any) -> Link:
    names = [c.strip() for c in LINK_COLUMNS.split(",")]
    return Link(**dict(zip(names, row)))


def link(engine: Engine, p: LinkParams) -> Link:
    """The ``link`` verb: add (or re-weight) the edge ``p`` describes, in one transaction."""
    return engine.write(
        lambda c: open_link(
            engine.backend,
            c,
            p.from_id,
            p.to_id,
            p.relation,
            float(p.weight),
            p.source,
            p.agent_id,
            p.workspace_hash,
            engine.now(),
        )
    )


def unlink(engine: Engine, p: UnlinkParams) -> int:
    """The ``unlink`` verb: close the links ``p`` names, in one transaction; how many closed."""
    return engine.write(
        lambda c: close_links(c, p.from_id, p.to_id, p.relation, p.agent_id, p.workspace_hash, engine.now())
    )


def traverse(engine: Engine, p: TraverseParams) -> TraverseResult:
    """The ``traverse`` verb: the walk ``p`` asks for, in one read snapshot, under its scope and time view."""
    with engine.reading() as c:
        v = view(p, engine.now(), dialect(c))
        return walk(c, p.start, p.depth, p.relations, p.direction, v, p.inferred)


def open_link(
    backend: Backend,
    conn: Connection,
    from_id: int,
    to_id: int,
    relation: str,
    weight: float,
    source: str | None,
    agent_id: str | None,
    workspace_hash: str | None,
    now_ms: int,
) -> Link:
    if from_id == to_id:
        raise InvalidInput("to_id", "a link needs two different entities")
    a = store.scoped_head(conn, from_id, agent_id, workspace_hash)
    b = store.scoped_head(conn, to_id, agent_id, workspace_hash)
    if (a["agent_id"], a["workspace_hash"]) != (b["agent_id"], b["workspace_hash"]):
        raise InvalidInput("to_id", "belongs to another scope (agent or workspace) than from_id")
    if source != INFERRED:  # someone's word on a pair wins over the vault's: the pair's inferred links close
        conn.execute(
            "UPDATE links SET recorded_to_ms = CASE WHEN recorded_from_ms > ? THEN recorded_from_ms ELSE ? END "
            "WHERE recorded_to_ms IS NULL AND source = ? AND ((from_id = ? AND to_id = ?) OR "
            "(from_id = ? AND to_id = ?))",
            (now_ms, now_ms, INFERRED, from_id, to_id, to_id, from_id),
        )
    open_row = conn.execute(
        f"SELECT {LINK_COLUMNS} FROM links WHERE from_id = ? AND to_id = ? AND relation = ? AND recorded_to_ms IS NULL",
        (from_id, to_id, relation),
    ).fetchone()
    created = now_ms
    if open_row is not None:
        current = _link(open_row)
        if current.weight == weight and current.source == source:
            return current
        at = max(now_ms, current.recorded_from_ms)
        conn.execute("UPDATE links SET recorded_to_ms = ? WHERE id = ?", (at, current.id))
        created, now_ms = current.created_at_ms, at
    (row,) = conn.execute(  # its id given, never the column's default (store.insert_version says why)
        "INSERT INTO links (id, from_id, to_id, relation, weight, source, created_at_ms, recorded_from_ms, scope) "
        f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING {LINK_COLUMNS}",
        (
            backend.next_id(conn, "links"),
            from_id,
            to_id,
            relation,
            weight,
            source,
            created,
            now_ms,
            scope_key(a["agent_id"], a["workspace_hash"]),
        ),
    ).fetchall()
    return _link(row)


def link_many(
    backend: Backend,
    conn: Connection,
    from_id: int,
    to_ids: list[int],
    relation: str,
    now_ms: int,
    weight: float = 1.0,
) -> int:
    """Open a link from ``from_id`` to each of ``to_ids`` that lacks one (for links the vault makes
    itself between entities it knows share a scope). Returns how many were opened."""
    open_now = {
        int(r[0])
        for r in conn.execute(
            "SELECT to_id FROM links WHERE from_id = ? AND relation = ? AND recorded_to_ms IS NULL",
            (from_id, relation),
        )
    }
    targets = [t for t in sorted(set(to_ids)) if t not in open_now and t != from_id]
    first = backend.next_id(conn, "links") if targets else 0
    rows = [(first + n, from_id, t, relation, weight, now_ms, now_ms, from_id) for n, t in enumerate(targets)]
    conn.executemany(  # in the from-entity's scope, read in the same statement; ids given, ascending
        "INSERT INTO links (id, from_id, to_id, relation, weight, created_at_ms, recorded_from_ms, scope) "
        "SELECT ?, ?, ?, ?, ?, ?, ?, e.scope FROM entities e WHERE e.id = ?",
        rows,
    )
    return len(rows)


def close_links(
    conn: Connection,
    from_id: int,
    to_id: int,
    relation: str | None,
    agent_id: str | None,
    workspace_hash: str | None,
    now_ms: int,
) -> int:
    """Close the open link(s) from ``from_id`` to ``to_id`` (one relation, or all). Returns how many."""
    store.scoped_head(conn, from_id, agent_id, workspace_hash)
    store.scoped_head(conn, to_id, agent_id, workspace_hash)
    # Never before it opened (a clock that stepped back); CASE, as SQLite's max(a, b) is Postgres's greatest(a, b).
    sql = (
        "UPDATE links SET recorded_to_ms = CASE WHEN recorded_from_ms > ? THEN recorded_from_ms ELSE ? END "
        "WHERE from_id = ? AND to_id = ? AND recorded_to_ms IS NULL"
    )
    params: list[Any] = [now_ms, now_ms, from_id, to_id]
    if relation is not None:
        sql += " AND relation = ?"
        params.append(relation)
    return int(conn.execute(sql, params).rowcount)


def open_links(view: View, alias: str = "l") -> tuple[str, dict[str, Any]]:
    """The links open in ``view``: now, or at its point in time (a clause over ``links`` as ``alias``)."""
    if view.historical:
        at = view.params.get("believed", view.params.get("as_of"))
        return (
            f"{alias}.recorded_from_ms <= :link_at AND ({alias}.recorded_to_ms IS NULL "
            f"OR {alias}.recorded_to_ms > :link_at)"
        ), {"link_at": at}
    return f"{alias}.recorded_to_ms IS NULL", {}


def walk(
    conn: Connection,
    start: int,
    depth: int,
    relations: list[str] | None,
    direction: str,
    view: View,
    inferred: bool = True,
) -> TraverseResult:
    """Breadth-first walk from ``start`` to ``depth`` hops; each node once, at its shortest depth; without the
    links the vault inferred at write time (features/relations.py) unless ``inferred``.

    Neighbours are visited in (relation, id) order, so the walk and its paths are deterministic.
    """
    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidInput("depth", f"must be between 0 and {MAX_DEPTH}")
    rows = _visible(conn, [start], view)
    if start not in rows:
        raise NotFound(f"no entity with id {start} visible in this scope and view")
    nodes = [TraverseNode(entity=store.to_entity(rows[start], view.instant), depth=0, path=[start])]
    paths = {start: [start]}
    edges: list[Link] = []
    seen_edges: set[int] = set()
    frontier = [start]
    link_clause, link_params = open_links(view)
    if not inferred:
        link_clause = f"{link_clause} AND (l.source IS NULL OR l.source <> :inferred)"
        link_params = dict(link_params, inferred=INFERRED)
    for hop in range(1, depth + 1):
        if not frontier or len(nodes) >= MAX_NODES:
            break
        candidates: list[tuple[int, Link]] = []  # (from frontier node, link)
        for node in frontier:
            candidates.extend(
                (node, edge) for edge in _edges(conn, node, relations, direction, link_clause, link_params)
            )
        neighbour_ids = sorted({_other(edge, node) for node, edge in candidates})
        visible = _visible(conn, neighbour_ids, view)
        next_frontier: list[int] = []
        for node, edge in candidates:
            other = _other(edge, node)
            if other not in visible:
                continue
            if edge.id not in seen_edges:
                seen_edges.add(edge.id)
                edges.append(edge)
            if other in paths or len(nodes) >= MAX_NODES:
                continue
            paths[other] = paths[node] + [other]
            nodes.append(
                TraverseNode(
                    entity=store.to_entity(visible[other], view.instant), depth=hop, path=paths[other]
                )
            )
            next_frontier.append(other)
        frontier = next_frontier
    entities = store.fit([n.entity for n in nodes])  # a walk over huge memories: previews past the budget
    nodes = [n.model_copy(update={"entity": e}) for n, e in zip(nodes, entities)]
    return TraverseResult(start=start, nodes=nodes, edges=edges)


def _other(edge: Link, node: int) -> int:
    return edge.to_id if edge.from_id == node else edge.from_id


def _edges(
    conn: Connection,
    node: int,
    relations: list[str] | None,
    direction: str,
    clause: str,
    params: dict[str, Any],
) -> list[Link]:
    sides = {"out": ["from_id"], "in": ["to_id"], "both": ["from_id", "to_id"]}[direction]
    out: list[Link] = []
    for side in sides:
        sql = f"SELECT {', '.join('l.' + c.strip() for c in LINK_COLUMNS.split(','))} FROM links l WHERE l.{side} = :node AND {clause}"
        p = dict(params, node=node)
        if relations:
            marks = ", ".join(f":rel{i}" for i in range(len(relations)))
            sql += f" AND l.relation IN ({marks})"
            p.update({f"rel{i}": r for i, r in enumerate(relations)})
        out.extend(_link(r) for r in conn.execute(sql, p))
    out.sort(key=lambda edge: (edge.relation, _other(edge, node), edge.id))
    return out


def _visible(conn: Connection, ids: list[int], view: View) -> dict[int, dict[str, Any]]:
    """Rows of those ``ids`` that the view lets the caller see."""
    out: dict[int, dict[str, Any]] = {}
    sql = f"SELECT {store.ENTITY_COLUMNS} FROM {from_ids(conn)} WHERE {view.where}"
    for row in conn.execute(sql, dict(view.params, ids=id_list(ids))):
        d = store.row_dict(row)
        out[d["id"]] = d
    return out
