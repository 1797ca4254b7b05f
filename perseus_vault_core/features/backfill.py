"""What a vault written by an earlier version lacks, filled in: ``embed`` gives every version a vector, or
replaces them all after a model change (docs/embeddings.md); :func:`relations` judges the memories written
before writes judged relations (``reindex``; docs/curation.md).

Versions are embedded in batches, current ones first; each batch is written in its own transaction,
so a long backfill can be stopped and resumed, and writers interleave with it.

On PostgreSQL, a backfill that records the model (a re-embed, or a vault's first vectors) leaves the HNSW
index to its end and builds it once, as an import does: inserting into the graph row by row cost more than
the whole build. Until then a search by SQL scans the vectors, exactly; a backfill stopped before its end
leaves the build to the next ``embed``, which resumes it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..contract.errors import InvalidInput, NotSupported
from ..contract.models import EmbedReport
from ..contract.params import EmbedParams
from ..embeddings.base import checked, embedding_text
from ..engine.engine import Engine
from ..recall.turns import is_turn
from ..records import store
from ..storage import Connection
from ..storage.meta import RELATIONS_PENDING, get_meta, set_meta
from . import relations as kept
from . import remembering

BATCH_ROWS = 2_048  # versions read per batch (embedded EMBED_BATCH texts per model call)
Progress = Callable[[int, int], None]
# vault_meta: the highest entity id written before writes judged relations (a migration sets it), and the last one
# ``relations`` has judged since (a backfill stopped midway resumes after it)
PENDING, JUDGED = RELATIONS_PENDING, "relations_judged_through"
RELATION_BATCH = 100  # memories judged per transaction


def embed(engine: Engine, p: EmbedParams, progress: Progress | None = None) -> EmbedReport:
    """Backfill the missing vectors, or with ``p.reembed`` drop every vector first and embed all."""
    reembed = p.reembed
    embedder = engine.embedder
    if embedder is None:
        raise NotSupported("this vault was opened without an embedder (embedder=False)")
    vectors = engine.backend.vectors
    if reembed:
        checked(embedder, ["a probe before any vector is dropped"])  # a broken embedder stops here
        engine.write(vectors.forget_model)
        if engine.vector_index is not None:
            engine.vector_index.reset()
    with engine.reading() as conn:
        vectors.check_model(conn, embedder.identity, embedder.dimension)
        total = vectors.missing_count(conn)
    done = 0
    while True:
        with engine.reading() as conn:
            batch = vectors.missing(conn, BATCH_ROWS)
        if not batch:
            break
        texts = [embedding_text(content, summary) for _, content, summary, _ in batch]
        unique = list(dict.fromkeys(texts))
        by_text = dict(zip(unique, checked(embedder, unique)))

        def work(
            c: Connection, batch: list[tuple[int, str, str | None, bool]] = batch, texts: list[str] = texts
        ) -> None:
            vectors.claim(c, embedder.identity, embedder.dimension, defer_index=True)
            alive = vectors.existing(c, [b[0] for b in batch])
            rows = [(vid, by_text[text]) for (vid, _, _, _), text in zip(batch, texts) if vid in alive]
            vectors.write(c, rows, heads=[vid for vid, _, _, head in batch if head and vid in alive])

        engine.write(work)
        done += len(batch)
        if progress is not None:
            progress(min(done, total), total)
    with engine.reading() as conn:  # the index this backfill (or one stopped before it) deferred
        missing_index = vectors.index_missing(conn)
    if missing_index and not engine.backend.read_only:  # a replica leaves it to its primary
        engine.write(vectors.build_index)
    return EmbedReport(
        embedded=done, model=embedder.identity, dimension=embedder.dimension, reembedded=reembed
    )


def relations(engine: Engine, progress: Progress | None = None) -> int:
    """Judge each current memory a migration marked as written before writes judged relations, in the order
    they were written, against the memories written before it (as its write would have), and keep what is found
    as inferred links where the pair has or had no link (an inferred link someone unlinked stays closed); returns
    how many memories were judged (conversation turns are not). Each batch is its own transaction and records how
    far it got: a backfill stopped midway resumes where it stopped. ``progress(done, total)``: memories gone
    through of those marked, from the first (a resumed backfill starts at what it had done)."""
    if progress is not None and not callable(progress):
        raise InvalidInput("progress", "must be a function taking (done, total)")
    with engine.reading() as conn:
        through, after = get_meta(conn, PENDING), get_meta(conn, JUDGED)
    if through is None:
        return 0
    start = int(after) if after is not None else 0
    with engine.reading() as conn:
        marked = [
            int(r[0])
            for r in conn.execute(
                "SELECT e.id FROM entities e JOIN entity_versions v ON v.entity_id = e.id AND v.scope = e.scope AND "
                "v.recorded_to_ms IS NULL WHERE e.id <= ? AND v.status = 'active' ORDER BY e.id",
                (int(through),),
            )
        ]
    ids = [i for i in marked if i > start]
    done, judged_count = len(marked) - len(ids), 0
    if progress is not None:
        progress(done, len(marked))
    for first in range(0, len(ids), RELATION_BATCH):
        chunk = ids[first : first + RELATION_BATCH]
        with engine.reading() as conn:
            heads = store.head_rows(conn, chunk)
            vectors = engine.backend.vectors.head_vectors(conn, chunk) if engine.embedder is not None else {}
        judged = []
        for entity_id in chunk:
            row = heads.get(entity_id)
            if row is None or is_turn(row["type"], row["content"], row["body"]):
                continue
            found, rows = remembering.judge_stored(engine, row, vectors.get(entity_id))
            judged.append((row, found, rows))
        last = chunk[-1] == ids[-1]

        def work(c: Connection, judged: list = judged, upto: int = chunk[-1], last: bool = last) -> None:  # type: ignore[type-arg]
            for row, found, rows in judged:
                kept.keep(
                    engine.backend,
                    c,
                    row["id"],
                    remembering.valid_ms(row),
                    found,
                    {f.id: remembering.valid_ms(rows[f.id]) for f in found},
                    engine.now(),
                    fresh=False,
                )
            if last:
                _judged_all(c)
            else:
                set_meta(c, JUDGED, str(upto))

        engine.write(work)
        done += len(chunk)
        judged_count += len(judged)
        if progress is not None:
            progress(done, len(marked))
    if not ids:  # nothing left to judge (every marked memory forgotten, or a stop after the last batch)
        engine.write(_judged_all)
    return judged_count


def _judged_all(conn: Connection) -> None:
    set_meta(conn, PENDING, None)
    set_meta(conn, JUDGED, None)
