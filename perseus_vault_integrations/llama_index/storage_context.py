"""``vault_storage_context``: a LlamaIndex ``StorageContext`` whose every store is in the vault
(docs/llamaindex.md), so that an index built on it keeps its nodes, its bookkeeping and its structure in
one file (or PostgreSQL database) and ``storage_context.persist()`` writes nothing beside it.

``StorageContext.from_defaults(vector_store=...)`` alone still makes an in-memory document store, index
store, graph store and image store, and ``persist()`` writes each of them to a JSON file; this gives
each its vault counterpart instead.
"""

from __future__ import annotations

from llama_index.core import StorageContext

from ..arguments import VaultLike, strict
from .docstore import PerseusVaultDocumentStore
from .graph_stores import PerseusVaultGraphStore
from .index_store import PerseusVaultIndexStore
from .vector_stores import PerseusVaultVectorStore


@strict
def vault_storage_context(
    vault: VaultLike,
    *,
    namespace: str = "llamaindex",
    agent_id: str | None = None,
    workspace_hash: str | None = None,
) -> StorageContext:
    """Every store of a ``StorageContext`` in ``vault`` (a Vault, or a path or ``postgresql://`` URL), under
    ``namespace`` and in one scope:

    - ``vector_store``: :class:`PerseusVaultVectorStore`, nodes as memories of category ``namespace``
      (the image store: category ``<namespace>:image``);
    - ``docstore`` / ``index_store``: :class:`PerseusVaultDocumentStore` / :class:`PerseusVaultIndexStore`,
      in the vault's key-value collections ``<namespace>/docstore/...`` and ``<namespace>/index_store/...``;
    - ``graph_store``: :class:`PerseusVaultGraphStore`, in ``<namespace>/graph``.

    Given a path, the vector store opens the vault, the others share it, and
    ``storage_context.vector_store.close()`` closes it.
    """
    a, w = agent_id, workspace_hash
    vectors = PerseusVaultVectorStore(vault, collection=namespace, agent_id=a, workspace_hash=w)
    opened = vectors.vault
    return StorageContext.from_defaults(
        vector_store=vectors,
        image_store=PerseusVaultVectorStore(
            opened, collection=f"{namespace}:image", agent_id=a, workspace_hash=w
        ),
        docstore=PerseusVaultDocumentStore(
            opened, namespace=f"{namespace}/docstore", agent_id=a, workspace_hash=w
        ),
        index_store=PerseusVaultIndexStore(
            opened, namespace=f"{namespace}/index_store", agent_id=a, workspace_hash=w
        ),
        graph_store=PerseusVaultGraphStore(opened, namespace=namespace, agent_id=a, workspace_hash=w),
    )
