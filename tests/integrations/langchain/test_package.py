"""The LangChain package as a whole: what it exports, and how it fails without its extra."""

from __future__ import annotations

import subprocess
import sys

import pytest

import perseus_vault_integrations.langchain as lc


def test_exports_one_class_per_concept() -> None:
    assert lc.__all__ == [
        "ChatModelJudge",
        "LangChainEmbedder",
        "PerseusVaultChatMessageHistory",
        "PerseusVaultEmbeddings",
        "PerseusVaultRetriever",
        "PerseusVaultSaver",
        "PerseusVaultStore",
        "PerseusVaultVectorStore",
    ]


@pytest.mark.parametrize(
    ("module", "blocked"),
    [
        ("perseus_vault_integrations.langchain", "langchain_core"),
        ("perseus_vault_integrations.langchain.stores", "langgraph"),
        ("perseus_vault_integrations.langchain.checkpoint", "langgraph"),
    ],
)
def test_without_the_extra_the_error_says_what_to_install(module: str, blocked: str) -> None:
    code = (
        f"import sys; sys.modules[{blocked!r}] = None\n"
        "from perseus_vault_core import SetupError\n"
        f"try:\n    import {module}\nexcept ImportError as e:\n"
        "    print(e, isinstance(e, SetupError))\n    sys.exit(3)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    assert f'need {blocked}: pip install "perseus-vault[langchain]" True' in result.stdout
