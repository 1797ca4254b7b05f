"""Conversation turns linked to the earlier turns that talk about the same thing (docs/conversations.md).

Turns are events: never judged as duplicates or updates of anything (two turns may say the same words, and
both were said). What a conversation is about spans its sessions, though, so when turns are written with
vectors, each new turn is linked to the :data:`MOST` turns of its scope nearest it in meaning, among the
:data:`RECENT` latest stored turns and the call's earlier turns, each at a cosine of at least :data:`FLOOR`: a
link of relation ``same_topic`` and source ``inferred``, from the turn written to the one it was compared with,
its cosine as its weight. The cost is one read of those turns' vectors per call (a call is one session, in one
scope), compared with all the call's turns at once: about 2 ms a turn on locomo-dev (docs/benchmarks.md). Like every inferred link it is judged once, when its turn is written (an updated
turn is judged anew), shown as inferred by ``traverse`` and left out by ``inferred=False``.

GraphRAG's communities are built over these links (graphrag/communities.py), so ``global_recall`` finds a
conversation's topics with nobody linking a turn; recall's curation never reads them (``same_topic`` is not a
relation it acts on). A vault without vectors links no turns: a turn's few words say too little to judge by.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..contract.params import Filters, RememberInput
from ..embeddings import embedding_text
from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from ..primitives.filters import FROM, view
from ..recall.curation import INFERRED
from ..recall.turns import TURN_TYPE
from ..storage.base import Backend
from . import relations

if TYPE_CHECKING:
    from ..engine.engine import Engine

RELATION = "same_topic"
POOL = 10  # stored turns each new turn is compared with: its nearest in meaning
MOST = 3  # links a turn gets, at most
FLOOR = 0.6  # the least cosine of two turns linked
RECENT = 2_000  # stored turns of the scope a new turn may be linked to: the latest written (a bounded cost)
Stored = dict[
    str, list[tuple[int, float]]
]  # a turn's embedded text -> the stored turns near it, with cosines


def stored_near(engine: Engine, scope: dict[str, str | None], vectors: dict[str, np.ndarray]) -> Stored:
    """For each text of ``vectors`` (the new texts of a call's turns: those its write embeds), the :data:`POOL`
    stored turns of ``scope`` (``agent_id``, ``workspace_hash``: a call is one session, in one scope) nearest it, at
    or above :data:`FLOOR`. Read before the write, outside its transaction: the scope's turn vectors once, compared
    with all the call's texts at once."""
    texts = list(vectors)
    if not texts or engine.read(engine.backend.vectors.model) is None:
        return {}
    filters = Filters.model_validate(
        {
            "type": TURN_TYPE,
            **{f: v for f, v in scope.items() if v},
            "where": {f: None for f, v in scope.items() if not v} or None,
        }
    )
    with engine.reading() as conn:
        seen = view(filters, engine.now(), dialect(conn))
        ids = [
            int(r[0])
            for r in conn.execute(
                f"SELECT e.id FROM {FROM} WHERE {seen.where} ORDER BY e.id DESC LIMIT {RECENT}", seen.params
            )
        ]
        held = engine.backend.vectors.head_vectors(conn, ids) if ids else {}
    if not held:
        return {}
    order = sorted(held)
    matrix = _unit(np.stack([held[i] for i in order]))
    sims = _unit(np.stack([vectors[t] for t in texts])) @ matrix.T
    out: Stored = {}
    for t, row in zip(texts, sims):
        top = np.argsort(-row, kind="stable")[:POOL]
        out[t] = [(order[k], float(row[k])) for k in top if row[k] >= FLOOR]
    return out


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix = matrix.astype(np.float32)
    unit: np.ndarray = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return unit


def keep(
    backend: Backend,
    conn: Connection,
    writes: Sequence[RememberInput],
    written: Sequence[tuple[int, str]],
    vectors: dict[str, np.ndarray],
    stored: Stored,
    now_ms: int,
) -> int:
    """Link each turn ``written`` (created or updated; ``writes``: what was written, in order) to its nearest
    earlier turns: those of ``stored`` and the call's earlier turns of its scope. Returns the links opened."""
    texts = [embedding_text(item.content, item.summary) for item in writes]
    have = [k for k, t in enumerate(texts) if t in vectors]
    unit = _unit(np.stack([vectors[texts[k]] for k in have])) if have else np.zeros((0, 1), np.float32)
    row_of = {k: n for n, k in enumerate(have)}
    rows: list[tuple[int, int, str, float, str]] = []
    for k, ((entity_id, change), item) in enumerate(zip(written, writes)):
        if (
            change == "unchanged" or k not in row_of
        ):  # an edit that left the text (its speaker's words) as it was
            continue  # keeps its links: they were judged of that text
        relations.close_inferred(conn, entity_id, now_ms)  # judged of the text this one replaces
        near = dict(stored.get(texts[k], []))
        sims = unit[: row_of[k]] @ unit[row_of[k]]  # the call's earlier turns that have vectors
        for n, cosine in enumerate(sims.tolist()):
            j = have[n]
            if cosine >= FLOOR and (writes[j].agent_id, writes[j].workspace_hash) == (
                item.agent_id,
                item.workspace_hash,
            ):
                near[written[j][0]] = max(cosine, near.get(written[j][0], -1.0))
        near.pop(entity_id, None)
        best = sorted(near.items(), key=lambda kv: (-kv[1], kv[0]))[:MOST]
        rows += [(entity_id, other, RELATION, round(cosine, 6), INFERRED) for other, cosine in best]
    return relations.open_links(backend, conn, written[0][0], rows, now_ms) if rows else 0
