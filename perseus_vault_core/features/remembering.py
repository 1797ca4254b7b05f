"""``remember`` and ``remember_many``: memories written, their relations to the memories they may repeat,
update or contradict kept, and what the agent is told about them (docs/curation.md).

Before the write, each new text is looked up among the memories of its scope: by its vector's nearest (the
vector the write stores, embedded before the transaction) when the vault has vectors, by the best keyword
matches for its first words, and among the memories whose key is of its key's family. recall/candidates.py
scores what was found and keeps the best few as candidates, each with its relation (``duplicate``,
``update``, ``same_subject``, ``related``); the write stores them, in its own transaction, as inferred links
(features/relations.py), and ``similar`` reports them with their text and dates, so that the agent can
``supersede``, ``forget`` or ``link`` in its next call. The look-ups are recall's arms alone
(recall/pipeline.py's ``nearest``, under the scope and status rules): the in-memory indexes answer them when
ready, the file otherwise.

A batch (``remember_many``) is judged the same way against the store as it was before the batch, without the
keyword look-up when the vault has vectors (a thousand memories would pay a thousand searches), and each of
its memories also against the batch's earlier ones, by their vectors (else their words). A batch of
:data:`BUILD_FOR` or more builds the in-memory index its look-ups read first, and reads each stored memory it
meets once (:class:`Seen`). Conversation turns are events, never judged.

A new key whose text, once normalised, is exactly that of a memory already in the scope is not stored a
second time: the existing memory comes back with ``repeated`` set. ``keep_duplicate`` stores it anyway;
the writes that framework contracts address by key (the LangGraph store, vector stores given ids, the
checkpointer) and conversation turns never take this path, so they keep every write.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..contract.models import Entity, Remembered, SimilarMemory
from ..contract.params import MAX_QUERY_CHARS, RecallParams, RememberInput, RememberManyParams, RememberParams
from ..contract.readable import line_of
from ..embeddings import embedding_text
from ..primitives.dbapi import Connection
from ..recall import candidates, curation
from ..recall.turns import is_turn
from ..records import store
from . import relations

if TYPE_CHECKING:
    from ..engine.engine import Engine

POOL = 20  # memories each look-up finds for a new one, before they are scored as candidates
# The keyword arm asks the new memory's first words: enough for any memory of a few sentences, and a
# bounded search for a document (a 256 KiB body asked its first 64 words).
NEAREST_WORDS = 64
SHOWN_CHARS = 300  # of each candidate's text, in what remember returns
BUILD_FOR = (
    16  # a batch of this many memories to judge against a stored vault builds its look-ups' index first
)
BUILD_WAIT_S = 120.0  # at the most; past it, the look-ups read the file until the build is done
Row = dict[str, Any]  # what is read of a candidate: a head row's fields, or a batch item's


def remember(engine: Engine, p: RememberParams) -> Remembered:
    item = p.memory()
    plan = engine.plan(lambda conn: store.texts_to_embed(conn, [item]), [item])
    text = embedding_text(item.content, item.summary)
    vector = plan.by_text.get(text) if plan is not None else None
    existing = store.find_id(engine.conn(), item.category, item.key, item.agent_id, item.workspace_hash)
    if (
        vector is None and existing is not None and engine.embedder is not None
    ):  # its text is stored, embedded
        vector = engine.read(lambda conn: engine.backend.vectors.head_vectors(conn, [existing])).get(existing)
    new = _new(engine, item, text, existing or 0)
    # a turn is an event, judged against nothing (as in remember_many): it repeats and updates nothing
    found, rows = (
        ([], {}) if is_turn(item.type, item.content, item.body) else gather(engine, item, new, text, vector)
    )
    judged = candidates.judge(new, found)
    repeat = next((c.id for c in judged if c.relation == "duplicate" and _same_body(item, rows[c.id])), None)
    if repeat is not None and not p.keep_duplicate and existing is None:
        return _remembered(
            engine.entity(repeat), [c for c in judged if c.id != repeat], rows, repeated=True, written=False
        )
    said = _verdicts(engine, item, judged, rows)  # outside the write: a judge may take a second

    def work(conn: Connection) -> list[tuple[int, str]]:
        written = store.remember_batch(engine.backend, conn, [item], engine.now(), plan)
        entity_id, change = written[0]
        if change != "unchanged":
            relations.keep(
                engine.backend,
                conn,
                entity_id,
                new.valid_ms,
                judged,
                {c.id: valid_ms(rows[c.id]) for c in judged},
                engine.now(),
                said,
            )
        return written

    written = engine.write_planned(plan, work)
    entity = engine.entity(written[0][0])
    return _remembered(
        entity,
        [c for c in judged if c.id != entity.id],
        rows,
        written=written[0][1] != "unchanged",
        said=said,
    )


def remember_many(engine: Engine, p: RememberManyParams) -> list[Entity]:
    """A batch in one transaction (all written, or none), each memory judged against the store and the batch's
    earlier memories and its relations kept; with ``similar``, each comes back with its candidates."""
    items = p.items
    plan = engine.plan(lambda conn: store.texts_to_embed(conn, items), items)
    texts = [embedding_text(item.content, item.summary) for item in items]
    vectors = [plan.by_text.get(t) if plan is not None else None for t in texts]
    judged = [i for i, item in enumerate(items) if not is_turn(item.type or "", item.content, item.body)]
    words = plan is None or not plan.by_text  # a vault with vectors asks no keyword look-up per batch item
    with engine.reading() as conn:  # an empty store (a first import, a fresh vault) has nothing to look up
        stored = conn.execute("SELECT 1 FROM entities LIMIT 1").fetchone() is not None
        embedded = engine.backend.vectors.model(conn) is not None
    if stored and len(judged) >= BUILD_FOR:
        # The in-memory index the look-ups read, built once now: without it each item's look-up reads the file,
        # the scope's statistics or vectors, a cost that grows with the store (the same answers either way).
        engine.wait(engine.keyword_index if words or not embedded else engine.vector_index, BUILD_WAIT_S)
    seen = Seen()  # what the batch's look-ups read of the store, read once
    outside = {
        i: gather(
            engine,
            items[i],
            _new(engine, items[i], texts[i], 0),
            texts[i],
            vectors[i],
            words=words,
            warm=False,
            seen=seen,
        )
        if stored
        else ([], {})
        for i in judged
    }
    kept: dict[int, tuple[list[candidates.Candidate], dict[int, Row], dict[int, str]]] = {}
    batch = _Batch.of(items, texts, vectors)

    def work(conn: Connection) -> list[tuple[int, str]]:
        now = engine.now()
        written = store.remember_batch(engine.backend, conn, items, now, plan)
        ids = [entity_id for entity_id, _ in written]
        made: dict[int, tuple[Row, candidates.Memory]] = {}  # each batch item as its later items meet it
        first_at: dict[int, int] = {}  # each memory written: the first item that wrote it
        for j, entity_id in enumerate(ids):
            first_at.setdefault(entity_id, j)
        for i in judged:
            new = _new(engine, items[i], texts[i], ids[i])
            inside, rows = _in_batch(engine, items, batch, ids, i, made, now)
            found, heads = outside[i]
            # a stored memory the batch rewrote before this item is judged by its new text, among the batch's
            found = [f for f in found if first_at.get(f.memory.id, i) >= i]
            chosen = candidates.judge(new, [*found, *inside])
            rows = {**heads, **rows}
            said = _verdicts(engine, items[i], chosen, rows)  # a judge, when the vault has one, inside: rare
            kept[i] = (chosen, rows, said)
            if written[i][1] != "unchanged":
                relations.keep(
                    engine.backend,
                    conn,
                    ids[i],
                    new.valid_ms,
                    chosen,
                    {c.id: valid_ms(rows[c.id]) for c in chosen},
                    engine.now(),
                    said,
                )
        return written

    written = engine.write_planned(plan, work)
    entities = engine.entities([entity_id for entity_id, _ in written])
    if not p.similar:
        return entities
    out: list[Entity] = []
    for i, (entity, (_, change)) in enumerate(zip(entities, written)):
        chosen, rows, said = kept.get(i, ([], {}, {}))
        out.append(
            _remembered(
                entity,
                [c for c in chosen if c.id != entity.id],
                rows,
                written=change != "unchanged",
                said=said,
            )
        )
    return out


@dataclass
class Seen:
    """What look-ups read of stored memories, kept for a batch's next look-ups (its items find many of the same
    memories, and all its look-ups are made before its write): head rows, their features, their vectors with their
    norms (``None``: a memory without one), whether the vault has vectors, and what the same for many items."""

    rows: dict[int, Row] = field(default_factory=dict)
    memories: dict[int, candidates.Memory] = field(default_factory=dict)
    vectors: dict[int, tuple[np.ndarray, float] | None] = field(default_factory=dict)
    embedded: bool | None = None  # whether the vault stores vectors yet
    params: dict[tuple[str | None, str | None], RecallParams] = field(default_factory=dict)  # by scope
    families: dict[tuple[str, str, str, str], list[int]] = field(default_factory=dict)  # store.key_family's
    # whether each head row is a turn (its body read once)
    turns: dict[int, bool] = field(default_factory=dict)

    def memory(self, row: Row) -> candidates.Memory:
        found = self.memories.get(row["id"])
        if found is None:
            found = self.memories[row["id"]] = _memory(row)
        return found

    def turn(self, row: Row) -> bool:
        found = self.turns.get(row["id"])
        if found is None:
            found = self.turns[row["id"]] = is_turn(row["type"], row["content"], row["body"])
        return found


def gather(
    engine: Engine,
    item: RememberInput,
    new: candidates.Memory,
    text: str,
    vector: np.ndarray | None,
    words: bool = True,
    warm: bool = True,
    seen: Seen | None = None,
) -> tuple[list[candidates.Found], dict[int, Row]]:
    """What the look-ups find for a new memory in its scope (its vector's nearest, its words' best matches unless
    ``words`` is false, its key's family), with their cosines to it, and the head row of each. ``warm``: start
    building the in-memory index a look-up could use, as a recall does (a batch uses what is ready, and its
    writes would only have to be replayed into an index started before them). ``seen``: what earlier look-ups of
    the same batch read (a head row, its features and its vector are read once for the batch)."""
    seen = seen if seen is not None else Seen()
    scope = {"agent_id": item.agent_id} if item.agent_id else {}
    scope |= {"workspace_hash": item.workspace_hash} if item.workspace_hash else {}
    unset = {
        f: None for f in ("agent_id", "workspace_hash") if f not in scope
    }  # the empty scope, not every scope
    common: dict[str, object] = {"limit": POOL + 1, "reinforce": False, **scope}
    if unset:
        common["where"] = unset
    if seen.embedded is None:
        seen.embedded = engine.read(engine.backend.vectors.model) is not None
    if vector is not None and not seen.embedded:
        vector = None  # no vector stored yet (the vault's first memory): its words alone, then
    query = " ".join(text.split()[:NEAREST_WORDS])[:MAX_QUERY_CHARS]
    if vector is not None:
        where = (item.agent_id, item.workspace_hash)
        if where not in seen.params:  # the look-up by meaning asks the same of every item of a scope
            seen.params[where] = RecallParams.model_validate({"query": "", **common})
        by_meaning = dict(engine.nearest(seen.params[where], vector, warm))
    else:
        by_meaning = {}
    by_words = (
        dict(engine.nearest(RecallParams.model_validate({"query": query, **common}), None, warm))
        if query and (words or vector is None)
        else {}
    )
    with engine.reading() as conn:
        kin = (item.category, item.key.split("-", 1)[0], item.agent_id or "", item.workspace_hash or "")
        if kin not in seen.families:  # a key's family: the same for every key of its first word
            seen.families[kin] = store.key_family(
                conn, item.category, item.key, item.agent_id, item.workspace_hash, POOL
            )
        family = seen.families[kin]
        ids = [i for i in dict.fromkeys([*by_meaning, *by_words, *family]) if i != new.id]
        unread = [i for i in ids if i not in seen.rows]
        if unread:
            seen.rows.update(store.head_rows(conn, unread))
        heads = {i: seen.rows[i] for i in ids if i in seen.rows}
        cosines = _cosines(engine, conn, [i for i in ids if i not in by_meaning], vector, seen)
    cosines.update(by_meaning)
    found = [
        candidates.Found(
            seen.memory(heads[i]), cosines.get(i) if vector is not None else None, by_words.get(i, 0.0)
        )
        for i in ids
        if i in heads and not seen.turn(heads[i])
    ]
    return found, heads


@dataclass
class _Batch:
    """What a batch's items are compared by, computed once for the whole batch: each one's scope, whether it is a
    turn (never judged), its unit vector (when every item has one) and its content words with the items holding
    each word, so that each item meets only its nearest earlier ones (not every earlier one: a batch of 10,000)."""

    scopes: list[tuple[str, str]]
    turns: list[bool]
    unit: np.ndarray | None
    words: list[frozenset[str]]
    holding: dict[str, np.ndarray]  # a word -> the items holding it, ascending
    sizes: np.ndarray  # each item's number of content words

    @classmethod
    def of(cls, items: Sequence[RememberInput], texts: list[str], vectors: list[np.ndarray | None]) -> _Batch:
        unit = None
        if items and all(v is not None for v in vectors):
            matrix = np.stack(vectors).astype(np.float32)  # type: ignore[arg-type]
            unit = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        words = [curation.said(t).words for t in texts]
        holding: dict[str, list[int]] = {}
        if unit is None:
            for k, ws in enumerate(words):
                for w in ws:
                    holding.setdefault(w, []).append(k)
        return cls(
            [(item.agent_id or "", item.workspace_hash or "") for item in items],
            [is_turn(item.type or "", item.content, item.body) for item in items],
            unit,
            words,
            {w: np.asarray(ks, dtype=np.int64) for w, ks in holding.items()},
            np.array([len(ws) for ws in words], dtype=np.int64),
        )

    def nearest(self, i: int, ids: list[int]) -> list[tuple[int, float | None]]:
        """The :data:`POOL` earlier items of item ``i``'s scope nearest to it, by vector (with their cosines) or,
        in a batch without vectors, by the share of their content words they hold in common."""

        def fits(k: int) -> bool:
            return ids[k] != ids[i] and self.scopes[k] == self.scopes[i] and not self.turns[k]

        if self.unit is not None:
            sims = self.unit[:i] @ self.unit[i]
            wanted = min(i, 4 * POOL)
            while True:
                top = np.argpartition(-sims, wanted - 1)[:wanted] if 0 < wanted < i else np.arange(i)
                ranked = top[np.argsort(-sims[top], kind="stable")]
                near: list[tuple[int, float | None]] = [
                    (int(k), float(sims[k])) for k in ranked if fits(int(k))
                ]
                if len(near) >= POOL or wanted >= i:
                    return near[:POOL]
                wanted = min(i, wanted * 4)
        # The earlier items holding each of its words, counted: the words each shares with it, and their Jaccard,
        # best first, ties by position (the exact division of the same integers as n / (mine + theirs - n)).
        earlier = [
            held[: np.searchsorted(held, i)]
            for w in self.words[i]
            if (held := self.holding.get(w)) is not None
        ]
        if not earlier:
            return []
        ks, shared = np.unique(np.concatenate(earlier), return_counts=True)
        score = shared / (len(self.words[i]) + self.sizes[ks] - shared)
        near = []
        for k in ks[np.lexsort((ks, -score))].tolist():
            if fits(k):
                near.append((k, None))
                if len(near) == POOL:
                    break
        return near


def _in_batch(
    engine: Engine,
    items: Sequence[RememberInput],
    batch: _Batch,
    ids: list[int],
    i: int,
    made: dict[int, tuple[Row, candidates.Memory]],
    now_ms: int,
) -> tuple[list[candidates.Found], dict[int, Row]]:
    """The batch's earlier memories of item ``i``'s scope nearest to it (:meth:`_Batch.nearest`) as found memories;
    ``made``: each earlier item's row and features, made when a later item first meets it (written at ``now_ms``)."""
    rows: dict[int, Row] = {}
    found = []
    for j, cosine in batch.nearest(i, ids):
        if j not in made:
            row = _item_row(items[j], ids[j], now_ms)
            made[j] = (row, _memory(row))
        rows[ids[j]], memory = made[j]
        found.append(candidates.Found(memory, cosine))
    return found, rows


def _same_body(item: RememberInput, row: Row) -> bool:
    """Whether a memory holding the new one's text also holds its body fields: only then is it a repeat (the
    text alone the same, the fields another record's, is another memory)."""
    body = row["body"]
    held = json.loads(body) if isinstance(body, str) else body
    return (held or {}) == (item.extra_body() or {})


def _new(engine: Engine, item: RememberInput, text: str, entity_id: int) -> candidates.Memory:
    return candidates.Memory(
        entity_id,
        curation.said(text),
        item.category,
        item.key,
        item.topic_path,
        item.valid_from_ms if item.valid_from_ms is not None else engine.now(),
    )


def _item_row(item: RememberInput, entity_id: int, now_ms: int) -> Row:
    return {
        "id": entity_id,
        "category": item.category,
        "key": item.key,
        "content": item.content,
        "summary": item.summary,
        "topic_path": item.topic_path,
        "valid_from_ms": item.valid_from_ms,
        "valid_to_ms": item.valid_to_ms,
        "updated_at_ms": now_ms,
    }


def _cosines(
    engine: Engine, conn: Connection, ids: list[int], vector: np.ndarray | None, seen: Seen
) -> dict[int, float]:
    """The cosine of ``vector`` to each of these memories' current vectors (the other look-ups found them); each
    vector and its norm read once (``seen``)."""
    if vector is None or not ids:
        return {}
    unit = vector / max(float(np.linalg.norm(vector)), 1e-12)
    unread = [i for i in ids if i not in seen.vectors]
    if unread:
        read = engine.backend.vectors.head_vectors(conn, unread)
        seen.vectors.update(
            (i, (read[i], max(float(np.linalg.norm(read[i])), 1e-12)) if i in read else None) for i in unread
        )
    return {
        i: float(np.dot(v, unit) / norm)
        for i in ids
        if (held := seen.vectors[i]) is not None
        for v, norm in (held,)
    }


def _memory(row: Row) -> candidates.Memory:
    return candidates.Memory(
        int(row["id"]),
        curation.said(embedding_text(row["content"], row["summary"])),
        row["category"],
        row["key"],
        row["topic_path"],
        valid_ms(row),
    )


def valid_ms(row: Row) -> int:
    """When a memory (its head row) became true: its valid-from time, else its write."""
    return int(row["valid_from_ms"] if row["valid_from_ms"] is not None else row["updated_at_ms"])


def _verdicts(
    engine: Engine, item: RememberInput, found: list[candidates.Candidate], rows: dict[int, Row]
) -> dict[int, str]:
    """The vault's judge's verdict on each candidate (features/relations.py), or none without a judge."""
    if engine.judge is None or not found:
        return {}
    return relations.verdicts(engine.judge, item, [_similar(c, rows[c.id]) for c in found])


def _remembered(
    entity: Entity,
    found: list[candidates.Candidate],
    rows: dict[int, Row],
    repeated: bool = False,
    written: bool = True,
    said: dict[int, str] | None = None,
) -> Remembered:
    said = said or {}
    return Remembered.model_validate(
        {
            **entity.model_dump(),
            "repeated": repeated,
            "written": written,
            "similar": [_similar(c, rows[c.id], said.get(c.id)) for c in found],
        }
    )


def _similar(c: candidates.Candidate, row: Row, verdict: str | None = None) -> SimilarMemory:
    text = line_of(row["content"], row["summary"])
    return SimilarMemory(
        id=c.id,
        category=row["category"],
        key=row["key"],
        similarity=c.score,
        relation=verdict or c.relation,  # type: ignore[arg-type]
        text=text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…",
        true_from_ms=valid_ms(row),
        true_to_ms=row.get("valid_to_ms"),
    )


def judge_stored(
    engine: Engine, row: Row, vector: np.ndarray | None, earlier: bool = True
) -> tuple[list[candidates.Candidate], dict[int, Row]]:
    """A stored memory (its head ``row``, its ``vector``) judged as a write judges a new one: its candidates, and
    the row of each. ``earlier``: only among memories of lower ids (written before it), as its write would have
    found them. For memories written before relations were judged (features/backfill.py)."""
    item = RememberInput.model_construct(
        category=row["category"],
        key=row["key"],
        content=row["content"],
        summary=row["summary"],
        agent_id=row["agent_id"] or None,
        workspace_hash=row["workspace_hash"] or None,
    )
    text = embedding_text(row["content"], row["summary"])
    found, rows = gather(engine, item, _memory(row), text, vector, warm=False)
    if earlier:
        found = [f for f in found if f.memory.id < int(row["id"])]
    return candidates.judge(_memory(row), found), rows
