"""Memory that stays current: a write's candidates for the agent to judge, relations kept once, a newer fact
first, repeats not stored, a judge when the application has a model.

    python examples/curation.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault, readable

DAY_MS = 86_400_000
now = [1_767_225_600_000]  # a clock we can move: the facts below were learned months apart

with Vault(Path(tempfile.mkdtemp()) / "curation.db", clock=lambda: now[0]) as vault:
    old = vault.remember("fact", "prod-region", "Production runs in eu-west-1 on EKS.")
    vault.remember("preference", "editor", "The user prefers dark mode in every editor.")
    now[0] += 180 * DAY_MS
    new = vault.remember("fact", "region-move", "Production moved to us-east-2 in July.")
    print(
        readable(new)
    )  # what the agent reads: stored as #3 ..., then its candidates with their dates and text
    assert old.id in [s.id for s in new.similar]
    vault.supersede(old.id, new.id)  # the agent's judgement on a candidate, made explicit

    again = vault.remember("preference", "editor-2", "the user prefers  dark mode in every editor.")
    print("an exact repeat under a new key:", again.repeated, "-> memory", again.id)
    assert again.repeated  # nothing was written; the memory that already said it came back
    other = vault.remember("preference", "editor-3", "The user prefers dark mode in every editor!")
    assert not other.repeated  # a sign is part of the text: another memory, reported as a candidate
    vault.forget(other.id)  # what the agent does with a repeat it does not want

    now[0] += DAY_MS
    vault.remember("fact", "deploy-day", "Deploys go out at 10:00 on Tuesdays.")
    now[0] += 60 * DAY_MS
    moved = vault.remember("fact", "deploy-day-now", "Deploys go out at 14:00 on Tuesdays.")
    assert moved.similar[0].relation == "update"  # one value replaced: kept as an update
    first, second = vault.recall("when do deploys go out", limit=2).items
    print(f"#{first.id} {first.content}; #{second.id} {second.content} outdated_by={second.outdated_by}")
    assert "14:00" in first.content and second.outdated_by == first.id  # for every query that returns both
    block = vault.prepare("when do deploys go out?").markdown  # a mark the vault inferred hides nothing:
    assert block.index("14:00") < block.index("10:00")  # both, dated, the newer first
    vault.link(first.id, second.id, "updates")  # the agent confirms it (or supersedes the older)
    assert (
        "10:00" not in vault.prepare("when do deploys go out?").markdown
    )  # confirmed: left out of the block
    assert (
        vault.history("fact", "deploy-day").items[0].content == "Deploys go out at 10:00 on Tuesdays."
    )  # never lost
    print("unsettled pairs:", [(c.newer, c.older, c.relation) for c in vault.hygiene().conflicts])


def judge(memory, candidates):  # an application's model would decide here (ChatModelJudge for LangChain)
    return {
        c.id: "duplicate" if "dark" in c.text and "dark" in memory.content else "related" for c in candidates
    }


with Vault(Path(tempfile.mkdtemp()) / "judged.db", clock=lambda: now[0], judge=judge) as vault:
    first = vault.remember("preference", "editor", "The user prefers dark mode in every editor.")
    second = vault.remember("preference", "theme", "In all my editors I like the dark theme.")
    items = vault.recall("which theme does the user like in editors").items
    print("judged duplicates:", [(i.id, i.duplicates) for i in items[:1]])
    assert items[0].id == second.id and items[0].duplicates == [first.id]  # one place for both wordings
