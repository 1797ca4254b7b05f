"""``/time`` (views/timetravel.py): the store as it was believed at an instant, and the writes newest first."""

from __future__ import annotations

from perseus_vault_core import Vault

from ..conftest import Sample, Server, get, text


def test_time_travel_shows_the_store_as_believed_then(server: Server, store: tuple[Vault, Sample]) -> None:
    vault, sample = store
    page = get(server, "/time?at=2026-01-01T12:00:00Z")
    assert "5 active memories then" in text(page)  # only the storage theme had been written
    assert f"/memory/{sample.themes['storage'][0]}?as_of=2026-01-01T12" in page
    assert f"/memory/{sample.themes['billing'][0]}" not in page
    writes = get(server, "/time")
    assert "Writes, newest first" in writes and "/time?at=" in writes
