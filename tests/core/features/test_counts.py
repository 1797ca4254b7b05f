"""``counts``: how many memories a view holds, by status, scope, type and category (docs/scan.md)."""

from __future__ import annotations

import pytest

from perseus_vault_core import InvalidInput, Vault

from ...conftest import DAY_MS, T0, Clock

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def fill(vault: Vault, clock: Clock) -> dict[str, int]:
    """Six memories in two scopes: one archived, one expired, one superseded."""
    ids = {
        "db": vault.remember("decision", "db", "We chose SQLite", agent_id="a").id,
        "queue": vault.remember("decision", "queue", "We chose a queue", agent_id="a").id,
        "pace": vault.remember(
            "preference", "pace", "Mornings are for deep work", type="preference", agent_id="a"
        ).id,
        "old": vault.remember("fact", "old", "Old address", agent_id="a").id,
        "new": vault.remember("fact", "new", "New address", agent_id="a").id,
        "bob": vault.remember("fact", "bob", "Bob likes tea", agent_id="b", workspace_hash="w").id,
        "soon": vault.remember(
            "fact",
            "soon",
            "Valid until tomorrow",
            agent_id="b",
            workspace_hash="w",
            expires_at_ms=T0 + DAY_MS,
        ).id,
    }
    vault.forget(ids["queue"])
    vault.supersede(ids["old"], ids["new"])
    clock.advance(2 * DAY_MS)  # "soon" has expired
    return ids


def test_counts_break_the_view_down_largest_first(vault: Vault, clock: Clock) -> None:
    fill(vault, clock)
    c = vault.counts()
    assert c.total == 4  # db, pace, new, bob: the active ones
    assert c.by_status == {"active": 4, "archived": 1, "expired": 1, "superseded": 1}
    assert [(s.agent_id, s.workspace_hash, s.count) for s in c.by_scope] == [("a", None, 3), ("b", "w", 1)]
    assert c.by_type == {"note": 3, "preference": 1}  # "note": the default type
    assert c.by_category == {"fact": 2, "decision": 1, "preference": 1}  # ties in the order of their names
    assert (c.scopes, c.types, c.categories) == (2, 2, 3)


def test_counts_take_recall_s_filters(vault: Vault, clock: Clock) -> None:
    fill(vault, clock)
    scoped = vault.counts(agent_id="a")
    assert scoped.total == 3 and scoped.by_status == {"active": 3, "archived": 1, "superseded": 1}
    everything = vault.counts(include_archived=True)
    assert everything.total == 7 and everything.by_category == {"fact": 4, "decision": 2, "preference": 1}
    assert vault.counts(type="preference").by_category == {"preference": 1}
    top = vault.counts(top=1)
    assert top.by_category == {"fact": 2} and top.categories == 3  # the largest, and how many there are


def test_counts_of_a_past_instant_show_the_store_as_it_was(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "a", "first")
    clock.advance(1000)
    then = clock.now
    clock.advance(1000)
    vault.remember("fact", "b", "second")
    assert vault.counts(as_of_unix_ms=then).total == 1
    assert vault.counts().total == 2


def test_counts_refuse_bad_arguments(vault: Vault) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.counts(top=0)
    assert err.value.field == "top"
    with pytest.raises(InvalidInput) as err:
        vault.counts(tops=3)  # type: ignore[call-arg]
    assert err.value.field == "tops"


def test_an_empty_vault_counts_nothing(vault: Vault) -> None:
    c = vault.counts()
    assert (c.total, c.by_status, c.by_scope, c.scopes) == (0, {}, [], 0)
