"""What recall reads to curate its first places (:mod:`curation` arranges them; this module only gathers).

A recall's first :data:`curation.WINDOW` candidates are curated by the relations kept between them: the
links a write judged between a new memory and its candidates (features/relations.py), a judge's verdicts
and the agent's own links of the same names. One statement reads the open links among the window's
memories; a window whose memories are linked to none of each other (most windows) reads nothing more. For
the linked ones it reads what ordering them needs: when each became valid, its scope, whether it is a
conversation turn, and its text (a query naming a value only the older holds keeps the older first).
Nothing is judged here: the vault never merges, marks or reorders two memories by a guess made at read
time, and a pair's marks are the same for every query that returns both.
"""

from __future__ import annotations

from typing import Any

from ..contract.params import RecallParams
from ..embeddings import embedding_text
from ..primitives.dialect import dialect
from ..primitives.filters import View, from_vids, id_list
from ..storage import Connection
from . import curation
from .arms import Arms
from .ranking import Scored

KEPT = ("duplicates", "updates", "same_subject", "related")
_COLUMNS = ("v.entity_id, v.content, v.summary, v.type, coalesce(v.valid_from_ms, e.created_at_ms), e.agent_id, "
            "e.workspace_hash")


def window(conn: Connection, params: RecallParams, v: View, ranked: list[Scored], vids: dict[int, int],
           arms: Arms) -> curation.Curated | None:
    """The first places of ``ranked`` curated; ``None`` when nothing is (asked not to; a point in time,
    which shows the store as it was; no kept relation among the window's memories)."""
    if v.historical or not params.curate or len(ranked) < 2:
        return None
    shown = ranked[: curation.WINDOW]
    pairs = kept(conn, [s.id for s in shown])
    if not pairs:
        return None
    involved = {i for a, b, _ in pairs for i in (a, b)}
    rows = _read(conn, [vids[s.id] for s in shown if s.id in involved])
    candidates = []
    for s in shown:
        r = rows.get(s.id)
        if r is None:  # linked to nothing here: it keeps its place
            candidates.append(curation.Candidate(s.id, s.relevance, s.related, 0, True, ""))
            continue
        candidates.append(curation.Candidate(
            s.id, s.relevance, s.related, int(r[4]), curation.is_turn(r[3], r[1]), embedding_text(r[1], r[2]),
            (r[5] or "", r[6] or "")))
    return curation.curate(candidates, pairs, curation.said(params.query))


def kept(conn: Connection, ids: list[int]) -> list[curation.Kept]:
    """The open links among ``ids`` that curation acts on: (from id, to id, relation)."""
    d = dialect(conn)
    names = ", ".join(f"'{name}'" for name in KEPT)
    return [(int(a), int(b), str(name)) for a, b, name in conn.execute(
        f"SELECT l.from_id, l.to_id, l.relation FROM {d.ids(':ids')} j CROSS JOIN links l ON l.from_id = j.value "
        f"WHERE l.recorded_to_ms IS NULL AND l.relation IN ({names}) AND l.to_id IN (SELECT value FROM "
        f"{d.ids(':ids')} k)", {"ids": id_list(ids)})]


def _read(conn: Connection, vids: list[int]) -> dict[int, Any]:
    """Each version's entity id -> (entity id, content, summary, type, valid time, agent, workspace)."""
    return {r[0]: r for r in conn.execute(f"SELECT {_COLUMNS} FROM {from_vids(conn)}", {"vids": id_list(vids)})}
