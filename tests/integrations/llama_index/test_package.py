"""The LlamaIndex package as a whole: what it exports, and how it fails without its extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

import perseus_vault_integrations.llama_index as li


def test_exports_one_class_per_concept() -> None:
    assert li.__all__ == [
        "LlamaIndexEmbedder",
        "PerseusVaultDocumentStore",
        "PerseusVaultEmbedding",
        "PerseusVaultGraphStore",
        "PerseusVaultIndexStore",
        "PerseusVaultKVStore",
        "PerseusVaultMemoryBlock",
        "PerseusVaultPropertyGraphStore",
        "PerseusVaultRetriever",
        "PerseusVaultVectorStore",
        "vault_storage_context",
    ]


@pytest.mark.parametrize("module", ["llama_index", "llama_index.graph_stores"])
def test_without_llamaindex_the_adapter_says_what_to_install(module: str) -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'llama_index':\n"
        "            raise ImportError('no llama_index here')\n"
        "sys.meta_path.insert(0, Block())\n"
        "try:\n"
        f"    import perseus_vault_integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert 'pip install "perseus-vault[llamaindex]"' in result.stdout, result.stderr
