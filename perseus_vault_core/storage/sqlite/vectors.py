"""Vectors in the file: one per entity version, as sqlite-vec float32 blobs, compared with sqlite-vec's
``vec_distance_cosine``.

The embedder's identity and dimension are recorded with the first vector in ``vault_meta``: a
write or a query with another model is refused (:class:`Conflict`) until ``embed(reembed=True)``
rewrites every vector with the new one. Vectors are written in the same transaction as their version.

Why a plain table and not a ``vec0`` virtual table: every search must apply scope, status and time
filters inside its query, which vec0's KNN cannot express, so the SQL search is an exact scan of
the visible rows either way; and vec0 hands rows out about ten times slower than a plain table
(measured: 10k rows in 344 ms against 33 ms), which is what both this scan and the in-memory
index's loading do. The blobs are sqlite-vec's own float32 format.

For the current view, :func:`candidates` takes the same two steps as the in-memory
:mod:`indexes.vector` (sign-bit Hamming pre-filter, then exact cosine), with sqlite-vec's
``vec_distance_hamming`` over the stored bits, so a fresh process answers exactly as a warm one. :func:`search` is the exact scan, for point-in-time queries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...primitives.dbapi import Connection
from ...primitives.dense import cosine, shortlist, sign_bits
from ...primitives.filters import View, scope_clauses
from ...primitives.hits import Hit, Ranking
from ..base import OP_VECTOR, OP_VECTORS_RESET
from ..vector_rows import blob as blob
from ..vector_rows import check_model as check_model
from ..vector_rows import cosines_of
from ..vector_rows import coverage as coverage
from ..vector_rows import missing as missing
from ..vector_rows import missing_count as missing_count
from ..vector_rows import model as model
from ..vector_rows import rescore as rescore
from .keyword import log_changes

TABLE = "version_vectors"


def claim(conn: Connection, identity: str, dimension: int, defer_index: bool = False) -> bool:
    """Inside a write transaction: record the model with the first vector (True: recorded now), or refuse
    another one. (``defer_index``: for the Postgres backend's ANN index; SQLite's file keeps none to defer.)"""
    check_model(conn, identity, dimension)
    if model(conn) is not None:
        return False
    conn.executemany(
        "INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)",
        [("embedding_model", identity), ("embedding_dimension", str(int(dimension)))],
    )
    return True


def build_index(conn: Connection) -> None:
    """Nothing to build: the file's vectors need no ANN index (the in-memory index is each process's)."""


def index_missing(conn: Connection) -> bool:
    """Never: there is no ANN index to miss (:func:`build_index`)."""
    return False


def forget_model(conn: Connection) -> None:
    """Drop every vector and the recorded model (before re-embedding with another one); every
    process's in-memory vector index learns of it through the change log and rebuilds."""
    conn.execute(f"DELETE FROM {TABLE}")
    conn.execute("DELETE FROM trigger_vectors")
    conn.execute("DELETE FROM vault_meta WHERE key IN ('embedding_model', 'embedding_dimension')")
    log_changes(conn, [0], OP_VECTORS_RESET)


def write(conn: Connection, rows: Sequence[tuple[int, np.ndarray]], heads: Sequence[int] = ()) -> None:
    """Store vectors for versions; ``heads`` lists those that already were heads (the mirrors
    learn of new heads' vectors with the head itself)."""
    if rows:  # each in its version's scope, read in the same statement
        conn.executemany(
            f"INSERT OR REPLACE INTO {TABLE} (vid, embedding, bits, scope) "
            "SELECT ?, ?, ?, v.scope FROM entity_versions v WHERE v.vid = ?",
            [(vid, blob(v), sign_bits(v), vid) for vid, v in rows],
        )
    if heads:
        log_changes(conn, list(heads), OP_VECTOR)


def copy(conn: Connection, from_vid: int, to_vid: int) -> None:
    """A new version with the same text as its predecessor keeps its vector."""
    conn.execute(
        f"INSERT OR REPLACE INTO {TABLE} (vid, embedding, bits, scope) SELECT ?, embedding, bits, scope FROM {TABLE} "
        "WHERE vid = ?",
        (to_vid, from_vid),
    )


def delete(conn: Connection, vids: Sequence[int]) -> None:
    if vids:
        conn.executemany(f"DELETE FROM {TABLE} WHERE vid = ?", [(v,) for v in vids])


