"""Vectors on Postgres: one per entity version, searched through pgvector's HNSW index, scored exactly.

Each row of ``version_vectors`` keeps the vector twice: as little-endian float32 bytes (``embedding``,
with its sign bits in ``bits``), which the in-memory vector index of every process loads and which
exact scores are computed from, the same bytes as on SQLite; and as a pgvector ``vector`` (``vec``), which
the HNSW index (cosine distance) is built over. The index is made when the first model claims the vault,
over ``vec`` cast to the model's dimension (an index needs one), and dropped with the model
(``embed --reembed``).

:func:`candidates`, the current view's search when no in-memory index answers (a new process, or a host
whose index is still loading), asks the HNSW index for the ``depth`` nearest current versions in scope
(iterative scan, so filtered-out rows do not leave the list short) and scores them exactly from their
bytes: pgvector's float32 distances only choose the candidates, never rank them. :func:`search` is the
exact scan for point-in-time and narrowed views: its ordering expression is not the index's, so
Postgres scores every visible row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...primitives.dbapi import Connection
from ...primitives.dense import cosine, sign_bits
from ...primitives.dialect import POSTGRES
from ...primitives.filters import View, scope_clauses
from ...primitives.hits import Hit, Ranking
from ..base import OP_VECTOR, OP_VECTORS_RESET
from ..meta import set_meta
from ..vector_rows import blob, check_model, cosines_of, coverage, missing, missing_count, model, rescore
from .changes import log_changes

TABLE = "version_vectors"
HNSW_INDEX = "version_vectors_hnsw"
EF_SEARCH_MAX = 1000  # pgvector's ceiling for hnsw.ef_search


def literal(vector: np.ndarray) -> str:
    """A vector as pgvector's text form, ``[x,y,...]`` (float32 values, written exactly)."""
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def indexed(dimension: int) -> str:
    """The expression the HNSW index is built over, which a query must order by to use it: ``vec`` as a
    vector of the model's dimension (the column itself takes any)."""
    return f"(CAST(vec AS vector({int(dimension)})))"


def claim(conn: Connection, identity: str, dimension: int, defer_index: bool = False) -> bool:
    """Inside a write transaction: record the model with the first vector (True: recorded now) and make the
    HNSW index for its dimension, or refuse another model. ``defer_index``: the caller is about to write
    many vectors (an import or ``migrate`` in this transaction, ``embed`` in a batch per transaction) and
    calls :func:`build_index` after them: one build costs far less than inserting into the graph row by row."""
    check_model(conn, identity, dimension)
    if model(conn) is not None:
        return False
    set_meta(conn, "embedding_model", identity)
    set_meta(conn, "embedding_dimension", str(int(dimension)))
    if not defer_index:
        build_index(conn)
    return True


def build_index(conn: Connection) -> None:
    """The HNSW index over the recorded model's dimension, unless it exists, in the caller's transaction (an
    import's: it commits with the vectors or not at all). Readers go on meanwhile; writers wait for it, as
    for any write. Asked first, so an index that exists costs no lock on the table."""
    recorded = model(conn)
    if recorded is not None and _unbuilt(conn):
        conn.execute(
            f"CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON {TABLE} USING hnsw ({indexed(recorded[1])} "
            "vector_cosine_ops)"
        )


def index_missing(conn: Connection) -> bool:
    """Whether the vault has vectors but no HNSW index over them (a backfill stopped before building it)."""
    return model(conn) is not None and _unbuilt(conn)


def _unbuilt(conn: Connection) -> bool:
    return bool(conn.execute("SELECT to_regclass(?) IS NULL", (HNSW_INDEX,)).fetchone()[0])


def forget_model(conn: Connection) -> None:
    """Drop every vector, the recorded model and the pgvector column (before re-embedding with another
    model); every process's in-memory vector index learns of it through the change log and rebuilds."""
    conn.execute(f"DELETE FROM {TABLE}")
    conn.execute("DELETE FROM trigger_vectors")
    conn.execute("DELETE FROM vault_meta WHERE key IN ('embedding_model', 'embedding_dimension')")
    conn.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")
    log_changes(conn, [0], OP_VECTORS_RESET)


