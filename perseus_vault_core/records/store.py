"""Entities on disk: reading rows into :class:`Entity` values, and the write path.

Writes take a connection that is already inside a write transaction (see
:func:`connection.write_transaction`), so a caller can compose several of them into one
atomic unit (``remember_many``, import). A change never edits history: it closes the head
version (``recorded_to_ms``) and inserts a new one; the keyword indexes are updated
(the backend's ``keyword.index_versions`` / ``unindex_head``) in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from ..contract.errors import Conflict, InvalidInput, NotFound, StorageError
from ..contract.models import Entity, PurgeResult, RecallItem
from ..contract.params import OVERFLOW_PREVIEW_CHARS, RESPONSE_BUDGET_CHARS, RememberInput
from ..contract.text import preview as content_preview
from ..contract.text import preview_body
from ..embeddings import embedding_text
from ..primitives.decay import decay
from ..primitives.dialect import SQLITE, dialect
from ..primitives.filters import FROM, from_ids, from_vids, id_list, scope_clauses
from ..primitives.scopes import scope_key
from ..storage import Backend, Connection, trigger_terms

# Versioned fields, in entity_versions column order (after the bookkeeping columns).
STATE_FIELDS = (
    "type",
    "topic_path",
    "content",
    "summary",
    "tags",
    "body",
    "source",
    "verified",
    "certainty",
    "provenance_class",
    "recall_when",
    "status",
    "valid_from_ms",
    "valid_to_ms",
    "expires_at_ms",
    "supersedes",
    "superseded_by",
)

ENTITY_COLUMNS = (
    "e.id, e.category, e.key, e.agent_id, e.workspace_hash, e.created_at_ms, e.retrieval_count, "
    "e.last_accessed_ms, v.vid, v.version, v.change, v.recorded_from_ms, v.recorded_to_ms, v.updated_at_ms, "
    + ", ".join(f"v.{f}" for f in STATE_FIELDS)
)
_ENTITY_NAMES = [c.strip().split(".")[1] for c in ENTITY_COLUMNS.split(",")]


def tags_text(category: str, key: str, topic_path: str | None) -> str:
    """The text of the ``tags`` keyword column: where the memory is filed."""
    return f"{category} {key} {topic_path or ''}".strip()


def row_dict(row: Sequence[Any]) -> dict[str, Any]:
    return dict(zip(_ENTITY_NAMES, row))


def to_entity(row: Sequence[Any] | dict[str, Any], now_ms: int) -> Entity:
    """Build an :class:`Entity` from a row of :data:`ENTITY_COLUMNS` (decay and expiry judged at ``now_ms``)."""
    return Entity.model_validate(_fields(row, now_ms))


ItemT = TypeVar("ItemT", bound=RecallItem)


def to_item(
    row: Sequence[Any] | dict[str, Any], now_ms: int, score: float, ranks: dict[str, int]
) -> RecallItem:
    """A recall hit: the entity plus its score and its rank in each arm."""
    return to_hit(RecallItem, row, now_ms, score, ranks)


def to_hit(
    model: type[ItemT],
    row: Sequence[Any] | dict[str, Any],
    now_ms: int,
    score: float,
    ranks: dict[str, int],
    **extra: Any,
) -> ItemT:
    """A hit as ``model`` (a RecallItem subclass), with that model's ``extra`` fields."""
    return model.model_validate({**_fields(row, now_ms), "score": score, "ranks": ranks, **extra})


E = TypeVar("E", bound=Entity)


def preview(entity: E, cap: int) -> E:
    """``entity`` cut to about ``cap`` characters: content, summary and source cut, trigger phrases and
    body fields kept while they fit; the content's footer names the tool that reads it whole.
    Unchanged when it fits. (Its address, category, key and topic path, is never cut.)"""
    body, body_cut = preview_body(entity.body, cap)
    summary, source = entity.summary, entity.source
    triggers, room = [], cap
    for phrase in entity.recall_when:  # whole phrases while they fit
        if len(phrase) > room:
            break
        triggers.append(phrase)
        room -= len(phrase)
    cut = (
        body_cut
        or len(triggers) < len(entity.recall_when)
        or any(text is not None and len(text) > cap for text in (summary, source))
    )
    if not cut and len(entity.content) <= cap:
        return entity
    data = entity.model_dump()
    for name in entity.model_extra or {}:  # top-level copies of body fields: the new body decides
        data.pop(name, None)
    data.update(
        content=content_preview(entity.content, cap, entity.id, cut=cut),
        body=body,
        recall_when=triggers,
        summary=summary[:cap] if summary is not None else None,
        source=source[:cap] if source is not None else None,
    )
    return type(entity).model_validate(data)