def candidates(
    conn: Connection,
    query: np.ndarray,
    depth: int,
    agent_id: str | None,
    workspace_hash: str | None,
    keep: int | None = None,
) -> tuple[Ranking, bool]:
    """The current view's first steps (see :mod:`indexes.vector`): the ``depth`` current versions in scope
    nearest to ``query`` by sign-bit Hamming distance (ties by entity id), cut to the ``keep`` best by
    :func:`dense.shortlist` when that was not every candidate, with exact cosine scores; and whether that
    was every candidate there is."""
    params: dict[str, Any] = {"bits": sign_bits(query), "depth": depth}
    where = " AND ".join(["v.recorded_to_ms IS NULL", *scope_clauses(agent_id, workspace_hash, params)])
    rows = conn.execute(
        f"SELECT v.entity_id, v.vid, x.embedding, x.bits FROM {TABLE} x CROSS JOIN entity_versions v ON v.vid = x.vid "
        f"CROSS JOIN entities e ON e.id = v.entity_id WHERE {where} "
        "ORDER BY vec_distance_hamming(vec_bit(x.bits), vec_bit(:bits)), v.entity_id "
        "LIMIT :depth",
        params,
    ).fetchall()
    if not rows:
        return Ranking(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)), True
    complete = len(rows) < depth
    if not complete and keep is not None and keep < len(rows):
        codes = np.stack([np.frombuffer(r[3], dtype=np.uint8) for r in rows])
        picked = shortlist(codes, query, np.asarray([r[0] for r in rows], dtype=np.int64), keep)
        rows = [rows[i] for i in np.sort(picked)]
    scores = cosine(np.stack([np.frombuffer(r[2], dtype=np.float32) for r in rows]), query)
    ranking = Ranking(
        np.asarray([r[1] for r in rows], dtype=np.int64),
        np.asarray([r[0] for r in rows], dtype=np.int64),
        scores,
    )
    return ranking, complete


def search(
    conn: Connection, query: np.ndarray, view: View, pool: int
) -> tuple[list[Hit], dict[int, np.ndarray]]:
    """The ``pool`` visible versions nearest to ``query`` (cosine similarity, best first, ties by id),
    with their vectors."""
    rows = (
        f"json_each(:only_ids) j CROSS JOIN entities e ON e.id = j.value CROSS JOIN entity_versions v "
        f"ON v.entity_id = e.id CROSS JOIN {TABLE} x ON x.vid = v.vid"
        if view.narrowed
        else f"{TABLE} x CROSS JOIN entity_versions v ON v.vid = x.vid CROSS JOIN entities e ON e.id = v.entity_id"
    )
    sql = (
        f"SELECT v.entity_id, v.vid, 1.0 - vec_distance_cosine(x.embedding, :query) AS similarity, x.embedding "
        f"FROM {rows} WHERE {view.where} "
        "ORDER BY similarity DESC, v.entity_id LIMIT :pool"
    )
    params = dict(view.params, query=blob(query), pool=pool)
    hits, found = [], {}
    for eid, vid, similarity, embedding in conn.execute(sql, params):
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
        f"SELECT x.vid, x.embedding FROM json_each(?) j CROSS JOIN {TABLE} x ON x.vid = j.value",
        ("[" + ",".join(str(int(v)) for v in vids) + "]",),
    ).fetchall()
    return {int(vid): np.frombuffer(blob, dtype=np.float32) for vid, blob in rows}


def head_vectors(conn: Connection, entity_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """The current version's vector of each of these entities, by entity id (one without a vector is absent)."""
    rows = conn.execute(
        f"SELECT v.entity_id, x.embedding FROM json_each(?) j CROSS JOIN entity_versions v "
        f"ON v.entity_id = j.value AND v.recorded_to_ms IS NULL CROSS JOIN {TABLE} x ON x.vid = v.vid",
        ("[" + ",".join(str(int(i)) for i in entity_ids) + "]",),
    ).fetchall()
    return {int(eid): np.frombuffer(blob, dtype=np.float32) for eid, blob in rows}


# --- trigger phrases (recall_when): embedded once per model, kept in the file -----------------------


def phrase_vectors(
    conn: Connection, model: str, wanted: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], np.ndarray]:
    """The stored vectors of these (scope key, phrase) pairs for ``model`` (pairs without one are absent)."""
    sql = (
        "SELECT t.scope, t.phrase, t.embedding FROM json_each(:p) j CROSS JOIN trigger_vectors t "
        "ON t.model = :m AND t.phrase = json_extract(j.value, '$[1]') AND t.scope = json_extract(j.value, '$[0]')"
    )
    return {
        (scope, phrase): np.frombuffer(vector, dtype=np.float32)
        for scope, phrase, vector in conn.execute(
            sql, {"p": json.dumps([list(w) for w in wanted]), "m": model}
        )
    }


def write_phrase_vectors(conn: Connection, model: str, vectors: dict[tuple[str, str], np.ndarray]) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO trigger_vectors (model, phrase, embedding, scope) VALUES (?, ?, ?, ?)",
        [
            (model, phrase, np.asarray(v, dtype=np.float32).tobytes(), scope)
            for (scope, phrase), v in sorted(vectors.items())
        ],
    )


def forget_phrases(conn: Connection, scope: str, phrases: Sequence[str]) -> None:
    """After a purge: drop the scope's vectors of these phrases that none of its versions uses any more (a purge leaves
    no text)."""
    for phrase in sorted(phrases):
        used = conn.execute(
            "SELECT 1 FROM entity_versions v, json_each(v.recall_when) j "
            "WHERE v.scope = ? AND v.recall_when != '[]' AND j.value = ? LIMIT 1",
            (scope, phrase),
        ).fetchone()
        if used is None:
            conn.execute("DELETE FROM trigger_vectors WHERE scope = ? AND phrase = ?", (scope, phrase))


def existing(conn: Connection, vids: Sequence[int]) -> set[int]:
    """Which of these versions still exist (a purge may have removed some meanwhile)."""
    rows = conn.execute(
        "SELECT vid FROM entity_versions WHERE vid IN (SELECT value FROM json_each(?))",
        ("[" + ",".join(str(int(v)) for v in vids) + "]",),
    )
    return {int(vid) for (vid,) in rows}
