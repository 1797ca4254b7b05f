"""Adapters that put the vault behind LangChain, LlamaIndex and MCP.

Each adapter imports only ``perseus_vault_core``'s public API and its own framework,
so importing the core never loads a framework.
"""