def size(entity: Entity) -> int:
    """Characters of memory text an entity carries (content, summary, body as JSON)."""
    body = len(json.dumps(entity.body, ensure_ascii=False)) if entity.body else 0
    return len(entity.content) + len(entity.summary or "") + body


def within_budget(
    rows: Sequence[Sequence[Any]], budget: int = RESPONSE_BUDGET_CHARS
) -> Sequence[Sequence[Any]]:
    """The leading rows (of :data:`ENTITY_COLUMNS`) whose text fits ``budget``, at least one: where a
    page of whole memories ends early so that no answer grows without bound (docs/limits.md)."""
    left = budget
    for n, row in enumerate(rows):
        fields = row_dict(row)
        left -= len(fields["content"]) + len(fields["summary"] or "") + len(fields["body"])
        if left < 0 and n:
            return rows[:n]
    return rows


def fit(items: Iterable[E], budget: int = RESPONSE_BUDGET_CHARS) -> list[E]:
    """The response budget: items whole while their text fits ``budget``, previews after that
    (at least the first item whole), so that no answer grows without bound (docs/limits.md).
    ``items`` may be a generator: each is cut as it comes, so the whole ones never pile up."""
    left = budget
    out = []
    for n, item in enumerate(items):
        cost = size(item)
        if cost > left and n:
            item = preview(item, OVERFLOW_PREVIEW_CHARS)
            cost = size(item)
        left -= cost
        out.append(item)
    return out


def _fields(row: Sequence[Any] | dict[str, Any], now_ms: int) -> dict[str, Any]:
    """The wire fields of one row: body assembled, scope '' shown as null, status and decay judged at ``now_ms``."""
    fields = dict(row) if isinstance(row, dict) else dict(zip(_ENTITY_NAMES, row))
    del fields["vid"], fields["tags"]
    fields["body"] = json.loads(fields["body"]) if fields["body"] != "{}" else {}
    fields["agent_id"] = fields["agent_id"] or None
    fields["workspace_hash"] = fields["workspace_hash"] or None
    fields["verified"] = bool(fields["verified"])
    fields["recall_when"] = json.loads(fields["recall_when"]) if fields["recall_when"] != "[]" else []
    if (
        fields["status"] == "active"
        and fields["expires_at_ms"] is not None
        and fields["expires_at_ms"] <= now_ms
    ):
        fields["status"] = "expired"
    fields["decay"] = decay(
        now_ms, fields["last_accessed_ms"], fields["updated_at_ms"], fields["retrieval_count"]
    )
    # Callers use model_validate (not model_construct): it is faster here, and it checks the row.
    return fields


# A version's status as a memory shows it (see ``_fields``): an active one past its expiry is expired.
SHOWN_STATUS = (
    "CASE WHEN v.status = 'active' AND v.expires_at_ms IS NOT NULL AND v.expires_at_ms <= :instant "
    "THEN 'expired' ELSE v.status END"
)


def status_clause(status: str, params: dict[str, Any]) -> str:
    """A clause over ``v`` holding the versions that show ``status`` at ``:instant`` (a view's instant)."""
    params["shown_status"] = status
    return f"{SHOWN_STATUS} = :shown_status"


# --- reads -------------------------------------------------------------------------------------


def head_row(conn: Connection, entity_id: int) -> dict[str, Any] | None:
    row = conn.execute(
        f"SELECT {ENTITY_COLUMNS} FROM {FROM} WHERE e.id = ? AND v.recorded_to_ms IS NULL", (entity_id,)
    ).fetchone()
    return None if row is None else row_dict(row)


