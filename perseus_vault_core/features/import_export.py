"""JSONL import and export: a lossless copy of entities, their whole history and their links.

Export writes one JSON object per line, sorted by id, keys sorted, UTF-8:

- ``{"record": "vault", "format": 1}``: the header;
- ``{"record": "entity", "id", "category", "key", "agent_id", "workspace_hash", "created_at_ms",
  "retrieval_count", "last_accessed_ms", "versions": [...]}``: one memory with every version,
  oldest first;
- ``{"record": "link", "id", "from_id", "to_id", "relation", "weight", "source", "created_at_ms",
  "recorded_from_ms", "recorded_to_ms"}``: one link row (open or closed).

Import reads that format back (into an empty vault it restores ids, times and history, so a
re-export is byte-identical), and also plain lines shaped like ``remember`` arguments
(``{"category", "key", "content", ...}``) for bulk loading. An entity whose (scope, category,
key) already exists is updated by its newest version, like ``remember``. One transaction:
a file imports whole or not at all.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from ..contract.errors import InvalidInput
from ..contract.models import ImportReport, Link
from ..contract.params import (
    MAX_INT,
    MAX_WEIGHT,
    ExportParams,
    ImportParams,
    RememberInput,
    texts_problem,
    validate,
)
from ..contract.text import line_break
from ..embeddings import embedding_text
from ..engine.engine import Engine
from ..primitives import file_locks
from ..primitives.scopes import scope_key
from ..records import store
from ..storage import Backend, Connection
from .graph import LINK_COLUMNS

FORMAT = 1
# An import tells the database's planner of the vault's size once it holds this many memories (or twice what it
# held), then each time that doubles again.
REFRESH_FIRST = 500
Progress = Callable[[int, int], None]

_STRICT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


Millis = Annotated[int, Field(ge=0, le=MAX_INT)]
Id = Annotated[int, Field(ge=1, le=MAX_INT)]


class VersionRecord(BaseModel):
    model_config = _STRICT

    version: Id
    change: str
    recorded_from_ms: Millis
    recorded_to_ms: Millis | None
    updated_at_ms: Millis
    type: str
    topic_path: str | None
    content: str
    summary: str | None
    body: dict[str, Any]
    source: str | None
    verified: bool
    certainty: float | None
    provenance_class: str | None
    recall_when: list[str]
    status: str
    valid_from_ms: Millis | None
    valid_to_ms: Millis | None
    expires_at_ms: Millis | None
    supersedes: Id | None
    superseded_by: Id | None


class EntityRecord(BaseModel):
    model_config = _STRICT

    record: str
    id: Id
    category: str
    key: str
    agent_id: str | None
    workspace_hash: str | None
    created_at_ms: Millis
    retrieval_count: int = Field(ge=0, le=MAX_INT)
    last_accessed_ms: Millis | None
    versions: list[VersionRecord] = Field(min_length=1)


class LinkRecord(Link):
    """A link row as exported: the :class:`Link` fields, validated strictly and bounded."""

    model_config = _STRICT

    record: str
    id: Id
    from_id: Id
    to_id: Id
    weight: float = Field(ge=-MAX_WEIGHT, le=MAX_WEIGHT)
    created_at_ms: Millis
    recorded_from_ms: Millis
    recorded_to_ms: Millis | None


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)


# --- export ------------------------------------------------------------------------------------


def export_lines(
    conn: Connection, agent_id: str | None = None, workspace_hash: str | None = None
) -> Iterator[str]:
    """Every entity (all statuses, all versions) and link in scope, as JSONL lines."""
    yield _dump({"record": "vault", "format": FORMAT})
    clauses, params = [], []
    if agent_id is not None:
        clauses.append("agent_id = ?")
        params.append(agent_id)
    if workspace_hash is not None:
        clauses.append("workspace_hash = ?")
        params.append(workspace_hash)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    entity_sql = (
        "SELECT id, category, key, agent_id, workspace_hash, created_at_ms, retrieval_count, last_accessed_ms "
        f"FROM entities {where} ORDER BY id"
    )
    version_cols = [
        "version",
        "change",
        "recorded_from_ms",
        "recorded_to_ms",
        "updated_at_ms",
        *store.STATE_FIELDS,
    ]
    ids = []
    for row in conn.execute(entity_sql, params).fetchall():
        eid, category, key, agent, workspace, created, count, last = row
        ids.append(eid)
        versions = []
        for vrow in conn.execute(
            f"SELECT {', '.join(version_cols)} FROM entity_versions WHERE entity_id = ? ORDER BY version",
            (eid,),
        ):
            v = dict(zip(version_cols, vrow))
            v.pop("tags")
            v["body"] = json.loads(v["body"])
            v["recall_when"] = json.loads(v["recall_when"])
            v["verified"] = bool(v["verified"])
            versions.append(v)
        yield _dump(
            {
                "record": "entity",
                "id": eid,
                "category": category,
                "key": key,
                "agent_id": agent or None,
                "workspace_hash": workspace or None,
                "created_at_ms": created,
                "retrieval_count": count,
                "last_accessed_ms": last,
                "versions": versions,
            }
        )

    link_names = [c.strip() for c in LINK_COLUMNS.split(",")]
    link_where = "WHERE (from_id, scope) IN (SELECT id, scope FROM entities " + where + ")" if where else ""
    for lrow in conn.execute(f"SELECT {LINK_COLUMNS} FROM links {link_where} ORDER BY id", params):
        yield _dump({"record": "link", **dict(zip(link_names, lrow))})


# --- import ------------------------------------------------------------------------------------


def open_target(path: str | os.PathLike[str], *, encrypted: bool) -> IO[str]:
    """``path`` opened to write an export into: a new file is created 0600 (an export holds every
    memory); an existing file keeps its mode, except that a plaintext export of an encrypted vault is
    never left readable by group or others (it becomes 0600). A FIFO or device is written as it is."""
    file_locks.refuse_held(path, "target")  # writing it would overwrite the vault, closing it drop its locks
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            if encrypted and info.st_mode & 0o077 and os.name == "posix":
                os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)  # only now: a refused chmod leaves the old content
        return os.fdopen(fd, "w", encoding="utf-8", newline="\n")
    except BaseException:
        os.close(fd)
        raise


def read_records(lines: Iterable[str]) -> list[tuple[int, dict[str, Any]]]:
    """Parse JSONL (blank lines skipped) into (line number, object) pairs."""
    out = []
    for number, line in enumerate(lines, start=1):
        if not isinstance(line, str):
            raise InvalidInput(f"line {number}", "must be text (one JSON object per line)")
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"line {number}", f"is not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise InvalidInput(f"line {number}", "is nested too deeply") from None
        if not isinstance(obj, dict):
            raise InvalidInput(f"line {number}", "must be a JSON object")
        out.append((number, obj))
    return out


def parse_records(
    records: list[tuple[int, dict[str, Any]]],
) -> tuple[list[tuple[int, EntityRecord]], list[tuple[int, LinkRecord]], list[tuple[int, RememberInput]]]:
    """Validate every record (nothing is written yet): entities, links and plain remember lines."""
    entities: list[tuple[int, EntityRecord]] = []
    links: list[tuple[int, LinkRecord]] = []
    plain: list[tuple[int, RememberInput]] = []
    for number, obj in records:
        kind = obj.get("record")
        where = f"line {number}"
        why = texts_problem(obj)  # every text of a record, whatever field holds it, as a live write's
        if why is not None:
            raise InvalidInput(where, why)
        if kind == "vault":
            if obj.get("format") != FORMAT:
                raise InvalidInput(f"{where}.format", f"unsupported export format {obj.get('format')!r}")
        elif kind == "entity":
            rec = validate(EntityRecord, obj, prefix=where)
            _check_history(rec, where)
            for i, ver in enumerate(rec.versions):
                _check_version(rec, ver, f"{where}.versions.{i}")
            entities.append((number, rec))
        elif kind == "link":
            links.append((number, validate(LinkRecord, obj, prefix=where)))
        elif kind is None:
            plain.append((number, validate(RememberInput, obj, prefix=where)))
        else:
            raise InvalidInput(f"{where}.record", f"unknown record kind {kind!r}")
    return entities, links, plain


def texts(entities: list[tuple[int, EntityRecord]], plain: list[tuple[int, RememberInput]]) -> list[str]:
    """Every text the import may store, for embedding before the write transaction."""
    out: dict[str, None] = {}
    for _, rec in entities:
        for ver in rec.versions:
            out[embedding_text(ver.content, ver.summary)] = None
    for _, item in plain:
        out[embedding_text(item.content, item.summary)] = None
    return list(out)


def import_records(
    backend: Backend,
    conn: Connection,
    parsed: tuple[
        list[tuple[int, EntityRecord]], list[tuple[int, LinkRecord]], list[tuple[int, RememberInput]]
    ],
    now_ms: int,
    progress: Progress | None = None,
    plan: store.VectorPlan | None = None,
) -> ImportReport:
    """Write validated records; the caller holds the write transaction (all or nothing)."""
    entities, links, plain = parsed
    # A vault's first vectors (a new vault's import, migrate's copy): its search index is built once, after them.
    first = (
        plan is not None
        and bool(plan.by_text)
        and backend.vectors.claim(conn, plan.identity, plan.dimension, defer_index=True)
    )
    total = len(entities) + len(links) + len(plain)
    report = ImportReport()
    done = 0
    # Reaching refresh_at takes at least REFRESH_FIRST / 2 records whatever the vault held (max(500 - held, held)):
    # a smaller import, the usual one, never refreshes, and skips counting the vault.
    held = (
        int(conn.execute("SELECT count(*) FROM entities").fetchone()[0]) if total >= REFRESH_FIRST // 2 else 0
    )
    refresh_at = max(REFRESH_FIRST, 2 * held)

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None and (done % 500 == 0 or done == total):
            progress(done, total)

    def grown() -> None:
        """After a write: once the vault has doubled since the planner last heard, tell it
        (backend.refresh_statistics), so the rest of the import runs on plans made for its size."""
        nonlocal refresh_at
        if held + done >= refresh_at:
            backend.refresh_statistics(conn)
            refresh_at = 2 * (held + done)

    id_map = _place_entities(backend, conn, entities, report)
    for _, rec in sorted(entities, key=lambda pair: pair[1].id):
        _write_entity(backend, conn, rec, id_map, now_ms, report, plan)
        tick()
        grown()
    top_link = backend.next_id(conn, "links") - 1
    for number, link in sorted(links, key=lambda pair: pair[1].id):
        top_link = _write_link(
            conn, link, id_map, number, top_link, report, keep_id=not backend.next_ids_only
        )
        tick()
        grown()
    for start in range(0, len(plain), 1000):
        chunk = [item for _, item in plain[start : start + 1000]]
        for _, outcome in store.remember_batch(backend, conn, chunk, now_ms, plan):
            setattr(report, outcome, getattr(report, outcome) + 1)
            tick()
        grown()  # once per batch: its rows are all written before its ticks
    if first:
        backend.vectors.build_index(conn)
    return report


def _check_history(rec: EntityRecord, where: str) -> None:
    """An entity's versions must form one history: ascending numbers, one head, the last."""
    numbers = [v.version for v in rec.versions]
    if numbers != sorted(set(numbers)):
        raise InvalidInput(f"{where}.versions", "version numbers must be unique and ascending")
    heads = [i for i, v in enumerate(rec.versions) if v.recorded_to_ms is None]
    if heads != [len(rec.versions) - 1]:
        raise InvalidInput(
            f"{where}.versions", "exactly one version, the last, must be current (recorded_to_ms null)"
        )
    for i, v in enumerate(rec.versions):
        if v.recorded_to_ms is not None and v.recorded_to_ms < v.recorded_from_ms:
            raise InvalidInput(f"{where}.versions.{i}", "recorded_to_ms is before recorded_from_ms")
        previous_end = rec.versions[i - 1].recorded_to_ms if i else None
        if previous_end is not None and previous_end > v.recorded_from_ms:
            # Overlapping beliefs would show the entity twice in a point-in-time view.
            raise InvalidInput(f"{where}.versions.{i}", "starts before the previous version ends")


