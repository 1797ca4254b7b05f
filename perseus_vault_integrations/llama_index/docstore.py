"""``PerseusVaultDocumentStore``: LlamaIndex's document store in the vault (docs/llamaindex.md), a
``KVDocumentStore`` over :class:`~.kvstore.PerseusVaultKVStore`, as ``RedisDocumentStore`` or
``PostgresDocumentStore`` are over theirs.

It keeps what an index records about its documents (their hashes and reference info, and the nodes of
indexes whose vector store keeps no text) in the vault's key-value collections, under ``namespace``.
"""

from __future__ import annotations

from llama_index.core.storage.docstore.keyval_docstore import KVDocumentStore
from llama_index.core.storage.kvstore.types import DEFAULT_BATCH_SIZE

from ..arguments import OwnsItsVault, VaultLike, strict
from .kvstore import PerseusVaultKVStore


class PerseusVaultDocumentStore(OwnsItsVault, KVDocumentStore):
    """LlamaIndex's document store kept in a vault.

    ``vault``: an open :class:`~perseus_vault_core.Vault`, or a path or ``postgresql://`` URL (the store
    then opens the vault, and closes it in :meth:`close`). ``namespace``: the collections' prefix
    (LlamaIndex's default ``docstore``); ``agent_id`` / ``workspace_hash``: the scope.
    """

    @strict
    def __init__(
        self,
        vault: VaultLike,
        *,
        namespace: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> None:
        self.kvstore = PerseusVaultKVStore(vault, agent_id=agent_id, workspace_hash=workspace_hash)
        self.vault, self._owned_vault = self.kvstore.vault, self.kvstore._owned_vault
        super().__init__(self.kvstore, namespace=namespace, batch_size=batch_size)

    @classmethod
    def from_uri(
        cls,
        uri: str,
        *,
        namespace: str | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> PerseusVaultDocumentStore:
        """A store over the vault at ``uri`` (a file path or a ``postgresql://`` URL)."""
        return cls(uri, namespace=namespace, agent_id=agent_id, workspace_hash=workspace_hash)
