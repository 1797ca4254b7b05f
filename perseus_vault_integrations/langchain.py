"""LangChain and LangGraph adapters (docs/langchain.md); install with ``pip install 'perseus-vault[langchain]'``.

- :class:`PerseusVaultRetriever`: ``recall`` as a retriever (every mode, filter and knob a field).
- :class:`PerseusVaultVectorStore`: a ``VectorStore`` over one vault category.
- :class:`PerseusVaultChatMessageHistory`: a persisted transcript per session whose messages are memories.
- :class:`LangChainEmbedder` / :class:`VaultEmbeddings`: embeddings across the boundary, both ways.

The LangGraph store is :class:`perseus_vault_integrations.langgraph_store.PerseusVaultStore`.
"""

from __future__ import annotations

from .langchain_chat_history import PerseusVaultChatMessageHistory
from .langchain_embeddings import LangChainEmbedder, VaultEmbeddings
from .langchain_retriever import PerseusVaultRetriever
from .langchain_vectorstore import PerseusVaultVectorStore

__all__ = [
    "LangChainEmbedder",
    "PerseusVaultChatMessageHistory",
    "PerseusVaultRetriever",
    "PerseusVaultVectorStore",
    "VaultEmbeddings",
]
