"""Recall by meaning with the bundled model: paraphrases, hybrid fusion, startup ranking, validity.

python examples/meaning_recall.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

with Vault(Path(tempfile.mkdtemp()) / "meaning.db") as vault:  # the bundled all-MiniLM-L6-v2, offline
    vault.remember("decision", "storage", "We chose SQLite in WAL mode for the vault.")
    vault.remember("preference", "answers", "Alice prefers short answers with the command first.")
    vault.remember(
        "incident", "OPS-311", "Lock contention took the service down; see OPS-311 and src/store/lock.py."
    )
    vault.remember("note", "misc", "Talked about some stuff, maybe revisit later.")

    for mode in ("fts5", "dense", "hybrid"):
        result = vault.recall("which database engine did we pick", mode=mode, limit=2)
        print(f"{mode:>6}:", [(item.key, item.ranks) for item in result.items])

    auto = vault.recall("what caused the outage", limit=2)
    print("auto mode:", auto.search_mode, [item.key for item in auto.items])
    assert auto.items[0].key == "OPS-311"

    startup = vault.recall("what should I know before starting", startup=True, limit=3)
    print("startup:", [(item.key, item.actionability) for item in startup.items])

    checked = vault.recall("database", profile="validity", limit=1)
    print(
        "validity:",
        checked.items[0].key,
        checked.items[0].validity.grade,
        checked.items[0].validity.multiplier,
    )
    print("stats:", vault.stats().embedding_model, vault.stats().embedding_coverage)