def _check_version(rec: EntityRecord, ver: VersionRecord, where: str) -> None:
    """Hold imported history to the same limits as a live write."""
    validate(
        RememberInput,
        {
            "category": rec.category,
            "key": rec.key,
            "content": ver.content,
            "summary": ver.summary,
            "type": ver.type,
            "topic_path": ver.topic_path,
            "body": ver.body,
            "recall_when": ver.recall_when,
        },
        prefix=where,
    )
    if ver.status not in ("active", "archived", "superseded"):
        raise InvalidInput(f"{where}.status", f"unknown status {ver.status!r}")


def _place_entities(
    backend: Backend, conn: Connection, entities: list[tuple[int, EntityRecord]], report: ImportReport
) -> dict[int, int]:
    """Decide every imported entity's id in this vault, creating identity rows for new ones.

    An exported id is kept when it is above every id here (always so in an empty vault);
    otherwise the entity gets a new id, so ids still ascend in commit order for scanners.
    """
    id_map: dict[int, int] = {}
    top = backend.next_id(conn, "entities") - 1  # never an id used before, even a purged one
    for _, rec in sorted(entities, key=lambda pair: pair[1].id):
        existing = store.find_id(conn, rec.category, rec.key, rec.agent_id, rec.workspace_hash)
        if existing is not None:
            id_map[rec.id] = existing
            continue
        # An id of its own, never a NULL (Postgres's identity takes none); the file's own only where writers may choose.
        explicit = rec.id if rec.id > top and not backend.next_ids_only else top + 1
        ((new_id,),) = conn.execute(
            "INSERT INTO entities (id, agent_id, workspace_hash, category, key, created_at_ms, retrieval_count, "
            "last_accessed_ms, scope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                explicit,
                rec.agent_id or "",
                rec.workspace_hash or "",
                rec.category,
                rec.key,
                rec.created_at_ms,
                rec.retrieval_count,
                rec.last_accessed_ms,
                scope_key(rec.agent_id, rec.workspace_hash),
            ),
        ).fetchall()
        id_map[rec.id] = int(new_id)
        top = max(top, id_map[rec.id])
        report.created += 1
    return id_map


