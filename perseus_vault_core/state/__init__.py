"""Framework state the adapters keep beside the memories, on the facade (docs/architecture.md):
checkpoints of a graph's runs (:mod:`.checkpoints`, for LangGraph) and key-value collections
(:mod:`.keyvalue`, for LlamaIndex's stores), each a view of one scope (:mod:`.scoped`). Never recalled,
embedded or versioned.
"""
