"""LangChain and LangGraph adapters (docs/langchain.md); install with ``pip install "perseus-vault[langchain]"``.

One module per LangChain component, named as LangChain names its own:

- :class:`PerseusVaultRetriever` (``retrievers``): ``recall`` as a retriever, with ``VectorStoreRetriever``'s
  ``search_type`` / ``search_kwargs`` (every recall mode, filter and knob a field besides).
- :class:`PerseusVaultVectorStore` (``vectorstores``): a ``VectorStore`` over one vault category.
- :class:`PerseusVaultChatMessageHistory` (``chat_message_histories``): a persisted transcript per session
  whose messages are memories.
- :class:`PerseusVaultStore` (``stores``): LangGraph's long-term memory, a ``BaseStore``.
- :class:`PerseusVaultSaver` (``checkpoint``): LangGraph's checkpointer, a ``BaseCheckpointSaver`` (sync and
  async), keeping a graph's threads in the same vault.
- :class:`PerseusVaultEmbeddings` / :class:`LangChainEmbedder` (``embeddings``): embeddings across the
  boundary, both ways.
- :class:`ChatModelJudge` (``judges``): any chat model as the vault's judge of each new memory's candidates.

Each takes the vault first, as a :class:`~perseus_vault_core.Vault`, a path or a ``postgresql://`` URL, and
refuses an unknown argument with :class:`~perseus_vault_core.InvalidInput`.
"""

from __future__ import annotations

from ..extras import require

# First, so that a missing framework is named once, here, before the modules below import it.
require(
    "langchain",
    "the LangChain adapters",
    "langchain_core",
    "langgraph.store.base",
    "langgraph.checkpoint.base",
)

from .chat_message_histories import PerseusVaultChatMessageHistory
from .checkpoint import PerseusVaultSaver
from .embeddings import LangChainEmbedder, PerseusVaultEmbeddings
from .judges import ChatModelJudge
from .retrievers import PerseusVaultRetriever
from .stores import PerseusVaultStore
from .vectorstores import PerseusVaultVectorStore

__all__ = [
    "ChatModelJudge",
    "LangChainEmbedder",
    "PerseusVaultChatMessageHistory",
    "PerseusVaultEmbeddings",
    "PerseusVaultRetriever",
    "PerseusVaultSaver",
    "PerseusVaultStore",
    "PerseusVaultVectorStore",
]
