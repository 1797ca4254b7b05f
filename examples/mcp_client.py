"""The vault over MCP: start `perseus-vault serve` over stdio and use it through VaultClient.

python examples/mcp_client.py
"""

import os
import tempfile
from pathlib import Path

import anyio

from perseus_vault_integrations.mcp import VaultClient

DB = str(Path(tempfile.mkdtemp()) / "mcp.db")


async def main() -> None:
    async with VaultClient.stdio(DB, env=dict(os.environ)) as vault:  # a real subprocess, real MCP
        print(f"{len(await vault.tools())} tools, e.g. perseus_vault_recall")
        await vault.remember(
            "decision",
            "db-engine",
            "We chose SQLite in WAL mode for the vault.",
            recall_when=["choosing a database"],
        )
        await vault.remember("incident", "OPS-311", "Recall latency spiked during the nightly import.")
        found = await vault.recall("which database did we pick", limit=1)
        print(found.search_mode, [(i.key, round(i.score, 3)) for i in found.items])
        assert found.items[0].key == "db-engine"
        block = await vault.prepare("we are choosing a database")
        print(block.markdown)
        print("every memory:", [e.key for e in await vault.scan()])


anyio.run(main)