def head_rows(conn: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Head rows for ``ids`` (missing ids are simply absent)."""
    sql = f"SELECT {ENTITY_COLUMNS} FROM {from_ids(conn)} WHERE v.recorded_to_ms IS NULL"
    return {r["id"]: r for r in map(row_dict, conn.execute(sql, {"ids": id_list(list(ids))}))}


def version_rows(conn: Connection, vids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Rows for specific versions, keyed by entity id (one version per entity in a view)."""
    sql = f"SELECT {ENTITY_COLUMNS} FROM {from_vids(conn)}"
    return {r["id"]: r for r in map(row_dict, conn.execute(sql, {"vids": id_list(list(vids))}))}


def rows_in_order(conn: Connection, vids: Sequence[int], chunk: int = 64) -> Iterator[dict[str, Any]]:
    """Rows for these versions, in this order, read a chunk at a time (a page of large memories is
    never all in memory at once; see :func:`fit`)."""
    for start in range(0, len(vids), chunk):
        part = list(vids[start : start + chunk])
        found = {
            r["vid"]: r
            for r in map(
                row_dict,
                conn.execute(f"SELECT {ENTITY_COLUMNS} FROM {from_vids(conn)}", {"vids": id_list(part)}),
            )
        }
        yield from (found[vid] for vid in part if vid in found)


def find_id(
    conn: Connection, category: str, key: str, agent_id: str | None, workspace_hash: str | None
) -> int | None:
    row = conn.execute(
        "SELECT id FROM entities WHERE agent_id = ? AND workspace_hash = ? AND category = ? AND key = ?",
        (agent_id or "", workspace_hash or "", category, key),
    ).fetchone()
    return None if row is None else int(row[0])


def key_family(
    conn: Connection, category: str, key: str, agent_id: str | None, workspace_hash: str | None, limit: int
) -> list[int]:
    """The newest ``limit`` entities of the scope and category whose key is of ``key``'s family: the same first
    word (``prod-region``, ``prod-region-2024``), read as one range of the entities' unique index."""
    first = key.split("-", 1)[0]
    scope = (agent_id or "", workspace_hash or "", category)
    if dialect(conn) is SQLITE:
        # SQLite reads the range by the index only from bounds alone (with the OR, it scanned every key of the
        # category); in its byte order "-" sorts just before ".", so the OR then only drops what is in the range
        # and not the family ("prod region").
        return [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM entities WHERE agent_id = ? AND workspace_hash = ? AND category = ? AND key >= ? AND "
                "key < ? AND (key = ? OR key >= ?) ORDER BY id DESC LIMIT ?",
                (*scope, first, first + ".", first, first + "-", limit),
            )
        ]
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT id FROM entities WHERE agent_id = ? AND workspace_hash = ? AND category = ? AND "
            "(key = ? OR (key >= ? AND key < ?)) ORDER BY id DESC LIMIT ?",
            (*scope, first, first + "-", first + ".", limit),
        )
    ]


def scoped_head(
    conn: Connection, entity_id: int, agent_id: str | None, workspace_hash: str | None
) -> dict[str, Any]:
    """The head row of ``entity_id`` if it exists in the caller's scope, else :class:`NotFound`."""
    params: dict[str, Any] = {"id": entity_id}
    clauses = [
        "e.id = :id",
        "v.recorded_to_ms IS NULL",
        *scope_clauses(agent_id, workspace_hash, params, dialect(conn)),
    ]
    row = conn.execute(
        f"SELECT {ENTITY_COLUMNS} FROM {FROM} WHERE {' AND '.join(clauses)}", params
    ).fetchone()
    if row is None:
        raise NotFound(f"no entity with id {entity_id} in this scope")
    return row_dict(row)


# --- writes ------------------------------------------------------------------------------------


