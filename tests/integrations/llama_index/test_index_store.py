"""PerseusVaultIndexStore: the same calls as on LlamaIndex's SimpleIndexStore give the same structures, and
``load_index_from_storage`` finds an index in the reopened vault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core import Document, StorageContext, SummaryIndex, load_index_from_storage
from llama_index.core.data_structs.data_structs import IndexDict, IndexList
from llama_index.core.storage.index_store import SimpleIndexStore

from perseus_vault_core import Vault
from perseus_vault_integrations.llama_index import PerseusVaultDocumentStore, PerseusVaultIndexStore


def script(store: Any) -> list[Any]:
    first, second = IndexList(index_id="list", nodes=["n1", "n2"]), IndexDict(index_id="dict")
    second.add_node(Document(text="x", id_="n3"), text_id="n3")
    store.add_index_struct(first)
    store.add_index_struct(second)
    out: list[Any] = [
        sorted(s.index_id for s in store.index_structs()),
        store.get_index_struct("list").to_dict(),
    ]
    store.delete_index_struct("list")
    out += [store.get_index_struct("dict").to_dict(), store.get_index_struct()]
    return out


def test_it_answers_as_simple_index_store_does(vault: Vault) -> None:
    assert script(PerseusVaultIndexStore(vault)) == script(SimpleIndexStore())


def test_load_index_from_storage_finds_the_index_in_the_reopened_vault(db_path: Path) -> None:
    with Vault(db_path, embedder=False) as vault:
        context = StorageContext.from_defaults(
            docstore=PerseusVaultDocumentStore(vault), index_store=PerseusVaultIndexStore(vault)
        )
        built = SummaryIndex.from_documents(
            [Document(text="Deploys go out on Tuesdays.", id_="d1")], storage_context=context
        )
    with Vault(db_path, embedder=False) as vault:
        context = StorageContext.from_defaults(
            docstore=PerseusVaultDocumentStore(vault), index_store=PerseusVaultIndexStore(vault)
        )
        loaded = load_index_from_storage(context)
        assert loaded.index_id == built.index_id
        assert [n.node.get_content() for n in loaded.as_retriever().retrieve("when")] == [
            "Deploys go out on Tuesdays."
        ]
