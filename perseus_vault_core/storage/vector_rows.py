"""The vector store's SQL that both backends run alike (the protocol is :class:`~.base.VectorStore`).

The recorded model (``vault_meta``), coverage counts, versions still waiting for a vector, and the
canonical rescoring of an exact scan's hits: plain SQL over the shared tables, and numpy.
"""

from __future__ import annotations

import numpy as np

from ..contract.errors import Conflict
from ..primitives.dbapi import Connection
from ..primitives.dense import cosine
from ..primitives.hits import Hit

TABLE = "version_vectors"


MODEL_SQL = "SELECT key, value FROM vault_meta WHERE key IN ('embedding_model', 'embedding_dimension')"


def model(conn: Connection) -> tuple[str, int] | None:
    """(identity, dimension) of the vectors in this vault, or ``None`` before the first one; inside a Postgres
    read snapshot, as read with its BEGIN (``PgConnection.begin_snapshot``)."""
    memo = getattr(conn, "memo", None)
    rows = dict(memo["model"] if memo is not None else conn.execute(MODEL_SQL).fetchall())
    if "embedding_model" not in rows:
        return None
    return rows["embedding_model"], int(rows["embedding_dimension"])


def check_model(conn: Connection, identity: str, dimension: int) -> None:
    """Refuse to mix models: the vault's vectors must all come from one embedder."""
    recorded = model(conn)
    if recorded is not None and recorded != (identity, dimension):
        raise Conflict(
            f"this vault's vectors come from {recorded[0]} ({recorded[1]} dimensions) but the embedder is "
            f"{identity} ({dimension} dimensions): open it with the embedder that made them "
            "(PERSEUS_VAULT_EMBEDDER, docs/embeddings.md), or run `perseus-vault embed --reembed` to switch models"
        )


def blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def coverage(conn: Connection) -> tuple[int, int]:
    """(current versions with a vector, current versions)."""
    heads = int(
        conn.execute("SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL").fetchone()[0]
    )
    embedded = int(
        conn.execute(
            f"SELECT count(*) FROM entity_versions v JOIN {TABLE} x ON x.vid = v.vid AND x.scope = v.scope "
            "WHERE v.recorded_to_ms IS NULL"
        ).fetchone()[0]
    )
    return embedded, heads


def missing_count(conn: Connection) -> int:
    return int(
        conn.execute(
            f"SELECT count(*) FROM entity_versions v WHERE NOT EXISTS "
            f"(SELECT 1 FROM {TABLE} x WHERE x.vid = v.vid AND x.scope = v.scope)"
        ).fetchone()[0]
    )


def missing(conn: Connection, limit: int) -> list[tuple[int, str, str | None, bool]]:
    """Versions without a vector, current ones first: (vid, content, summary, is_head)."""
    sql = (
        f"SELECT v.vid, v.content, v.summary, v.recorded_to_ms IS NULL FROM entity_versions v "
        f"WHERE NOT EXISTS (SELECT 1 FROM {TABLE} x WHERE x.vid = v.vid AND x.scope = v.scope)"
    )
    rows = conn.execute(f"{sql} ORDER BY (recorded_to_ms IS NULL) DESC, vid LIMIT ?", (limit,)).fetchall()
    return [(int(vid), content, summary, bool(head)) for vid, content, summary, head in rows]


def rescore(hits: list[Hit], found: dict[int, np.ndarray], query: np.ndarray) -> list[Hit]:
    """The exact scan's hits scored the canonical way (see dense.cosine)."""
    if not hits:
        return hits
    scores = cosine(np.stack([found[h.vid] for h in hits]), query)
    rescored = [Hit(h.entity_id, h.vid, float(s)) for h, s in zip(hits, scores)]
    return sorted(rescored, key=lambda h: (-h.score, h.entity_id))


def cosines_of(found: dict[int, np.ndarray], query: np.ndarray) -> dict[int, float]:
    """The cosine of ``query`` to each vector of ``found`` (version number -> vector), scored the canonical way."""
    if not found:
        return {}
    scores = cosine(np.stack(list(found.values())), query)
    return {vid: float(score) for vid, score in zip(found, scores)}
