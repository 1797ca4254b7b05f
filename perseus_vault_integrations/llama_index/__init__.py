"""LlamaIndex adapters (docs/llamaindex.md); install with ``pip install "perseus-vault[llamaindex]"``.

One module per LlamaIndex component, named as LlamaIndex names its own:

- :class:`PerseusVaultRetriever` (``retrievers``): ``recall`` as a retriever, for query engines and tools.
- :class:`PerseusVaultVectorStore` (``vector_stores``): a ``BasePydanticVectorStore``, so ``VectorStoreIndex``
  keeps its nodes in the vault.
- :class:`PerseusVaultDocumentStore` (``docstore``), :class:`PerseusVaultIndexStore` (``index_store``) over
  :class:`PerseusVaultKVStore` (``kvstore``): an index's bookkeeping in the vault too, and
  :func:`vault_storage_context` (``storage_context``) with all of them, so ``persist()`` writes no file.
- :class:`PerseusVaultMemoryBlock` (``memory``): long-term memory for ``llama_index.core.memory.Memory``.
- :class:`PerseusVaultPropertyGraphStore` (``graph_stores``): a ``PropertyGraphStore`` on the vault's
  entities and links, so ``PropertyGraphIndex`` builds on it.
- :class:`PerseusVaultGraphStore` (``graph_stores``): the older triplet ``GraphStore`` (a ``StorageContext``'s
  ``graph_store``), in the vault's key-value collections.
- :class:`PerseusVaultEmbedding` / :class:`LlamaIndexEmbedder` (``embeddings``): embeddings across the
  boundary, both ways.

Each takes the vault first, as a :class:`~perseus_vault_core.Vault`, a path or a ``postgresql://`` URL, and
refuses an unknown argument with :class:`~perseus_vault_core.InvalidInput`.
"""

from __future__ import annotations

from ..extras import require

# First, so that a missing framework is named once, here, before the modules below import it.
require("llamaindex", "the LlamaIndex adapters", "llama_index.core")

from .docstore import PerseusVaultDocumentStore
from .embeddings import LlamaIndexEmbedder, PerseusVaultEmbedding
from .graph_stores import PerseusVaultGraphStore, PerseusVaultPropertyGraphStore
from .index_store import PerseusVaultIndexStore
from .kvstore import PerseusVaultKVStore
from .memory import PerseusVaultMemoryBlock
from .retrievers import PerseusVaultRetriever
from .storage_context import vault_storage_context
from .vector_stores import PerseusVaultVectorStore

__all__ = [
    "LlamaIndexEmbedder",
    "PerseusVaultDocumentStore",
    "PerseusVaultEmbedding",
    "PerseusVaultGraphStore",
    "PerseusVaultIndexStore",
    "PerseusVaultKVStore",
    "PerseusVaultMemoryBlock",
    "PerseusVaultPropertyGraphStore",
    "PerseusVaultRetriever",
    "PerseusVaultVectorStore",
    "vault_storage_context",
]
