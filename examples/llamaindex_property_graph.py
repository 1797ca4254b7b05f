"""A LlamaIndex PropertyGraphIndex stored in the vault: nodes become entities, relations links.

Mock LLM and mock embeddings from LlamaIndex keep it offline and instant: MockLLM echoes its prompt,
so the default extractor finds the prompt's own example triplets (Philz, Berkeley, ...), and
MockEmbedding gives every text the same vector. The vault embeds with the same mock model
(LlamaIndexEmbedder), so the index's query vectors and the vault's stored vectors agree.

    python examples/llamaindex_property_graph.py
"""

import tempfile
from pathlib import Path

from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

from perseus_vault_core import Vault
from perseus_vault_integrations.llama_index import LlamaIndexEmbedder, PerseusVaultPropertyGraphStore

path = Path(tempfile.mkdtemp()) / "graph.db"
embed_model = MockEmbedding(embed_dim=8)

with Vault(path, embedder=LlamaIndexEmbedder(embed_model)) as vault:
    store = PerseusVaultPropertyGraphStore(vault)
    index = PropertyGraphIndex.from_documents(
        [Document(text="Philz is a coffee shop founded in Berkeley in 1982.", id_="doc-1")],
        property_graph_store=store,
        llm=MockLLM(),
        embed_model=embed_model,
        use_async=False,
    )
    for subject, relation, obj in store.get_triplets(entity_names=["Philz"]):
        print(f"triplet: {subject.id} -[{relation.label}]-> {obj.id}")
    print("vault entities:", vault.stats().entities, "links:", vault.stats().links)

# Reopen the file: the graph is still there, and the index's retrievers run against it.
with Vault(path, embedder=LlamaIndexEmbedder(embed_model)) as vault:
    store = PerseusVaultPropertyGraphStore(vault)
    index = PropertyGraphIndex.from_existing(store, llm=MockLLM(), embed_model=embed_model)
    # With mock embeddings every node is equally near, so what comes back shows the plumbing
    # (vector_query, then get_rel_map), not relevance: use a real model for that.
    nodes = index.as_retriever(include_text=False).retrieve("Philz")
    for hit in nodes:
        print("retrieved:", hit.node.get_content())
    assert nodes
    philz = store.get(ids=["Philz"])[0]
    print("Philz's neighbourhood, 2 hops:", len(store.get_rel_map([philz], depth=2)), "relations")
