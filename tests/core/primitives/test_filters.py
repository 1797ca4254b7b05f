"""primitives/filters.py: which versions a read sees, as SQL run on a real vault: the current view, the
version believed as of an instant, the bitemporal valid-at rule (a newer version speaks for valid time from
its own valid_from on), the topic as a segment prefix, the instant expiry is judged at, a where filter and
a view narrowed to some entities. That the in-memory rule agrees with the SQL: indexes/test_heads.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import RecallParams
from perseus_vault_core.primitives.dialect import SQLITE, dialect
from perseus_vault_core.primitives.filters import FROM, NARROWING, id_list, narrow, narrows, view, widened

from ...conftest import DAY_MS, Clock


@pytest.fixture
def vault(tmp_path: Any, clock: Clock) -> Iterator[Vault]:
    with Vault(tmp_path / "f.db", clock=clock, embedder=False) as v:
        yield v


def seen(vault: Vault, clock: Clock, **given: Any) -> dict[str, int]:
    """key -> the version each entity shows in the view ``given`` asks for, judged now."""
    conn = vault.engine.conn()
    v = view(RecallParams(query="", **given), clock.now, dialect(conn))
    rows = conn.execute(f"SELECT e.key, v.version FROM {FROM} WHERE {v.where}", v.params).fetchall()
    assert len(rows) == len({k for k, _ in rows}), "one version per entity"
    return dict(rows)


def test_the_topic_is_a_prefix_of_whole_segments(vault: Vault, clock: Clock) -> None:
    for key, topic in (
        ("a", "architecture"),
        ("s", "architecture/storage"),
        ("x", "architecturex"),
        ("n", None),
    ):
        vault.remember("note", key, f"memory {key}", topic_path=topic)
    assert set(seen(vault, clock, topic_path="architecture")) == {"a", "s"}
    assert set(seen(vault, clock, topic_path="/architecture/")) == {"a", "s"}
    assert set(seen(vault, clock, topic_path="architecture/storage")) == {"s"}
    assert set(seen(vault, clock, topic_path="/")) == {"a", "s", "x", "n"}  # no prefix: no filter


def test_as_of_shows_the_version_believed_then(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "city", "Paris")
    first = clock.now
    clock.advance(DAY_MS)
    vault.remember("fact", "city", "Berlin")
    assert seen(vault, clock) == {"city": 2}
    assert seen(vault, clock, as_of_unix_ms=first) == {"city": 1}
    assert seen(vault, clock, as_of_unix_ms=first - 1) == {}  # not yet written


def test_a_newer_version_speaks_for_valid_time_from_its_own_start(vault: Vault, clock: Clock) -> None:
    start = clock.now
    vault.remember("fact", "city", "Paris")  # valid from its creation
    clock.advance(10 * DAY_MS)
    vault.remember(
        "fact", "city", "Berlin", valid_from_ms=start + 5 * DAY_MS
    )  # moved on day 5, told on day 10
    assert seen(vault, clock, valid_at_unix_ms=start + 2 * DAY_MS) == {"city": 1}  # Paris still true then
    assert seen(vault, clock, valid_at_unix_ms=start + 6 * DAY_MS) == {"city": 2}
    assert seen(vault, clock, valid_at_unix_ms=start - 1) == {}  # before anything was true
    # believed on day 1, day 6 looked like Paris: the update had not been recorded yet
    assert seen(vault, clock, valid_at_unix_ms=start + 6 * DAY_MS, as_of_unix_ms=start + DAY_MS) == {
        "city": 1
    }
    vault.remember("fact", "city", "Berlin", valid_from_ms=start + 5 * DAY_MS, valid_to_ms=start + 8 * DAY_MS)
    assert (
        seen(vault, clock, valid_at_unix_ms=start + 9 * DAY_MS) == {}
    )  # an update that ends earlier ends it
    assert seen(vault, clock, valid_at_unix_ms=start + 2 * DAY_MS) == {"city": 1}


def test_the_current_view_judges_by_the_head_so_a_future_start_hides_it(vault: Vault, clock: Clock) -> None:
    vault.remember("fact", "plan", "v1")
    vault.remember("fact", "plan", "v2", valid_from_ms=clock.now + DAY_MS)
    assert seen(vault, clock) == {}
    assert seen(vault, clock, valid_at_unix_ms=clock.now) == {
        "plan": 1
    }  # the question asked by the rule above
    clock.advance(DAY_MS)
    assert seen(vault, clock) == {"plan": 2}


def test_expiry_and_status_are_judged_at_the_view_s_instant(vault: Vault, clock: Clock) -> None:
    vault.remember("note", "soon", "expires", expires_at_ms=clock.now + 100)
    gone = vault.remember("note", "gone", "forgotten")
    vault.forget(gone.id)
    assert set(seen(vault, clock)) == {"soon"}
    assert set(seen(vault, clock, query_time_unix_ms=clock.now + 100)) == set()  # expired at that instant
    assert set(seen(vault, clock, query_time_unix_ms=clock.now + 100, include_archived=True)) == {
        "soon",
        "gone",
    }
    v = view(RecallParams(query="", query_time_unix_ms=clock.now + 7), clock.now)
    assert v.instant == clock.now + 7 and not v.historical


def test_a_where_filter_needs_the_dialect_and_is_kept_parsed(vault: Vault, clock: Clock) -> None:
    vault.remember("note", "a", "alpha", type="decision")
    vault.remember("note", "b", "beta", type="note")
    with pytest.raises(TypeError, match="needs the connection's dialect"):
        view(RecallParams(query="", where={"type": "decision"}), clock.now)
    v = view(RecallParams(query="", where={"type": "decision"}), clock.now, SQLITE)
    assert v.condition is not None and v.condition_sql is not None and v.rule is not None
    assert set(seen(vault, clock, where={"type": "decision"})) == {"a"}


def test_a_narrowed_view_sees_only_its_entities_and_the_scope_is_its_own(vault: Vault, clock: Clock) -> None:
    ids = [vault.remember("note", f"k{i}", f"memory {i}", agent_id="ops").id for i in range(4)]
    conn = vault.engine.conn()
    base = view(RecallParams(query="", agent_id="ops"), clock.now, dialect(conn))
    assert base.scope == ("ops", None) and base.scoped
    assert not view(RecallParams(query=""), clock.now).scoped
    only = narrow(base, [ids[1], ids[3]], dialect(conn))
    assert only.narrowed and only.rule is None and only.scope == ("ops", None)
    got = {i for (i,) in conn.execute(f"SELECT e.id FROM {FROM} WHERE {only.where}", only.params)}
    assert got == {ids[1], ids[3]}
    assert id_list([3, 1, 2]) == "[3,1,2]" and id_list([]) == "[]"


def test_a_widened_view_keeps_scope_status_and_time_and_drops_what_narrows(
    vault: Vault, clock: Clock
) -> None:
    """What narrows a view (NARROWING) is what ``widened`` sets aside: each one narrows alone, and the widened
    view of any of them is the view of the same scope, status and instant with none."""
    vault.remember("note", "a", "alpha", agent_id="x", topic_path="ops/db")
    vault.remember("fact", "b", "beta", agent_id="x", type="decision")
    vault.remember("note", "c", "gamma", agent_id="y")
    d = dialect(vault.engine.conn())
    plain = RecallParams(query="", agent_id="x", as_of_unix_ms=clock.now)
    assert not narrows(plain)
    given = {
        "category": "note",
        "type": "decision",
        "topic_path": "ops",
        "where": {"category": "fact"},
        "min_decay": 0.1,
    }
    assert set(given) == set(NARROWING)
    for name, value in given.items():
        narrowed = plain.model_copy(update={name: value})
        assert narrows(narrowed), name
        wide = widened(narrowed, clock.now, d)
        assert (wide.where, wide.params) == (
            view(plain, clock.now, d).where,
            view(plain, clock.now, d).params,
        ), name
    wide = widened(RecallParams(query="", agent_id="x", category="note", topic_path="ops/db"), clock.now, d)
    assert sorted(seen_in(vault, wide)) == ["a", "b"]  # agent y's memory stays out


def seen_in(vault: Vault, v: Any) -> list[str]:
    conn = vault.engine.conn()
    return [r[0] for r in conn.execute(f"SELECT e.key FROM {FROM} WHERE {v.where}", v.params)]
