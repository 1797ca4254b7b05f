"""Which search a recall runs (:func:`choose`) and what its model allows: ``fts5`` (keyword), ``dense`` (meaning) or
``hybrid`` (both), refused with a clear error when the vault cannot run it (no embedder, no stored vectors, another
model's vectors); a caller's own query vector checked against the stored vectors (:func:`check_vector`,
:func:`query_vector`); and whether the vault's model is the bundled one (:func:`bundled`), whose cosines the
relatedness floors and hybrid's rules were measured on."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..contract.errors import InvalidInput, NotSupported
from ..contract.params import RecallParams
from ..embeddings import BUNDLED_IDENTITY
from ..storage import Connection
from .arms import Arms


def choose(conn: Connection, params: RecallParams, arms: Arms) -> str:
    """The mode a recall runs in: the one asked for, refused when it cannot run; when none is, ``hybrid`` if the
    vault holds vectors and has an embedder, else ``fts5``. Reads the stored vectors' model once, and not at all
    for ``fts5``."""
    if params.mode == "fts5":
        return "fts5"
    recorded = arms.backend.vectors.model(conn)
    if params.mode is None:
        if not (recorded is not None and arms.embed_query is not None):
            return "fts5"
        # A query embedded by another model than the stored vectors' would rank noise: refuse.
        _same_model(conn, recorded, arms)
        return "hybrid"
    if arms.embed_query is None:
        raise NotSupported(
            f"mode={params.mode!r} needs an embedding model, and this vault was opened without one"
        )
    if recorded is None:
        raise NotSupported(
            f"mode={params.mode!r} needs stored vectors and this vault has none yet; "
            "run `perseus-vault embed` (or remember with an embedder), or use mode='fts5'"
        )
    _same_model(conn, recorded, arms)
    return params.mode


def _same_model(conn: Connection, recorded: tuple[str, int], arms: Arms) -> None:
    """Refuse an embedder other than the stored vectors' model (``vectors.check_model`` says why)."""
    if recorded != _model(arms):
        arms.backend.vectors.check_model(conn, *_model(arms))


def check_vector(conn: Connection, vector: np.ndarray, arms: Arms) -> None:
    recorded = arms.backend.vectors.model(conn)
    if recorded is None:
        raise NotSupported("a search by vector needs stored vectors and this vault has none yet")
    if vector.shape != (recorded[1],):
        raise InvalidInput(
            "vector",
            f"has shape {vector.shape}; this vault's vectors have {recorded[1]} dimensions ({recorded[0]})",
        )


def query_vector(vector: Any) -> np.ndarray:
    """A caller's query vector as one unit float32 row (recall_by_vector); refused unless it is one
    non-zero row of finite numbers."""
    try:
        query = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("vector", f"must be a sequence of numbers ({exc})") from None
    if query.ndim != 1 or not np.isfinite(query).all() or not np.any(query):
        raise InvalidInput("vector", "must be one non-zero row of finite numbers")
    unit: np.ndarray = query / np.linalg.norm(query)
    return unit


def _model(arms: Arms) -> tuple[str, int]:
    assert arms.embedder_model is not None
    return arms.embedder_model()


def bundled(arms: Arms) -> bool:
    """Whether the vault's model is the bundled one, whose cosines the relatedness floors and hybrid's rules
    (:func:`fusion.trusted`, :func:`fusion.fed_back`) were measured on."""
    return arms.embedder_model is not None and arms.embedder_model()[0] == BUNDLED_IDENTITY
