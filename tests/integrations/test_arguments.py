"""One way to make every adapter, whatever its framework: the vault first, as a Vault or a path (an
adapter that opened the vault closes it; one given a Vault leaves it open), and an unknown argument
refused by name before anything is opened."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.data_structs.data_structs import IndexList
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.graph_stores.types import EntityNode
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from perseus_vault_core import InvalidInput, StorageError, Vault
from perseus_vault_integrations import langchain as lc
from perseus_vault_integrations import llama_index as li
from perseus_vault_integrations.arguments import refuse_unknown, strict
from perseus_vault_integrations.mcp import VaultClient, build_server

from ..conftest import FakeEmbedder


def _lc_store(store: lc.PerseusVaultStore) -> None:
    store.put(("users", "ada"), "prefs", {"theme": "dark"})
    item = store.get(("users", "ada"), "prefs")
    assert item is not None and item.value == {"theme": "dark"}


def _lc_vectorstore(store: lc.PerseusVaultVectorStore) -> None:
    store.add_texts(["the cat sat on the mat"], ids=["cat"])
    assert [d.id for d in store.similarity_search("cat", k=1)] == ["cat"]


def _lc_history(history: lc.PerseusVaultChatMessageHistory) -> None:
    history.add_messages([HumanMessage("hello there")])
    assert [m.text for m in history.messages] == ["hello there"]


def _lc_retriever(retriever: lc.PerseusVaultRetriever) -> None:
    retriever.vault.remember(category="note", key="db", content="We chose SQLite.")
    assert [d.page_content for d in retriever.invoke("sqlite")] == ["We chose SQLite."]


def _lc_saver(saver: lc.PerseusVaultSaver) -> None:
    from langgraph.checkpoint.base import empty_checkpoint

    saved = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, empty_checkpoint(), {}, {})
    assert saver.get_tuple(saved) is not None


def _li_retriever(retriever: li.PerseusVaultRetriever) -> None:
    retriever.vault.remember(category="note", key="db", content="We chose SQLite.")
    assert [n.node.get_content() for n in retriever.retrieve("sqlite")] == ["We chose SQLite."]


def _li_block(block: li.PerseusVaultMemoryBlock) -> None:
    asyncio.run(block.aput([ChatMessage(role="user", content="My cat is called Juniper.")]))
    assert "Juniper" in asyncio.run(block.aget([ChatMessage(role="user", content="Juniper")]))


def _li_graph(store: li.PerseusVaultPropertyGraphStore) -> None:
    store.upsert_nodes([EntityNode(name="Ada")])
    assert [n.id for n in store.get()] == ["Ada"]


def _li_kvstore(store: li.PerseusVaultKVStore) -> None:
    store.put("k", {"v": 1})
    assert store.get("k") == {"v": 1}


def _li_docstore(store: li.PerseusVaultDocumentStore) -> None:
    store.add_documents([TextNode(id_="n1", text="We chose SQLite.")])
    assert store.get_document("n1").get_content() == "We chose SQLite."  # type: ignore[union-attr]


def _li_index_store(store: li.PerseusVaultIndexStore) -> None:
    store.add_index_struct(IndexList(index_id="i1"))
    assert [s.index_id for s in store.index_structs()] == ["i1"]


def _li_triplets(store: li.PerseusVaultGraphStore) -> None:
    store.upsert_triplet("ada", "likes", "tea")
    assert store.get("ada") == [["likes", "tea"]]


def _li_vectorstore(store: li.PerseusVaultVectorStore) -> None:
    store.add([TextNode(id_="cat", text="the cat sat on the mat")])
    query = VectorStoreQuery(query_str="cat", mode=VectorStoreQueryMode.TEXT_SEARCH, similarity_top_k=1)
    assert store.query(query).ids == ["cat"]


def _mcp_server(server: Any) -> None:
    async def call() -> Any:
        async with VaultClient(server) as client:
            await client.remember("note", "db", "We chose SQLite.")
            return await client.recall("sqlite")

    assert [item.key for item in asyncio.run(call()).items] == ["db"]


# Every adapter over a vault: how to make it from a vault (or a path), and one thing it does with it.
ADAPTERS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], None]]] = {
    "langchain.PerseusVaultRetriever": (lambda v: lc.PerseusVaultRetriever(v), _lc_retriever),
    "langchain.PerseusVaultVectorStore": (
        lambda v: lc.PerseusVaultVectorStore(v, mode="fts5"),
        _lc_vectorstore,
    ),
    "langchain.PerseusVaultChatMessageHistory": (
        lambda v: lc.PerseusVaultChatMessageHistory(v, "s1"),
        _lc_history,
    ),
    "langchain.PerseusVaultStore": (lambda v: lc.PerseusVaultStore(v), _lc_store),
    "langchain.PerseusVaultSaver": (lambda v: lc.PerseusVaultSaver(v), _lc_saver),
    "llama_index.PerseusVaultRetriever": (lambda v: li.PerseusVaultRetriever(v), _li_retriever),
    "llama_index.PerseusVaultMemoryBlock": (lambda v: li.PerseusVaultMemoryBlock(v), _li_block),
    "llama_index.PerseusVaultPropertyGraphStore": (lambda v: li.PerseusVaultPropertyGraphStore(v), _li_graph),
    "llama_index.PerseusVaultKVStore": (lambda v: li.PerseusVaultKVStore(v), _li_kvstore),
    "llama_index.PerseusVaultDocumentStore": (lambda v: li.PerseusVaultDocumentStore(v), _li_docstore),
    "llama_index.PerseusVaultIndexStore": (lambda v: li.PerseusVaultIndexStore(v), _li_index_store),
    "llama_index.PerseusVaultGraphStore": (lambda v: li.PerseusVaultGraphStore(v), _li_triplets),
    "llama_index.PerseusVaultVectorStore": (lambda v: li.PerseusVaultVectorStore(v), _li_vectorstore),
    "mcp.build_server": (lambda v: build_server(v), _mcp_server),
}


def wrote(vault: Vault) -> bool:
    """Whether an adapter left something in ``vault``: memories, or (not memories) a checkpointer's checkpoints
    or LlamaIndex's key-value bookkeeping, in the collections the adapters above write."""
    from perseus_vault_core import Checkpoints, KeyValues

    values = KeyValues(vault)
    return (
        vault.stats().entities >= 1
        or next(Checkpoints(vault).list(limit=1), None) is not None
        or any(values.get_all(c) for c in ("data", "docstore/data", "index_store/data", "llamaindex/graph"))
    )


