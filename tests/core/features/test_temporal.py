"""History and point-in-time reads of one fact: history, as_of, valid_at, bitemporal,
and recall's time-travel views (docs/time.md)."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput, NotFound, Vault

from ...conftest import DAY_MS, T0, Clock

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


def moved(vault: Vault, clock: Clock, **scope: Any) -> tuple[int, int]:
    """Alice lives in Paris (recorded at T0, valid from T0), then, recorded one second later,
    she lives in Berlin from day 10 on. Returns (entity id, instant of the update)."""
    first = vault.remember("fact", "alice-city", "Alice lives in Paris", **scope)
    update_at = clock.advance(1000)
    second = vault.remember(
        "fact", "alice-city", "Alice lives in Berlin", valid_from_ms=T0 + 10 * DAY_MS, **scope
    )
    assert second.id == first.id and second.version == 2
    clock.advance(1000)
    return first.id, update_at


# --- history -----------------------------------------------------------------------------------


def test_history_lists_versions_newest_first(vault: Vault, clock: Clock) -> None:
    entity_id, update_at = moved(vault, clock)
    page = vault.history("fact", "alice-city")
    assert page.total == 2 and page.has_more is False
    assert [(v.version, v.content, v.change) for v in page.items] == [
        (2, "Alice lives in Berlin", "update"),
        (1, "Alice lives in Paris", "create"),
    ]
    assert all(v.id == entity_id for v in page.items)
    newest, oldest = page.items
    assert (oldest.recorded_from_ms, oldest.recorded_to_ms) == (T0, update_at)
    assert (newest.recorded_from_ms, newest.recorded_to_ms) == (update_at, None)
    assert (oldest.valid_from_ms, newest.valid_from_ms) == (T0, T0 + 10 * DAY_MS)


def test_history_paginates_with_total_and_has_more(vault: Vault, clock: Clock) -> None:
    for n in range(5):
        vault.remember("fact", "counter", f"the counter reads {n}")
        clock.advance(1000)

    def page(limit: int, offset: int) -> tuple[list[str], int, bool]:
        p = vault.history("fact", "counter", limit=limit, offset=offset)
        return [v.content[-1] for v in p.items], p.total, p.has_more

    assert page(2, 0) == (["4", "3"], 5, True)
    assert page(2, 2) == (["2", "1"], 5, True)
    assert page(2, 4) == (["0"], 5, False)
    assert page(5, 0) == (["4", "3", "2", "1", "0"], 5, False)
    assert page(2, 5) == ([], 5, False)
    assert page(3, 50) == ([], 5, False)
    versions = [v.version for v in vault.history("fact", "counter").items]
    assert versions == [5, 4, 3, 2, 1]


def test_history_chains_transaction_time_without_gaps(vault: Vault, clock: Clock) -> None:
    for n in range(4):
        vault.remember("fact", "k", f"text {n}")
        clock.advance(1000)
    items = vault.history("fact", "k").items
    for newer, older in zip(items, items[1:]):
        assert older.recorded_to_ms == newer.recorded_from_ms
    assert items[0].recorded_to_ms is None


@pytest.mark.parametrize(
    ("limit", "offset", "field"), [(0, 0, "limit"), (5, -1, "offset"), ("5", 0, "limit")]
)
def test_history_refuses_bad_paging(vault: Vault, limit: Any, offset: Any, field: str) -> None:
    vault.remember("fact", "k", "text")
    with pytest.raises(InvalidInput) as err:
        vault.history("fact", "k", limit=limit, offset=offset)
    assert err.value.field == field


def test_history_shows_archive_and_restore(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "k", "a fact we will forget")
    archived_at = clock.advance(1000)
    vault.forget(e.id)
    restored_at = clock.advance(1000)
    vault.remember("fact", "k", "a fact we will forget")
    items = vault.history("fact", "k").items
    assert [(v.change, v.status) for v in items] == [
        ("restore", "active"),
        ("archive", "archived"),
        ("create", "active"),
    ]
    assert items[1].recorded_from_ms == archived_at and items[1].recorded_to_ms == restored_at
    assert all(v.content == "a fact we will forget" for v in items)


def test_history_of_an_archived_fact_is_still_readable(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "k", "soon archived")
    clock.advance(1000)
    vault.forget(e.id)
    page = vault.history("fact", "k")
    assert page.total == 2
    assert page.items[0].change == "archive" and page.items[0].status == "archived"
    assert page.items[1].change == "create" and page.items[1].status == "active"


def test_history_shows_supersession(vault: Vault, clock: Clock) -> None:
    old = vault.remember("decision", "db-v1", "We use Postgres")
    new = vault.remember("decision", "db-v2", "We use SQLite")
    clock.advance(1000)
    vault.supersede(old.id, new.id)
    head = vault.history("decision", "db-v1").items[0]
    assert (head.change, head.status, head.superseded_by) == ("supersede", "superseded", new.id)
    assert vault.history("decision", "db-v2").items[0].supersedes == old.id


# --- as_of -------------------------------------------------------------------------------------


def test_as_of_before_creation_is_none(vault: Vault, clock: Clock) -> None:
    moved(vault, clock)
    assert vault.as_of("fact", "alice-city", T0 - 1) is None
    assert vault.as_of("fact", "alice-city", 0) is None


def test_as_of_returns_the_content_believed_then(vault: Vault, clock: Clock) -> None:
    entity_id, update_at = moved(vault, clock)
    at_creation = vault.as_of("fact", "alice-city", T0)
    before = vault.as_of("fact", "alice-city", update_at - 1)
    after = vault.as_of("fact", "alice-city", update_at + 500)
    later = vault.as_of("fact", "alice-city", T0 + 365 * DAY_MS)
    assert at_creation is not None and before is not None and after is not None and later is not None
    assert (at_creation.content, at_creation.version) == ("Alice lives in Paris", 1)
    assert (before.content, before.version) == ("Alice lives in Paris", 1)
    assert (after.content, after.version) == ("Alice lives in Berlin", 2)
    assert (later.content, later.version) == ("Alice lives in Berlin", 2)
    assert before.id == after.id == entity_id


def test_as_of_exactly_at_the_update_instant_is_the_new_version(vault: Vault, clock: Clock) -> None:
    _, update_at = moved(vault, clock)
    at = vault.as_of("fact", "alice-city", update_at)
    assert at is not None and at.content == "Alice lives in Berlin" and at.version == 2


def test_as_of_shows_an_archived_state_in_its_time(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "k", "archived for a while")
    archived_at = clock.advance(1000)
    vault.forget(e.id)
    restored_at = clock.advance(1000)
    vault.remember("fact", "k", "archived for a while")
    during = vault.as_of("fact", "k", archived_at + 1)
    assert during is not None and during.status == "archived" and during.change == "archive"
    after = vault.as_of("fact", "k", restored_at)
    assert after is not None and after.status == "active" and after.change == "restore"


def test_as_of_keeps_the_fields_of_that_time(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "k", "text", topic_path="old/path", body={"ticket": "ENG-1"}, certainty=0.2)
    changed_at = clock.advance(1000)
    vault.remember("fact", "k", "text", topic_path="new/path", body={"ticket": "ENG-2"}, certainty=0.9)
    then = vault.as_of("fact", "k", changed_at - 1)
    now = vault.as_of("fact", "k", changed_at)
    assert then is not None and now is not None
    assert (then.topic_path, then.body["ticket"], then.certainty) == ("old/path", "ENG-1", 0.2)
    assert (now.topic_path, now.body["ticket"], now.certainty) == ("new/path", "ENG-2", 0.9)


# --- valid_at and bitemporal -------------------------------------------------------------------


def test_valid_at_follows_valid_time_per_current_knowledge(vault: Vault, clock: Clock) -> None:
    moved(vault, clock)
    early = vault.valid_at("fact", "alice-city", T0 + DAY_MS)
    late = vault.valid_at("fact", "alice-city", T0 + 11 * DAY_MS)
    boundary = vault.valid_at("fact", "alice-city", T0 + 10 * DAY_MS)
    assert early is not None and early.content == "Alice lives in Paris"
    assert late is not None and late.content == "Alice lives in Berlin"
    assert boundary is not None and boundary.content == "Alice lives in Berlin"  # valid_from is inclusive


def test_valid_at_before_the_fact_held_is_none(vault: Vault, clock: Clock) -> None:
    moved(vault, clock)
    assert vault.valid_at("fact", "alice-city", T0 - 1) is None


def test_valid_at_respects_valid_to(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "lease", "The office lease runs", valid_from_ms=T0, valid_to_ms=T0 + 5 * DAY_MS)
    inside = vault.valid_at("fact", "lease", T0 + 5 * DAY_MS - 1)
    assert inside is not None and inside.content == "The office lease runs"
    assert vault.valid_at("fact", "lease", T0 + 5 * DAY_MS) is None  # valid_to is exclusive


def test_bitemporal_returns_what_was_believed_then(vault: Vault, clock: Clock) -> None:
    _, update_at = moved(vault, clock)
    v_late = T0 + 11 * DAY_MS
    believed_before = vault.bitemporal("fact", "alice-city", update_at - 1, v_late)
    believed_after = vault.bitemporal("fact", "alice-city", update_at, v_late)
    assert believed_before is not None and believed_before.content == "Alice lives in Paris"
    assert believed_after is not None and believed_after.content == "Alice lives in Berlin"
    # Even after the update, the early valid instant still holds the old version.
    early = vault.bitemporal("fact", "alice-city", update_at, T0 + DAY_MS)
    assert early is not None and early.content == "Alice lives in Paris"
    # Nothing was believed before the fact was first recorded.
    assert vault.bitemporal("fact", "alice-city", T0 - 1, v_late) is None


def test_valid_at_equals_bitemporal_at_now(vault: Vault, clock: Clock) -> None:
    moved(vault, clock)
    for v in (T0 - 1, T0, T0 + DAY_MS, T0 + 10 * DAY_MS, T0 + 30 * DAY_MS):
        assert vault.valid_at("fact", "alice-city", v) == vault.bitemporal("fact", "alice-city", clock.now, v)


def test_a_retroactive_correction_changes_valid_at_but_not_as_of(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "ceo", "Bob is CEO", valid_from_ms=T0 - 100 * DAY_MS)
    corrected_at = clock.advance(DAY_MS)
    # Learned later: Carol has been CEO since T0 - 50 days.
    vault.remember("fact", "ceo", "Carol is CEO", valid_from_ms=T0 - 50 * DAY_MS)
    clock.advance(1000)
    past = vault.valid_at("fact", "ceo", T0 - 10 * DAY_MS)
    assert past is not None and past.content == "Carol is CEO"
    older = vault.valid_at("fact", "ceo", T0 - 70 * DAY_MS)
    assert older is not None and older.content == "Bob is CEO"
    believed = vault.bitemporal("fact", "ceo", corrected_at - 1, T0 - 10 * DAY_MS)
    assert believed is not None and believed.content == "Bob is CEO"
    then = vault.as_of("fact", "ceo", corrected_at - 1)
    assert then is not None and then.content == "Bob is CEO"


@pytest.mark.parametrize("name", ["as_of_unix_ms", "valid_at_unix_ms"])
def test_point_in_time_refuses_bad_instants(vault: Vault, name: str) -> None:
    vault.remember("fact", "k", "text")
    with pytest.raises(InvalidInput) as err:
        if name == "as_of_unix_ms":
            vault.as_of("fact", "k", -1)
        else:
            vault.valid_at("fact", "k", "yesterday")  # type: ignore[arg-type]
    assert err.value.field == name


def test_empty_address_is_invalid(vault: Vault) -> None:
    with pytest.raises(InvalidInput) as err:
        vault.as_of("", "k", T0)
    assert err.value.field == "category"
    with pytest.raises(InvalidInput) as err:
        vault.history("fact", "")
    assert err.value.field == "key"


# --- addressing and scope ----------------------------------------------------------------------


def test_unknown_fact_is_not_found(vault: Vault) -> None:
    vault.remember("fact", "known", "text")
    with pytest.raises(NotFound):
        vault.history("fact", "unknown")
    with pytest.raises(NotFound):
        vault.as_of("fact", "unknown", T0)
    with pytest.raises(NotFound):
        vault.valid_at("fact", "unknown", T0)
    with pytest.raises(NotFound):
        vault.bitemporal("fact", "unknown", T0, T0)
    with pytest.raises(NotFound):
        vault.history("other-category", "known")


@pytest.mark.parametrize("scope", [{"agent_id": "b"}, {}, {"workspace_hash": "w1"}])
def test_a_scoped_fact_is_not_found_from_another_scope(
    vault: Vault, clock: Clock, scope: dict[str, Any]
) -> None:
    vault.remember("fact", "k", "agent a's secret", agent_id="a")
    clock.advance(1000)
    with pytest.raises(NotFound):
        vault.history("fact", "k", **scope)
    with pytest.raises(NotFound):
        vault.as_of("fact", "k", clock.now, **scope)
    with pytest.raises(NotFound):
        vault.valid_at("fact", "k", clock.now, **scope)
    with pytest.raises(NotFound):
        vault.bitemporal("fact", "k", clock.now, clock.now, **scope)


def test_each_scope_has_its_own_history(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "k", "a one", agent_id="a")
    vault.remember("fact", "k", "b one", agent_id="b")
    vault.remember("fact", "k", "unscoped one")
    vault.remember("fact", "k", "a in w1", agent_id="a", workspace_hash="w1")
    clock.advance(1000)
    vault.remember("fact", "k", "a two", agent_id="a")
    assert [v.content for v in vault.history("fact", "k", agent_id="a").items] == ["a two", "a one"]
    assert [v.content for v in vault.history("fact", "k", agent_id="b").items] == ["b one"]
    assert [v.content for v in vault.history("fact", "k").items] == ["unscoped one"]
    assert [v.content for v in vault.history("fact", "k", agent_id="a", workspace_hash="w1").items] == [
        "a in w1"
    ]
    then = vault.as_of("fact", "k", T0, agent_id="a")
    assert then is not None and then.content == "a one" and then.agent_id == "a"


def test_scoped_point_in_time_reads(vault: Vault, clock: Clock) -> None:
    _, update_at = moved(vault, clock, agent_id="a", workspace_hash="w1")
    scope = {"agent_id": "a", "workspace_hash": "w1"}
    before = vault.as_of("fact", "alice-city", update_at - 1, **scope)
    assert before is not None and before.content == "Alice lives in Paris"
    late = vault.valid_at("fact", "alice-city", T0 + 11 * DAY_MS, **scope)
    assert late is not None and late.content == "Alice lives in Berlin"
    with pytest.raises(NotFound):
        vault.as_of(
            "fact", "alice-city", update_at, agent_id="a"
        )  # workspace omitted: the unscoped-workspace fact


# --- recall in time ----------------------------------------------------------------------------


def relocated(vault: Vault, clock: Clock) -> tuple[int, int]:
    """Like :func:`moved`, but the update keeps the valid time (so both versions hold now)."""
    first = vault.remember("fact", "alice-city", "Alice lives in Paris")
    update_at = clock.advance(1000)
    vault.remember("fact", "alice-city", "Alice lives in Berlin")
    clock.advance(1000)
    return first.id, update_at


def test_recall_as_of_returns_the_content_of_that_time(vault: Vault, clock: Clock) -> None:
    entity_id, update_at = relocated(vault, clock)
    then = vault.recall("Paris", as_of_unix_ms=update_at - 1)
    assert [(i.id, i.content, i.version) for i in then.items] == [(entity_id, "Alice lives in Paris", 1)]
    assert vault.recall("Berlin", as_of_unix_ms=update_at - 1).items == []
    now = vault.recall("Berlin", as_of_unix_ms=update_at)
    assert [(i.id, i.content) for i in now.items] == [(entity_id, "Alice lives in Berlin")]
    assert vault.recall("Paris", reinforce=False).items == []  # the current view only has Berlin
    assert [i.id for i in vault.recall("Berlin", reinforce=False).items] == [entity_id]


def test_recall_as_of_before_creation_finds_nothing(vault: Vault, clock: Clock) -> None:
    relocated(vault, clock)
    assert vault.recall("Paris", as_of_unix_ms=T0 - 1).items == []
    assert vault.recall("", as_of_unix_ms=T0 - 1).items == []


def test_recall_as_of_never_reinforces(vault: Vault, clock: Clock) -> None:
    entity_id, update_at = relocated(vault, clock)
    before = vault.get_entity(entity_id)
    for _ in range(3):
        assert len(vault.recall("Paris", as_of_unix_ms=update_at - 1).items) == 1
        assert len(vault.recall("", as_of_unix_ms=update_at + 1).items) == 1
    after = vault.get_entity(entity_id)
    assert after.retrieval_count == before.retrieval_count == 0
    assert after.last_accessed_ms == before.last_accessed_ms
    # A current recall does reinforce: the counter above could have moved.
    assert len(vault.recall("Berlin").items) == 1
    assert vault.get_entity(entity_id).retrieval_count == 1


def test_recall_as_of_enumerates_only_entities_that_existed(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "early", "the early note")
    middle = clock.advance(1000)
    vault.remember("fact", "late", "the late note")
    clock.advance(1000)
    assert [i.key for i in vault.recall("", as_of_unix_ms=middle - 1).items] == ["early"]
    assert [i.key for i in vault.recall("note", as_of_unix_ms=middle - 1).items] == ["early"]
    assert sorted(i.key for i in vault.recall("note", as_of_unix_ms=middle).items) == ["early", "late"]


def test_recall_as_of_sees_an_entity_archived_since(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "k", "a forgotten zebra")
    archived_at = clock.advance(1000)
    vault.forget(e.id)
    clock.advance(1000)
    assert vault.recall("zebra").items == []
    then = vault.recall("zebra", as_of_unix_ms=archived_at - 1).items
    assert [(i.id, i.status) for i in then] == [(e.id, "active")]
    assert vault.recall("zebra", as_of_unix_ms=archived_at).items == []
    archived = vault.recall("zebra", as_of_unix_ms=archived_at, include_archived=True).items
    assert [(i.id, i.status) for i in archived] == [(e.id, "archived")]


def test_recall_valid_at(vault: Vault, clock: Clock) -> None:
    entity_id, _ = moved(vault, clock)
    early = vault.recall("Alice", valid_at_unix_ms=T0 + DAY_MS).items
    assert [(i.id, i.content) for i in early] == [(entity_id, "Alice lives in Paris")]
    late = vault.recall("Alice", valid_at_unix_ms=T0 + 11 * DAY_MS).items
    assert [(i.id, i.content) for i in late] == [(entity_id, "Alice lives in Berlin")]
    assert vault.recall("Berlin", valid_at_unix_ms=T0 + DAY_MS).items == []
    assert vault.recall("Paris", valid_at_unix_ms=T0 + 11 * DAY_MS).items == []
    assert vault.recall("Alice", valid_at_unix_ms=T0 - 1).items == []  # not yet valid: does not exist


def test_recall_bitemporal(vault: Vault, clock: Clock) -> None:
    entity_id, update_at = moved(vault, clock)
    v_late = T0 + 11 * DAY_MS
    believed_before = vault.recall("Alice", as_of_unix_ms=update_at - 1, valid_at_unix_ms=v_late).items
    assert [(i.id, i.content) for i in believed_before] == [(entity_id, "Alice lives in Paris")]
    believed_after = vault.recall("Alice", as_of_unix_ms=update_at, valid_at_unix_ms=v_late).items
    assert [(i.id, i.content) for i in believed_after] == [(entity_id, "Alice lives in Berlin")]


def test_recall_in_time_is_scoped(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "k", "agent a knows the walrus", agent_id="a")
    vault.remember("fact", "k", "agent b knows the walrus", agent_id="b")
    clock.advance(1000)
    for params in ({"as_of_unix_ms": clock.now}, {"valid_at_unix_ms": clock.now}):
        items = vault.recall("walrus", agent_id="a", **params).items
        assert [(i.agent_id, i.content) for i in items] == [("a", "agent a knows the walrus")]


# --- recent: the latest writes, across facts -------------------------------------------------------


def test_recent_lists_every_write_newest_first(vault: Vault, clock: Clock) -> None:
    a = vault.remember("fact", "a", "first").id
    clock.advance(1000)
    b = vault.remember("fact", "b", "second").id
    clock.advance(1000)
    vault.remember("fact", "a", "first, revised")
    clock.advance(1000)
    vault.forget(b)
    page = vault.recent()
    assert [(e.id, e.version, e.change) for e in page.items] == [
        (b, 2, "archive"),
        (a, 2, "update"),
        (b, 1, "create"),
        (a, 1, "create"),
    ]
    assert [e.recorded_from_ms for e in page.items] == sorted(
        (e.recorded_from_ms for e in page.items), reverse=True
    )
    assert page.items[1].content == "first, revised" and not page.has_more and page.next_cursor is None


def test_recent_pages_by_cursor_and_never_repeats_while_writes_go_on(vault: Vault, clock: Clock) -> None:
    for i in range(7):
        vault.remember("fact", f"k{i}", f"text {i}")
        clock.advance(10)
    seen: list[tuple[int, int]] = []
    cursor = None
    while True:
        page = vault.recent(cursor=cursor, limit=3)
        seen += [(e.id, e.version) for e in page.items]
        vault.remember(
            "fact", f"later-{len(seen)}", "written while paging"
        )  # newer than any page: never shown
        if not page.has_more:
            break
        cursor = page.next_cursor
    assert len(seen) == len(set(seen)) == 7


def test_recent_keeps_to_its_scope_and_refuses_a_cursor_of_another(vault: Vault) -> None:
    vault.remember("fact", "a", "alice's", agent_id="alice")
    vault.remember("fact", "b", "bob's", agent_id="bob")
    vault.remember("fact", "c", "bob's again", agent_id="bob")
    assert [e.agent_id for e in vault.recent(agent_id="alice").items] == ["alice"]
    cursor = vault.recent(agent_id="bob", limit=1).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidInput) as err:
        vault.recent(cursor=cursor, agent_id="alice")
    assert err.value.field == "cursor"
