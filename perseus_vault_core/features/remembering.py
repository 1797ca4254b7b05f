"""``remember``: a memory written, and what the agent is told about the ones it probably repeats or updates
(docs/curation.md).

Before the write, the new text is looked up among the memories of its scope: by its vector (the one the
write stores, embedded before the transaction) when the vault has vectors, else by its words. The nearest
few are judged with recall/curation.py and reported in ``similar`` (``duplicate``, ``update`` or just
``related``), so that the agent can supersede or merge them in its next call. The look-up is one arm of
recall alone (recall/pipeline.py's ``nearest``: the nearest vectors, else the best keyword matches, under the scope and
status rules): the in-memory index answers it when ready, the file otherwise.

A new key whose text, once normalised, is exactly that of a memory already in the scope is not stored a
second time: the existing memory comes back with ``repeated`` set. ``keep_duplicate`` stores it anyway;
the writes that framework contracts address by key (the LangGraph store, vector stores given ids, the
checkpointer) and conversation turns never take this path, so they keep every write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..contract.models import Entity, Remembered, SimilarMemory
from ..contract.params import MAX_QUERY_CHARS, RecallParams, RememberInput, RememberParams
from ..embeddings import embedding_text
from ..recall import curation
from ..records import store

if TYPE_CHECKING:
    from ..engine.engine import Engine

SIMILAR = 5  # memories reported at most
SHOWN = 0.5  # a neighbour at least this similar is reported (cosine; without vectors, word Jaccard 0.3)
SHOWN_WORDS = 0.3
# Without vectors the neighbours are found by a keyword search for the new memory's first words: enough for
# any memory of a few sentences, and a bounded search for a document (a 256 KiB body asked its first 256
# words: 80 ms at 10k memories).
NEAREST_WORDS = 64


def remember(engine: Engine, p: RememberParams) -> Remembered:
    item = p.memory()
    plan = engine.plan(lambda conn: store.texts_to_embed(conn, [item]), [item])
    text = embedding_text(item.content, item.summary)
    vector = plan.by_text.get(text) if plan is not None else None
    similar, repeat = _neighbours(engine, item, text, vector)
    if repeat is not None and not p.keep_duplicate and _new_key(engine, item):
        return _remembered(engine.entity(repeat), [s for s in similar if s.id != repeat], repeated=True)
    written = engine.write_planned(plan, lambda c: store.remember_batch(engine.backend, c, [item], engine.now(), plan))
    entity = engine.entity(written[0][0])
    return _remembered(entity, [s for s in similar if s.id != entity.id])


def _remembered(entity: Entity, similar: list[SimilarMemory], repeated: bool = False) -> Remembered:
    return Remembered.model_validate({**entity.model_dump(), "repeated": repeated, "similar": similar})


def _new_key(engine: Engine, item: RememberInput) -> bool:
    return store.find_id(engine.conn(), item.category, item.key, item.agent_id, item.workspace_hash) is None


def _neighbours(engine: Engine, item: RememberInput, text: str, vector: np.ndarray | None
                ) -> tuple[list[SimilarMemory], int | None]:
    """The memories of ``item``'s scope most like it, judged (see the module docstring), and the id of
    one whose text is exactly its text (normalised), if any."""
    scope = {"agent_id": item.agent_id} if item.agent_id else {}
    scope |= {"workspace_hash": item.workspace_hash} if item.workspace_hash else {}
    unset = {f: None for f in ("agent_id", "workspace_hash") if f not in scope}  # the empty scope, not every scope
    common: dict[str, object] = {"limit": SIMILAR + 1, "reinforce": False, **scope}
    if unset:
        common["where"] = unset
    if vector is not None and engine.read(engine.backend.vectors.model) is None:
        vector = None  # no vector stored yet (the vault's first memory): its words, then
    words = "" if vector is not None else " ".join(text.split()[:NEAREST_WORDS])[:MAX_QUERY_CHARS]
    found = engine.nearest(RecallParams.model_validate({"query": words, **common}), vector)
    rows = store.head_rows(engine.conn(), [entity_id for entity_id, _ in found]) if found else {}
    new = curation.said(text)
    similar, repeat = [], None
    for entity_id, score in found:
        row = rows[entity_id]
        if vector is not None and score < min(SHOWN, curation.RELATED):
            continue  # too far to repeat it, update it or be shown: not read further
        other = curation.said(embedding_text(row["content"], row["summary"]))
        if repeat is None and other.normal == new.normal:  # summary and content, normalised
            repeat = entity_id
        closeness = score if vector is not None else curation.jaccard(new.words, other.words)
        relation = curation.relation(new, other, score if vector is not None else None)
        if relation is None and closeness < (SHOWN if vector is not None else SHOWN_WORDS):
            continue
        similar.append(SimilarMemory(id=entity_id, category=row["category"], key=row["key"],
                                     similarity=round(float(closeness), 4), relation=relation or "related"))
    return similar[:SIMILAR], repeat
