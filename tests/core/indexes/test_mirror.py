"""The mirrors' shared parts (indexes/mirror.py)."""

from __future__ import annotations

import random

import pytest

from perseus_vault_core.indexes.mirror import Rows, SlotMap


@pytest.mark.parametrize("shuffled", [False, True])
def test_the_slot_map_of_loaded_rows_agrees_with_a_dict_through_adds_and_removals(shuffled: bool) -> None:
    rng = random.Random(5)
    vids = list(range(10, 3010, 3))
    if shuffled:  # a head that came back after the build sits out of order
        rng.shuffle(vids)
    rows = Rows(16)
    for i, vid in enumerate(vids):
        rows.append(vid, entity=i, agent=0, workspace=0)
    for slot in rng.sample(range(len(vids)), 50):
        rows.alive[slot] = False
    expected = {vid: slot for slot, vid in enumerate(vids) if rows.alive[slot]}
    slots = SlotMap(rows)
    for _ in range(3000):
        vid = rng.randrange(0, 3100)
        action = rng.random()
        if action < 0.3:
            assert slots.pop(vid) == expected.pop(vid, None)
        elif action < 0.5 and vid not in expected:
            slot = rng.randrange(10_000)
            slots[vid] = slot
            expected[vid] = slot
        assert slots.get(vid) == expected.get(vid)
        assert (vid in slots) == (vid in expected)
    assert all(slots.get(vid) == slot for vid, slot in expected.items())
