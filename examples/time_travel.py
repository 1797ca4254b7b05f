"""Bitemporal memory: what we believed when, and what was true when.

python examples/time_travel.py
"""

import tempfile
from pathlib import Path

from perseus_vault_core import Vault

DAY = 86_400_000
now = [1_767_225_600_000]  # a controllable clock, 2026-01-01


def clock() -> int:
    return now[0]


with Vault(Path(tempfile.mkdtemp()) / "time.db", clock=clock) as vault:
    vault.remember("fact", "ceo", "Alice is the CEO.", valid_from_ms=now[0])
    recorded_alice = now[0]
    now[0] += 30 * DAY
    # Learned today that Bob took over ten days ago: a change in the world, with its valid time.
    vault.remember("fact", "ceo", "Bob is the CEO.", valid_from_ms=now[0] - 10 * DAY)

    print("now:", vault.recall("ceo").items[0].content)
    print("believed on day 1:", vault.as_of("fact", "ceo", as_of_unix_ms=recorded_alice).content)
    print(
        "true on day 15 (as we know now):",
        vault.valid_at("fact", "ceo", valid_at_unix_ms=recorded_alice + 15 * DAY).content,
    )
    print(
        "true on day 25 (as we know now):",
        vault.valid_at("fact", "ceo", valid_at_unix_ms=recorded_alice + 25 * DAY).content,
    )
    print(
        "on day 15, what did we think day 25 would be:",
        vault.bitemporal(
            "fact", "ceo", as_of_unix_ms=recorded_alice + 15 * DAY, valid_at_unix_ms=recorded_alice + 25 * DAY
        ).content,
    )
    print(
        "keyword recall as of day 1:",
        [i.content for i in vault.recall("ceo", as_of_unix_ms=recorded_alice).items],
    )
    assert (
        vault.valid_at("fact", "ceo", valid_at_unix_ms=recorded_alice + 25 * DAY).content == "Bob is the CEO."
    )
