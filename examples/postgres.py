"""A vault on PostgreSQL with pgvector: the same verbs as on a file, and a file's vault copied into it.

    python examples/postgres.py postgresql://user:password@host:5432/empty_database

(or the URL in PERSEUS_VAULT_PG_URL). The database must be empty, with pgvector available.
"""

import os
import sys
import tempfile
from pathlib import Path

from perseus_vault_core import Vault, migrate

url = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PERSEUS_VAULT_PG_URL")
if not url:
    sys.exit("give an empty PostgreSQL database's URL: python examples/postgres.py postgresql://...")

# A vault that began on one laptop, in a file...
laptop = Path(tempfile.mkdtemp()) / "memory.db"
with Vault(laptop) as v:
    v.remember("decision", "storage", "The team moves its shared memory to PostgreSQL with pgvector.")
    v.remember("preference", "style", "Alice prefers short answers with one example.", agent_id="alice")

# ...copied into the team's database, proved by exporting both.
report = migrate(laptop, url)
print(
    f"copied {report.entities} memories, {report.vectors} vectors; exports identical ({report.lines} lines)"
)

with Vault(url) as team:  # every host opens the same URL
    team.remember("fact", "hosts", "Four agents on three hosts share this memory.")
    for mode in ("fts5", "dense", "hybrid"):
        top = team.recall("where is the team moving its memory", mode=mode).items[0]
        print(f"{mode:6} -> {top.key}: {top.content}")
    print("backend:", team.stats().backend)
