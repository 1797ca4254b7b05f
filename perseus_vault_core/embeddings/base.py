"""The embedding contract: what the vault needs from a model, and the text a memory is embedded by.

An :class:`Embedder` has an ``identity`` (recorded in the vault, which refuses to mix vectors
of two models), a ``dimension`` and ``embed(texts)`` returning unit-length float32 rows. A model that
embeds what is searched for differently from what is stored (multilingual-e5-small's ``query:`` and
``passage:``) also has ``embed_queries(texts)``, which the vault uses for what it searches with.
:func:`checked` holds any embedder to that contract before a vector reaches the vault.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..contract.errors import InvalidInput
from ..primitives.labels import on_a_line

BUNDLED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
BUNDLED_IDENTITY = f"{BUNDLED_NAME}@{BUNDLED_SHA256[:12]}"
BUNDLED_DIMENSION = 384
E5_SPEC = "e5"  # PERSEUS_VAULT_EMBEDDER's value for the optional multilingual-e5-small (.e5, the e5 extra)
MAX_TOKENS = 256  # the model's max_seq_length: longer texts are truncated, as sentence-transformers does
BATCH = 32


@runtime_checkable
class Embedder(Protocol):
    """What the vault needs from an embedding model."""

    @property
    def identity(self) -> str:
        """Names the model (and its weights): vectors of two identities are never mixed."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length float32 row per text, in order."""
        ...


def embedding_text(content: str, summary: str | None) -> str:
    """The text a memory is embedded by: its summary (a title, a speaker) and its content, joined as
    ``summary: content``. The colon tells the model which is which: on conversation turns (the speaker as
    summary) it lifted dense R@10 from 0.442 to 0.512 over a plain space, and it moved SciFact and
    Cranfield by under 0.003 nDCG@10 (docs/embeddings.md). Without a summary, a content whose first line is a
    label alone (primitives/labels.py: ``Caroline``, a line break, the text) is embedded as ``label: text``: the
    same turn written with its speaker on a line of its own gets the vector it gets written ``Caroline: text``
    (locomo-dev written so: dense R@10 0.464 before, 0.517 with it, docs/embeddings.md)."""
    if not summary or not summary.strip():
        lined = on_a_line(content)
        return content if lined is None else f"{lined[0]}: {lined[1]}"
    summary = summary.strip()
    return f"{summary} {content}".strip() if summary[-1] in ".:!?" else f"{summary}: {content}".strip()


def query_side(embedder: Embedder) -> Callable[[Sequence[str]], np.ndarray]:
    """How ``embedder`` embeds what is searched with: its ``embed_queries`` when it has one, else ``embed``."""
    embed = getattr(embedder, "embed_queries", None)
    return embed if callable(embed) else embedder.embed


def checked(embedder: Embedder, texts: Sequence[str], query: bool = False) -> np.ndarray:
    """Embed ``texts`` (``query``: as what recall searches with, :func:`query_side`) and hold the result to
    the contract: one finite row per text, of the embedder's dimension, unit length. A custom or remote
    embedder that breaks it is refused here, before anything reaches the vault."""
    out = np.asarray((query_side(embedder) if query else embedder.embed)(list(texts)), dtype=np.float32)
    expected = (len(texts), embedder.dimension)
    if out.shape != expected:
        raise InvalidInput("embedder", f"returned an array of shape {out.shape}, expected {expected}")
    if not np.isfinite(out).all():
        raise InvalidInput("embedder", "returned a vector with NaN or infinite components")
    norms = np.linalg.norm(out, axis=1)
    if (norms == 0).any():
        raise InvalidInput("embedder", "returned a zero vector")
    result: np.ndarray = out / norms[:, None]
    return result


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
