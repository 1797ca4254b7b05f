"""The memory-file verbs: import and export a folder, read, add and delete entries, recall by topic
(docs/memory-files.md), and ``search`` over the folder's other notes. Each takes the engine and its verb's
validated params model from the facade."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...contract.errors import Conflict, InvalidInput, NotFound
from ...contract.memory_names import NOTE_TYPE, check_name
from ...contract.models import (
    MemoryChange,
    MemoryEntry,
    MemoryExportReport,
    MemoryFileInfo,
    MemoryFiles,
    MemoryImportReport,
    MemoryRecallResult,
    MemoryText,
    RecallResult,
    SkippedLine,
)
from ...contract.params import (
    AddMemoryParams,
    DeleteMemoryParams,
    GetMemoryParams,
    ListMemoryFilesParams,
    MemoryExportParams,
    MemoryImportParams,
    MemoryRecallParams,
    RecallParams,
    ScopeParams,
)
from ...embeddings import checked
from ...engine.engine import Engine
from . import edits, files, index, sync
from .parser import parse


def _scope(agent_id: str | None, workspace_hash: str | None) -> dict[str, Any]:
    return {"agent_id": agent_id, "workspace_hash": workspace_hash}


def memory_import(engine: Engine, p: MemoryImportParams) -> MemoryImportReport:
    """Import the memory files of ``folder/memory_dir`` (or of ``folder``) and the folder's notes."""
    root = Path(p.folder).expanduser().resolve()
    if not root.is_dir():
        raise InvalidInput("folder", f"{p.folder} is not a folder")
    directory = files.memory_dir(root, p.memory_dir)
    scope = _scope(p.agent_id, p.workspace_hash)
    found = files.read_folder(root, directory, scope)  # symlinks out and control characters skipped
    report = sync.sync(
        engine, found.records, scope, prune=True, notes=found.notes, bind_to=directory if p.bind else None
    )
    report.skipped = found.skipped + [
        SkippedLine(file=r.name, line=s.line, text=s.text, reason=s.reason)
        for r in found.records
        for s in r.parsed.skipped
    ]
    return report


def memory_unbind(engine: Engine, p: ScopeParams) -> bool:
    with engine.reading() as conn:
        had = sync.binding(engine, conn, p.agent_id, p.workspace_hash) is not None
    if had:
        engine.write(lambda c: sync.bind(engine, c, None, p.agent_id, p.workspace_hash))
    return had


def _base(
    engine: Engine, file: str, agent_id: str | None, workspace_hash: str | None, *, adding: bool = False
) -> tuple[bytes, Path | None, bool]:
    """The current bytes of a memory file (from the bound folder when there is one, else as
    stored), the path to rewrite (when bound), and whether the file exists at all."""
    with engine.reading() as conn:
        folder = sync.binding(engine, conn, agent_id, workspace_hash)
        stored = sync.stored_bytes(conn, file, agent_id, workspace_hash)
    return files.current(folder, file, stored, adding=adding)  # only imported files, only inside the folder


def _rewrite(
    engine: Engine, p: AddMemoryParams | DeleteMemoryParams, record: files.FileRecord, path: Path | None
) -> None:
    """Store the file's new bytes (and, when bound, rewrite the markdown file atomically first)."""
    data = record.data
    with engine.memory_lock:
        sync.sync(
            engine,
            [record],
            _scope(p.agent_id, p.workspace_hash),
            prune=False,
            before_commit=(lambda: files.write_atomic(path, data)) if path is not None else None,
        )


def add_memory(engine: Engine, p: AddMemoryParams) -> MemoryChange:
    date = p.date or time.strftime("%Y-%m-%d", time.gmtime(engine.now() / 1000))
    base, path, _ = _base(engine, p.file, p.agent_id, p.workspace_hash, adding=True)
    try:
        data, offset = edits.add_entry(base, p.section.strip(), p.text.strip(), date)
    except ValueError as exc:  # the file's shape leaves no place where the entry would read back whole
        raise InvalidInput("text", str(exc)) from None
    record = files.record(p.file, data)
    entry = next((e for e in record.parsed.entries if e.start == offset), None)
    if entry is None:
        raise InvalidInput("text", "would not read back as one dated entry (check its first line)")
    _rewrite(engine, p, record, path)
    return MemoryChange(
        file=p.file,
        entry=MemoryEntry(file=p.file, section=entry.section, date=entry.date, text=entry.text),
        written=str(path) if path is not None else None,
    )


def delete_memory(engine: Engine, p: DeleteMemoryParams) -> MemoryChange:
    base, path, exists = _base(engine, p.file, p.agent_id, p.workspace_hash)
    if not exists:
        raise NotFound(f"no memory file {p.file!r}")
    found = [
        e
        for e in parse(p.file, base).entries
        if e.section == p.section.strip()
        and (p.date is None or e.date == p.date)
        and (p.text is None or p.text == e.text or p.text in e.text)
    ]
    if not found:
        raise NotFound(f"no entry in {p.file} / {p.section} matches")
    if len(found) > 1:
        raise Conflict(
            f"{len(found)} entries in {p.file} / {p.section} match; give the date and more of the text"
        )
    _rewrite(engine, p, files.record(p.file, edits.remove_entry(base, found[0])), path)
    e = found[0]
    return MemoryChange(
        file=p.file,
        entry=MemoryEntry(file=p.file, section=e.section, date=e.date, text=e.text),
        written=str(path) if path is not None else None,
    )