@pytest.fixture(autouse=True)
def keyword_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vault an adapter opens from a path gets no model (these tests need none, and loading one is slow)."""
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "none")


@pytest.mark.parametrize("name", ADAPTERS)
def test_made_from_a_path_it_opens_the_vault_and_closes_it(name: str, tmp_path: Path) -> None:
    make, use = ADAPTERS[name]
    path = tmp_path / "from-path.db"
    adapter = make(path)
    use(adapter)
    assert path.exists()
    if name.startswith("mcp."):
        return  # a server opens its vault when it starts and closes it when it stops: `use` did both
    adapter.close()
    with pytest.raises(StorageError, match="closed"):
        adapter.vault.stats()
    with Vault(path, embedder=False) as vault:  # what the adapter wrote is in the file
        assert wrote(vault)


@pytest.mark.parametrize("name", ADAPTERS)
def test_made_from_a_postgres_url_it_works_there(name: str, pg_url: str) -> None:
    make, use = ADAPTERS[name]
    adapter = make(pg_url)
    use(adapter)
    if hasattr(adapter, "close"):
        adapter.close()
    with Vault(pg_url, embedder=False) as vault:  # what the adapter wrote is in the database
        assert wrote(vault) and vault.stats().backend == "postgres"


@pytest.mark.parametrize("name", ADAPTERS)
def test_made_from_a_vault_it_leaves_the_vault_open(name: str, vault: Vault) -> None:
    make, use = ADAPTERS[name]
    adapter = make(vault)
    use(adapter)
    if hasattr(adapter, "close"):
        adapter.close()
    assert wrote(vault)  # still open


@pytest.mark.parametrize("name", ADAPTERS)
def test_anything_else_as_the_vault_is_refused(name: str) -> None:
    make, _ = ADAPTERS[name]
    with pytest.raises(InvalidInput, match="vault: must be a Vault or a path"):
        make(42)


# Every class an adapter package exports (and the server factory), with a misspelled argument.
MISSPELLED: dict[str, Callable[[Path], Any]] = {
    "langchain.PerseusVaultRetriever": lambda p: lc.PerseusVaultRetriever(p, topic_pth="x"),
    "langchain.PerseusVaultVectorStore": lambda p: lc.PerseusVaultVectorStore(p, topic_pth="x"),
    "langchain.PerseusVaultChatMessageHistory": lambda p: lc.PerseusVaultChatMessageHistory(
        p, "s1", topic_pth="x"
    ),
    "langchain.PerseusVaultStore": lambda p: lc.PerseusVaultStore(p, topic_pth="x"),
    "langchain.PerseusVaultSaver": lambda p: lc.PerseusVaultSaver(p, topic_pth="x"),
    "langchain.PerseusVaultEmbeddings": lambda p: lc.PerseusVaultEmbeddings(p, topic_pth="x"),
    "langchain.LangChainEmbedder": lambda p: lc.LangChainEmbedder(
        DeterministicFakeEmbedding(size=8), topic_pth="x"
    ),
    "langchain.ChatModelJudge": lambda p: lc.ChatModelJudge(
        FakeListChatModel(responses=["{}"]), topic_pth="x"
    ),
    "llama_index.PerseusVaultRetriever": lambda p: li.PerseusVaultRetriever(p, topic_pth="x"),
    "llama_index.PerseusVaultMemoryBlock": lambda p: li.PerseusVaultMemoryBlock(p, topic_pth="x"),
    "llama_index.PerseusVaultPropertyGraphStore": lambda p: li.PerseusVaultPropertyGraphStore(
        p, topic_pth="x"
    ),
    "llama_index.PerseusVaultKVStore": lambda p: li.PerseusVaultKVStore(p, topic_pth="x"),
    "llama_index.PerseusVaultDocumentStore": lambda p: li.PerseusVaultDocumentStore(p, topic_pth="x"),
    "llama_index.PerseusVaultIndexStore": lambda p: li.PerseusVaultIndexStore(p, topic_pth="x"),
    "llama_index.PerseusVaultGraphStore": lambda p: li.PerseusVaultGraphStore(p, topic_pth="x"),
    "llama_index.PerseusVaultVectorStore": lambda p: li.PerseusVaultVectorStore(p, topic_pth="x"),
    "llama_index.vault_storage_context": lambda p: li.vault_storage_context(p, topic_pth="x"),
    "llama_index.PerseusVaultEmbedding": lambda p: li.PerseusVaultEmbedding(p, topic_pth="x"),
    "llama_index.LlamaIndexEmbedder": lambda p: li.LlamaIndexEmbedder(
        MockEmbedding(embed_dim=8), topic_pth="x"
    ),
    "mcp.build_server": lambda p: build_server(p, topic_pth="x"),
    "mcp.VaultClient": lambda p: VaultClient(build_server(p), topic_pth="x"),
}


def test_every_exported_adapter_is_checked() -> None:
    exported = {
        f"{package.__name__.rsplit('.', 1)[1]}.{name}" for package in (lc, li) for name in package.__all__
    }
    assert exported | {"mcp.build_server", "mcp.VaultClient"} == set(MISSPELLED)
    assert set(ADAPTERS) <= set(MISSPELLED)


@pytest.mark.parametrize("name", MISSPELLED)
def test_an_unknown_argument_is_refused_by_name_before_anything_opens(name: str, tmp_path: Path) -> None:
    path = tmp_path / "never.db"
    with pytest.raises(InvalidInput, match="topic_pth") as refused:
        MISSPELLED[name](path)  # type: ignore[call-arg]
    assert refused.value.field == "topic_pth"
    assert not path.exists()


def test_the_refusal_suggests_the_nearest_name(vault: Vault) -> None:
    with pytest.raises(InvalidInput, match="did you mean 'session_only'"):
        li.PerseusVaultMemoryBlock(vault, sesion_only=True)
    with pytest.raises(InvalidInput, match="did you mean 'category'"):
        lc.PerseusVaultStore(vault, categroy="x")  # type: ignore[call-arg]
    with pytest.raises(InvalidInput, match="it takes a, b"):
        refuse_unknown(["zzz"], ["a", "b"], "f")


def test_strict_keeps_the_signature_and_refuses_only_what_it_does_not_take() -> None:
    @strict
    def make(vault: str, *, k: int = 1) -> tuple[str, int]:
        return vault, k

    assert make("v", k=2) == ("v", 2) and make(vault="v") == ("v", 1)
    with pytest.raises(InvalidInput, match="kk: is not an argument of .*make; did you mean 'k'"):
        make("v", kk=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="refuse_unknown"):
        strict(lambda **kwargs: None)


def test_the_embedding_adapters_embed_with_the_vault_s_model(
    dense_vault: Vault, vault: Vault, fake_embedder: FakeEmbedder, db_path: Path
) -> None:
    expected = [float(x) for x in fake_embedder.embed(["solar panels"])[0]]
    assert lc.PerseusVaultEmbeddings(dense_vault).embed_query("solar panels") == pytest.approx(expected)
    assert li.PerseusVaultEmbedding(dense_vault).get_query_embedding("solar panels") == pytest.approx(
        expected
    )
    assert lc.PerseusVaultEmbeddings(embedder=fake_embedder).embed_query("solar panels") == pytest.approx(
        expected
    )
    for make in (lc.PerseusVaultEmbeddings, li.PerseusVaultEmbedding):
        with pytest.raises(InvalidInput, match="vault: was opened without an embedder"):
            make(vault)
        with pytest.raises(InvalidInput, match="not both"):
            make(dense_vault, embedder=fake_embedder)


def test_an_embedding_adapter_made_from_a_path_closes_the_vault_it_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PERSEUS_VAULT_EMBEDDER")  # the bundled model, named without being loaded
    langchain = lc.PerseusVaultEmbeddings(tmp_path / "lc.db")
    llama = li.PerseusVaultEmbedding(tmp_path / "li.db")
    assert langchain.embedder.identity == llama.model_name
    assert llama.model_name.startswith("sentence-transformers/all-MiniLM-L6-v2")
    for adapter in (langchain, llama):
        adapter.close()
    with Vault(tmp_path / "open.db", embedder=FakeEmbedder()) as vault:
        li.PerseusVaultEmbedding(vault).close()
        assert vault.stats().entities == 0  # still open
