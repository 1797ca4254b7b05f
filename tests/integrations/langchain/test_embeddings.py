"""One model, one identity: a vault filled through LangChain with the bundled model (``PerseusVaultEmbeddings``)
records the model's own identity, so ``Vault(path)``, the MCP server and the other adapters read and write it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from perseus_vault_core import Vault
from perseus_vault_core.embeddings import BUNDLED_IDENTITY
from perseus_vault_integrations.langchain import (
    LangChainEmbedder,
    PerseusVaultEmbeddings,
    PerseusVaultStore,
    PerseusVaultVectorStore,
)
from perseus_vault_integrations.mcp import build_server

from ...conftest import TwoSidedEmbedder


def test_a_vault_filled_through_langchain_is_recalled_through_vault_and_mcp(tmp_path: Path) -> None:
    path = tmp_path / "v.db"
    store = PerseusVaultVectorStore(path, PerseusVaultEmbeddings())
    store.add_texts(
        ["We chose SQLite in WAL mode for the vault.", "Alice drinks green tea at four."], ids=["db", "tea"]
    )
    store.close()
    with Vault(path) as vault:
        assert vault.stats().embedding_model == BUNDLED_IDENTITY
        vault.remember(
            "note", "pg", "Postgres was considered for the vault and rejected."
        )  # no model conflict
        assert [
            i.key for i in vault.recall("which database engine did we pick", mode="dense", limit=1).items
        ] == ["db"]

    async def over_mcp() -> Any:
        async with Client(build_server(str(path))) as client:
            return await client.call_tool(
                "perseus_vault_recall", {"query": "which database engine", "mode": "dense", "limit": 1}
            )

    answer = anyio.run(over_mcp)
    assert not answer.is_error and [i["key"] for i in answer.structured_content["items"]] == ["db"]
    again = PerseusVaultVectorStore(path, PerseusVaultEmbeddings())  # and LangChain goes on beside the others
    again.add_texts(["Postgres serves the shared deployment."], ids=["shared"])
    assert [d.id for d in again.similarity_search("what does the shared deployment run on", k=1)] == [
        "shared"
    ]
    again.close()


def test_the_bundled_model_has_one_identity_on_every_surface(tmp_path: Path) -> None:
    assert LangChainEmbedder(PerseusVaultEmbeddings()).identity == BUNDLED_IDENTITY
    with Vault(tmp_path / "open.db") as vault:  # an open vault takes the same model as its embedding
        PerseusVaultVectorStore(vault, PerseusVaultEmbeddings()).add_texts(["a note"], ids=["n"])
    path = tmp_path / "graph.db"
    graph = PerseusVaultStore(path, index={"embed": PerseusVaultEmbeddings(), "dims": 384})
    graph.put(("users", "alice"), "prefs", {"text": "likes green tea"})
    graph.close()
    with Vault(path) as vault:
        assert vault.stats().embedding_model == BUNDLED_IDENTITY
        vault.remember("note", "x", "a plain memory beside the store's items")


def test_store_items_read_as_text_in_the_vaults_own_recall(tmp_path: Path) -> None:
    """A LangGraph item's content is its value written as field: value lines, not JSON; an item put with
    index=False reads so too, yet is never a hit of the store's own query search (as in InMemoryStore)."""
    from perseus_vault_core import readable

    path = tmp_path / "items.db"
    store = PerseusVaultStore(path)
    store.put(
        ("users", "ada"), "drinks", {"text": "Ada drinks green tea", "tags": ["tea", "morning"], "cups": 2}
    )
    store.put(("users", "ada"), "hidden", {"text": "Ada keeps green tea in the office"}, index=False)
    assert [h.key for h in store.search(("users",), query="green tea")] == ["drinks", "hidden"]
    assert [h.score is None for h in store.search(("users",), query="green tea")] == [False, True]
    store.close()
    with Vault(path, embedder=False) as vault:
        found = vault.recall("green tea", min_score=None)
        contents = {item.body["key"]: item.content for item in found.items}
        assert contents == {
            "drinks": "text: Ada drinks green tea\ntags: tea, morning\ncups: 2",
            "hidden": "text: Ada keeps green tea in the office",
        }
        assert '{"' not in readable(found)  # no JSON for a reader to parse


def test_a_query_is_embedded_on_the_models_query_side() -> None:
    embeddings = PerseusVaultEmbeddings(embedder=TwoSidedEmbedder())
    assert embeddings.embed_documents(["stored"]) == [[1.0, 0.0]]
    assert embeddings.embed_query("searched") == [0.0, 1.0]
    bridged = LangChainEmbedder(embeddings)  # the vault's own model again, both sides kept
    assert bridged.identity == "test:two-sided"
    assert bridged.embed(["stored"]).tolist() == [[1.0, 0.0]] and bridged.embed_queries(["q"]).tolist() == [
        [0.0, 1.0]
    ]
