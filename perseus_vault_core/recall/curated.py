"""What recall reads to curate its first places (:mod:`curation` decides; this module only gathers).

A recall's first :data:`curation.WINDOW` candidates are curated. Their vectors come from the in-memory
vector index when it can answer (no statement sent), else from the file with the texts. Texts, types,
valid times and scopes are read only for the candidates that something in the window is close to (a
cosine of at least the lowest threshold a pair rule needs), so a window of unrelated memories sends no
statement at all; a vault without vectors reads every text, which its word rules need.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contract.params import RecallParams
from ..embeddings import embedding_text
from ..primitives.filters import View, from_vids, id_list
from ..storage import Connection
from . import curation
from .arms import Arms
from .ranking import Scored

CLOSE = min(curation.DUPLICATE, curation.UPDATE, curation.SAME_SUBJECT)  # below it no pair rule applies
_COLUMNS = "v.entity_id, v.content, v.summary, v.type, coalesce(v.valid_from_ms, e.created_at_ms), e.agent_id, e.workspace_hash"


def window(conn: Connection, params: RecallParams, v: View, ranked: list[Scored], vids: dict[int, int],
           arms: Arms) -> curation.Curated | None:
    """The first places of ``ranked`` curated; ``None`` when nothing is (asked not to; a point in time,
    which shows the store as it was; nothing in the window alike)."""
    if v.historical or not params.curate or len(ranked) < 2:
        return None
    shown = ranked[: curation.WINDOW]
    rows: dict[int, Any] | None = None
    vectors: dict[int, np.ndarray] = {}
    if arms.embed_query is not None:
        held = arms.vector_index.vectors(conn, [vids[s.id] for s in shown]) if arms.vector_index is not None else None
        if held is None:  # no index for this snapshot: the texts and the vectors from the file, together
            rows = _read(conn, arms, [vids[s.id] for s in shown], with_vectors=True)
            vectors = {eid: np.frombuffer(r[-1], dtype=np.float32) for eid, r in rows.items() if r[-1] is not None}
        else:
            vectors = {s.id: held[vids[s.id]] for s in shown if vids[s.id] in held}
    sims = curation.cosines([vectors.get(s.id) for s in shown])  # once: the pairs to read, then curation's
    needed = _involved([s.id for s in shown], sims)
    if not needed:
        return None
    if rows is None:
        rows = _read(conn, arms, [vids[i] for i in needed], with_vectors=False)
    candidates = []
    for s in shown:
        r = rows.get(s.id) if s.id in needed else None
        if r is None:  # alike to nothing here: it keeps its place, read no further
            candidates.append(curation.Candidate(s.id, s.relevance, s.related, 0, True, "", None))
            continue
        candidates.append(curation.Candidate(
            s.id, s.relevance, s.related, int(r[4]), curation.is_turn(r[3], r[1]), embedding_text(r[1], r[2]),
            vectors.get(s.id), (r[5] or "", r[6] or "")))
    # A candidate not needed is passed as a turn (never paired): its row of sims is never read.
    return curation.curate(candidates, curation.said(params.query), sims)


def _involved(ids: list[int], sims: np.ndarray) -> set[int]:
    """The candidates some pair rule may apply to (``sims``: their :func:`curation.cosines`, NaN where one
    has no vector): every one without a vector (its words decide), and those with a vector at least
    :data:`CLOSE` to another's."""
    lacking = np.isnan(np.diagonal(sims))
    if len(ids) - int(lacking.sum()) < 2:  # one vector or none: only the words can pair them
        return {ids[k] for k in np.flatnonzero(lacking).tolist()}
    close = np.nan_to_num(sims, nan=-1.0)
    np.fill_diagonal(close, -1.0)
    return {ids[k] for k in np.flatnonzero(lacking | (close >= CLOSE).any(axis=1)).tolist()}


def _read(conn: Connection, arms: Arms, vids: list[int], with_vectors: bool) -> dict[int, Any]:
    """Each version's entity id -> (entity id, content, summary, type, valid time, agent, workspace[, vector])."""
    table = arms.backend.vectors.TABLE
    extra = f", x.embedding FROM {from_vids(conn)} LEFT JOIN {table} x ON x.vid = v.vid AND x.scope = v.scope" \
        if with_vectors else f" FROM {from_vids(conn)}"
    return {r[0]: r for r in conn.execute(f"SELECT {_COLUMNS}{extra}", {"vids": id_list(vids)})}
