"""PerseusVaultDocumentStore: the same document-store calls on it and on LlamaIndex's SimpleDocumentStore give
the same answers; what it keeps outlives the process; an index built with it records its documents there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from llama_index.core import Document, StorageContext, SummaryIndex
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore

from perseus_vault_core import Vault
from perseus_vault_integrations.llama_index import PerseusVaultDocumentStore


def nodes() -> list[TextNode]:
    out = []
    for doc in ("doc-a", "doc-b"):
        for i in range(3):
            node = TextNode(id_=f"{doc}-{i}", text=f"chunk {i} of {doc}", metadata={"i": i})
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc)
            out.append(node)
    return out


def script(store: Any) -> list[Any]:
    out: list[Any] = []
    store.add_documents(nodes())
    out.append(sorted(store.docs))
    out.append(store.get_document("doc-a-1").get_content())
    out.append(store.document_exists("doc-b-2"))
    out.append(sorted(store.get_ref_doc_info("doc-a").node_ids))
    store.set_document_hash("doc-a", "hash-1")
    out.append(store.get_document_hash("doc-a"))
    out.append(sorted(store.get_all_document_hashes().items()))
    store.delete_document("doc-a-0")
    out.append(sorted(store.get_ref_doc_info("doc-a").node_ids))
    store.delete_ref_doc("doc-b")
    out.append((store.ref_doc_exists("doc-b"), store.document_exists("doc-b-1")))
    out.append(sorted(store.get_all_ref_doc_info()))
    out.append(store.get_document("missing", raise_error=False))
    return out


def test_it_answers_as_simple_document_store_does(vault: Vault) -> None:
    assert script(PerseusVaultDocumentStore(vault)) == script(SimpleDocumentStore())


def test_an_index_records_its_documents_in_the_vault(db_path: Path) -> None:
    with Vault(db_path, embedder=False) as vault:
        store = PerseusVaultDocumentStore(vault, namespace="notes")
        index = SummaryIndex.from_documents(
            [Document(text="The vault keeps memories in SQLite.", id_="d1")],
            storage_context=StorageContext.from_defaults(docstore=store),
        )
        assert index.docstore is store
    reopened = PerseusVaultDocumentStore.from_uri(str(db_path), namespace="notes")
    assert reopened.get_document_hash("d1") is not None and reopened.ref_doc_exists("d1")
    assert [n.get_content() for n in reopened.docs.values()] == ["The vault keeps memories in SQLite."]
    assert PerseusVaultDocumentStore(reopened.vault).docs == {}  # another namespace
    reopened.close()


def test_unknown_arguments_are_refused(vault: Vault) -> None:
    from perseus_vault_core import InvalidInput

    with pytest.raises(InvalidInput, match="did you mean 'namespace'"):
        PerseusVaultDocumentStore(vault, namspace="x")  # type: ignore[call-arg]
