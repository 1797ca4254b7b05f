"""What the vault lends recall (:class:`Arms`): its storage backend, its in-memory indexes and, if it has
one, a query embedder. The engine makes them (``Engine.arms``); the pipeline and the curated window read
them, so that recall knows no engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..contract.params import Fusion
from ..indexes.keyword import KeywordIndex
from ..indexes.vector import VectorIndex
from ..storage import Backend
from .kept_relations import KeptRelations


@dataclass
class Arms:
    """What the vault lends recall: its storage backend, its in-memory indexes and, if it has one, a
    query embedder."""

    backend: Backend
    keyword_index: KeywordIndex | None = None
    vector_index: VectorIndex | None = None
    embed_query: Callable[[str], np.ndarray] | None = None
    embedder_model: Callable[[], tuple[str, int]] | None = None
    fusion: Fusion | None = None
    relations: KeptRelations | None = None  # the relations curation acts on, held for the open vault
