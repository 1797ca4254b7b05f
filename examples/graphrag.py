"""GraphRAG: cluster the link graph, summarize a cluster, and answer a question that spans it.

python examples/graphrag.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

NOTES = {
    "storage": [
        "We chose SQLite in WAL mode for the vault.",
        "Nightly backups copy the SQLite file to S3.",
        "FTS5 indexes the text of every memory.",
        "Vacuum runs after large purges.",
    ],
    "oncall": [
        "The pager rotation changes every Monday.",
        "Escalate sev1 incidents to the on-call lead.",
        "Runbooks for incidents live in the ops wiki.",
        "Incident reviews happen within two days.",
    ],
}

with Vault(Path(tempfile.mkdtemp()) / "graphrag.db") as vault:
    for theme, texts in NOTES.items():
        ids = [vault.remember(theme, f"{theme}-{i}", text).id for i, text in enumerate(texts)]
        for a, b in zip(ids, ids[1:]):  # each theme's notes are linked in a chain
            vault.link(a, b)

    clusters = vault.communities()
    for c in clusters.communities:
        print(f"{c.id}: {c.size} members, most central: {c.central[0].title}")
    assert clusters.total == 2

    summary = vault.community_summary(clusters.communities[0].id)
    print(f"\nsummary entity #{summary.entity.id} (written now: {summary.materialized}):\n{summary.text}")
    assert not vault.community_summary(clusters.communities[0].id).materialized  # written once

    answer = vault.global_recall("how are production incidents handled?", communities=1)
    print("\n" + answer.context)
    assert answer.communities[0].community.size == 4
    assert all(e.category == "oncall" for e in answer.communities[0].evidence)
