"""A LlamaIndex VectorStoreIndex kept entirely in the vault, queried with metadata filters.

vault_storage_context gives every store of a StorageContext in the vault (nodes as memories, the
document and index stores in its key-value collections), so ``persist()`` writes no file and the index
loads back from the vault alone. The index embeds with the vault's bundled model (PerseusVaultEmbedding),
which the vector store checks; LlamaIndex's MockLLM answers with its prompt, so this runs offline.

    python examples/llamaindex_vector_store.py
"""

import tempfile
from pathlib import Path

from llama_index.core import Document, VectorStoreIndex, load_index_from_storage
from llama_index.core.llms import MockLLM
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from perseus_vault_core import Vault
from perseus_vault_integrations.llama_index import PerseusVaultEmbedding, vault_storage_context

path = Path(tempfile.mkdtemp()) / "docs.db"
documents = [
    Document(
        text="Backups of the SQLite file run every night at two.",
        id_="ops-1",
        metadata={"team": "ops", "prio": 1},
    ),
    Document(
        text="Deploys go out on Tuesdays after the release review.",
        id_="ops-2",
        metadata={"team": "ops", "prio": 3},
    ),
    Document(
        text="The billing service retries a failed payment twice.",
        id_="bill-1",
        metadata={"team": "billing", "prio": 2},
    ),
]

with Vault(path) as vault:
    index = VectorStoreIndex.from_documents(
        documents, storage_context=vault_storage_context(vault), embed_model=PerseusVaultEmbedding(vault)
    )
    index.storage_context.persist()  # writes nothing: every store is in the vault already

with Vault(path) as vault:  # another process: the index comes back from the vault alone
    index = load_index_from_storage(vault_storage_context(vault), embed_model=PerseusVaultEmbedding(vault))
    ops_urgent = MetadataFilters(
        filters=[
            MetadataFilter(key="team", value="ops"),
            MetadataFilter(key="prio", value=2, operator=FilterOperator.GTE),
        ]
    )
    retriever = index.as_retriever(similarity_top_k=2, filters=ops_urgent)
    print("ops, prio >= 2:", [n.node.get_content() for n in retriever.retrieve("when do we ship?")])
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=1)
    print(engine.query("How often are copies of the database made?"))
    keyword = index.as_retriever(similarity_top_k=1, vector_store_query_mode="text_search")
    print("keyword search:", [n.node.get_content() for n in keyword.retrieve("payment")])
