"""What a person sees: each command's result as text (``--json`` prints the result model instead).

Every function takes the result and the parsed arguments (some lines name what was asked for).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ..contract.models import (
    CommunitiesResult,
    Counts,
    Entity,
    HistoryPage,
    HygieneReport,
    MemoryImportReport,
    MemoryRecallResult,
    RecallResult,
    RecallWhenResult,
    Remembered,
    ScanPage,
    TraverseResult,
)
from ..contract.readable import date, instant, no_version, remembered_text, true_from, truth
from ..contract.text import clip_line, escape_breaks, for_terminal
from ..features import conversations

Show = Callable[[Any, argparse.Namespace], str]


def emit(args: argparse.Namespace, value: Any, show: Show) -> None:
    """Print ``value``: as JSON with ``--json``, else as ``show`` writes it (nothing at all, not an empty
    line, when that is nothing); either way with no control character a terminal would act on
    (text.for_terminal)."""
    if args.json:
        print(
            for_terminal(
                value.model_dump_json()
                if isinstance(value, BaseModel)
                else json.dumps(value, ensure_ascii=False),
                json=True,
            )
        )
    else:
        text = show(value, args)
        if text:
            print(for_terminal(text))


NOTHING_FOR_THIS_TURN = "No stored memory matches this turn."  # what the MCP tool says too


def prepare(r: Any, _: argparse.Namespace) -> str:
    """The block on stdout; when nothing applies, stdout stays empty (a hook injects nothing) and a person
    reads why on stderr."""
    if not r.markdown:
        print(NOTHING_FOR_THIS_TURN, file=sys.stderr)
    return str(r.markdown)


def short(text: str, width: int = 100) -> str:
    return clip_line(text, width)


def size(n: int) -> str:
    """Bytes for a person: ``156 KB``, ``2.7 GB`` (powers of 1000, as disks are sold)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            value = n / scale
            return f"{value:.1f} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n} bytes"


def name(e: Any) -> str:
    """``category/key`` on one line, whatever an older vault stored in them (text.escape_breaks)."""
    return escape_breaks(f"{e.category}/{e.key}")


def entity_line(e: Any) -> str:
    """A memory on one line: id, category/key, when it was true (readable.truth), its text."""
    return f"#{e.id} [{name(e)}] {truth(e)}: {short(e.content)}"


def entity(e: Entity, _: argparse.Namespace | None = None) -> str:
    lines = [
        f"#{e.id} [{name(e)}] {e.type}, version {e.version}, {e.status}",
        f"true from {instant(true_from(e))}"
        + (f" to {instant(e.valid_to_ms)}" if e.valid_to_ms is not None else "")
        + f"; created {instant(e.created_at_ms)}, this version written {instant(e.updated_at_ms)}"
        + (f", expires {instant(e.expires_at_ms)}" if e.expires_at_ms is not None else ""),
    ]
    if e.summary:
        lines.append(e.summary)
    lines.append(e.content)
    return "\n".join(lines)


def remembered(r: Remembered, _: argparse.Namespace) -> str:
    """What was written, or that nothing was (an exact repeat), then the candidates it may repeat, update or
    contradict, as a model reads them over MCP (readable.remembered_text): what an agent or a person acts on
    next (docs/curation.md)."""
    text = remembered_text(r)
    return text + "\n(--keep-duplicate stores it)" if r.repeated else text


def recall(result: RecallResult, _: argparse.Namespace) -> str:
    if not result.items:
        return f"no matches ({result.search_mode})"
    lines = [f"{len(result.items)} result(s), {result.search_mode}:"]
    for item in result.items:
        extra = f"  [actionability {item.actionability:.2f}]" if item.actionability is not None else ""
        if item.validity is not None:
            extra += f"  [{item.validity.grade}, x{item.validity.multiplier:.2f}]"
        if item.superseded_by is not None:  # shown with --include-archived: never taken for a current memory
            extra += f"  [superseded by #{item.superseded_by}]"
        elif item.status != "active":
            extra += f"  [{item.status}]"
        if item.outdated_by is not None:  # curation (docs/curation.md): kept as updated by a newer memory
            extra += f"  [outdated by #{item.outdated_by}]"
        if item.duplicates:
            extra += f"  [also says this: {', '.join(f'#{i}' for i in item.duplicates)}]"
        lines.append(f"{item.score:7.3f}  {entity_line(item)}{extra}")
    return "\n".join(lines)


def scan(page: ScanPage, _: argparse.Namespace) -> str:
    lines = [entity_line(e) for e in page.items]
    lines.append(f"next cursor: {page.next_cursor}" if page.has_more else "(end)")
    return "\n".join(lines)


