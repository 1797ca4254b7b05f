"""``vault_storage_context`` (llama_index/storage_context.py): every store of a LlamaIndex StorageContext in
the vault, under one namespace and scope, sharing one vault (opened from a path, closed with the vector
store); ``persist()`` writes nothing beside it and an index reloads from the vault alone. On both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llama_index.core import load_index_from_storage

from perseus_vault_core import StorageError, Vault
from perseus_vault_integrations.llama_index import (
    PerseusVaultDocumentStore,
    PerseusVaultEmbedding,
    PerseusVaultGraphStore,
    PerseusVaultIndexStore,
    PerseusVaultVectorStore,
    vault_storage_context,
)

from .test_vector_stores import build, texts

pytestmark = pytest.mark.both_backends


def test_every_store_is_the_vault_s_under_the_namespace_and_scope(dense_vault: Vault) -> None:
    context = vault_storage_context(dense_vault, namespace="kb", agent_id="ops", workspace_hash="w")
    vectors, images = context.vector_store, context.vector_stores["image"]
    assert isinstance(vectors, PerseusVaultVectorStore) and isinstance(images, PerseusVaultVectorStore)
    assert isinstance(context.docstore, PerseusVaultDocumentStore)
    assert isinstance(context.index_store, PerseusVaultIndexStore)
    assert isinstance(context.graph_store, PerseusVaultGraphStore)
    stores: list[Any] = [vectors, images, context.docstore, context.index_store, context.graph_store]
    assert all(store.vault is dense_vault for store in stores)  # one vault shared
    assert (vectors.collection, images.collection) == ("kb", "kb:image")
    assert (vectors.agent_id, vectors.workspace_hash) == ("ops", "w")
    assert context.graph_store.collection == "kb/graph"


def test_what_the_stores_keep_is_seen_in_their_namespace_and_scope_only(dense_vault: Vault) -> None:
    from llama_index.core import Document

    def context(**kw: Any) -> Any:
        return vault_storage_context(dense_vault, **{"namespace": "kb", "agent_id": "ops", **kw})

    written = context()
    written.graph_store.upsert_triplet("Alice", "lives in", "Berlin")
    written.docstore.add_documents([Document(text="a note", id_="doc-1")])
    same = context()  # made again: everything from the vault
    assert same.graph_store.get("Alice") == [["lives in", "Berlin"]]
    assert same.docstore.document_exists("doc-1")
    for other in (context(agent_id="sales"), context(namespace="kb2")):
        assert other.graph_store.get("Alice") == [] and not other.docstore.document_exists("doc-1")


def test_given_a_path_the_stores_share_the_vault_the_vector_store_opens_and_closes(
    vault_path: str | Path, fake_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Vault(vault_path, embedder=fake_embedder):
        pass  # created, with the embedder's model recorded on first use only
    context = vault_storage_context(str(vault_path))
    opened = context.vector_store.vault
    assert all(s.vault is opened for s in (context.docstore, context.index_store, context.graph_store))
    context.docstore.add_documents([])  # usable while open
    context.vector_store.close()
    with pytest.raises(StorageError, match="the vault is closed"):  # for every store: they shared it
        opened.stats()


def test_persist_writes_nothing_beside_the_vault_and_the_index_reloads_from_it(
    vault_path: str | Path, fake_embedder: Any, tmp_path: Path
) -> None:
    with Vault(vault_path, embedder=fake_embedder) as vault:
        index = build(vault)
        index.storage_context.persist(persist_dir=str(tmp_path / "storage"))
        assert not (tmp_path / "storage").exists() or list((tmp_path / "storage").iterdir()) == []
    with Vault(vault_path, embedder=fake_embedder) as vault:  # a new process: everything from the vault
        loaded = load_index_from_storage(
            vault_storage_context(vault), embed_model=PerseusVaultEmbedding(vault)
        )
        assert loaded.index_id == index.index_id
        assert texts(loaded.as_retriever(similarity_top_k=1).retrieve("payments retried")) == [
            "The billing service retries failed payments twice."
        ]
        assert set(loaded.docstore.get_all_document_hashes().values()) == {"d1", "d2", "d3", "d4", "d5"}
