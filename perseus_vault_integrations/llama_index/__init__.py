"""LlamaIndex adapters (docs/llamaindex.md); install with ``pip install "perseus-vault[llamaindex]"``.

One module per LlamaIndex component, named as LlamaIndex names its own:

- :class:`PerseusVaultRetriever` (``retrievers``): ``recall`` as a retriever, for query engines and tools.
- :class:`PerseusVaultMemoryBlock` (``memory``): long-term memory for ``llama_index.core.memory.Memory``.
- :class:`PerseusVaultPropertyGraphStore` (``graph_stores``): a ``PropertyGraphStore`` on the vault's
  entities and links, so ``PropertyGraphIndex`` builds on it.
- :class:`PerseusVaultEmbedding` / :class:`LlamaIndexEmbedder` (``embeddings``): embeddings across the
  boundary, both ways.

Each takes the vault first, as a :class:`~perseus_vault_core.Vault` or a path, and refuses an unknown
argument with :class:`~perseus_vault_core.InvalidInput`.
"""

from __future__ import annotations

from ..extras import require

# First, so that a missing framework is named once, here, before the modules below import it.
require("llamaindex", "the LlamaIndex adapters", "llama_index.core")

from .embeddings import LlamaIndexEmbedder, PerseusVaultEmbedding
from .graph_stores import PerseusVaultPropertyGraphStore
from .memory import PerseusVaultMemoryBlock
from .retrievers import PerseusVaultRetriever

__all__ = [
    "LlamaIndexEmbedder",
    "PerseusVaultEmbedding",
    "PerseusVaultMemoryBlock",
    "PerseusVaultPropertyGraphStore",
    "PerseusVaultRetriever",
]
