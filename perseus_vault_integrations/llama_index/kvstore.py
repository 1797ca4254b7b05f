"""``PerseusVaultKVStore``: LlamaIndex's key-value store in the vault (docs/llamaindex.md), which its
document store and index store (``docstore``, ``index_store``) are built on, as LlamaIndex's own
``KVDocumentStore`` / ``KVIndexStore`` are over Redis, MongoDB or Postgres.

Values are JSON objects, kept in the vault's key-value collections (``perseus_vault_core.KeyValues``:
a table of their own, keyed by scope, collection and key), so that what an index persists lives in
the same file or PostgreSQL database as its nodes. A batch (``put_all``) is one transaction, whatever
its ``batch_size``; the async methods run in a worker thread.
"""

from __future__ import annotations

import asyncio

from llama_index.core.storage.kvstore.types import DEFAULT_BATCH_SIZE, DEFAULT_COLLECTION, BaseKVStore

from perseus_vault_core import KeyValues

from ..arguments import OwnsItsVault, VaultLike, strict, vault_from


class PerseusVaultKVStore(OwnsItsVault, BaseKVStore):
    """LlamaIndex key-value pairs kept in a vault.

    ``vault``: an open :class:`~perseus_vault_core.Vault`, or a path or ``postgresql://`` URL (the store
    then opens the vault, and closes it in :meth:`close`). ``agent_id`` / ``workspace_hash``: the scope
    the values belong to (none: the unscoped vault).
    """

    @strict
    def __init__(
        self, vault: VaultLike, *, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> None:
        with vault_from(vault) as (self.vault, self._owned_vault):
            self.values = KeyValues(self.vault, agent_id=agent_id, workspace_hash=workspace_hash)

    @classmethod
    def from_uri(
        cls, uri: str, *, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> PerseusVaultKVStore:
        """A store over the vault at ``uri`` (a file path or a ``postgresql://`` URL), as LlamaIndex's
        database-backed key-value stores are made."""
        return cls(uri, agent_id=agent_id, workspace_hash=workspace_hash)

    def put(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:  # type: ignore[type-arg]
        self.values.put(collection, key, val)

    def put_all(
        self,
        kv_pairs: list[tuple[str, dict]],  # type: ignore[type-arg]
        collection: str = DEFAULT_COLLECTION,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        """Every pair in one transaction (``batch_size`` is accepted for LlamaIndex's callers; the vault
        writes the whole batch at once)."""
        self.values.put_many(collection, list(kv_pairs))

    def get(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:  # type: ignore[type-arg]
        return self.values.get(collection, key)

    def get_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:  # type: ignore[type-arg]
        return self.values.get_all(collection)

    def delete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        return self.values.delete(collection, key)

    async def aput(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:  # type: ignore[type-arg]
        await asyncio.to_thread(self.put, key, val, collection)

    async def aput_all(
        self,
        kv_pairs: list[tuple[str, dict]],  # type: ignore[type-arg]
        collection: str = DEFAULT_COLLECTION,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        await asyncio.to_thread(self.put_all, list(kv_pairs), collection, batch_size)

    async def aget(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:  # type: ignore[type-arg]
        return await asyncio.to_thread(self.get, key, collection)

    async def aget_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:  # type: ignore[type-arg]
        return await asyncio.to_thread(self.get_all, collection)

    async def adelete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        return await asyncio.to_thread(self.delete, key, collection)
