"""One relevance default on every surface (docs/recall.md#min_score): recall leaves out what is most likely
unrelated (min_score="auto") from Python, the CLI, MCP, both frameworks' retrievers and prepare alike, so a
nonsense question finds nothing, while a relevant one-word question still finds a memory that shares no
word with it. With the bundled model, as a user has it."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import anyio
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.cli.main import main

NONSENSE = "blorf quazzle nimp"
ONE_WORD = "database"  # the ledger's memory says "Postgres": no word in common (cosine 0.29)


@pytest.fixture
def vault(tmp_path: Path, real_embedder: Any) -> Iterator[Vault]:
    with Vault(tmp_path / "v.db", embedder=real_embedder) as v:
        v.remember(
            "fact", "portal", "The customer portal runs on Vercel; preview deployments per pull request."
        )
        v.remember("decision", "db", "The ledger keeps its books in Postgres 15.")
        v.remember("preference", "reviews", "The user wants code reviews within one working day.")
        yield v


def _keys(items: Any) -> list[str]:
    return [i.key for i in items]


def test_python(vault: Vault) -> None:
    assert vault.recall(NONSENSE).items == []
    assert _keys(vault.recall(ONE_WORD).items)[:1] == ["db"]
    assert len(vault.recall(NONSENSE, min_score=None).items) == 3  # how to turn it off: plain top-k


def test_cli(vault: Vault) -> None:
    def run(*argv: str) -> Any:
        out = io.StringIO()
        with redirect_stdout(out):
            assert main(["--db", vault.path, "--json", "recall", *argv]) == 0
        return json.loads(out.getvalue())

    assert run(NONSENSE)["items"] == []
    assert [i["key"] for i in run(ONE_WORD)["items"]][:1] == ["db"]
    for off in ("none", "-1"):  # how to turn it off on the command line: plain top-k
        assert len(run(NONSENSE, "--min-score", off)["items"]) == 3


def test_mcp(vault: Vault) -> None:
    from mcp import Client

    from perseus_vault_integrations.mcp import build_server

    async def call(query: str) -> Any:
        async with Client(build_server(vault=vault)) as c:
            return (await c.call_tool("perseus_vault_recall", {"query": query})).structured_content

    assert anyio.run(call, NONSENSE)["items"] == []
    assert [i["key"] for i in anyio.run(call, ONE_WORD)["items"]][:1] == ["db"]


def test_langchain_retriever(vault: Vault) -> None:
    from perseus_vault_integrations.langchain import PerseusVaultRetriever

    retriever = PerseusVaultRetriever(vault)
    assert retriever.invoke(NONSENSE) == []
    assert [d.metadata["key"] for d in retriever.invoke(ONE_WORD)][:1] == ["db"]


def test_llamaindex_retriever(vault: Vault) -> None:
    from perseus_vault_integrations.llama_index import PerseusVaultRetriever

    retriever = PerseusVaultRetriever(vault)
    assert retriever.retrieve(NONSENSE) == []
    assert [n.node.metadata["key"] for n in retriever.retrieve(ONE_WORD)][:1] == ["db"]


def test_prepare(vault: Vault) -> None:
    assert vault.prepare(NONSENSE, triggered=0).related == []
    assert vault.prepare(ONE_WORD, triggered=0).related[:1] == [vault.recall(ONE_WORD).items[0].id]
