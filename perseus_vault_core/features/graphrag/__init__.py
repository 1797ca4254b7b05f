"""GraphRAG: communities of the link graph, their extractive summaries, and recall across them (docs/graphrag.md)."""