def _state_from_input(item: RememberInput, prior: dict[str, Any] | None) -> dict[str, Any]:
    """The versioned state ``item`` asks for; on an update, fields it does not set keep their values."""
    given = item.model_fields_set
    keep = prior is not None

    def pick(name: str, value: Any) -> Any:
        return prior[name] if keep and name not in given else value  # type: ignore[index]

    topic_path = pick("topic_path", item.topic_path)
    extra = item.extra_body()
    return {
        "type": pick("type", item.type),
        "topic_path": topic_path,
        "content": item.content,
        "summary": pick("summary", item.summary),
        "tags": tags_text(item.category, item.key, topic_path),
        "body": pick("body", json.dumps(extra, ensure_ascii=False, sort_keys=True) if extra else "{}"),
        "source": pick("source", item.source),
        "verified": int(bool(pick("verified", item.verified))),
        "certainty": pick("certainty", item.certainty),
        "provenance_class": pick("provenance_class", item.provenance_class),
        "recall_when": pick(
            "recall_when", json.dumps(item.recall_when, ensure_ascii=False) if item.recall_when else "[]"
        ),
        "status": "active",
        "valid_from_ms": pick("valid_from_ms", item.valid_from_ms),
        "valid_to_ms": pick("valid_to_ms", item.valid_to_ms),
        "expires_at_ms": pick("expires_at_ms", item.expires_at_ms),
        "supersedes": prior["supersedes"] if prior else None,
        "superseded_by": None,
    }


def insert_version(
    backend: Backend,
    conn: Connection,
    entity_id: int,
    version: int,
    change: str,
    recorded_from_ms: int,
    updated_at_ms: int,
    state: dict[str, Any],
    recorded_to_ms: int | None = None,
) -> int:
    # Every row is given its id (never a column default): one writer at a time takes the largest plus one, so
    # ids ascend in commit order on every backend, a distributed one included (docs/postgres.md, Citus).
    vid = backend.next_id(conn, "entity_versions", "vid")
    cols = (
        "vid",
        "entity_id",
        "version",
        "change",
        "recorded_from_ms",
        "recorded_to_ms",
        "updated_at_ms",
        *STATE_FIELDS,
    )
    values = (
        vid,
        entity_id,
        version,
        change,
        recorded_from_ms,
        recorded_to_ms,
        updated_at_ms,
        *(state[f] for f in STATE_FIELDS),
        entity_id,
    )
    conn.execute(  # in its entity's scope, read in the same statement
        f"INSERT INTO entity_versions ({', '.join(cols)}, scope) SELECT {', '.join('?' * len(cols))}, e.scope "
        "FROM entities e WHERE e.id = ?",
        values,
    )
    backend.keyword.index_versions(
        conn, [(vid, state["content"], state["summary"], state["tags"])], heads=recorded_to_ms is None
    )
    if (
        state["recall_when"] != "[]"
    ):  # the trigger-phrase index, in the same transaction (in its entity's scope)
        scope = conn.execute("SELECT scope FROM entity_versions WHERE vid = ?", (vid,)).fetchone()[0]
        trigger_terms.write(conn, [(vid, scope, state["recall_when"])])
    return int(vid)


@dataclass
class VectorPlan:
    """Vectors computed before a write transaction, by the text they embed, and their model."""

    identity: str
    dimension: int
    by_text: dict[str, np.ndarray] = field(default_factory=dict)
    # New trigger phrases, by (scope key, phrase): each scope keeps its own (storage/base.py), written with the batch.
    phrases: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    def vector(self, text: str) -> np.ndarray:
        """The planned vector of ``text``, for a version being written; a text the plan did not foresee raises
        :class:`MissingVectors` (:func:`write_planned`)."""
        found = self.by_text.get(text)
        if found is None:
            raise MissingVectors([text])
        return found


class MissingVectors(Exception):
    """Raised inside a write transaction (which then rolls back) when a version is about to be stored
    with a text its plan did not foresee: :func:`write_planned` embeds ``texts`` and runs it again."""

    def __init__(self, texts: list[str]) -> None:
        super().__init__(f"{len(texts)} text(s) to embed")
        self.texts = texts


PLANNED_ATTEMPTS = 5  # runs of a planned write, each meeting texts the last did not, before it gives up
T = TypeVar("T")


def write_planned(
    write: Callable[[Callable[[Connection], T]], T],
    embed: Callable[[list[str]], np.ndarray],
    plan: VectorPlan | None,
    work: Callable[[Connection], T],
) -> T:
    """A write whose new versions need vectors: the whole protocol, in this one place.

    1. Before the transaction, the caller embedded the texts it expects the write to store (``plan``,
       ``Engine.plan``): the model never runs inside a transaction.
    2. ``work`` runs in one transaction (``write``); each version it stores takes its vector from the plan
       (:meth:`VectorPlan.vector`). A text the plan did not foresee (a batch touching one memory twice, a
       concurrent writer that changed what the plan read) raises :class:`MissingVectors`, and the
       transaction rolls back.
    3. The missing texts are embedded (``embed``, outside the transaction) into the plan, and ``work`` runs
       again, from the start.

    No version is ever stored without its vector. After :data:`PLANNED_ATTEMPTS` runs that each met new
    texts, :class:`StorageError`: the vault kept changing under the write."""
    for _ in range(PLANNED_ATTEMPTS):
        try:
            return write(work)
        except MissingVectors as missing:
            assert plan is not None
            plan.by_text.update(zip(missing.texts, embed(missing.texts)))
    raise StorageError("the vault kept changing under this write; try again")


