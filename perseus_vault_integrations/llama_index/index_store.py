"""``PerseusVaultIndexStore``: LlamaIndex's index store in the vault (docs/llamaindex.md), a ``KVIndexStore``
over :class:`~.kvstore.PerseusVaultKVStore`, as ``RedisIndexStore`` or ``PostgresIndexStore`` are over
theirs: the index structures (``load_index_from_storage`` reads them back) in the vault's key-value
collections, under ``namespace``.
"""

from __future__ import annotations

from llama_index.core.storage.index_store.keyval_index_store import KVIndexStore

from ..arguments import OwnsItsVault, VaultLike, strict
from .kvstore import PerseusVaultKVStore


class PerseusVaultIndexStore(OwnsItsVault, KVIndexStore):
    """LlamaIndex's index store kept in a vault.

    ``vault``: an open :class:`~perseus_vault_core.Vault`, or a path or ``postgresql://`` URL (the store
    then opens the vault, and closes it in :meth:`close`). ``namespace``: the collection's prefix
    (LlamaIndex's default ``index_store``); ``agent_id`` / ``workspace_hash``: the scope.
    """

    @strict
    def __init__(
        self,
        vault: VaultLike,
        *,
        namespace: str | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> None:
        self.kvstore = PerseusVaultKVStore(vault, agent_id=agent_id, workspace_hash=workspace_hash)
        self.vault, self._owned_vault = self.kvstore.vault, self.kvstore._owned_vault
        super().__init__(self.kvstore, namespace=namespace)

    @classmethod
    def from_uri(
        cls,
        uri: str,
        *,
        namespace: str | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> PerseusVaultIndexStore:
        """A store over the vault at ``uri`` (a file path or a ``postgresql://`` URL)."""
        return cls(uri, namespace=namespace, agent_id=agent_id, workspace_hash=workspace_hash)
