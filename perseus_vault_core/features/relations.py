"""Relations kept between memories: what a write judged of each new version and its candidates
(recall/candidates.py), stored once as links whose ``source`` is ``inferred`` (docs/curation.md).

Versions never change, so a judgement of two versions never goes stale: it is made when the newer of them
is written and read by every later recall (an outdated mark or the newer first shows for every query that
returns both, not for some wordings only). A new version of a memory is judged anew: its entity's inferred
links close (they stay as history, as every closed link does) and the new version's are opened. Each link
goes from the memory valid later to the older one (``#9 updates #4``), with the candidate's score as its
weight, and is one of :data:`NAMES`.

What the agent or an application says wins over a guess: a pair with a link of another source between
them (``link``; a judge's verdict, source ``judge``) gets no inferred link, a superseded memory is not
judged against its successor, and an ``unlink`` of an inferred link closes it for good (until either
memory changes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..contract.errors import InvalidInput
from ..contract.models import SimilarMemory
from ..contract.params import RememberInput
from ..primitives.dbapi import Connection
from ..recall.candidates import Candidate
from ..recall.curation import INFERRED, JUDGE
from ..records import store
from ..storage.base import Backend

NAMES: dict[str, str] = {
    "duplicate": "duplicates",
    "update": "updates",
    "same_subject": "same_subject",
    "related": "related",
    "distinct": "distinct",
}
RELATION_OF = {name: relation for relation, name in NAMES.items()}
VERDICTS = ("duplicate", "update", "distinct", "related")  # what a judge may say of a candidate
Judge = Callable[[RememberInput, list[SimilarMemory]], Mapping[int, str]]


def verdicts(judge: Judge, item: RememberInput, shown: list[SimilarMemory]) -> dict[int, str]:
    """A judge's verdict on each of ``shown`` (the candidates of the new memory ``item``): refused whole, naming
    the problem, when it says anything but one of :data:`VERDICTS` of a candidate it was given."""
    if not shown:
        return {}
    said = judge(item, shown)
    if not isinstance(said, Mapping):
        raise InvalidInput(
            "judge", f"must return a mapping of candidate id to verdict, not {type(said).__name__}"
        )
    ids = {s.id for s in shown}
    out = {}
    for key, verdict in said.items():
        if not isinstance(key, int) or isinstance(key, bool):
            raise InvalidInput(
                "judge",
                f"returned a verdict keyed by {key!r} ({type(key).__name__}); a key is a "
                f"candidate's id, an int: one of {sorted(ids)}",
            )
        if key not in ids:
            raise InvalidInput(
                "judge", f"returned a verdict for #{key}, which is not one of the candidates {sorted(ids)}"
            )
        if verdict not in VERDICTS:
            raise InvalidInput(
                "judge", f"returned {verdict!r} for #{key}; a verdict is one of {', '.join(VERDICTS)}"
            )
        out[int(key)] = str(verdict)
    return out


def keep(
    backend: Backend,
    conn: Connection,
    entity_id: int,
    valid_ms: int,
    found: Sequence[Candidate],
    valid_of: dict[int, int],
    now_ms: int,
    judged: Mapping[int, str] | None = None,
    fresh: bool = True,
) -> int:
    """Close ``entity_id``'s inferred links and open one per candidate in ``found`` (``valid_of``: each
    candidate's valid time), each from the newer of the two to the older; returns how many were opened.
    ``judged``: a judge's verdicts, which win: an ``update`` supersedes the older of the two by the newer, and
    every verdict is kept as a link of source ``judge`` (``distinct`` too, so that nothing asks again).
    ``fresh=False`` (a memory judged long after its write: features/backfill.py) closes nothing and opens no link
    where the pair has or had one, of any source (an inferred link someone unlinked stays closed)."""
    if fresh:
        close_inferred(conn, entity_id, now_ms)
    others = [c for c in found if c.id != entity_id]
    if not others:
        return 0
    said = _spoken_for(conn, entity_id, [c.id for c in others], INFERRED if fresh else "", closed=not fresh)
    judged = judged or {}
    rows = []
    for c in others:
        if c.id in said:
            continue
        newer_first = (valid_ms, entity_id) >= (valid_of.get(c.id, 0), c.id)
        a, b = (entity_id, c.id) if newer_first else (c.id, entity_id)
        verdict = judged.get(c.id)
        if verdict == "update":
            store.supersede(backend, conn, b, a, None, None, now_ms)
        rows.append((a, b, NAMES[verdict or c.relation], float(c.score), JUDGE if verdict else INFERRED))
    return open_links(backend, conn, entity_id, rows, now_ms)


def open_links(
    backend: Backend,
    conn: Connection,
    entity_id: int,
    rows: Sequence[tuple[int, int, str, float, str]],
    now_ms: int,
) -> int:
    """Open one link per (from id, to id, relation, weight, source) in ``rows``, in ``entity_id``'s scope."""
    first = backend.next_id(conn, "links") if rows else 0
    conn.executemany(  # in the entity's scope, read in the same statement; ids given, ascending
        "INSERT INTO links (id, from_id, to_id, relation, weight, source, created_at_ms, recorded_from_ms, scope) "
        "SELECT ?, ?, ?, ?, ?, ?, ?, ?, e.scope FROM entities e WHERE e.id = ?",
        [
            (first + n, a, b, name, weight, source, now_ms, now_ms, entity_id)
            for n, (a, b, name, weight, source) in enumerate(rows)
        ],
    )
    return len(rows)


def close_inferred(conn: Connection, entity_id: int, now_ms: int) -> None:
    """Close the inferred links from or to ``entity_id`` (they stay as history): judged of a version it replaces."""
    conn.execute(
        "UPDATE links SET recorded_to_ms = ? WHERE recorded_to_ms IS NULL AND source = ? AND "
        "(from_id = ? OR to_id = ?)",
        (now_ms, INFERRED, entity_id, entity_id),
    )


def _spoken_for(
    conn: Connection, entity_id: int, others: list[int], ignored: str = INFERRED, closed: bool = False
) -> set[int]:
    """Those of ``others`` whose pair with ``entity_id`` someone decided on: an open link of another source
    than ``ignored`` (inference; '': none ignored) between the two (either way), or one superseding the other.
    ``closed``: a closed link counts too (a pair judged, or unlinked, before: a backfill leaves it as it is)."""
    marks = ",".join("?" * len(others))
    open_ = "" if closed else "AND recorded_to_ms IS NULL "
    linked = conn.execute(
        f"SELECT to_id FROM links WHERE from_id = ? AND to_id IN ({marks}) {open_}AND "
        f"(source IS NULL OR source != ?) UNION SELECT from_id FROM links WHERE to_id = ? AND from_id IN ({marks}) "
        f"{open_}AND (source IS NULL OR source != ?)",
        (entity_id, *others, ignored, entity_id, *others, ignored),
    ).fetchall()
    superseded = conn.execute(
        f"SELECT entity_id FROM entity_versions WHERE recorded_to_ms IS NULL AND entity_id IN ({marks}) AND "
        f"superseded_by = ? UNION SELECT superseded_by FROM entity_versions WHERE recorded_to_ms IS NULL AND "
        f"entity_id = ? AND superseded_by IS NOT NULL",
        (*others, entity_id, entity_id),
    ).fetchall()
    return {int(r[0]) for r in linked} | {int(r[0]) for r in superseded}
