"""Proactive recall: memories that ask to come back when the context calls for them.

python examples/prepare_turn.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

with Vault(Path(tempfile.mkdtemp()) / "prepare.db") as vault:
    vault.remember(
        "decision",
        "db-engine",
        "We chose SQLite in WAL mode for the vault.",
        recall_when=["choosing a database"],
    )
    vault.remember(
        "runbook",
        "audit-chain",
        "After any change to the audit chain, run scripts/rehash.py.",
        recall_when=["editing the audit-chain module"],
    )
    vault.remember(
        "note", "postgres", "Postgres was considered for the vault and rejected (no embedded mode)."
    )

    hits = vault.recall_when("I am about to edit the audit chain module")
    for item in hits.items:
        print(f"triggered #{item.id} by {item.match} match of {item.trigger!r}")
    assert hits.items[0].key == "audit-chain"

    block = vault.prepare("we are choosing a database for the new service", max_chars=600)
    print("\n" + block.markdown)
    assert block.markdown.startswith("## Memory for this turn") and block.chars <= 600
    assert vault.get_entity(block.triggered[0]).key == "db-engine"
