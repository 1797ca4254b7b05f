"""storage/sqlite/changes.py: ``rows``: the feed's columns of a list
of versions passed as one JSON parameter, by vid, closed versions included and purged ones absent (the shared
readers it exports: tests/core/storage/test_changelog.py)."""

from __future__ import annotations

from pathlib import Path

from perseus_vault_core import Vault
from perseus_vault_core.storage.sqlite import changes

from ....conftest import Clock


def test_rows_are_the_versions_asked_for_by_vid(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "c.db", clock=clock, embedder=False) as vault:
        conn = vault.engine.conn()
        paris = vault.remember("fact", "city", "Paris", agent_id="ops")
        vault.remember("fact", "city", "Berlin", agent_id="ops")
        gone = vault.remember("note", "tmp", "scratch")
        vids = [int(v) for (v,) in conn.execute("SELECT vid FROM entity_versions ORDER BY vid")]
        assert len(vids) == 3
        got = changes.rows(conn, "text", [vids[2], vids[0], vids[0]])  # any order, repeats once
        assert sorted(got) == [vids[0], vids[2]]
        assert tuple(got[vids[0]])[:5] == (vids[0], paris.id, "ops", "", "Paris")  # a closed version too
        assert changes.rows(conn, "text", []) == {}
        assert changes.rows(conn, "text", [10**9]) == {}  # no such version
        vault.forget(gone.id)
        vault.purge(gone.id)
        assert vids[2] not in changes.rows(conn, "text", vids)  # purged since: absent
        assert set(changes.rows(conn, "vector", vids[:2])) == set(vids[:2])
