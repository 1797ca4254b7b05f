"""Remember a few memories, recall them by keyword, page through them, and look back in time.

python examples/quickstart.py [path/to/vault.db]
"""

import sys
import tempfile
import time
from pathlib import Path

from perseus_vault_core import Vault

path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "quickstart.db"

with Vault(path) as vault:
    db = vault.remember(
        category="decision",
        key="db-engine",
        content="We chose MySQL for the vault.",
        topic_path="architecture/storage",
        recall_when=["choosing a database"],
    )
    before_change = int(time.time() * 1000)
    time.sleep(0.01)
    vault.remember(category="decision", key="db-engine", content="We chose SQLite in WAL mode for the vault.")
    vault.remember(
        category="incident",
        key="OPS-311",
        content="Recall latency spiked during the nightly import.",
        topic_path="operations",
        verified=True,
    )
    vault.remember(
        category="preference", key="answers", content="Alice prefers short answers, command first."
    )

    result = vault.recall("which engine runs the vault", limit=5)
    print(f"recall ({result.search_mode}):")
    for item in result.items:
        print(f"  {item.score:.3f} #{item.id} {item.category}/{item.key}: {item.content}")
    assert result.items[0].key == "db-engine"

    page = vault.scan(limit=2)
    print("first scan page:", [e.key for e in page.items], "more:", page.has_more)
    rest = vault.scan(cursor=page.next_cursor, limit=2)
    print("second scan page:", [e.key for e in rest.items], "more:", rest.has_more)

    then = vault.as_of(category="decision", key="db-engine", as_of_unix_ms=before_change)
    print("believed before the change:", then.content if then else None)
    assert then is not None and "MySQL" in then.content
    print("versions:", vault.history(category="decision", key="db-engine").total)
