"""Trigger phrases matched by meaning: every (scope, phrase) vector of the embedding model as one matrix.

A phrase matches a context by meaning when the cosine of their embeddings is at least ``min_similarity``, whatever
words they share, so no word index can find it. This process keeps each model's phrase vectors as one float32 matrix
(:class:`PhraseMatrix`, kept by the engine for the open vault): one product with the context's vector screens them
all, and only the phrases above the threshold go on, with their cosine computed exactly as a single dot product in
float64 (the screen's float32 rounding never decides a match: it lets through anything within :data:`SLACK` below).

The matrix holds the phrases of every version (any scope, any time: the caller's view decides what is visible) and
follows the change log (``head_changes``) to the versions other processes write; a rebuild, a trimmed log or another
history of the file (a restored backup) builds it again. A phrase without a stored vector (written before phrases
were embedded on write, or imported) is embedded a bounded number per call, in (scope, phrase) order, and stored in
its scope for the next process, as before.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..contract.errors import VaultError
from ..engine.engine import Engine
from ..primitives.dialect import dialect
from ..primitives.filters import id_list
from ..storage import Connection, trigger_terms
from ..storage.base import OP_HEAD

Key = tuple[str, str]  # (scope key, phrase)
SLACK = 1e-4  # how far below the threshold a float32 cosine may fall and still be checked exactly
MAX_LAZY_PHRASES = 256  # trigger phrases a read may embed (those written before they were embedded on write)


@dataclass
class PhraseMatrix:
    """One model's phrase vectors, a row each, and what of the file they follow."""

    dimension: int
    keys: list[Key] = field(default_factory=list)
    rows: dict[Key, int] = field(default_factory=dict)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    missing: set[Key] = field(default_factory=set)  # phrases of some version with no vector yet
    position: int | None = None  # the change-log position followed to
    marker: str | None = None

    def __post_init__(self) -> None:
        self.matrix = np.zeros((64, self.dimension), dtype=np.float32)

    def add(self, vectors: dict[Key, np.ndarray]) -> None:
        """Keep these vectors (a phrase already held keeps its row)."""
        new = [(k, v) for k, v in sorted(vectors.items()) if k not in self.rows]
        if not new:
            return
        size = len(self.keys)
        if size + len(new) > len(self.matrix):
            grown = np.zeros((max(2 * len(self.matrix), size + len(new)), self.dimension), dtype=np.float32)
            grown[:size] = self.matrix[:size]
            self.matrix = grown
        for n, (key, vector) in enumerate(new):
            self.matrix[size + n] = np.asarray(vector, dtype=np.float32)
            self.rows[key] = size + n
            self.keys.append(key)
            self.missing.discard(key)

    def near(self, query: np.ndarray, threshold: float) -> dict[Key, float]:
        """The phrases whose cosine to ``query`` (a unit vector) is at least ``threshold``, or within :data:`SLACK`
        below it, with their cosine computed exactly (float64, as one dot product). Pure."""
        size = len(self.keys)
        if size == 0:
            return {}
        screen = self.matrix[:size] @ query.astype(np.float32)
        exact = query.astype(np.float64)
        return {
            self.keys[i]: float(np.dot(self.matrix[i].astype(np.float64), exact))
            for i in np.flatnonzero(screen >= threshold - SLACK)
        }


class PhraseMatrices:
    """The matrices this process keeps for an open vault, by model identity (``Engine.kept``)."""

    def __init__(self) -> None:
        self.by_model: dict[str, PhraseMatrix] = {}
        self.lock = threading.Lock()


def _pairs(texts: Iterable[tuple[str, str]]) -> set[Key]:
    return {(scope, p) for scope, text in texts for p in json.loads(text)}


def _stored(conn: Connection, model: str) -> dict[Key, np.ndarray]:
    return {
        (scope, phrase): np.frombuffer(vector, dtype=np.float32)
        for scope, phrase, vector in conn.execute(
            "SELECT scope, phrase, embedding FROM trigger_vectors WHERE model = ?", (model,)
        )
    }


