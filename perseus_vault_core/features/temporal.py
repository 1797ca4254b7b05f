"""History and point-in-time lookups of one fact (docs/time.md).

A fact is addressed by (category, key) within a scope; an omitted scope field means the
unscoped fact. Transaction time says when the vault *believed* a version
(``[recorded_from_ms, recorded_to_ms)``); valid time when the fact *held in the world*
(``[valid_from_ms, valid_to_ms)``, open ends allowed).

- ``as_of(T)``: the version believed at T.
- ``bitemporal(T, V)``: of the versions recorded by T, the latest whose ``valid_from_ms`` is at
  or before V, provided its valid interval still contains V (else ``None``). A newer version
  speaks for valid time from its own start on: an update valid from a later date leaves the
  older version true before that date; an update that ends the validity ends the fact.
- ``valid_at(V)``: ``bitemporal(now, V)``, what is true at V per current knowledge.

Each returns ``None`` when the fact exists but had no such version (for example T is
before it was first recorded); an unknown fact is :class:`NotFound`.

``recent`` reads the other way, across facts: every version as it was written, newest first. Version
ids ascend in commit order (as entity ids do, see :mod:`.scan`), so keyset pages on them never skip a
write or show one twice, whatever is written meanwhile (a new write is simply newer than the first page).
"""

from __future__ import annotations

from typing import Any

from ..contract.errors import NotFound
from ..contract.models import Entity, HistoryPage, ScanPage
from ..contract.params import (
    AsOfParams,
    BitemporalParams,
    FactParams,
    HistoryParams,
    RecentParams,
    ValidAtParams,
)
from ..engine.engine import Engine
from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from ..primitives.filters import FROM, FROM_VERSIONS_FIRST, scope_clauses
from ..records import store
from .scan import decode_cursor, encode_cursor


def resolve(
    conn: Connection, category: str, key: str, agent_id: str | None, workspace_hash: str | None
) -> int:
    entity_id = store.find_id(conn, category, key, agent_id, workspace_hash)
    if entity_id is None:
        scope = (
            f" (agent_id={agent_id!r}, workspace_hash={workspace_hash!r})"
            if agent_id or workspace_hash
            else ""
        )
        raise NotFound(f"no fact {category}/{key}{scope}")
    return entity_id


def fact(conn: Connection, p: FactParams) -> int:
    """The id of the fact ``p`` addresses, in its scope (:class:`NotFound` when there is none)."""
    return resolve(conn, p.category, p.key, p.agent_id, p.workspace_hash)


# --- the verbs: each reads in one snapshot ---------------------------------------------------------


def history(engine: Engine, p: HistoryParams) -> HistoryPage:
    with engine.reading() as conn:
        return versions(conn, fact(conn, p), p.limit, p.offset, engine.now())


def as_of(engine: Engine, p: AsOfParams) -> Entity | None:
    with engine.reading() as conn:
        return believed(conn, fact(conn, p), p.as_of_unix_ms)


def valid_at(engine: Engine, p: ValidAtParams) -> Entity | None:
    with engine.reading() as conn:
        return believed_true(conn, fact(conn, p), engine.now(), p.valid_at_unix_ms)


def bitemporal(engine: Engine, p: BitemporalParams) -> Entity | None:
    with engine.reading() as conn:
        return believed_true(conn, fact(conn, p), p.as_of_unix_ms, p.valid_at_unix_ms)


def recent(engine: Engine, p: RecentParams) -> ScanPage:
    with engine.reading() as conn:
        return latest_writes(conn, p, engine.now())


# --- given a connection in a read snapshot -----------------------------------------------------------


def versions(conn: Connection, entity_id: int, limit: int, offset: int, now_ms: int) -> HistoryPage:
    total = int(
        conn.execute("SELECT count(*) FROM entity_versions WHERE entity_id = ?", (entity_id,)).fetchone()[0]
    )
    rows = conn.execute(
        f"SELECT {store.ENTITY_COLUMNS} FROM {FROM} WHERE v.entity_id = ? ORDER BY v.version DESC LIMIT ? OFFSET ?",
        (entity_id, limit, offset),
    ).fetchall()
    items = [
        store.to_entity(r, now_ms) for r in store.within_budget(rows)
    ]  # huge versions: the page ends early
    return HistoryPage(items=items, total=total, has_more=offset + len(items) < total)


def believed(conn: Connection, entity_id: int, as_of_ms: int) -> Entity | None:
    row = conn.execute(
        f"SELECT {store.ENTITY_COLUMNS} FROM {FROM} WHERE v.entity_id = ? AND v.recorded_from_ms <= ? "
        "AND (v.recorded_to_ms IS NULL OR v.recorded_to_ms > ?) ORDER BY v.version DESC LIMIT 1",
        (entity_id, as_of_ms, as_of_ms),
    ).fetchone()
    return None if row is None else store.to_entity(row, as_of_ms)


def believed_true(conn: Connection, entity_id: int, as_of_ms: int, valid_at_ms: int) -> Entity | None:
    row = conn.execute(
        f"SELECT {store.ENTITY_COLUMNS} FROM {FROM} WHERE v.entity_id = ? AND v.recorded_from_ms <= ? "
        "AND (v.valid_from_ms IS NULL OR v.valid_from_ms <= ?) ORDER BY v.version DESC LIMIT 1",
        (entity_id, as_of_ms, valid_at_ms),
    ).fetchone()
    if row is None:
        return None
    entity = store.to_entity(row, valid_at_ms)
    if entity.valid_to_ms is not None and entity.valid_to_ms <= valid_at_ms:
        return None  # the latest word on V says the fact had ended by then
    return entity


def latest_writes(conn: Connection, p: RecentParams, now_ms: int) -> ScanPage:
    """The latest writes in scope, newest first: each version with its ``change`` (create, update, archive,
    restore, supersede) and its transaction time; a keyset page of ``p.limit``."""
    params: dict[str, Any] = {"n": p.limit + 1}
    clauses = scope_clauses(p.agent_id, p.workspace_hash, params, dialect(conn))
    if p.cursor:
        clauses.append("v.vid < :before")
        params["before"] = decode_cursor(p.cursor, p)
    where = f"WHERE {' AND '.join(clauses)} " if clauses else ""
    # Versions first, newest back (a scope's equality would otherwise start from the scope's entities and
    # sort all their versions: 30 ms instead of 0.05 for one tenant of 100,000 memories).
    rows = conn.execute(
        f"SELECT {store.ENTITY_COLUMNS} FROM {FROM_VERSIONS_FIRST} {where}ORDER BY v.vid DESC LIMIT :n",
        params,
    ).fetchall()
    page = store.within_budget(rows[: p.limit])
    has_more = len(rows) > len(page)
    last = store.row_dict(page[-1])["vid"] if page else 0
    return ScanPage(
        items=[store.to_entity(r, now_ms) for r in page],
        has_more=has_more,
        next_cursor=encode_cursor(last, p) if has_more else None,
    )