def _state(rec: EntityRecord, ver: VersionRecord, id_map: dict[int, int]) -> dict[str, Any]:
    state = ver.model_dump(include=set(store.STATE_FIELDS))
    state["body"] = json.dumps(ver.body, ensure_ascii=False, sort_keys=True, allow_nan=False)
    state["recall_when"] = json.dumps(ver.recall_when, ensure_ascii=False)
    state["verified"] = int(ver.verified)
    state["tags"] = store.tags_text(rec.category, rec.key, ver.topic_path)
    for ref in ("supersedes", "superseded_by"):
        if state[ref] is not None:
            state[ref] = id_map.get(state[ref], state[ref])
    return state


def _write_entity(
    backend: Backend,
    conn: Connection,
    rec: EntityRecord,
    id_map: dict[int, int],
    now_ms: int,
    report: ImportReport,
    plan: store.VectorPlan | None,
) -> None:
    eid = id_map[rec.id]
    prior = store.head_row(conn, eid)
    if prior is None:  # placed just now: restore the whole history as it was
        for ver in rec.versions:
            vid = store.insert_version(
                backend,
                conn,
                eid,
                ver.version,
                ver.change,
                ver.recorded_from_ms,
                ver.updated_at_ms,
                _state(rec, ver, id_map),
                recorded_to_ms=ver.recorded_to_ms,
            )
            text = embedding_text(ver.content, ver.summary)
            if plan is not None:
                backend.vectors.write(conn, [(vid, plan.vector(text))])
        return
    newest = _state(rec, rec.versions[-1], id_map)
    if all(prior[f] == newest[f] for f in store.STATE_FIELDS):
        report.unchanged += 1
        return
    store.new_version(backend, conn, prior, newest, "import", now_ms, plan)
    report.updated += 1


