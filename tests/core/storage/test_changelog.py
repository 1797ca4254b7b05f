"""storage/changelog.py: the change log as the in-memory indexes follow it, read on a real SQLite vault:
positions that grow with each write, the entries between two positions in order (vector writes only
when asked for), what identifies an entry, the oldest entry kept, a rebuild seen, and the current heads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.storage import changelog
from perseus_vault_core.storage.base import OP_GONE, OP_HEAD, OP_REBUILT, OP_VECTOR
from perseus_vault_core.storage.sqlite.keyword import log_changes

from ...conftest import Clock


@pytest.fixture
def vault(tmp_path: Path, clock: Clock) -> Iterator[Vault]:
    with Vault(tmp_path / "log.db", clock=clock, embedder=False) as v:
        yield v


def vid(vault: Vault, memory: Any) -> int:
    """The version id of ``memory`` (an entity as written) in the vault's rows."""
    row = (
        vault.engine.conn()
        .execute(
            "SELECT vid FROM entity_versions WHERE entity_id = ? AND version = ?", (memory.id, memory.version)
        )
        .fetchone()
    )
    return int(row[0])


def test_an_empty_log(vault: Vault) -> None:
    conn = vault.engine.conn()
    assert changelog.position(conn) == 0 and changelog.first(conn) is None
    assert changelog.marker(conn, 0) == "0" and changelog.marker(conn, 1) is None
    assert changelog.entries(conn, 0, 10, True) == [] and changelog.pending(conn, 0, 10, True) == 0
    assert not changelog.rebuilt_since(conn, 0) and list(changelog.heads(conn, "text")) == []


def test_each_write_appends_its_changes_in_order(vault: Vault, clock: Clock) -> None:
    conn = vault.engine.conn()
    first = vault.remember("fact", "city", "Paris")
    one = changelog.position(conn)
    assert changelog.entries(conn, 0, one, True) == [(vid(vault, first), OP_HEAD)]
    second = vault.remember("fact", "city", "Berlin")  # the old head goes, the new one comes
    two = changelog.position(conn)
    assert changelog.entries(conn, one, two, True) == [
        (vid(vault, first), OP_GONE),
        (vid(vault, second), OP_HEAD),
    ]
    assert changelog.pending(conn, one, two, True) == 2 and changelog.pending(conn, 0, two, True) == 3
    assert changelog.entries(conn, 0, one, True) == [
        (vid(vault, first), OP_HEAD)
    ]  # (after, upto]: upto included
    assert changelog.entries(conn, two, two + 5, True) == []
    assert changelog.first(conn) == 1
    marker = changelog.marker(conn, two)
    assert marker == f"{two}:{vid(vault, second)}:{OP_HEAD}:{second.recorded_from_ms}"
    assert changelog.marker(conn, two + 1) is None


def test_vector_writes_are_counted_only_when_asked_for(vault: Vault) -> None:
    conn = vault.engine.conn()
    saved = vault.remember("fact", "a", "alpha")
    start = changelog.position(conn)
    vault.engine.write(lambda c: log_changes(c, [vid(vault, saved)], OP_VECTOR))
    end = changelog.position(conn)
    assert changelog.entries(conn, start, end, True) == [(vid(vault, saved), OP_VECTOR)]
    assert changelog.entries(conn, start, end, False) == []
    assert changelog.pending(conn, start, end, True) == 1 and changelog.pending(conn, start, end, False) == 0


def test_a_rebuild_is_seen_after_the_position_it_follows(vault: Vault) -> None:
    conn = vault.engine.conn()
    vault.remember("fact", "a", "alpha")
    before = changelog.position(conn)
    assert not changelog.rebuilt_since(conn, before)
    vault.engine.write(lambda c: log_changes(c, [0], OP_REBUILT))
    assert changelog.rebuilt_since(conn, before) and not changelog.rebuilt_since(
        conn, changelog.position(conn)
    )


def test_heads_are_the_current_versions_with_the_feed_s_columns(vault: Vault) -> None:
    conn = vault.engine.conn()
    vault.remember("fact", "city", "Paris", agent_id="ops")
    berlin = vault.remember("fact", "city", "Berlin", summary="moved", agent_id="ops")
    other = vault.remember("note", "n", "a note", workspace_hash="w")
    rows = [tuple(r) for r in changelog.heads(conn, "text")]
    assert [r[:4] for r in rows] == [
        (vid(vault, berlin), berlin.id, "ops", ""),
        (vid(vault, other), other.id, "", "w"),
    ]  # by vid, the closed Paris version absent
    assert rows[0][4:6] == ("Berlin", "moved")
    vector_rows = [tuple(r) for r in changelog.heads(conn, "vector")]
    assert [r[0] for r in vector_rows] == [vid(vault, berlin), vid(vault, other)] and vector_rows[0][
        4
    ] is None  # no embedder
