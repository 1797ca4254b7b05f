"""One model, one identity: a vault filled through LlamaIndex with the bundled model recorded under that model's
own identity, so ``Vault(path)`` and the other surfaces write beside it."""

from __future__ import annotations

from pathlib import Path

from llama_index.core import Document, StorageContext, VectorStoreIndex

from perseus_vault_core import Vault
from perseus_vault_core.embeddings import BUNDLED_IDENTITY
from perseus_vault_integrations.llama_index import (
    LlamaIndexEmbedder,
    PerseusVaultEmbedding,
    PerseusVaultVectorStore,
)

from ...conftest import TwoSidedEmbedder


def test_a_vault_filled_through_llamaindex_has_the_bundled_models_identity(tmp_path: Path) -> None:
    embedder = LlamaIndexEmbedder(PerseusVaultEmbedding())
    assert (embedder.identity, embedder.dimension) == (BUNDLED_IDENTITY, 384)
    path = tmp_path / "v.db"
    with Vault(path, embedder=embedder) as vault:
        store = PerseusVaultVectorStore(vault)
        index = VectorStoreIndex.from_documents(
            [Document(text="We chose SQLite in WAL mode for the vault.", id_="db")],
            embed_model=PerseusVaultEmbedding(vault),
            storage_context=StorageContext.from_defaults(vector_store=store),
        )
        assert index.as_retriever(similarity_top_k=1).retrieve("which database")
    with Vault(path) as vault:  # the same model, opened as the CLI and MCP open it
        assert vault.stats().embedding_model == BUNDLED_IDENTITY
        vault.remember("note", "pg", "Postgres was considered and rejected.")
        assert vault.recall("which database was rejected", mode="dense", limit=1).items[0].key == "pg"


def test_a_query_is_embedded_on_the_models_query_side() -> None:
    import asyncio

    model = PerseusVaultEmbedding(embedder=TwoSidedEmbedder())
    assert model.get_text_embedding("stored") == [1.0, 0.0]
    assert model.get_query_embedding("searched") == [0.0, 1.0]
    assert asyncio.run(model.aget_query_embedding("searched")) == [0.0, 1.0]
    bridged = LlamaIndexEmbedder(model)  # the vault's own model again, both sides kept
    assert bridged.identity == "test:two-sided"
    assert bridged.embed(["stored"]).tolist() == [[1.0, 0.0]] and bridged.embed_queries(["q"]).tolist() == [
        [0.0, 1.0]
    ]
