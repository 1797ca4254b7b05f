"""``scan``: enumerate every visible entity exactly once, in keyset pages by id (docs/scan.md).

Ids are assigned ascending at insert under SQLite's write lock, so they ascend in commit
order: a scanner that has passed id N can never miss a later commit below N. Feeding
``next_cursor`` back until ``has_more`` is false therefore returns every entity in scope
exactly once, whatever other connections write or recall meanwhile. Read-only.

A cursor is opaque to callers: the last id returned, bound to the filters it was issued
under (reusing it with other filters is refused, since pages would not line up).
"""

from __future__ import annotations

import base64
import hashlib
import json

from pydantic import BaseModel

from ..contract.errors import InvalidInput
from ..contract.models import ScanPage
from ..contract.params import ScanParams
from ..engine.engine import Engine
from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from ..primitives.filters import FROM_VERSIONS_FIRST, view
from ..records import store

_CURSOR_VERSION = 1


def _fingerprint(params: BaseModel) -> str:
    scope = params.model_dump(exclude={"cursor", "limit", "query_time_unix_ms"})
    raw = json.dumps(scope, sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()[:16]


def encode_cursor(after_id: int, params: BaseModel) -> str:
    payload = json.dumps(
        {"v": _CURSOR_VERSION, "after": after_id, "f": _fingerprint(params)}, separators=(",", ":")
    )
    return base64.urlsafe_b64encode(payload.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, params: BaseModel) -> int:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        after = data["after"]
        ok = data.get("v") == _CURSOR_VERSION and type(after) is int and 0 <= after < 2**63
    except (ValueError, KeyError, TypeError, UnicodeError):
        ok = False
    if not ok:
        raise InvalidInput("cursor", "is not a cursor this vault issued; start without one")
    if data.get("f") != _fingerprint(params):
        raise InvalidInput("cursor", "was issued for different filters; start again without a cursor")
    return int(after)


def scan(engine: Engine, p: ScanParams) -> ScanPage:
    """The ``scan`` verb: the page ``p`` asks for, in one read snapshot."""
    with engine.reading() as conn:
        return page(conn, p, engine.now())


def page(conn: Connection, params: ScanParams, now_ms: int) -> ScanPage:
    after = decode_cursor(params.cursor, params) if params.cursor else 0
    # A status asked for is looked for among every status, then kept alone.
    v = view(
        params.model_copy(update={"include_archived": True}) if params.status else params,
        now_ms,
        dialect(conn),
    )
    args = dict(v.params, after=after, n=params.limit + 1)
    status = f" AND {store.status_clause(params.status, args)}" if params.status else ""
    sql = (
        f"SELECT {store.ENTITY_COLUMNS} FROM {FROM_VERSIONS_FIRST} WHERE {v.where}{status} AND v.entity_id > :after "
        "ORDER BY v.entity_id LIMIT :n"
    )
    rows = conn.execute(sql, args).fetchall()
    page = store.within_budget(rows[: params.limit])  # a page of huge memories ends early
    has_more = len(rows) > len(page)
    items = [store.to_entity(r, v.instant) for r in page]
    next_cursor = encode_cursor(items[-1].id, params) if has_more else None
    return ScanPage(items=items, next_cursor=next_cursor, has_more=has_more)
