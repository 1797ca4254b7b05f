"""``embed``: give every version a vector, or replace them all after a model change (docs/embeddings.md).

Versions are embedded in batches, current ones first; each batch is written in its own transaction,
so a long backfill can be stopped and resumed, and writers interleave with it.

On PostgreSQL, a backfill that records the model (a re-embed, or a vault's first vectors) leaves the HNSW
index to its end and builds it once, as an import does: inserting into the graph row by row cost more than
the whole build. Until then a search by SQL scans the vectors, exactly; a backfill stopped before its end
leaves the build to the next ``embed``, which resumes it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..contract.errors import NotSupported
from ..contract.models import EmbedReport
from ..embeddings.base import checked, embedding_text
from ..engine.engine import Engine
from ..storage import Connection

BATCH_ROWS = 2_048  # versions read per batch (embedded EMBED_BATCH texts per model call)
Progress = Callable[[int, int], None]


def embed(engine: Engine, reembed: bool, progress: Progress | None) -> EmbedReport:
    """Backfill the missing vectors, or with ``reembed`` drop every vector first and embed all."""
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

        def work(c: Connection, batch: list[tuple[int, str, str | None, bool]] = batch, texts: list[str] = texts) -> None:
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
    return EmbedReport(embedded=done, model=embedder.identity, dimension=embedder.dimension, reembedded=reembed)