def _vectorize(
    backend: Backend,
    conn: Connection,
    vid: int,
    state: dict[str, Any],
    prior: dict[str, Any] | None,
    plan: VectorPlan | None,
) -> None:
    """Give a new version its vector: the planned one for its text, else its predecessor's when
    the text did not change (a status or field change keeps the meaning)."""
    text = embedding_text(state["content"], state["summary"])
    if prior is not None and text == embedding_text(prior["content"], prior["summary"]):
        backend.vectors.copy(conn, prior["vid"], vid)
    elif plan is not None:
        backend.vectors.write(conn, [(vid, plan.vector(text))])


def new_version(
    backend: Backend,
    conn: Connection,
    prior: dict[str, Any],
    state: dict[str, Any],
    change: str,
    now_ms: int,
    plan: VectorPlan | None = None,
) -> None:
    """Close ``prior`` (the head) and make ``state`` the new head of the same entity."""
    at = max(now_ms, prior["recorded_from_ms"])  # never record before the version we close
    conn.execute("UPDATE entity_versions SET recorded_to_ms = ? WHERE vid = ?", (at, prior["vid"]))
    backend.keyword.unindex_head(conn, prior["vid"], prior["content"], prior["summary"], prior["tags"])
    vid = insert_version(backend, conn, prior["id"], prior["version"] + 1, change, at, at, state)
    _vectorize(backend, conn, vid, state, prior, plan)


def _same(prior: dict[str, Any], state: dict[str, Any]) -> bool:
    return all(prior[f] == state[f] for f in STATE_FIELDS)


_ENTITY_INSERT = (
    "INSERT INTO entities (id, agent_id, workspace_hash, category, key, created_at_ms, scope) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_VERSION_INSERT = (
    "INSERT INTO entity_versions (vid, entity_id, version, change, recorded_from_ms, recorded_to_ms, updated_at_ms, "
    + ", ".join(STATE_FIELDS)
    + f", scope) VALUES ({', '.join('?' * (8 + len(STATE_FIELDS)))})"
)


def remember_batch(
    backend: Backend,
    conn: Connection,
    items: Sequence[RememberInput],
    now_ms: int,
    plan: VectorPlan | None = None,
) -> list[tuple[int, str]]:
    """Create or update each item by (scope, category, key), in order, as if one by one.

    Returns (id, "created" | "updated" | "unchanged") per item. New entities are written with
    ``executemany`` (ids assigned ascending in item order); updates go one by one after them,
    which gives the same result as strict order because an update only touches an entity that
    exists by then.
    """
    if plan is not None and plan.by_text:
        backend.vectors.claim(
            conn, plan.identity, plan.dimension
        )  # refuses another model before anything is written
    results: list[tuple[int, str] | None] = [None] * len(items)
    fresh: dict[tuple[str, str, str, str], int] = {}
    later: list[tuple[int, int | None]] = []  # (item index, its entity id when it already exists)
    for i, item in enumerate(items):
        address = (item.agent_id or "", item.workspace_hash or "", item.category, item.key)
        existing = (
            None if address in fresh else find_id(conn, item.category, item.key, address[0], address[1])
        )
        if address in fresh or existing is not None:
            later.append((i, existing))
        else:
            fresh[address] = i
    if fresh:
        first_id = backend.next_id(conn, "entities")
        first_vid = backend.next_id(conn, "entity_versions", "vid")
        entity_rows, version_rows, index_rows, vector_rows = [], [], [], []
        for n, (address, i) in enumerate(fresh.items()):
            item = items[i]
            state = _state_from_input(item, None)
            if state["valid_from_ms"] is None:
                state["valid_from_ms"] = now_ms
            _check_window(state)
            eid, vid = first_id + n, first_vid + n
            scope = scope_key(address[0], address[1])
            entity_rows.append((eid, *address, now_ms, scope))
            version_rows.append(
                (vid, eid, 1, "create", now_ms, None, now_ms, *(state[f] for f in STATE_FIELDS), scope)
            )
            index_rows.append((vid, state["content"], state["summary"], state["tags"]))
            text = embedding_text(state["content"], state["summary"])
            if plan is not None:
                vector_rows.append((vid, plan.vector(text)))
            results[i] = (eid, "created")
        conn.executemany(_ENTITY_INSERT, entity_rows)
        conn.executemany(_VERSION_INSERT, version_rows)
        backend.keyword.index_versions(conn, index_rows, heads=True)
        trigger_terms.write(
            conn, ((row[0], row[-1], row[7 + STATE_FIELDS.index("recall_when")]) for row in version_rows)
        )
        backend.vectors.write(conn, vector_rows)
    for i, existing in later:
        results[i] = _update(backend, conn, items[i], now_ms, existing, plan)
    if (
        plan is not None and plan.phrases
    ):  # so the first recall_when or prepare after it embeds only its context
        backend.vectors.write_phrase_vectors(conn, plan.identity, plan.phrases)
    return [r for r in results if r is not None]