def write(conn: Connection, rows: Sequence[tuple[int, np.ndarray]], heads: Sequence[int] = ()) -> None:
    """Store vectors for versions (after :func:`claim`); ``heads`` lists those that already were heads."""
    if rows:  # each in its version's scope, read in the same statement
        conn.executemany(
            f"INSERT INTO {TABLE} (vid, embedding, bits, vec, scope) SELECT ?, ?, ?, CAST(? AS vector), v.scope "
            "FROM entity_versions v WHERE v.vid = ? ON CONFLICT (vid, scope) "
            "DO UPDATE SET embedding = excluded.embedding, bits = excluded.bits, vec = excluded.vec",
            [(vid, blob(v), sign_bits(v), literal(v), vid) for vid, v in rows],
        )
    if heads:
        log_changes(conn, list(heads), OP_VECTOR)


def copy(conn: Connection, from_vid: int, to_vid: int) -> None:
    """A new version with the same text as its predecessor keeps its vector."""
    conn.execute(
        f"INSERT INTO {TABLE} (vid, embedding, bits, vec, scope) SELECT ?, embedding, bits, vec, scope FROM {TABLE} "
        "WHERE vid = ? ON CONFLICT (vid, scope) DO UPDATE SET embedding = excluded.embedding, bits = excluded.bits, "
        "vec = excluded.vec",
        (to_vid, from_vid),
    )


def delete(conn: Connection, vids: Sequence[int]) -> None:
    if vids:
        conn.execute(f"DELETE FROM {TABLE} WHERE vid = ANY(?)", ([int(v) for v in vids],))


def existing(conn: Connection, vids: Sequence[int]) -> set[int]:
    """Which of these versions still exist (a purge may have removed some meanwhile)."""
    rows = conn.execute("SELECT vid FROM entity_versions WHERE vid = ANY(?)", ([int(v) for v in vids],))
    return {int(vid) for (vid,) in rows}


def candidates(
    conn: Connection,
    query: np.ndarray,
    depth: int,
    agent_id: str | None,
    workspace_hash: str | None,
    keep: int | None = None,
) -> tuple[Ranking, bool]:
    """The ``depth`` current versions in scope nearest to ``query`` by the HNSW index, with exact cosine
    scores, and whether that was every candidate there is. ``keep`` is the SQLite path's shortlist (its
    Hamming pre-filter is coarse); the HNSW's candidates are already close, so all are scored."""
    del keep
    params: dict[str, Any] = {"q": literal(query), "depth": depth}
    where = " AND ".join(
        ["v.recorded_to_ms IS NULL", *scope_clauses(agent_id, workspace_hash, params, POSTGRES)]
    )
    if not conn.in_transaction:  # SET LOCAL lasts for the transaction: recall runs inside a read snapshot
        raise RuntimeError("vectors.candidates runs inside a read snapshot")
    conn.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(EF_SEARCH_MAX, int(depth)))}")
    conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")  # filtered rows do not cut the list short
    rows = conn.execute(
        f"SELECT v.entity_id, v.vid, x.embedding FROM {TABLE} x JOIN entity_versions v ON v.vid = x.vid "
        f"AND v.scope = x.scope JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope WHERE {where} ORDER BY CAST(x.vec AS vector({len(query)})) <=> CAST(:q AS vector) LIMIT :depth",
        params,
    ).fetchall()
    if not rows:
        return Ranking(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)), True
    scores = cosine(np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]), query)
    ranking = Ranking(
        np.asarray([r[1] for r in rows], dtype=np.int64),
        np.asarray([r[0] for r in rows], dtype=np.int64),
        scores,
    )
    return ranking, len(rows) < depth


def search(
    conn: Connection, query: np.ndarray, view: View, pool: int
) -> tuple[list[Hit], dict[int, np.ndarray]]:
    """The ``pool`` visible versions nearest to ``query`` (cosine similarity, best first, ties by id), with
    their vectors: an exact scan (see the module docstring)."""
    rows = (
        f"{POSTGRES.ids(':only_ids')} j JOIN entities e ON e.id = j.value JOIN entity_versions v ON v.entity_id = e.id "
        f"AND v.scope = e.scope JOIN {TABLE} x ON x.vid = v.vid AND x.scope = v.scope"
        if view.narrowed
        else f"{TABLE} x JOIN entity_versions v ON v.vid = x.vid AND v.scope = x.scope "
        "JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope"
    )
    sql = (
        f"SELECT v.entity_id, v.vid, 1.0 - (x.vec <=> CAST(:query AS vector)) AS similarity, x.embedding "
        f"FROM {rows} WHERE {view.where} ORDER BY similarity DESC, v.entity_id LIMIT :pool"
    )
    hits, found = [], {}
    for eid, vid, similarity, embedding in conn.execute(
        sql, dict(view.params, query=literal(query), pool=pool)
    ):
        hits.append(Hit(int(eid), int(vid), float(similarity)))
        found[int(vid)] = np.frombuffer(embedding, dtype=np.float32)
    return hits, found