def history(page: HistoryPage, args: argparse.Namespace) -> str:
    lines = [f"{page.total} version(s) of {args.category}/{args.key}, newest first:"]
    lines += [
        f"v{e.version} {e.change:<9} {e.status:<10} recorded {instant(e.recorded_from_ms)}, true from {truth(e)}: "
        f"{short(e.content, 80)}"
        for e in page.items
    ]
    return "\n".join(lines)


def as_of(e: Entity | None, args: argparse.Namespace) -> str:
    return entity(e) if e else no_version(args.category, args.key, as_of=args.as_of_unix_ms)


def valid_at(e: Entity | None, args: argparse.Namespace) -> str:
    return entity(e) if e else no_version(args.category, args.key, valid_at=args.valid_at_unix_ms)


def bitemporal(e: Entity | None, args: argparse.Namespace) -> str:
    return (
        entity(e)
        if e
        else no_version(args.category, args.key, as_of=args.as_of_unix_ms, valid_at=args.valid_at_unix_ms)
    )


def counts(c: Counts, _: argparse.Namespace) -> str:
    def listed(name: str, pairs: Any, shown: int, total: int) -> str:
        more = f", and {total - shown} more" if total > shown else ""
        return f"{name}: " + (", ".join(f"{k} {n}" for k, n in pairs) or "none") + more

    scopes = [(f"{s.agent_id or '-'}/{s.workspace_hash or '-'}", s.count) for s in c.by_scope]
    return "\n".join(
        [
            f"{c.total} memories",
            listed("status", c.by_status.items(), 0, 0),
            listed("scope (agent/workspace)", scopes, len(scopes), c.scopes),
            listed("type", c.by_type.items(), len(c.by_type), c.types),
            listed("category", c.by_category.items(), len(c.by_category), c.categories),
        ]
    )


def recent(page: ScanPage, _: argparse.Namespace) -> str:
    lines = [f"{instant(e.recorded_from_ms)} {e.change:<9} v{e.version} {entity_line(e)}" for e in page.items]
    lines.append(f"next cursor: {page.next_cursor}" if page.has_more else "(end)")
    return "\n".join(lines)


def hygiene(report: HygieneReport, _: argparse.Namespace) -> str:
    settle = (
        [
            f"{len(report.conflicts)} pair(s) that may state one fact two ways (newer first; supersede, or "
            "unlink their inferred link):"
        ]
        + [
            f"#{c.newer} ({date(c.newer_true_from_ms)}) {short(c.newer_preview, 60)}  <->  #{c.older} "
            f"({date(c.older_true_from_ms)}) {short(c.older_preview, 60)}"
            for c in report.conflicts
        ]
        if report.conflicts
        else []
    )
    if not report.total:
        return "\n".join([f"nothing to flag among {report.scanned} active memories", *settle])
    tally = ", ".join(f"{reason} {n}" for reason, n in report.counts.items() if n)
    lines = [
        f"{report.total} of {report.scanned} active memories flagged, showing {len(report.items)}: {tally}"
    ]
    for item in report.items:
        reasons = ", ".join(
            f"{r} of #{item.duplicate_of}" if r.endswith("duplicate") else r for r in item.reasons
        )
        lines.append(
            f"#{item.id} [{name(item)}] actionability {item.actionability:.2f}: {reasons}"
            f"  {short(item.preview)}"
        )
    return "\n".join(lines + settle)


def traverse(walk: TraverseResult, _: argparse.Namespace) -> str:
    lines = [f"{'  ' * n.depth}{entity_line(n.entity)}" for n in walk.nodes]
    return "\n".join(lines + [f"{len(walk.nodes)} node(s), {len(walk.edges)} link(s)"])


def communities(r: CommunitiesResult, _: argparse.Namespace) -> str:
    lines = [
        f"{r.total} communit{'y' if r.total == 1 else 'ies'} ({r.method}; {r.nodes} entities, {r.edges} links)"
    ]
    for c in r.communities:
        central = "; ".join(f"#{m.id} {short(m.title, 40)}" for m in c.central[:3])
        summary = f"  summary #{c.summary_id}" if c.summary_id is not None else ""
        lines.append(f"{c.id}  {c.size:5d} members  {central}{summary}")
    return "\n".join(lines)


def recall_when(r: RecallWhenResult, _: argparse.Namespace) -> str:
    if not r.items:
        return "no trigger matches"
    return "\n".join(f'{i.score:6.3f}  {i.match:8s} "{i.trigger}"  {entity_line(i)}' for i in r.items)


def memory_import(r: MemoryImportReport, _: argparse.Namespace) -> str:
    head = (
        f"{r.files} file(s): {r.entries_created} entries written, {r.entries_unchanged} unchanged, "
        f"{r.entries_archived} archived; {r.notes} note(s), {r.links} link(s)"
        + (f"; bound to {r.bound_folder}" if r.bound_folder else "")
    )
    return "\n".join(
        [head] + [f"skipped {s.file}.md:{s.line}: {s.reason}: {short(s.text, 60)}" for s in r.skipped]
    )


