"""Memory that stays current: a newer fact first, the older marked, duplicates collapsed, repeats not stored.

    python examples/curation.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

DAY_MS = 86_400_000
now = [1_767_225_600_000]  # a clock we can move: the facts below were learned months apart

with Vault(Path(tempfile.mkdtemp()) / "curation.db", clock=lambda: now[0]) as vault:
    old = vault.remember("fact", "prod-region", "Production runs in us-east-1.")
    vault.remember("preference", "editor", "The user prefers dark mode in every editor.")
    now[0] += 180 * DAY_MS
    new = vault.remember("fact", "prod-region-2026", "Production runs in eu-west-1.")
    print("remember reported:", [(s.id, s.relation, s.similarity) for s in new.similar])
    assert [(s.id, s.relation) for s in new.similar] == [(old.id, "update")]
    vault.supersede(old.id, new.id)  # what the agent does with an update it agrees with (optional)

    again = vault.remember("preference", "editor-2", "the user prefers dark mode in every editor")
    print("an exact repeat under a new key:", again.repeated, "-> memory", again.id)
    assert again.repeated  # nothing was written; the memory that already said it came back

    vault.remember("preference", "theme", "In all my editors I like the dark theme.")
    items = vault.recall("which theme does the user like in editors").items
    print("collapsed:", [(i.id, i.content, i.duplicates) for i in items[:1]])
    assert items[0].duplicates  # one place for both wordings; the other's id is listed

    now[0] += DAY_MS
    vault.remember("fact", "deploy-day", "Deploys go out on Tuesdays.")
    now[0] += 60 * DAY_MS
    vault.remember("fact", "deploy-day-now", "Deploys go out on Thursdays.")
    for item in vault.recall("which day do deploys go out", limit=2).items:
        print(f"#{item.id} {item.content} outdated_by={item.outdated_by}")
    first, second = vault.recall("which day do deploys go out", limit=2).items
    assert "Thursdays" in first.content and second.outdated_by == first.id
    assert "Tuesdays" not in vault.prepare("which day do deploys go out?").markdown  # left out of the block
    assert vault.history("fact", "deploy-day").items[0].content == "Deploys go out on Tuesdays."  # never lost