def _follow(engine: Engine, conn: Connection, held: PhraseMatrix, model: str) -> None:
    """Bring ``held`` up to the snapshot ``conn`` reads: built whole the first time (or when the log cannot tell
    what changed), else the phrases of the versions written since."""
    changes = engine.backend.changes
    upto = changes.position(conn)
    if held.position == upto and changes.marker(conn, upto) == held.marker:
        return
    first = changes.first(conn)
    whole = (
        held.position is None
        or changes.marker(conn, held.position) != held.marker
        or (first is not None and first > held.position + 1)
        or changes.rebuilt_since(conn, held.position)
    )
    if whole:
        fresh = PhraseMatrix(held.dimension)
        pairs = _pairs(
            conn.execute("SELECT DISTINCT scope, recall_when FROM entity_versions WHERE recall_when != '[]'")
        )
        stored = _stored(conn, model)
        fresh.add({k: v for k, v in stored.items() if k in pairs})
        fresh.missing = pairs - set(stored)
        held.__dict__.update(fresh.__dict__)
    else:
        assert held.position is not None
        vids = sorted(
            {vid for vid, op in changes.entries(conn, held.position, upto, vectors=False) if op == OP_HEAD}
        )
        found = (
            _pairs(
                conn.execute(
                    f"SELECT v.scope, v.recall_when FROM {dialect(conn).ids('?')} j CROSS JOIN entity_versions v "
                    "ON v.vid = j.value WHERE v.recall_when != '[]'",
                    (id_list(vids),),
                )
            )
            if vids
            else set()
        )
        new = sorted(k for k in found if k not in held.rows)
        if new:
            known = engine.trigger_vectors.get(model, {})
            vectors = {k: known[k] for k in new if k in known}
            vectors.update(
                engine.backend.vectors.phrase_vectors(conn, model, [k for k in new if k not in vectors])
            )
            held.add(vectors)
            held.missing.update(k for k in new if k not in vectors)
    held.position, held.marker = upto, changes.marker(conn, upto)


def _fill(engine: Engine, held: PhraseMatrix, model: str) -> None:
    """Vectors for up to :data:`MAX_LAZY_PHRASES` phrases that have none, in order: from this process's cache, the
    file (another process may have made them), else the embedder (then kept in the file, in their scope)."""
    lazy = sorted(held.missing)[:MAX_LAZY_PHRASES]
    if not lazy:
        return
    known = engine.trigger_vectors.get(model, {})
    found = {k: known[k] for k in lazy if k in known}
    with engine.reading() as conn:
        found.update(engine.backend.vectors.phrase_vectors(conn, model, [k for k in lazy if k not in found]))
    wanted = [k for k in lazy if k not in found]
    texts = engine.embed_texts(list(dict.fromkeys(p for _, p in wanted)))
    made = {k: texts[k[1]] for k in wanted}
    held.add({**found, **made})
    if made:
        try:  # a cache: a read-only file or a busy writer costs only the next process's time
            engine.write(lambda c: engine.backend.vectors.write_phrase_vectors(c, model, made))
        except VaultError:
            pass


def near(engine: Engine, context: str, threshold: float) -> dict[Key, float]:
    """The (scope key, phrase) pairs whose cosine to ``context`` is at least ``threshold`` (or just below it: the
    caller compares the exact cosine), of every version the file holds."""
    identity, dimension = engine.embedder_model()
    vectors = engine.backend.vectors
    with engine.reading() as conn:
        vectors.check_model(conn, identity, dimension)
    kept = engine.kept(PhraseMatrices, PhraseMatrices)
    with kept.lock:
        held = kept.by_model.setdefault(identity, PhraseMatrix(dimension))
        with engine.reading() as conn:
            _follow(engine, conn, held, identity)
        _fill(engine, held, identity)
        if not held.keys:
            return {}
        return held.near(engine.embed_query(context), threshold)


def holders(conn: Connection, found: Sequence[Key]) -> set[int]:
    """The versions filed under every term of each of these phrases (a superset of those holding them)."""
    return {vid for scope, phrase in found for vid in trigger_terms.holding(conn, scope, phrase)}
