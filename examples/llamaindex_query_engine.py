"""A LlamaIndex query engine over the vault: PerseusVaultRetriever in RetrieverQueryEngine.

LlamaIndex's MockLLM stands in for a real model (it answers with the prompt it was given, so the
output shows exactly which memories reached the LLM). Swap in any LlamaIndex LLM for real answers.

    python examples/llamaindex_query_engine.py
"""

import asyncio
import tempfile
from pathlib import Path

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine

from perseus_vault_core import Vault
from perseus_vault_integrations.llama_index import PerseusVaultRetriever

with Vault(Path(tempfile.mkdtemp()) / "memory.db", embedder=False) as vault:  # keyword-only: no model to load
    vault.remember(
        "decision",
        "db-engine",
        "We chose SQLite in WAL mode for the vault.",
        topic_path="architecture/storage",
    )
    vault.remember(
        "decision", "job-queue", "We chose Redis streams for background jobs.", topic_path="architecture/jobs"
    )
    vault.remember("note", "lunch", "Friday lunch is at the Thai place.")

    # every recall mode, filter and knob is a keyword argument; here: decisions only, two hits. By
    # default hits scoring below the mode's relevance threshold are left out; in a three-memory
    # keyword-only vault, word statistics say little, so min_score=None keeps the k best as they are.
    retriever = PerseusVaultRetriever(vault, k=2, category="decision", mode="fts5", min_score=None)
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())

    response = engine.query("Which database engine did we choose?")
    for hit in response.source_nodes:
        print(
            f"memory {hit.node.node_id} ({hit.node.metadata['category']}/{hit.node.metadata['key']}) "
            f"score={hit.score:.3f}: {hit.node.get_content()}"
        )
    assert "We chose SQLite in WAL mode" in str(response)  # the memory reached the LLM's prompt

    answer = asyncio.run(engine.aquery("What runs our background jobs?"))  # async: recall in a worker thread
    print("async top hit:", answer.source_nodes[0].node.get_content())