def cosines(conn: Connection, vids: Sequence[int], query: np.ndarray) -> dict[int, float]:
    """The cosine of ``query`` to each of these versions' vectors, scored the canonical way (a version
    without a vector is absent)."""
    return cosines_of(vectors(conn, vids), query)


def vectors(conn: Connection, vids: Sequence[int]) -> dict[int, np.ndarray]:
    """Each of these versions' vector, by version number (a version without one is absent)."""
    rows = conn.execute(
        f"SELECT vid, embedding FROM {TABLE} WHERE vid = ANY(?)", ([int(v) for v in vids],)
    ).fetchall()
    return {int(vid): np.frombuffer(b, dtype=np.float32) for vid, b in rows}


def head_vectors(conn: Connection, entity_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """The current version's vector of each of these entities, by entity id (one without a vector is absent)."""
    rows = conn.execute(
        f"SELECT v.entity_id, x.embedding FROM entity_versions v JOIN {TABLE} x ON x.vid = v.vid AND x.scope = v.scope "
        "WHERE v.entity_id = ANY(?) AND v.recorded_to_ms IS NULL",
        ([int(i) for i in entity_ids],),
    ).fetchall()
    return {int(eid): np.frombuffer(b, dtype=np.float32) for eid, b in rows}


def phrase_vectors(
    conn: Connection, model: str, wanted: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], np.ndarray]:
    """The stored vectors of these (scope key, phrase) pairs for ``model`` (pairs without one are absent)."""
    rows = conn.execute(
        "SELECT t.scope, t.phrase, t.embedding FROM unnest(CAST(? AS text[]), CAST(? AS text[])) AS w(scope, phrase) "
        "JOIN trigger_vectors t ON t.model = ? AND t.phrase = w.phrase AND t.scope = w.scope",
        ([scope for scope, _ in wanted], [phrase for _, phrase in wanted], model),
    )
    return {(scope, phrase): np.frombuffer(vector, dtype=np.float32) for scope, phrase, vector in rows}


def write_phrase_vectors(conn: Connection, model: str, vectors: dict[tuple[str, str], np.ndarray]) -> None:
    """Keep these phrase vectors, each in its scope (a role bound to one scope writes its own: tenancy.py)."""
    if vectors:
        pairs = sorted(vectors)
        conn.execute(
            "INSERT INTO trigger_vectors (model, phrase, embedding, scope) "
            "SELECT ?, u.phrase, u.embedding, u.scope FROM unnest(CAST(? AS text[]), CAST(? AS text[]), "
            "CAST(? AS bytea[])) AS u(scope, phrase, embedding) "
            "ON CONFLICT (model, phrase, scope) DO UPDATE SET embedding = excluded.embedding",
            (
                model,
                [scope for scope, _ in pairs],
                [phrase for _, phrase in pairs],
                [np.asarray(vectors[pair], dtype=np.float32).tobytes() for pair in pairs],
            ),
        )


def forget_phrases(conn: Connection, scope: str, phrases: Sequence[str]) -> None:
    """After a purge: drop the scope's vectors of these phrases that none of its versions uses any more."""
    if phrases:
        conn.execute(
            "DELETE FROM trigger_vectors t WHERE t.scope = ? AND t.phrase = ANY(?) AND NOT EXISTS ("
            "SELECT 1 FROM entity_versions v WHERE v.scope = t.scope AND v.recall_when <> '[]' "
            "AND CAST(v.recall_when AS jsonb) @> jsonb_build_array(t.phrase))",
            (scope, sorted(phrases)),
        )


__all__ = [
    "TABLE",
    "build_index",
    "candidates",
    "check_model",
    "claim",
    "copy",
    "cosines",
    "coverage",
    "delete",
    "existing",
    "forget_model",
    "forget_phrases",
    "head_vectors",
    "index_missing",
    "missing",
    "missing_count",
    "model",
    "phrase_vectors",
    "rescore",
    "search",
    "vectors",
    "write",
    "write_phrase_vectors",
]