def _check_window(state: dict[str, Any]) -> None:
    """valid_to must follow valid_from, also when one of them was defaulted or kept from before."""
    start, end = state["valid_from_ms"], state["valid_to_ms"]
    if start is not None and end is not None and end <= start:
        raise InvalidInput("valid_to_ms", f"must be later than valid_from_ms ({start})")


def _update(
    backend: Backend,
    conn: Connection,
    item: RememberInput,
    now_ms: int,
    entity_id: int | None,
    plan: VectorPlan | None,
) -> tuple[int, str]:
    if entity_id is None:  # created earlier in the same batch
        entity_id = find_id(conn, item.category, item.key, item.agent_id, item.workspace_hash)
    assert entity_id is not None
    prior = head_row(conn, entity_id)
    assert prior is not None, "every entity has a head version"
    if prior["superseded_by"] is not None:  # superseded, or archived after being superseded
        raise Conflict(
            f"entity {entity_id} ({item.category}/{item.key}) is superseded by entity {prior['superseded_by']}; "
            "update that one instead"
        )
    state = _state_from_input(item, prior)
    _check_window(state)
    if _same(prior, state):
        return entity_id, "unchanged"
    change = "restore" if prior["status"] != "active" else "update"
    new_version(backend, conn, prior, state, change, now_ms, plan)
    return entity_id, "updated"


def _restate(prior: dict[str, Any], **changes: Any) -> dict[str, Any]:
    state = {f: prior[f] for f in STATE_FIELDS}
    state.update(changes)
    return state


def forget(
    backend: Backend,
    conn: Connection,
    entity_id: int,
    agent_id: str | None,
    workspace_hash: str | None,
    now_ms: int,
) -> None:
    """Archive (soft-delete): reversible by remembering the same (category, key) again."""
    prior = scoped_head(conn, entity_id, agent_id, workspace_hash)
    if prior["status"] == "archived":
        return
    new_version(backend, conn, prior, _restate(prior, status="archived"), "archive", now_ms)


def purge(
    backend: Backend, conn: Connection, entity_id: int, agent_id: str | None, workspace_hash: str | None
) -> PurgeResult:
    """Delete an archived entity with its whole history and links. The only way to lose data."""
    prior = scoped_head(conn, entity_id, agent_id, workspace_hash)
    if prior["status"] != "archived":
        raise Conflict(f"entity {entity_id} is {prior['status']}; forget (archive) it before purging")
    keep_high_water(backend, conn)
    links = conn.execute("DELETE FROM links WHERE from_id = ? OR to_id = ?", (entity_id, entity_id)).rowcount
    backend.keyword.unindex_versions(conn, entity_id)
    vids = [
        row[0] for row in conn.execute("SELECT vid FROM entity_versions WHERE entity_id = ?", (entity_id,))
    ]
    backend.vectors.delete(conn, vids)
    triggered = [
        (int(vid), scope, text)
        for vid, scope, text in conn.execute(
            "SELECT vid, scope, recall_when FROM entity_versions WHERE entity_id = ? AND recall_when != '[]'",
            (entity_id,),
        )
    ]
    trigger_terms.delete(conn, triggered)
    phrases = {p for _, _, text in triggered for p in json.loads(text)}
    versions = conn.execute("DELETE FROM entity_versions WHERE entity_id = ?", (entity_id,)).rowcount
    conn.execute("DELETE FROM entities WHERE id = ?", (entity_id,))
    backend.vectors.forget_phrases(
        conn, scope_key(prior["agent_id"], prior["workspace_hash"]), sorted(phrases)
    )
    return PurgeResult(id=entity_id, versions=versions, links=links)