def get_memory(engine: Engine, p: GetMemoryParams) -> MemoryText:
    base, _, exists = _base(engine, p.file, p.agent_id, p.workspace_hash)
    if not exists:
        raise NotFound(f"no memory file {p.file!r} (list them with list_memory_files)")
    parsed = parse(p.file, base)
    match = None
    if p.section is not None:
        match = next((s for s in parsed.sections if s.title == p.section.strip()), None)
        if match is None:
            raise NotFound(f"no section {p.section!r} in memory file {p.file!r}")
    text = base[match.start : match.end] if match is not None else base
    entries = (
        [
            MemoryEntry(file=p.file, section=e.section, date=e.date, text=e.text)
            for e in parsed.entries
            if match is None or e.section == match.title
        ]
        if p.entries
        else None
    )
    return MemoryText(
        file=p.file,
        section=match.title if match is not None else None,
        text=text.decode("utf-8", errors="replace"),
        entries=entries,
    )


def list_memory_files(engine: Engine, p: ListMemoryFilesParams) -> MemoryFiles:
    v = sync.file_view(engine, p.agent_id, p.workspace_hash)
    with engine.reading() as conn:
        stored = sync.stored_files(conn, v)
        folder = sync.binding(engine, conn, p.agent_id, p.workspace_hash)
    out = []
    for name, body, updated in stored:
        parsed = parse(name, files.file_bytes(body))
        out.append(
            MemoryFileInfo(
                file=name,
                entries=len(parsed.entries),
                sections=[s.title for s in parsed.sections],
                updated_at_ms=updated,
            )
        )
    return MemoryFiles(files=out, bound_folder=str(folder) if folder is not None else None)


def memory_export(engine: Engine, p: MemoryExportParams) -> MemoryExportReport:
    target = Path(p.folder)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput("folder", f"cannot create {p.folder}: {exc.strerror}") from None
    v = sync.file_view(engine, p.agent_id, p.workspace_hash)
    with engine.reading() as conn:
        stored = sync.stored_files(conn, v)
    names = [name for name, _, _ in stored]
    if len(set(names)) < len(names):
        raise InvalidInput(
            "agent_id", "memory files of several scopes share a name; export one scope at a time"
        )
    written = files.export_files(target, [(name, files.file_bytes(body)) for name, body, _ in stored])
    return MemoryExportReport(folder=str(target), files=written)


def _cross(engine: Engine) -> Any:
    """The cross-encoder for memory_recall: the one passed to the vault, else the operator's
    ``PERSEUS_VAULT_CROSS_ENCODER`` model folder (loaded once), else None."""
    if engine.cross_encoder is None:
        path = os.environ.get(index.CROSS_ENCODER_ENV)
        if path:
            engine.cross_encoder = index.load_cross_encoder(path)
    return engine.cross_encoder


def _meaning(
    engine: Engine, entries: index.EntryIndex, topic: index.Topic, rows: np.ndarray
) -> np.ndarray | None:
    """Each row's meaning score (its cosine to the topic plus its heading's), or None without vectors."""
    if entries.vectors is None or engine.embedder is None:
        return None
    identity, dimension = engine.embedder_model()
    with engine.reading() as conn:
        engine.backend.vectors.check_model(
            conn, identity, dimension
        )  # another model's query would rank noise
    embedder = engine.embedder
    known = engine.heading_vectors.setdefault(identity, {})
    headings = entries.heading_vectors(lambda texts: checked(embedder, texts), known)
    return entries.meaning(engine.embed_query(topic.text), headings, rows)


def memory_recall(engine: Engine, p: MemoryRecallParams) -> MemoryRecallResult:
    """Entries of the memory files about ``p.query``, oldest first (rules in docs/memory-files.md)."""
    empty = MemoryRecallResult(entries=[], total=0, truncated=False, search_mode="fts", reranked=False)
    if p.file is not None and check_name(p.file):
        return empty  # no memory file can have that name
    entries = sync.entry_index(engine)
    rows = entries.rows(p.agent_id, p.workspace_hash, p.file)
    if not len(rows):
        return empty
    topic = index.topic(p.query)  # content words: "what do I think about X" is asked about X
    stems = list(topic.stems)
    share = (
        entries.coverage(stems, rows) if stems else np.zeros(len(rows))
    )  # no content word: none holds "every word"
    meaning = _meaning(engine, entries, topic, rows)
    scores = meaning if meaning is not None else np.full(len(rows), np.nan)
    matching = entries.matching(scores, share)
    cross = _cross(engine)
    reranked = False
    if cross is not None:  # the operator's cross-encoder judges each match against the query
        # the most relevant matches only (it judges one pair at a time): POOL, or 4 x limit
        matched = entries.candidates(rows, scores, share, matching)[: max(index.POOL, 4 * p.limit)]
        judged = (
            [float(s) for s in cross.predict([(p.query, entries.entry(c.entity_id)[3]) for c in matched])]
            if matched
            else []
        )
        kept, total = index.rerank(matched, judged, p.limit)
        reranked = bool(kept)
    else:
        kept, total = entries.top(rows, scores, share, matching, p.limit)
    mode = "hybrid" if meaning is not None else "fts"
    if not kept and stems:  # below the relevance threshold: relax to any topic word
        kept, total = entries.top(rows, scores, share, share > 0, p.limit)
        mode = "fts"
    out = [
        MemoryEntry(file=f, section=section, date=date, text=text)
        for f, section, date, text in (entries.entry(c.entity_id) for c in kept)
    ]
    return MemoryRecallResult(
        entries=out, total=total, truncated=total > len(out), search_mode=mode, reranked=reranked
    )


def search(engine: Engine, p: RecallParams) -> RecallResult:
    """``recall`` over the notes of an imported folder (the memories of type ``note``), whatever type ``p``
    names."""
    return engine.recall(p if p.type == NOTE_TYPE else p.model_copy(update={"type": NOTE_TYPE}))
