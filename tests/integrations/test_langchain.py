"""The LangChain module as a whole: what it exports, and how it fails without its extra."""

from __future__ import annotations

import subprocess
import sys

import perseus_vault_integrations.langchain as lc


def test_exports_one_class_per_concept() -> None:
    assert lc.__all__ == ["LangChainEmbedder", "PerseusVaultChatMessageHistory", "PerseusVaultRetriever",
                          "PerseusVaultVectorStore", "VaultEmbeddings"]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_importing_the_core_loads_no_framework() -> None:
    result = run("import sys, perseus_vault_core; from perseus_vault_core import Vault; "
                 "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('langchain_core', 'langgraph', 'langchain'));"
                 "print(bad); sys.exit(1 if bad else 0)")
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_the_extra_the_error_says_what_to_install() -> None:
    for module, blocked in [("perseus_vault_integrations.langchain", "langchain_core"),
                            ("perseus_vault_integrations.langgraph_store", "langgraph")]:
        result = run(f"import sys; sys.modules[{blocked!r}] = None\n"
                     f"try:\n    import {module}\nexcept ImportError as e:\n    print(e)\n    sys.exit(3)")
        assert result.returncode == 3, result.stderr
        assert "install perseus-vault[langchain]" in result.stdout
