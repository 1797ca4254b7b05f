"""What recall reads to curate its first places (:mod:`curation` arranges them; this module only gathers).

A recall's first :data:`curation.WINDOW` candidates are curated by the relations kept between them: the
links a write judged between a new memory and its candidates (features/relations.py), a judge's verdicts
and the agent's own links of the same names. One statement reads the open links among the window's
memories; a window whose memories are linked to none of each other (most windows) reads nothing more. For
the linked ones it reads what ordering them needs: when each became valid, its scope, whether it is a
conversation turn, and what of its text ordering reads (its records and numbers: a query naming a value only
the older holds keeps the older first).
Nothing is judged here: the vault never merges, marks or reorders two memories by a guess made at read
time, and a pair's marks are the same for every query that returns both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..contract.params import RecallParams
from ..embeddings import embedding_text
from ..primitives.dialect import dialect
from ..primitives.filters import View, from_ids, from_vids, id_list
from ..storage import Connection
from . import curation
from .arms import Arms
from .kept_relations import Row, listed, named, order
from .ranking import Scored
from .turns import body_sql, is_turn, read_body_sql

# The relations curation acts on (``related`` orders nothing: recall/curation.py's NEWER_FIRST), so a window whose
# memories are only related reads nothing more.
KEPT = ("duplicates", *curation.NEWER_FIRST)
# What curation needs of a version: (entity id, when it became valid, whether a turn, what ordering reads of its text,
# its scope, when written). When a version became true: its valid-from time, else when it was written (a new version
# of an old key is new).
Version = tuple[int, int, bool, curation.Pins, tuple[str, str], int]
_COLUMNS = (
    "v.entity_id, v.content, v.summary, v.type, coalesce(v.valid_from_ms, v.updated_at_ms), e.agent_id, "
    "e.workspace_hash, v.updated_at_ms, v.vid"
)


def window(
    conn: Connection, params: RecallParams, v: View, ranked: list[Scored], vids: dict[int, int], arms: Arms
) -> curation.Curated | None:
    """The first places of ``ranked`` curated; ``None`` when nothing is (asked not to; a point in time,
    which shows the store as it was; no kept relation among the window's memories). A memory is judged on
    its own relevance: what a link to a better hit added (``follow_links``, linked.py) ranks it, not this."""
    if v.historical or not params.curate or len(ranked) < 2:
        return None
    shown = ranked[: curation.WINDOW]
    ids = [s.id for s in shown]
    found = arms.relations.among(conn, ids) if arms.relations is not None else None
    if found is None:  # nothing held, or this snapshot is older than what is
        found = kept(conn, ids)
    if not found or _in_order(found, ids):
        return None
    pairs = [(a, b, name) for a, b, name, _ in found]
    confirmed = frozenset((a, b) for a, b, _, source in found if source != curation.INFERRED)
    # from the newer to the older: what a write judged, and an updates link whoever wrote it ("#9 updates #4")
    directed = frozenset(
        (a, b)
        for a, b, name, source in found
        if source in (curation.INFERRED, curation.JUDGE) or name == "updates"
    )
    involved = {i for a, b, _ in pairs for i in (a, b)}
    wanted = [vids[s.id] for s in shown if s.id in involved]
    by_vid = (
        arms.relations.versions(wanted, lambda missing: _read(conn, missing))
        if arms.relations
        else _read(conn, wanted)
    )
    rows = {r[0]: r for r in by_vid.values()}
    candidates = []
    for s in shown:
        r = rows.get(s.id)
        relevance, related = s.relevance - s.lift, s.related and not s.linked
        if r is None:  # linked to nothing here: it keeps its place
            candidates.append(curation.Candidate(s.id, relevance, related, 0, True, curation.NO_PINS))
        else:
            candidates.append(
                curation.Candidate(s.id, relevance, related, r[1], r[2], r[3], r[4], written_ms=r[5])
            )
    return curation.curate(candidates, pairs, curation.asked(params.query), confirmed, directed)


def _in_order(found: list[Row], ids: list[int]) -> bool:
    """Whether curating would change nothing: every pair kept as of the same subject, judged at write time (so
    its ``from`` is the newer), the newer already placed first. Curation then reads nothing more."""
    at = {i: k for k, i in enumerate(ids)}
    return all(
        name == "same_subject" and source in (curation.INFERRED, curation.JUDGE) and at[a] < at[b]
        for a, b, name, source in found
    )


def kept(conn: Connection, ids: list[int]) -> list[Row]:
    """The open links among ``ids`` that curation acts on, read from the file: (from id, to id, relation,
    source), in order (kept_relations.py holds them for a warm vault and gives the same)."""
    ids_in, names = listed(ids), named(KEPT)
    return sorted(
        (
            (int(a), int(b), str(name), source)
            for a, b, name, source in conn.execute(
                f"SELECT l.from_id, l.to_id, l.relation, l.source FROM links l WHERE l.from_id IN ({ids_in}) "
                f"AND l.to_id IN ({ids_in}) AND l.recorded_to_ms IS NULL AND l.relation IN ({names})"
            )
        ),
        key=order,
    )


def _read(conn: Connection, vids: list[int]) -> dict[int, Version]:
    """Each version's number -> what curation needs of it (:data:`Version`)."""
    sql = f"SELECT {_COLUMNS}, {body_sql(dialect(conn))} FROM {from_vids(conn)}"
    return _versions(conn.execute(sql, {"vids": id_list(vids)}))


def current(conn: Connection, ids: list[int]) -> dict[int, Version]:
    """What curation needs of each current version of the memories ``ids``, by version number: what
    kept_relations.py's load holds for the memories it holds links of, so that a window met for the first time
    reads no text either."""
    sql = f"SELECT {_COLUMNS}, {body_sql(dialect(conn))} FROM {from_ids(conn)} WHERE v.recorded_to_ms IS NULL"
    return _versions(conn.execute(sql, {"ids": id_list(ids)}))


def _versions(rows: Iterable[Sequence[Any]]) -> dict[int, Version]:
    return {
        int(r[8]): (
            int(r[0]),
            int(r[4]),
            is_turn(r[3], r[1], read_body_sql(r[9])),
            curation.pins(embedding_text(r[1], r[2])),
            (r[5] or "", r[6] or ""),
            int(r[7]),
        )
        for r in rows
    }