def memory_recall(r: MemoryRecallResult, _: argparse.Namespace) -> str:
    if not r.entries:
        return "no matching entries"
    head = (
        f"{r.total} matching entr{'y' if r.total == 1 else 'ies'} ({r.search_mode}"
        + (f", showing the {len(r.entries)} most relevant" if r.truncated else "")
        + "), oldest first:"
    )
    return "\n".join([head] + [f"{e.date}  {e.file} / {e.section}: {short(e.text)}" for e in r.entries])


def memory_change(verb: str) -> Show:
    """An entry added or deleted: where, and which file was rewritten."""

    def show(r: Any, _: argparse.Namespace) -> str:
        what = f": {short(r.entry.text, 60)}" if verb == "deleted from" else ""
        return f"{verb} {r.file} / {r.entry.section} ({r.entry.date}){what}" + (
            f"; rewrote {r.written}" if r.written else ""
        )

    return show


def conversation(r: Any, args: argparse.Namespace) -> str:
    return conversations.transcript(r, around=getattr(args, "around", None))


def conversation_write(r: Any, _: argparse.Namespace) -> str:
    return (
        f"conversation {r.session}: {r.created} new, {r.updated} updated, {r.unchanged} unchanged"
        + (f", {r.skipped} forgotten (left so)" if r.skipped else "")
        + f" turn(s); last turn {r.last_turn}"
    )


def check(r: Any, _: argparse.Namespace) -> str:
    return "ok" if r.ok else "problems:\n" + "\n".join(f"- {p}" for p in r.problems)


def reindex(r: Any, _: argparse.Namespace) -> str:
    judged = f"; relations judged for {r.relations_judged:,} memories" if r.relations_judged else ""
    return (
        f"reindexed{judged}; check ok"
        if r.ok
        else f"reindexed{judged}; problems remain:\n" + "\n".join(f"- {p}" for p in r.problems)
    )


def stats(s: Any, _: argparse.Namespace) -> str:
    """The vault at a glance, a line per subject (``--json``: every field as it is)."""
    engine = (
        f"SQLite {s.sqlite_version} through {s.sqlite_driver}, sqlite-vec {s.sqlite_vec_version}"
        if s.backend == "sqlite"
        else f"PostgreSQL {s.sqlite_version} through {s.sqlite_driver}, {s.sqlite_vec_version}"
    )
    statuses = ", ".join(f"{n:,} {status}" for status, n in s.by_status.items() if n) or "none"
    if s.embedding_model is None:
        vectors = "none (no embedding model has written to this vault)"
    else:
        vectors = (
            f"{s.embedded:,} of {s.entities:,} memories embedded ({s.embedding_coverage:.0%}) with "
            f"{s.embedding_model}, {s.embedding_dimension} dimensions"
        )
    rows = [
        (
            "vault",
            f"{s.path} ({s.backend}, schema {s.schema_version}, {size(s.db_bytes)}"
            + (", encrypted at rest)" if s.encrypted else ")"),
        ),
        ("memories", f"{s.entities:,} ({statuses})"),
        ("versions", f"{s.versions:,}"),
        ("links", f"{s.links:,}"),
        ("vectors", vectors),
        ("keyword index", s.keyword_index),
        ("vector index", s.vector_index),
        ("engine", engine),
    ]
    return "\n".join(f"{name:<15}{value}" for name, value in rows)


def line(template: str) -> Show:
    """An answer of one line: ``template`` formatted with the result's fields (a model's or a dict's), a
    memory's name on one line whatever an older vault stored in it (text.escape_breaks)."""

    def show(r: Any, _: argparse.Namespace) -> str:
        fields = r if isinstance(r, dict) else r.__dict__ | {"r": r}
        names = {k: escape_breaks(fields[k]) for k in ("category", "key") if isinstance(fields.get(k), str)}
        return template.format_map(fields | names)

    return show


def role_binding(r: Any, _: argparse.Namespace) -> str:
    text = f"role {r.role} now sees agent {r.agent_id!r}, workspace {r.workspace_hash!r} only"
    if r.temporary_objects:  # the database is not the vault's role's: its owner may take TEMPORARY away
        text += (
            "; it may still create temporary objects on this database (its owner may revoke TEMPORARY from "
            "PUBLIC: docs/postgres.md)"
        )
    return text


def memory_files(r: Any, _: argparse.Namespace) -> str:
    return (
        "\n".join(f"{f.file}  {f.entries} entries  [{', '.join(f.sections)}]" for f in r.files)
        or "no memory files"
    )


def community_summary(r: Any, _: argparse.Namespace) -> str:
    return f"#{r.entity.id} {r.entity.summary} ({'written' if r.materialized else 'unchanged'})\n{r.text}"
