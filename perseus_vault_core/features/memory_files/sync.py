"""Keeping the vault's memory files in step with their markdown: the reconciling write, the folder a
scope is bound to, and the reads of what is stored (docs/memory-files.md).

A sync makes the vault's memory files (and an imported folder's notes) match a set of file
records, in one transaction: entries and files that changed are written, those gone are archived
(history keeps them), notes' wikilinks become links. Unchanged entries are neither written nor
embedded again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...contract.memory_names import (
    ENTRY_TYPE,
    FILE_CATEGORY,
    FILE_TYPE,
    LINK_RELATION,
    NOTE_CATEGORY,
    entry_category,
)
from ...contract.models import MemoryImportReport
from ...contract.params import Filters, RememberInput, validate
from ...contract.params.writing import FileText
from ...engine.engine import Engine
from ...primitives.dialect import dialect
from ...primitives.filters import FROM, View, view
from ...records import store
from ...storage import Connection
from .. import graph
from .files import FileRecord, file_bytes
from .index import EntryIndex

BINDING_KEY = "memory_folder"
Note = tuple[dict[str, Any], list[str]]  # a note's memory item, and the names its wikilinks point at


# --- the bound folder ----------------------------------------------------------------------------


def _binding_key(agent_id: str | None, workspace_hash: str | None) -> str:
    return BINDING_KEY + ":" + json.dumps([agent_id or "", workspace_hash or ""])


def binding(
    engine: Engine, conn: Connection, agent_id: str | None, workspace_hash: str | None
) -> Path | None:
    """The folder a scope's memory files are bound to (each scope binds its own)."""
    value = engine.backend.get_meta(conn, _binding_key(agent_id, workspace_hash))
    return Path(value) if value is not None else None


def bind(
    engine: Engine, conn: Connection, directory: Path | None, agent_id: str | None, workspace_hash: str | None
) -> None:
    """Bind a scope's memory files to ``directory`` (None: unbind), in the caller's write."""
    engine.backend.set_meta(
        conn, _binding_key(agent_id, workspace_hash), str(directory) if directory else None
    )


# --- reads ---------------------------------------------------------------------------------------


def stored_files(conn: Connection, v: View) -> list[tuple[str, dict[str, Any], int]]:
    """The memory files ``v`` shows: (name, body, updated at), by name."""
    rows = conn.execute(
        f"SELECT e.key, v.body, v.updated_at_ms FROM {FROM} WHERE {v.where} ORDER BY e.key", v.params
    ).fetchall()
    return [(name, json.loads(body), int(updated)) for name, body, updated in rows]


def file_view(engine: Engine, agent_id: str | None, workspace_hash: str | None) -> View:
    return view(
        Filters(type=FILE_TYPE, category=FILE_CATEGORY, agent_id=agent_id, workspace_hash=workspace_hash),
        engine.now(),
        dialect(engine.conn()),
    )


def stored_bytes(
    conn: Connection, file: str, agent_id: str | None, workspace_hash: str | None
) -> bytes | None:
    """The exact bytes of an active stored memory file, or None."""
    entity_id = store.find_id(conn, FILE_CATEGORY, file, agent_id, workspace_hash)
    row = store.head_row(conn, entity_id) if entity_id is not None else None
    return file_bytes(json.loads(row["body"])) if row is not None and row["status"] == "active" else None


@dataclass
class KeptEntries:
    """The memory-entry index an open vault keeps between calls (``Engine.kept``), replaced when rebuilt."""

    index: EntryIndex | None = None


def entry_index(engine: Engine) -> EntryIndex:
    """The in-memory index of memory entries, rebuilt when the vault's current versions changed
    (or an expiry or validity boundary passed)."""
    now = engine.now()
    held = engine.kept(KeptEntries, KeptEntries)
    with engine.reading() as conn:
        seq = engine.backend.changes.position(conn)
        kept = held.index
        if kept is not None and kept.seq == seq and (kept.next_change is None or now < kept.next_change):
            return kept
        v = view(Filters(type=ENTRY_TYPE), now)
        rows = conn.execute(
            f"SELECT e.id, e.agent_id, e.workspace_hash, v.content, v.body, x.embedding, v.expires_at_ms, "
            f"v.valid_to_ms FROM {FROM} LEFT JOIN version_vectors x ON x.vid = v.vid AND x.scope = v.scope "
            f"WHERE {v.where} ORDER BY e.id",
            v.params,
        ).fetchall()
        future = conn.execute(
            "SELECT min(valid_from_ms) FROM entity_versions WHERE recorded_to_ms IS NULL AND valid_from_ms > ?",
            (now,),
        ).fetchone()[0]
        model = engine.backend.vectors.model(conn)
    bounds = [t for r in rows for t in (r[6], r[7]) if t is not None and t > now] + (
        [future] if future else []
    )
    index = EntryIndex(
        [r[:6] for r in rows], seq, min(bounds) if bounds else None, model[1] if model is not None else None
    )
    held.index = index
    return index


# --- the reconciling write -----------------------------------------------------------------------


@dataclass
class _Changes:
    items: list[RememberInput]  # what to write (checked)
    created_entries: int
    unchanged_entries: int
    stale: list[tuple[int, bool]]  # (entity id, is an entry) to archive


