"""The walk from a ranking to visible hits (primitives/hits.py): best first, under the view, and how many
candidates it looked at, returned with the hits (no side channel)."""

from __future__ import annotations

import numpy as np

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import Filters
from perseus_vault_core.primitives.filters import view
from perseus_vault_core.primitives.hits import Ranking, visible_hits, walk

from ...conftest import Clock


def test_the_walk_says_how_many_candidates_it_looked_at(vault: Vault, clock: Clock) -> None:
    ids = [vault.remember("note", f"k{i}", f"note {i}").id for i in range(40)]
    for i in ids[::2]:
        vault.forget(i)  # half are archived: the view hides them
    conn = vault.engine.conn()
    heads = dict(
        conn.execute("SELECT entity_id, vid FROM entity_versions WHERE recorded_to_ms IS NULL").fetchall()
    )
    ranking = Ranking(
        np.array([heads[e] for e in ids], dtype=np.int64),
        np.array(ids, dtype=np.int64),
        np.linspace(40.0, 1.0, 40),
    )
    v = view(Filters(), clock.now)
    hits, examined = walk(conn, ranking, v, 2)
    assert [h.entity_id for h in hits] == [ids[1], ids[3]]
    assert examined == 2 + 2 // 4 + 8  # one batch was enough: the first ten looked at, not the forty
    assert visible_hits(conn, ranking, v, 2) == hits
    every = walk(conn, ranking, v, 100)
    assert [h.entity_id for h in every.hits] == ids[1::2] and every.examined == 40
