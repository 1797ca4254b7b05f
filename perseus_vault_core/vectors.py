"""Vectors in the file: one per entity version, in a sqlite-vec ``vec0`` table (cosine distance).

The table is created with the first vector, sized by the embedder's dimension, and the
embedder's identity and dimension are recorded in ``vault_meta``: a write or a query with
another model is refused (:class:`Conflict`) until ``embed(reembed=True)`` rewrites every
vector with the new one. Vectors are written in the same transaction as their version.

The SQL search here is exact and filters inside the statement (scope, status, time) by
computing ``vec_distance_cosine`` over the visible rows only; it answers point-in-time
queries and covers for the in-memory :mod:`vector_index` until that is ready.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import Conflict
from .filters import View
from .keyword import log_changes
from .mirror import OP_VECTOR, Hit

TABLE = "version_vectors"


def model(conn: Any) -> tuple[str, int] | None:
    """(identity, dimension) of the vectors in this vault, or ``None`` before the first one."""
    rows = dict(conn.execute(
        "SELECT key, value FROM vault_meta WHERE key IN ('embedding_model', 'embedding_dimension')"
    ).fetchall())
    if "embedding_model" not in rows:
        return None
    return rows["embedding_model"], int(rows["embedding_dimension"])


def exists(conn: Any) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is not None


def check_model(conn: Any, identity: str, dimension: int) -> None:
    """Refuse to mix models: the vault's vectors must all come from one embedder."""
    recorded = model(conn)
    if recorded is not None and recorded != (identity, dimension):
        raise Conflict(
            f"this vault's vectors come from {recorded[0]} ({recorded[1]} dimensions) but the embedder is "
            f"{identity} ({dimension} dimensions); run `perseus-vault embed --reembed` to switch models"
        )


def claim(conn: Any, identity: str, dimension: int) -> None:
    """Inside a write transaction: record the model with the first vector, or refuse another one."""
    check_model(conn, identity, dimension)
    if model(conn) is None:
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING vec0(embedding float[{int(dimension)}] distance_metric=cosine)"
        )
        conn.executemany(
            "INSERT OR REPLACE INTO vault_meta (key, value) VALUES (?, ?)",
            [("embedding_model", identity), ("embedding_dimension", str(int(dimension)))],
        )


def forget_model(conn: Any) -> None:
    """Drop every vector and the recorded model (before re-embedding with another one)."""
    conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    conn.execute("DELETE FROM vault_meta WHERE key IN ('embedding_model', 'embedding_dimension')")


def blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def write(conn: Any, rows: Sequence[tuple[int, np.ndarray]], heads: Sequence[int] = ()) -> None:
    """Store vectors for versions; ``heads`` lists those that already were heads (the mirrors
    learn of new heads' vectors with the head itself)."""
    if rows:
        conn.executemany(f"INSERT OR REPLACE INTO {TABLE} (rowid, embedding) VALUES (?, ?)",
                         [(vid, blob(v)) for vid, v in rows])
    if heads:
        log_changes(conn, list(heads), OP_VECTOR)


def copy(conn: Any, from_vid: int, to_vid: int) -> None:
    """A new version with the same text as its predecessor keeps its vector."""
    if exists(conn):
        conn.execute(
            f"INSERT OR REPLACE INTO {TABLE} (rowid, embedding) SELECT ?, embedding FROM {TABLE} WHERE rowid = ?",
            (to_vid, from_vid),
        )


def delete(conn: Any, vids: Sequence[int]) -> None:
    if exists(conn) and vids:
        conn.executemany(f"DELETE FROM {TABLE} WHERE rowid = ?", [(v,) for v in vids])


def coverage(conn: Any) -> tuple[int, int]:
    """(current versions with a vector, current versions)."""
    heads = int(conn.execute("SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL").fetchone()[0])
    if not exists(conn):
        return 0, heads
    embedded = int(conn.execute(
        f"SELECT count(*) FROM entity_versions v JOIN {TABLE} x ON x.rowid = v.vid WHERE v.recorded_to_ms IS NULL"
    ).fetchone()[0])
    return embedded, heads


def missing(conn: Any, limit: int) -> list[tuple[int, str, str | None, bool]]:
    """Versions without a vector, current ones first: (vid, content, summary, is_head)."""
    if not exists(conn):
        sql = "SELECT vid, content, summary, recorded_to_ms IS NULL FROM entity_versions"
    else:
        sql = (f"SELECT v.vid, v.content, v.summary, v.recorded_to_ms IS NULL FROM entity_versions v "
               f"WHERE NOT EXISTS (SELECT 1 FROM {TABLE} x WHERE x.rowid = v.vid)")
    rows = conn.execute(f"{sql} ORDER BY (recorded_to_ms IS NULL) DESC, vid LIMIT ?", (limit,)).fetchall()
    return [(int(vid), content, summary, bool(head)) for vid, content, summary, head in rows]


def search(conn: Any, query: np.ndarray, view: View, pool: int) -> list[Hit]:
    """The ``pool`` visible versions nearest to ``query`` (cosine similarity, best first, ties by id)."""
    if not exists(conn):
        return []
    sql = (
        f"SELECT v.entity_id, v.vid, 1.0 - vec_distance_cosine(x.embedding, :query) AS similarity "
        f"FROM entity_versions v CROSS JOIN entities e ON e.id = v.entity_id "
        f"CROSS JOIN {TABLE} x ON x.rowid = v.vid WHERE {view.where} "
        "ORDER BY similarity DESC, v.entity_id LIMIT :pool"
    )
    params = dict(view.params, query=blob(query), pool=pool)
    return [Hit(int(eid), int(vid), float(s)) for eid, vid, s in conn.execute(sql, params)]


def rescore(conn: Any, hits: list[Hit], query: np.ndarray) -> list[Hit]:
    """Exact cosine for a candidate pool, computed one canonical way (float64, fixed summation order)
    from the stored vectors, so the SQL path and the in-memory index give byte-identical results."""
    if not hits:
        return hits
    rows = dict(conn.execute(
        f"SELECT rowid, embedding FROM {TABLE} WHERE rowid IN (SELECT value FROM json_each(?))",
        ("[" + ",".join(str(h.vid) for h in hits) + "]",),
    ).fetchall())
    matrix = np.stack([np.frombuffer(rows[h.vid], dtype=np.float32) for h in hits]).astype(np.float64)
    scores = (matrix * np.asarray(query, dtype=np.float32).astype(np.float64)).sum(axis=1)
    rescored = [Hit(h.entity_id, h.vid, float(s)) for h, s in zip(hits, scores)]
    return sorted(rescored, key=lambda h: (-h.score, h.entity_id))