def _existing(
    conn: Connection, records: Sequence[FileRecord], agent: str, workspace: str, prune: bool
) -> dict[tuple[str, str], Sequence[Any]]:
    """The stored memory files, entries (and notes, with ``prune``) the sync may touch, by (category, key)."""
    select = (
        "SELECT e.id, e.category, e.key, v.content, v.summary, v.body, v.status FROM entities e "
        "JOIN entity_versions v ON v.entity_id = e.id AND v.scope = e.scope AND v.recorded_to_ms IS NULL "
        "WHERE e.agent_id = ? AND e.workspace_hash = ? AND "
    )
    if prune:  # the whole folder: every memory file, entry and note of the scope
        rows = conn.execute(
            select + "(e.category IN (?, ?) OR substr(e.category, 1, 7) = 'memory:')",
            (agent, workspace, FILE_CATEGORY, NOTE_CATEGORY),
        ).fetchall()
    else:  # an edit of some files: only their entries and file entities
        categories = [entry_category(r.name) for r in records] + [FILE_CATEGORY]
        rows = conn.execute(
            select + f"e.category IN (SELECT value FROM {dialect(conn).texts('?')} j)",
            (agent, workspace, json.dumps(categories)),
        ).fetchall()
    return {(r[1], r[2]): r for r in rows}


def _changes(
    records: Sequence[FileRecord],
    notes: Sequence[Note],
    scope: dict[str, Any],
    existing: dict[tuple[str, str], Sequence[Any]],
    prune: bool,
) -> _Changes:
    """What differs between the records and what is stored."""
    items: list[dict[str, Any]] = []
    for r in records:
        items.append(r.file_item(scope))
        items.extend(r.entry_items(scope))
    wanted = items + [n for n, _ in notes]
    changed, unchanged = [], 0
    for it in wanted:
        row = existing.get((it["category"], it["key"]))
        if (
            row is not None
            and row[6] == "active"
            and row[3] == it["content"]
            and row[4] == it.get("summary")
            and json.loads(row[5]) == it["body"]
        ):
            unchanged += it["type"] == ENTRY_TYPE
            continue
        changed.append(it)
    names = {r.name for r in records}
    keys = {(it["category"], it["key"]) for it in wanted}
    stale = []
    for (category, key), row in existing.items():
        if row[6] != "active" or (category, key) in keys:
            continue
        in_file = category.startswith("memory:") and category[7:] in names
        if in_file or (
            prune and (category.startswith("memory:") or category in (FILE_CATEGORY, NOTE_CATEGORY))
        ):
            stale.append((int(row[0]), category.startswith("memory:")))
    checked: list[RememberInput] = [
        validate(FileText, it, prefix=f"{it['category']}/{it['key']}") for it in changed
    ]
    return _Changes(checked, sum(it["type"] == ENTRY_TYPE for it in changed), unchanged, stale)


def _link_notes(
    engine: Engine, c: Connection, links: list[tuple[str, list[str]]], agent: str, workspace: str, now: int
) -> int:
    """Link each note to the notes its wikilinks name (by file name, case-insensitive); how many were made."""
    by_name: dict[str, int] = {}
    for entity_id, key in c.execute(
        "SELECT e.id, e.key FROM entities e JOIN entity_versions v ON v.entity_id = e.id AND v.scope = e.scope "
        "AND v.recorded_to_ms IS NULL WHERE e.agent_id = ? AND e.workspace_hash = ? AND e.category = ? "
        "AND v.status = 'active' ORDER BY e.key",
        (agent, workspace, NOTE_CATEGORY),
    ):
        by_name.setdefault(key.rsplit("/", 1)[-1].casefold(), int(entity_id))
    made = 0
    for key, targets in links:
        source = store.find_id(c, NOTE_CATEGORY, key, agent, workspace)
        ids = [by_name[t.casefold()] for t in targets if t.casefold() in by_name]
        if source is not None and ids:
            made += graph.link_many(engine.backend, c, source, ids, LINK_RELATION, now)
    return made


def sync(
    engine: Engine,
    records: list[FileRecord],
    scope: dict[str, Any],
    *,
    prune: bool,
    notes: Sequence[Note] = (),
    bind_to: Path | None = None,
    before_commit: Callable[[], None] | None = None,
) -> MemoryImportReport:
    """Make the vault's memory files (and notes) match ``records``, in one transaction: write what
    changed, archive entries that are gone (with ``prune``, also files and notes that are gone).
    ``before_commit`` runs last inside the transaction (a file rewrite): if it fails, nothing is written."""
    agent, workspace = scope["agent_id"] or "", scope["workspace_hash"] or ""
    with engine.reading() as conn:
        existing = _existing(conn, records, agent, workspace, prune)
    todo = _changes(records, notes, scope, existing, prune)
    links = [(n["key"], targets) for n, targets in notes if targets]
    report = MemoryImportReport(
        files=len(records),
        entries_created=todo.created_entries,
        entries_archived=sum(is_entry for _, is_entry in todo.stale),
        entries_unchanged=todo.unchanged_entries,
        notes=len(notes),
        links=0,
        skipped=[],
        bound_folder=str(bind_to) if bind_to else None,
    )
    if not (todo.items or todo.stale or links or bind_to or before_commit):
        return report
    plan = engine.plan(lambda c: store.texts_to_embed(c, todo.items))

    def work(c: Connection) -> int:
        now = engine.now()
        if todo.items:
            store.remember_batch(engine.backend, c, todo.items, now, plan)
        for entity_id, _ in todo.stale:
            store.forget(engine.backend, c, entity_id, None, None, now)
        made = _link_notes(engine, c, links, agent, workspace, now) if links else 0
        if bind_to is not None:
            bind(engine, c, bind_to, scope["agent_id"], scope["workspace_hash"])
        if before_commit is not None:
            before_commit()  # last: if it fails, the transaction rolls back
        return made

    report.links = engine.write_planned(plan, work)
    return report