def _write_link(
    conn: Connection,
    link: LinkRecord,
    id_map: dict[int, int],
    number: int,
    top: int,
    report: ImportReport,
    keep_id: bool = True,
) -> int:
    """Insert one link row (keeping its id when it is above every link id here and ``keep_id``); return the top id.

    A row already present (the same ends, relation, weight, source and times) is skipped, so
    importing a file twice changes nothing.
    """
    where = f"line {number}"
    if not link.relation.strip() or len(link.relation) > 128:
        raise InvalidInput(f"{where}.relation", "must be a non-empty string of at most 128 characters")
    if line_break(link.relation) is not None:  # as a live link's (params.LinkParams)
        raise InvalidInput(f"{where}.relation", f"must be one line: it holds {line_break(link.relation)}")
    if link.recorded_to_ms is not None and link.recorded_to_ms < link.recorded_from_ms:
        raise InvalidInput(f"{where}.recorded_to_ms", "is before recorded_from_ms")
    a, b = id_map.get(link.from_id), id_map.get(link.to_id)
    if a is None or b is None:
        raise InvalidInput(where, f"link {link.id} refers to an entity not in this file")
    if a == b:
        raise InvalidInput(f"{where}.to_id", "a link needs two different entities")
    scopes = conn.execute(
        "SELECT count(*) FROM (SELECT DISTINCT agent_id, workspace_hash FROM entities WHERE id IN (?, ?)) AS scopes",
        (a, b),
    ).fetchone()[0]
    if scopes != 1:
        raise InvalidInput(f"{where}.to_id", "belongs to another scope (agent or workspace) than from_id")
    if link.recorded_to_ms is None:
        same = conn.execute(
            "SELECT 1 FROM links WHERE from_id = ? AND to_id = ? AND relation = ? AND recorded_to_ms IS NULL",
            (a, b, link.relation),
        ).fetchone()
    else:
        same = conn.execute(
            "SELECT 1 FROM links WHERE from_id = ? AND to_id = ? AND relation = ? AND weight = ? "
            "AND source IS NOT DISTINCT FROM ? AND created_at_ms = ? AND recorded_from_ms = ? AND recorded_to_ms = ?",
            (
                a,
                b,
                link.relation,
                link.weight,
                link.source,
                link.created_at_ms,
                link.recorded_from_ms,
                link.recorded_to_ms,
            ),
        ).fetchone()
    if same is not None:
        return top
    ((new_id,),) = conn.execute(  # in its from-entity's scope, read in the same statement
        "INSERT INTO links (id, from_id, to_id, relation, weight, source, created_at_ms, recorded_from_ms, "
        "recorded_to_ms, scope) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, e.scope FROM entities e WHERE e.id = ? RETURNING id",
        (
            link.id if link.id > top and keep_id else top + 1,
            a,
            b,
            link.relation,
            link.weight,
            link.source,
            link.created_at_ms,
            link.recorded_from_ms,
            link.recorded_to_ms,
            a,
        ),
    ).fetchall()
    report.links += 1
    return max(top, int(new_id))


