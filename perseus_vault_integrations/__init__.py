"""Adapters that put the vault behind LangChain, LlamaIndex and MCP: one package per framework
(``langchain``, ``llama_index``, ``mcp``), each installed by its extra and exporting all its adapters.

Each adapter imports only the names in ``perseus_vault_core.__all__`` and its own framework, and the
core never imports an adapter, so importing the core loads no framework (tests/test_architecture.py).
Every adapter takes the vault first, as a ``Vault`` or a path, and refuses an unknown argument.
"""
