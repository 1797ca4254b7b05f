"""What a reader sees of a result, a model or a person: compact, dated text, and every time written for
one. Pure.

Times: :func:`iso_time` is the one way a time becomes text, ISO 8601 in UTC to the precision a surface
wants (a memory's line its date, a transcript the minute, the inspector the second, the command line the
millisecond); :func:`instant` writes a time a caller gave, and :func:`no_version` is what a time-travel
lookup says when it finds nothing, on every surface.

A model pays for every character it reads, and acts on what the text says, so a memory is written as
one line, two when it has fields worth saying: its id, category/key, when it became true (its
``valid_from``, else when the version was written) and, once it stopped being true, until when, its score
to two decimals, then its text (the summary first when the content does not hold it)::

    #7 fact/db-host 2026-06-03 0.34: The billing database is db-billing-1 in eu-west-1.
       topic billing/infra; ticket: OPS-2291

The second line holds only what is set and tells the reader something: a type other than ``note``, the
topic, a status other than active, what replaced it, when it was written (when that is not the day it
became true), expiry, provenance, its body
fields, and the marks recall adds when asked (actionability, validity, a trigger). Usage counters,
ranks, nulls and millisecond times are left out: programs read the structured result, which keeps
every field. Stored text stays on its line: names have their line breaks escaped and texts their
whitespace collapsed, so a memory cannot add a line of its own.

Results without an entity list (counts, communities, a link, ...) are written as JSON without nulls
or empty fields, floats to three decimals.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from .models import Entity, HistoryPage, RecallResult, RecallWhenResult, Remembered, ScanPage
from .text import collapse_whitespace, escape_breaks

EXTRAS_CHARS = 110  # the second line's cap (a hit costs at most ~160 beyond its text): get_entity reads all


def iso_time(ms: float | None, timespec: str = "milliseconds") -> str | None:
    """Unix milliseconds as ISO 8601 in UTC, to ``timespec``: ``date`` (``2026-06-03``), ``minutes``
    (``2026-06-03T07:10Z``), ``seconds`` (``2026-06-03T07:10:17Z``), ``milliseconds``
    (``2026-06-03T07:10:17.821Z``), or ``auto`` (seconds, milliseconds when it has them). None for none, and
    for a time no calendar holds (past year 9999)."""
    if ms is None:
        return None
    try:
        moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None
    if timespec == "date":
        return moment.date().isoformat()
    if timespec == "auto":
        timespec = "milliseconds" if ms % 1000 else "seconds"
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


def date(ms: int | None) -> str:
    """``ms`` as its UTC calendar date, ``2026-06-03`` ('?' when it is not a date)."""
    return iso_time(ms, "date") or "?"


def instant(value: int | str | None) -> str:
    """A time for a reader to the millisecond (``2026-12-03T07:10:17.821Z``); ``-`` for none. A time given as
    text (ISO 8601, as a caller wrote it) is shown as given unless it is milliseconds. Structured results
    (``--json``, MCP's structured content) keep the milliseconds, which every time argument accepts too."""
    if value is None:
        return "-"
    if isinstance(value, str):
        if not value.strip().lstrip("-").isdigit():
            return value
        value = int(value)
    return iso_time(value) or str(value)


def _asked(value: int | str) -> str:
    """A time a lookup asked for: :func:`instant`, then its milliseconds when it was given as a number (what a
    caller passes next)."""
    text = instant(value)
    return text if text == value else f"{text} ({int(value)} unix ms)"


def no_version(
    category: str, key: str, *, as_of: int | str | None = None, valid_at: int | str | None = None
) -> str:
    """What ``as_of``, ``valid_at`` and ``bitemporal`` say when no version matches, on every surface:
    ``No version of decision/db was believed at 2026-01-01T00:00:00.000Z (1767225600000 unix ms).``"""
    when = []
    if as_of is not None:
        when.append(f"was believed at {_asked(as_of)}")
    if valid_at is not None:
        when.append(("to be true at " if when else "was true in the world at ") + _asked(valid_at))
    return f"No version of {escape_breaks(category)}/{escape_breaks(key)} {' '.join(when)}."


def true_from(entity: Entity) -> int:
    """When what a memory says became true: its ``valid_from``, else when this version was written."""
    return entity.valid_from_ms if entity.valid_from_ms is not None else entity.updated_at_ms


def truth(entity: Entity) -> str:
    """The dates a reader judges a memory by: when it became true (``2026-01-05``) and, once it stopped being
    true, until when (``2026-01-05 to 2026-07-01``). Two facts written the same day read apart by these."""
    span = date(true_from(entity))
    return span if entity.valid_to_ms is None else f"{span} to {date(entity.valid_to_ms)}"


def memory_text(entity: Entity) -> str:
    """The summary, then the content (the summary alone is left out when the content holds it)."""
    return line_of(entity.content, entity.summary)


def line_of(content: str, summary: str | None) -> str:
    """A memory's text on one line: its summary, then its content (the summary left out when the content
    holds it)."""
    content, summary = collapse_whitespace(content), collapse_whitespace(summary or "")
    return f"{summary}: {content}" if summary and summary not in content else content


def _value(value: Any) -> str:
    if isinstance(value, str):
        return collapse_whitespace(value)
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value):
        return ", ".join(_value(v) for v in value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _fields(value: Any, at: str) -> list[str]:
    """A body field as ``name: value`` parts, an object's fields dotted (no braces for a reader to parse)."""
    if isinstance(value, dict):
        return [part for name, inner in value.items() for part in _fields(inner, f"{at}.{name}")]
    if not _set(value) and value is not False:
        return []
    return [f"{escape_breaks(at)}: {_value(value)}"]


def _set(value: Any) -> bool:
    return value is not None and value != [] and value != {} and value is not False


def _marks(entity: Entity, scope_given: bool) -> list[str]:
    """What recall and curation add to a hit, when set: trigger, actionability, validity, and the
    relations to other memories (outdated by, duplicates, similar)."""
    marks = []
    trigger = getattr(entity, "trigger", None)
    if trigger:
        marks.append(f'when "{collapse_whitespace(trigger)}"')
    actionability = getattr(entity, "actionability", None)
    if actionability is not None:
        marks.append(f"actionability {actionability:.2f}")
    validity = getattr(entity, "validity", None)
    if validity is not None:
        marks.append(f"validity {validity.grade} x{validity.multiplier:.2f}")
    for name, label in (
        ("outdated_by", "outdated by"),
        ("duplicates", "duplicates"),
        ("similar", "similar to"),
    ):
        value = getattr(entity, name, None)
        if _set(value):
            marks.append(f"{label} {_ids(value)}")
    if not scope_given:
        scope = "/".join(s for s in (entity.agent_id, entity.workspace_hash) if s)
        if scope:
            marks.append(f"scope {escape_breaks(scope)}")
    return marks


def _ids(value: Any) -> str:
    """Related memories as ``#id`` (a list of ids, of memories, or of objects with an id)."""
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        ident = item if isinstance(item, int) else getattr(item, "id", None)
        if ident is None and isinstance(item, dict):
            ident = item.get("id")
        out.append(f"#{ident}" if ident is not None else _value(item))
    return ", ".join(out)


def details(entity: Entity, *, scope_given: bool = False) -> list[str]:
    """The fields of a memory that are set and matter to a reader, as short ``name value`` parts."""
    parts = _marks(entity, scope_given)
    if entity.type not in ("note", ""):
        parts.append(f"type {escape_breaks(entity.type)}")
    if entity.topic_path:
        parts.append(f"topic {escape_breaks(entity.topic_path)}")
    if entity.status != "active":
        parts.append(entity.status)
    if entity.superseded_by is not None:
        parts.append(f"superseded by #{entity.superseded_by}")
    if entity.supersedes is not None:
        parts.append(f"supersedes #{entity.supersedes}")
    if entity.version > 1:
        parts.append(f"version {entity.version}")
    if date(true_from(entity)) != date(entity.updated_at_ms):  # the headline says when it became true
        parts.append(f"written {date(entity.updated_at_ms)}")
    if entity.expires_at_ms is not None:
        parts.append(f"expires {date(entity.expires_at_ms)}")
    if entity.verified:
        parts.append("verified")
    if entity.certainty is not None:
        parts.append(f"certainty {entity.certainty:.2f}")
    if entity.source:
        parts.append(f"source {collapse_whitespace(entity.source)}")
    if entity.provenance_class:
        parts.append(f"provenance {collapse_whitespace(entity.provenance_class)}")
    for name, value in entity.body.items():
        parts.extend(_fields(value, str(name)))
    return parts


def hit(entity: Entity, *, score: float | None = None, scope_given: bool = False, prefix: str = "") -> str:
    """A memory as one line, two when it has details: id, category/key, when it was true (:func:`truth`),
    score, text."""
    label = escape_breaks(f"{entity.category}/{entity.key}")
    head = f"{prefix}#{entity.id} {label} {truth(entity)}"
    if score is not None:
        head += f" {score:.2f}"
    line = f"{head}: {memory_text(entity)}"
    extra = "; ".join(details(entity, scope_given=scope_given))
    if not extra:
        return line
    if len(extra) > EXTRAS_CHARS:
        extra = extra[: EXTRAS_CHARS - 1].rstrip() + "…"
    return f"{line}\n   {escape_breaks(extra)}"


def entity_text(entity: Entity) -> str:
    """One memory whole: its line and details, then its trigger phrases and when it was first written."""
    lines = [hit(entity)]
    if entity.recall_when:
        lines.append("   triggers: " + "; ".join(f'"{collapse_whitespace(p)}"' for p in entity.recall_when))
    if entity.version > 1 or date(entity.created_at_ms) != date(entity.updated_at_ms):
        lines.append(f"   first written {date(entity.created_at_ms)}; this version: {entity.change}")
    return "\n".join(lines)


def hits(items: Sequence[Entity], *, scored: bool = True, scope_given: bool = False) -> list[str]:
    return [
        hit(item, score=getattr(item, "score", None) if scored else None, scope_given=scope_given)
        for item in items
    ]


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def recall_text(result: RecallResult | RecallWhenResult, *, scope_given: bool = False) -> str:
    """A recall's hits, best first, under a line saying how many and how they were found."""
    if not result.items:
        return "No memory matches."
    how = result.search_mode if isinstance(result, RecallResult) else "triggers"
    head = f"{_count(len(result.items), 'memory', 'memories')} ({how}), best first; id, category/key, date, score:"
    return "\n".join([head] + hits(result.items, scope_given=scope_given))


def page_text(result: ScanPage | HistoryPage, *, scope_given: bool = False, changes: bool = False) -> str:
    """A page of memories (scan, recent) or of versions (history), with how to go on."""
    if not result.items:
        return "No memories."
    lines = []
    for item in result.items:
        line = hit(item, scope_given=scope_given)
        if changes:  # history and recent: what this version did, and when the vault recorded it
            first, _, rest = line.partition(": ")
            line = f"{first} {item.change} (recorded {date(item.recorded_from_ms)}): {rest}"
        lines.append(line)
    if isinstance(result, ScanPage) and result.has_more:
        lines.append(f"(more: pass cursor {json.dumps(result.next_cursor)})")
    elif isinstance(result, HistoryPage):
        lines.insert(0, f"{_count(result.total, 'version', 'versions')}, newest first:")
        if result.has_more:
            lines.append("(more: pass a larger offset)")
    return "\n".join(lines)


RELATIONS = {
    "duplicate": "duplicate",
    "update": "update",
    "same_subject": "same subject",
    "related": "related",
    "distinct": "distinct",
}


def remembered_text(result: Remembered) -> str:
    """What ``remember`` did, as data a model reads and acts on in its next call: the memory stored (its id,
    name, when it is true from), or the one that already holds the text (nothing written), then each
    candidate it may repeat, update or contradict as ``#id (relation, true from DATE): text``."""
    name = escape_breaks(f"{result.category}/{result.key}")
    if result.repeated:
        head = f"already held by #{result.id} {name} (true from {truth(result)}): nothing written"
    elif not result.written:
        head = (
            f"unchanged: #{result.id} {name} (true from {truth(result)}) already says this; nothing written"
        )
    else:
        head = f"stored as #{result.id} {name}, version {result.version} (true from {truth(result)})"
    label = (
        "other candidate" if result.repeated else "candidate"
    )  # the memory holding the text is in the head
    if not result.similar:
        return head + f"; no {label} it repeats, updates or contradicts"
    lines = [head, f"{label}s it may repeat, update or contradict:"]
    for s in result.similar:
        span = date(s.true_from_ms) + (f" to {date(s.true_to_ms)}" if s.true_to_ms is not None else "")
        lines.append(f"#{s.id} ({RELATIONS[s.relation]}, true from {span}): {collapse_whitespace(s.text)}")
    return "\n".join(lines)


def compact_json(value: Any) -> str:
    """``value`` as JSON without nulls and empty fields, floats to three decimals."""
    return json.dumps(
        _pruned(value.model_dump(mode="json") if isinstance(value, BaseModel) else value),
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _pruned(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    if isinstance(value, BaseModel):
        return _pruned(value.model_dump(mode="json"))
    if isinstance(value, float):
        return round(value, 3)
    return value


def readable(result: Any, *, scope_given: bool = False, changes: bool = False) -> str:
    """What a model reads of a verb's result: the compact lines above for memories and pages of them,
    compact JSON for anything else. ``scope_given``: the call named a scope, so each memory's is left
    out; ``changes``: a page of writes (recent), each line saying what its version did."""
    if isinstance(result, Remembered):
        return remembered_text(result)
    if isinstance(result, (RecallResult, RecallWhenResult)):
        return recall_text(result, scope_given=scope_given)
    if isinstance(result, HistoryPage):
        return page_text(result, scope_given=scope_given, changes=True)
    if isinstance(result, ScanPage):
        return page_text(result, scope_given=scope_given, changes=changes)
    if isinstance(result, Entity):
        return entity_text(result)
    if isinstance(result, list) and result and all(isinstance(r, Remembered) for r in result):
        return "\n\n".join(remembered_text(r) for r in result)  # remember_many with its candidates
    if isinstance(result, list) and result and all(isinstance(r, Entity) for r in result):
        return "\n".join(hits(result, scored=False, scope_given=scope_given))
    return compact_json(result)
