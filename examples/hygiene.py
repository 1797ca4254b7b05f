"""Find the memories that weaken a start-of-session block: vague, repeated, expired, never used.

python examples/hygiene.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

DAY_MS = 86_400_000
now = [1_767_225_600_000]  # a clock we can move, so "never retrieved" shows up without waiting a week

with Vault(Path(tempfile.mkdtemp()) / "hygiene.db", embedder=False, clock=lambda: now[0]) as vault:
    vault.remember("decision", "db-engine", "We decided on SQLite in WAL mode for the vault (ENG-142).")
    vault.remember("note", "misc", "stuff to look at maybe")
    vault.remember("note", "standup", "2026-01-05")
    # remember() would hand back the first one (docs/curation.md); an import or an older vault may still hold both
    vault.remember(
        "note", "db-again", "We decided on SQLite in WAL mode for the vault (ENG-142).", keep_duplicate=True
    )
    vault.remember("note", "deploy", "Deploys go out from the release branch every Tuesday after review")
    vault.remember(
        "note", "deploy-2", "Deploys go out from the release branch every Tuesday after the review"
    )
    vault.remember(
        "note",
        "freeze",
        "Code freeze for the 2.0 release: only fixes are merged now",
        expires_at_ms=now[0] + 3 * DAY_MS,
    )
    now[0] += 10 * DAY_MS
    vault.recall("SQLite WAL")  # counts as a retrieval for what it finds

    report = vault.hygiene(limit=20)
    print(f"{report.total} of {report.scanned} flagged; counts: {report.counts}")
    for item in report.items:
        print(
            f"#{item.id} {item.category}/{item.key} {item.actionability:.2f} {item.reasons} dup_of={item.duplicate_of}"
        )
    flagged = {item.key: item for item in report.items}
    assert "db-engine" not in flagged  # actionable and retrieved: nothing to fix
    assert "duplicate" in flagged["db-again"].reasons and flagged["db-again"].duplicate_of == 1
    assert "near-duplicate" in flagged["deploy-2"].reasons
    assert "expired" in flagged["freeze"].reasons
    assert {"vague", "very short", "never retrieved"} <= set(flagged["misc"].reasons)
    assert "date-only" in flagged["standup"].reasons
