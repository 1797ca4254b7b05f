"""PerseusVaultVectorStore: langchain-tests' standard suite (sync and async), then what the suite
does not pin: scores, filters, MMR, ids, deletion, the embedder guard, and the bundled model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_integrations.langchain import LangChainEmbedder, PerseusVaultVectorStore


# The suite's async tests carry no marker of their own (it expects asyncio_mode=auto): mark the
# module, and silence pytest-asyncio's note that the suite's sync tests do not need the mark.
pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.filterwarnings("ignore:.*is marked with '@pytest.mark.asyncio' but it is not an async function"),
]


class TestStandardSuite(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[PerseusVaultVectorStore]:  # type: ignore[override]
        store = PerseusVaultVectorStore(tmp_path / "suite.db", self.get_embeddings())
        yield store
        store.close()