ID_COLUMNS = (("entities", "id"), ("entity_versions", "vid"), ("links", "id"))


def keep_high_water(backend: Backend, conn: Connection) -> None:
    """Before a purge deletes rows: record each table's largest id so far (``vault_meta``,
    ``high_water:<table>``), which ``next_id`` counts, so that an id a purged row had is never given again,
    even where no sequence remembers it (the rows give their ids themselves)."""
    for table, column in ID_COLUMNS:
        backend.set_meta(conn, f"high_water:{table}", str(backend.next_id(conn, table, column) - 1))


def supersede(
    backend: Backend,
    conn: Connection,
    old_id: int,
    new_id: int,
    agent_id: str | None,
    workspace_hash: str | None,
    now_ms: int,
) -> None:
    """Mark ``old_id`` as superseded by ``new_id`` (both versioned; the chain is kept both ways)."""
    if old_id == new_id:
        raise InvalidInput("new_id", "an entity cannot supersede itself")
    old = scoped_head(conn, old_id, agent_id, workspace_hash)
    new = scoped_head(conn, new_id, agent_id, workspace_hash)
    if (old["agent_id"], old["workspace_hash"]) != (new["agent_id"], new["workspace_hash"]):
        raise InvalidInput("new_id", "belongs to another scope than old_id")
    if old["status"] == "superseded":
        if old["superseded_by"] == new_id:
            return
        raise Conflict(f"entity {old_id} is already superseded by entity {old['superseded_by']}")
    new_version(
        backend, conn, old, _restate(old, status="superseded", superseded_by=new_id), "supersede", now_ms
    )
    if new["supersedes"] != old_id:
        new_version(backend, conn, new, _restate(new, supersedes=old_id), "supersede", now_ms)


def reinforce(conn: Connection, ids: Iterable[int], now_ms: int) -> None:
    """Count a retrieval: usage state only, never a new version."""
    ids = list(ids)
    if ids:
        marks = ",".join("?" * len(ids))
        conn.execute(
            f"UPDATE entities SET retrieval_count = retrieval_count + 1, last_accessed_ms = ? WHERE id IN ({marks})",
            (now_ms, *ids),
        )


def phrases_to_embed(
    backend: Backend, conn: Connection, items: Sequence[RememberInput], model: str
) -> list[tuple[str, str]]:
    """The trigger phrases of a batch, as (scope key, phrase), that their scope has no stored vector of for ``model``
    yet: another scope's vector of the same phrase is never used, so that what one tenant stored never makes
    another's write cheaper."""
    wanted = sorted(
        {(scope_key(item.agent_id, item.workspace_hash), p) for item in items for p in item.recall_when}
    )
    if not wanted:
        return []
    known = backend.vectors.phrase_vectors(conn, model, wanted)
    return [w for w in wanted if w not in known]


def texts_to_embed(conn: Connection, items: Sequence[RememberInput]) -> list[str]:
    """The texts a batch will store that no current version already carries (read before writing:
    embedding happens outside the write transaction, which stays short)."""
    needed: dict[str, None] = {}
    for item in items:
        entity_id = find_id(conn, item.category, item.key, item.agent_id, item.workspace_hash)
        prior = head_row(conn, entity_id) if entity_id is not None else None
        summary = item.summary if prior is None or "summary" in item.model_fields_set else prior["summary"]
        text = embedding_text(item.content, summary)
        if prior is None or text != embedding_text(prior["content"], prior["summary"]):
            needed[text] = None
    return list(needed)