# --- the verbs -----------------------------------------------------------------------------------


def import_jsonl(
    engine: Engine,
    p: ImportParams,
    progress: Progress | None = None,
    lines: IO[str] | Iterable[str] | None = None,
) -> ImportReport:
    """Import a JSONL file (an export, or lines shaped like ``remember`` arguments) in one transaction;
    ``lines``: the lines themselves (an open file, standard input), read instead of the file ``p`` names."""
    source = p.source if lines is None else lines
    if isinstance(source, str):
        file_locks.refuse_held(source, "source")  # never a descriptor of the vault's own file (its locks)
        try:
            with open(source, encoding="utf-8") as handle:
                records = read_records(handle)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput("source", f"cannot read {source}: {exc}") from None
    else:
        records = read_records(source)
    parsed = parse_records(records)
    plan = engine.plan(lambda conn: texts(parsed[0], parsed[2]))
    return engine.write_planned(
        plan, lambda c: import_records(engine.backend, c, parsed, engine.now(), progress, plan)
    )


def export_jsonl(engine: Engine, p: ExportParams, stream: IO[str] | None = None) -> int:
    """Write every entity (with its history) and link in scope as JSONL; the line count. ``stream``: an open
    file written instead of the file ``p`` names."""
    count = 0
    target = p.target if stream is None else stream
    with engine.reading() as conn:
        lines = export_lines(conn, p.agent_id, p.workspace_hash)
        if isinstance(target, str):
            try:
                handle = open_target(target, encrypted=engine.backend.encrypted)
            except OSError as exc:
                raise InvalidInput("target", f"cannot write {target}: {exc.strerror or exc}") from None
            with handle:
                for line in lines:
                    handle.write(line + "\n")
                    count += 1
        else:
            for line in lines:
                target.write(line + "\n")
                count += 1
    return count
