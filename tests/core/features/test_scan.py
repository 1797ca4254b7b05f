"""``scan``: keyset pages by ascending id, every visible entity exactly once (docs/scan.md).

The central promise is "exactly once, even while other clients write and recall", so the
last tests run a real writer (another process, then another thread) against the same file
while this process pages through it.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import random
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import InvalidInput, ScanPage, Vault

from ...conftest import DAY_MS, T0, Clock

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)

SEED_COUNT = 500
PAGE = 7
MAX_NEW = 150  # the writer stops creating after this many, so the scan always reaches the end
PROGRESS_WAIT_S = 60.0  # bound on waiting for the writer between pages (a hang guard, not a timing test)


def scan_all(vault: Vault, limit: int = PAGE, **filters: Any) -> list[int]:
    """Follow the cursor to the end; return the ids in the order they came."""
    ids: list[int] = []
    cursor = None
    for _ in range(10_000):
        page = vault.scan(cursor=cursor, limit=limit, **filters)
        assert len(page.items) <= limit
        ids.extend(e.id for e in page.items)
        if not page.has_more:
            assert page.next_cursor is None
            return ids
        assert page.next_cursor
        cursor = page.next_cursor
    raise AssertionError("scan never reached has_more=False")


def seed(vault: Vault, count: int = SEED_COUNT) -> list[int]:
    made = vault.remember_many(
        {"category": "seed", "key": f"k{i:04d}", "content": f"seed memory number {i} about storage engines"}
        for i in range(count)
    )
    return [e.id for e in made]


CHURN_EVERY = 5  # one "churn" entity after every few seeds: the concurrent writer archives them


def seed_with_churn(vault: Vault) -> list[int]:
    """SEED_COUNT seeds with churn entities between them; returns the seeds' ids."""
    items = []
    for i in range(SEED_COUNT):
        items.append(
            {
                "category": "seed",
                "key": f"k{i:04d}",
                "content": f"seed memory number {i} about storage engines",
            }
        )
        if i % CHURN_EVERY == 0:
            items.append(
                {"category": "churn", "key": f"c{i // CHURN_EVERY:04d}", "content": f"churn {i} storage"}
            )
    return [e.id for e in vault.remember_many(items) if e.category == "seed"]


def _cursor_payload(cursor: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return data


def _encode(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


# --- pages -------------------------------------------------------------------------------------


def test_empty_vault_gives_one_empty_final_page(vault: Vault) -> None:
    page = vault.scan()
    assert isinstance(page, ScanPage)
    assert page.items == []
    assert page.has_more is False
    assert page.next_cursor is None


def test_first_page_is_lowest_ids_ascending(vault: Vault) -> None:
    ids = seed(vault, 20)
    page = vault.scan(limit=5)
    assert [e.id for e in page.items] == sorted(ids)[:5]
    assert page.has_more is True
    assert isinstance(page.next_cursor, str) and page.next_cursor


def test_cursor_pages_cover_everything_once_in_order(vault: Vault) -> None:
    ids = seed(vault, 23)
    pages: list[ScanPage] = []
    cursor = None
    while True:
        page = vault.scan(cursor=cursor, limit=5)
        pages.append(page)
        if not page.has_more:
            break
        cursor = page.next_cursor
    assert [len(p.items) for p in pages] == [5, 5, 5, 5, 3]
    assert [p.has_more for p in pages] == [True, True, True, True, False]
    assert pages[-1].next_cursor is None
    seen = [e.id for p in pages for e in p.items]
    assert seen == sorted(ids)


def test_exact_multiple_of_limit_ends_without_an_empty_page(vault: Vault) -> None:
    ids = seed(vault, 10)
    first = vault.scan(limit=5)
    second = vault.scan(cursor=first.next_cursor, limit=5)
    assert first.has_more is True
    assert [e.id for e in second.items] == sorted(ids)[5:]
    assert second.has_more is False and second.next_cursor is None


def test_limit_may_change_between_pages(vault: Vault) -> None:
    ids = seed(vault, 12)
    first = vault.scan(limit=3)
    rest = vault.scan(cursor=first.next_cursor, limit=1000)
    assert [e.id for e in first.items + rest.items] == sorted(ids)
    assert rest.has_more is False


def test_items_are_whole_entities(vault: Vault) -> None:
    made = vault.remember(
        "decision",
        "db",
        "We chose SQLite.",
        summary="sqlite",
        topic_path="architecture/storage",
        body={"ticket": "PV-1"},
        recall_when=["choosing a database"],
    )
    (item,) = vault.scan().items
    assert item.id == made.id
    assert item.content == "We chose SQLite."
    assert item.summary == "sqlite"
    assert item.topic_path == "architecture/storage"
    assert item.body["ticket"] == "PV-1"
    assert item.recall_when == ["choosing a database"]
    assert item.model_dump() == vault.get_entity(made.id).model_dump()


def test_scan_shows_current_version(vault: Vault, clock: Clock) -> None:
    e = vault.remember("fact", "x", "first")
    clock.advance(1000)
    vault.remember("fact", "x", "second")
    (item,) = vault.scan().items
    assert item.id == e.id
    assert item.content == "second"
    assert item.version == 2


def test_no_offset_or_depth_cap(vault: Vault) -> None:
    ids = seed(vault, 2500)
    assert scan_all(vault, limit=1000) == ids
    last = vault.scan(cursor=vault.scan(limit=1000, category="seed").next_cursor, limit=1000, category="seed")
    last = vault.scan(cursor=last.next_cursor, limit=1000, category="seed")
    assert [e.id for e in last.items] == ids[2000:]


# --- filters -----------------------------------------------------------------------------------


@pytest.fixture
def mixed(vault: Vault) -> dict[str, int]:
    """A small store with every filterable attribute varied."""
    rows = {
        "a": dict(
            category="decision", key="a", content="alpha", type="decision", topic_path="architecture/storage"
        ),
        "b": dict(category="decision", key="b", content="beta", type="fact", topic_path="architecture"),
        "c": dict(category="note", key="c", content="gamma", type="fact", topic_path="architectures/other"),
        "d": dict(category="note", key="d", content="delta", type="insight", topic_path="ops/architecture"),
        "e": dict(category="decision", key="e", content="epsilon", agent_id="agent-a", workspace_hash="ws-1"),
        "f": dict(category="decision", key="f", content="zeta", agent_id="agent-a", workspace_hash="ws-2"),
        "g": dict(category="decision", key="g", content="eta", agent_id="agent-b", workspace_hash="ws-1"),
        "h": dict(category="note", key="h", content="theta", topic_path="architecture/storage/sqlite"),
        "z": dict(category="note", key="z", content="archived one", topic_path="architecture"),
    }
    ids = {name: vault.remember(**fields).id for name, fields in rows.items()}
    vault.forget(ids["z"])
    return ids


def _names(ids: dict[str, int], scanned: list[int]) -> list[str]:
    by_id = {v: k for k, v in ids.items()}
    return [by_id[i] for i in scanned]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, "abcdefgh"),
        ({"category": "decision"}, "abefg"),
        ({"category": "nope"}, ""),
        ({"type": "fact"}, "bc"),
        ({"type": "note"}, "efgh"),
        ({"topic_path": "architecture"}, "abh"),
        ({"topic_path": "architecture/"}, "abh"),
        ({"topic_path": "architecture/storage"}, "ah"),
        ({"topic_path": "arch"}, ""),
        ({"topic_path": "architectures"}, "c"),
        ({"agent_id": "agent-a"}, "ef"),
        ({"workspace_hash": "ws-1"}, "eg"),
        ({"agent_id": "agent-a", "workspace_hash": "ws-1"}, "e"),
        ({"agent_id": "agent-c"}, ""),
        ({"include_archived": True}, "abcdefghz"),
        ({"include_archived": True, "category": "note", "topic_path": "architecture"}, "hz"),
    ],
)
def test_filters(vault: Vault, mixed: dict[str, int], filters: dict[str, Any], expected: str) -> None:
    scanned = scan_all(vault, limit=2, **filters)
    assert "".join(_names(mixed, scanned)) == expected
    assert scanned == sorted(scanned)


def test_archived_item_reads_as_archived(vault: Vault, mixed: dict[str, int]) -> None:
    items = {e.id: e for e in vault.scan(include_archived=True).items}
    assert items[mixed["z"]].status == "archived"
    assert items[mixed["a"]].status == "active"


def test_expired_and_not_yet_valid_are_hidden_by_default(vault: Vault, clock: Clock) -> None:
    live = vault.remember("fact", "live", "live")
    expiring = vault.remember("fact", "expiring", "soon gone", expires_at_ms=T0 + 1000)
    future = vault.remember("fact", "future", "not yet", valid_from_ms=T0 + 10 * DAY_MS)
    assert scan_all(vault) == [live.id, expiring.id]
    clock.advance(2000)
    assert scan_all(vault) == [live.id]
    assert expiring.id in scan_all(vault, include_archived=True)
    assert future.id not in scan_all(vault, include_archived=True)
    clock.advance(10 * DAY_MS)
    assert scan_all(vault) == [live.id, future.id]


def test_a_status_keeps_only_the_memories_showing_it(vault: Vault, clock: Clock) -> None:
    live = vault.remember("fact", "live", "live").id
    expiring = vault.remember("fact", "expiring", "soon gone", expires_at_ms=T0 + 1000).id
    gone = vault.remember("fact", "gone", "archived").id
    old, new = vault.remember("fact", "old", "old").id, vault.remember("fact", "new", "new").id
    vault.forget(gone)
    vault.supersede(old, new)
    clock.advance(2000)
    assert scan_all(vault, status="active") == scan_all(vault) == [live, new]
    assert scan_all(vault, status="expired") == [expiring]
    assert scan_all(vault, status="archived") == [gone]
    assert scan_all(vault, status="superseded", include_archived=True) == [old]
    assert scan_all(vault, status="archived", category="nope") == []
    assert [e.status for e in vault.scan(status="expired").items] == ["expired"]
    with pytest.raises(InvalidInput) as err:
        vault.scan(status="deleted")  # type: ignore[typeddict-item]
    assert err.value.field == "status"
    cursor = vault.scan(status="active", limit=1).next_cursor
    with pytest.raises(InvalidInput):  # a cursor belongs to its status, as to its other filters
        vault.scan(cursor=cursor, status="archived")


def test_as_of_scan_sees_the_past(vault: Vault, clock: Clock) -> None:
    old = vault.remember("fact", "old", "version one")
    clock.advance(1000)
    vault.remember("fact", "old", "version two")
    new = vault.remember("fact", "new", "later")
    page = vault.scan(as_of_unix_ms=T0 + 500)
    assert [(e.id, e.content) for e in page.items] == [(old.id, "version one")]
    assert [e.id for e in vault.scan().items] == [old.id, new.id]


def test_filters_hold_across_pages(vault: Vault) -> None:
    wanted = []
    for i in range(30):
        e = vault.remember("even" if i % 2 == 0 else "odd", f"k{i}", f"item {i}")
        if i % 2 == 0:
            wanted.append(e.id)
    assert scan_all(vault, limit=4, category="even") == wanted


# --- read-only ---------------------------------------------------------------------------------


def test_scan_is_read_only(vault: Vault, clock: Clock) -> None:
    ids = seed(vault, 15)
    vault.recall("storage", limit=3)  # some have been retrieved once
    before = {i: vault.get_entity(i) for i in ids}
    clock.advance(DAY_MS)
    for _ in range(3):
        scan_all(vault, limit=4)
    for i in ids:
        after = vault.get_entity(i)
        assert after.retrieval_count == before[i].retrieval_count
        assert after.last_accessed_ms == before[i].last_accessed_ms
        assert after.version == before[i].version
    assert vault.stats().versions == len(ids)


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, -1, 1001, 10**9, "5", 2.0, True, None])
def test_bad_limit_is_refused_naming_limit(vault: Vault, limit: Any) -> None:
    seed(vault, 3)
    with pytest.raises(InvalidInput) as info:
        vault.scan(limit=limit)
    assert info.value.field == "limit"
    assert "limit" in str(info.value)


@pytest.mark.parametrize("limit", [1, 1000])
def test_limit_bounds_are_inclusive(vault: Vault, limit: int) -> None:
    seed(vault, 3)
    assert len(vault.scan(limit=limit).items) == min(limit, 3)


def test_unknown_filter_is_refused(vault: Vault) -> None:
    with pytest.raises(InvalidInput) as info:
        vault.scan(offset=5)
    assert info.value.field == "offset"


def _bad_cursors(good: str) -> dict[str, str]:
    payload = _cursor_payload(good)
    flipped = good[:5] + ("A" if good[5] != "A" else "B") + good[6:]
    return {
        "garbage": "not a cursor!!",
        "non-ascii": "curseur-é",
        "truncated": good[: len(good) // 2],
        "tampered base64": flipped,
        "plain number": "42",
        "json list": _encode([1, 2]),
        "missing after": _encode({k: v for k, v in payload.items() if k != "after"}),
        "negative id": _encode(dict(payload, after=-1)),
        "string id": _encode(dict(payload, after="7")),
        "float id": _encode(dict(payload, after=7.5)),
        "boolean id": _encode(dict(payload, after=True)),
        "huge id": _encode(dict(payload, after=2**64)),
        "other version": _encode(dict(payload, v=99)),
        "forged fingerprint": _encode(dict(payload, f="0" * 16)),
    }


@pytest.mark.parametrize(
    "case",
    [
        "garbage",
        "non-ascii",
        "truncated",
        "tampered base64",
        "plain number",
        "json list",
        "missing after",
        "negative id",
        "string id",
        "float id",
        "boolean id",
        "huge id",
        "other version",
        "forged fingerprint",
    ],
)
def test_bad_cursor_is_refused_naming_cursor(vault: Vault, case: str) -> None:
    seed(vault, 10)
    good = vault.scan(limit=3).next_cursor
    assert good is not None
    before = vault.stats()
    with pytest.raises(InvalidInput) as info:
        vault.scan(cursor=_bad_cursors(good)[case], limit=3)
    assert info.value.field == "cursor"
    assert vault.stats() == before


@pytest.mark.parametrize(
    "other",
    [
        {"category": "seed"},
        {"type": "note"},
        {"topic_path": "a"},
        {"agent_id": "agent-a"},
        {"workspace_hash": "ws-1"},
        {"include_archived": True},
        {"as_of_unix_ms": T0},
    ],
)
def test_cursor_from_other_filters_is_refused(vault: Vault, other: dict[str, Any]) -> None:
    seed(vault, 10)
    cursor = vault.scan(limit=3).next_cursor
    with pytest.raises(InvalidInput) as info:
        vault.scan(cursor=cursor, limit=3, **other)
    assert info.value.field == "cursor"


def test_cursor_issued_under_filters_is_refused_without_them(vault: Vault) -> None:
    seed(vault, 10)
    cursor = vault.scan(limit=3, category="seed").next_cursor
    assert vault.scan(cursor=cursor, limit=3, category="seed").items  # fine with the same filters
    with pytest.raises(InvalidInput) as info:
        vault.scan(cursor=cursor, limit=3)
    assert info.value.field == "cursor"


def test_cursor_is_portable_between_vault_handles(vault: Vault, vault_path: str | Path, clock: Clock) -> None:
    ids = seed(vault, 10)
    first = vault.scan(limit=4)
    with Vault(vault_path, clock=clock) as other:
        rest = scan_all_from(other, first.next_cursor, limit=4)
    assert [e.id for e in first.items] + rest == ids


def scan_all_from(vault: Vault, cursor: str | None, limit: int) -> list[int]:
    ids: list[int] = []
    while True:
        page = vault.scan(cursor=cursor, limit=limit)
        ids.extend(e.id for e in page.items)
        if not page.has_more:
            return ids
        cursor = page.next_cursor


# --- changes between pages (deterministic) -----------------------------------------------------


def test_changes_between_pages_never_duplicate_or_skip(vault: Vault, clock: Clock) -> None:
    ids = seed(vault, 20)
    first = vault.scan(limit=5)
    seen = [e.id for e in first.items]
    clock.advance(1000)
    vault.remember("seed", "k0001", "updated after being scanned")  # behind the cursor
    vault.remember("seed", "k0010", "updated before being scanned")  # ahead of the cursor
    vault.forget(ids[2])  # behind the cursor: already returned, shifts nothing
    vault.forget(ids[15])  # ahead of the cursor: no longer visible
    added = vault.remember("late", "new", "created mid-scan")
    rest = scan_all_from(vault, first.next_cursor, limit=5)
    seen += rest
    assert seen == [i for i in ids if i != ids[15]] + [added.id]
    assert len(set(seen)) == len(seen)
    contents = {e.id: e.content for e in vault.scan(limit=1000).items}
    assert contents[ids[10]] == "updated before being scanned"


# --- exactly once under a concurrent writer ----------------------------------------------------


def _writer_loop(
    vault: Vault, should_stop: Callable[[], bool], tick: Callable[[], None], seed_count: int
) -> None:
    """Remember new entities, update existing ones with new content, archive churn entities (which
    shifts every later entity's position, so offset paging would skip some) and recall, until told to stop."""
    rng = random.Random(7)
    churn = [e.id for e in vault.scan(category="churn", limit=1000).items]
    rng.shuffle(churn)
    made = 0
    round_ = 0
    while not should_stop():
        round_ += 1
        if made < MAX_NEW:
            vault.remember("live", f"new-{made}", f"fresh memory {made} about storage engines")
            made += 1
            tick()
        if churn:
            vault.forget(churn.pop())
            tick()
        i = rng.randrange(seed_count)
        vault.remember(
            "seed", f"k{i:04d}", f"seed memory {i} rewritten in round {round_} about storage engines"
        )
        tick()
        vault.recall("storage engines", limit=20)
        tick()


def _writer_process(
    path: str, now_ms: int, seed_count: int, started: Any, stop: Any, ops: Any, errors: Any
) -> None:
    """Entry point of the spawned writer: its own Vault on the same file."""

    def tick() -> None:
        with ops.get_lock():
            ops.value += 1

    try:
        with Vault(path, clock=lambda: now_ms) as vault:
            started.set()
            _writer_loop(vault, stop.is_set, tick, seed_count)
    except BaseException:
        errors.put(traceback.format_exc())
        started.set()
        raise


def _interleaved_scan(vault: Vault, progress: Callable[[], int], alive: Callable[[], bool]) -> list[int]:
    """Scan page by page, letting the writer commit at least one more operation before each page."""
    ids: list[int] = []
    cursor = None
    for _ in range(5_000):
        mark = progress()
        give_up = time.monotonic() + PROGRESS_WAIT_S
        while progress() == mark:
            assert alive(), "the writer stopped while the scan was running"
            assert time.monotonic() < give_up, "the writer made no progress (hang guard)"
            time.sleep(0.001)
        page = vault.scan(cursor=cursor, limit=PAGE)
        ids.extend(e.id for e in page.items)
        if not page.has_more:
            return ids
        cursor = page.next_cursor
    raise AssertionError("scan never reached has_more=False")


def _assert_exactly_once(scanned: list[int], preexisting: list[int], final: list[int]) -> None:
    assert len(scanned) == len(set(scanned)), "an id came back twice"
    assert scanned == sorted(scanned), "ids did not ascend"
    missing = set(preexisting) - set(scanned)  # churn entities may or may not come back, at most once
    assert not missing, f"{len(missing)} pre-existing entities were skipped"
    assert set(scanned) <= set(final), "scan returned an id that never existed"


@pytest.mark.slow
def test_exactly_once_with_a_writer_process(db_path: Path, clock: Clock) -> None:
    with Vault(db_path, clock=clock) as vault:
        preexisting = seed_with_churn(vault)
        ctx = multiprocessing.get_context("spawn")
        started, stop, ops, errors = ctx.Event(), ctx.Event(), ctx.Value("i", 0), ctx.Queue()
        writer = ctx.Process(
            target=_writer_process,
            args=(str(db_path), clock.now, SEED_COUNT, started, stop, ops, errors),
            daemon=True,
        )
        writer.start()
        try:
            assert started.wait(PROGRESS_WAIT_S), "writer process did not start"
            assert errors.empty(), errors.get()
            scanned = _interleaved_scan(vault, lambda: ops.value, writer.is_alive)
            ops_during_scan = ops.value
        finally:
            stop.set()
            writer.join(PROGRESS_WAIT_S)
            if writer.is_alive():
                writer.kill()
                writer.join()
        assert errors.empty(), errors.get()
        assert writer.exitcode == 0
        assert ops_during_scan >= len(scanned) // PAGE  # the writer really ran between pages
        final = scan_all(vault, limit=1000, include_archived=True)
        _assert_exactly_once(scanned, preexisting, final)
        rewritten = [e for e in vault.scan(category="seed", limit=1000).items if e.version > 1]
        assert rewritten, "the writer updated nothing"
        assert vault.scan(category="live", limit=1000).items, "the writer created nothing"
        assert len(vault.scan(category="churn", limit=1000).items) < SEED_COUNT // CHURN_EVERY, (
            "nothing archived"
        )
        assert vault.check().ok


@pytest.mark.slow
def test_exactly_once_with_a_writer_thread(vault: Vault) -> None:
    preexisting = seed_with_churn(vault)
    stop = threading.Event()
    lock = threading.Lock()
    count = [0]
    failures: list[str] = []

    def tick() -> None:
        with lock:
            count[0] += 1

    def run() -> None:
        try:
            _writer_loop(vault, stop.is_set, tick, SEED_COUNT)
        except BaseException:
            failures.append(traceback.format_exc())

    writer = threading.Thread(target=run, daemon=True)
    writer.start()
    try:
        scanned = _interleaved_scan(vault, lambda: count[0], writer.is_alive)
    finally:
        stop.set()
        writer.join(PROGRESS_WAIT_S)
    assert not writer.is_alive()
    assert not failures, failures[0]
    final = scan_all(vault, limit=1000, include_archived=True)
    _assert_exactly_once(scanned, preexisting, final)
    assert vault.scan(category="live", limit=1000).items
    assert len(vault.scan(category="churn", limit=1000).items) < SEED_COUNT // CHURN_EVERY
    assert any(e.version > 1 for e in vault.scan(category="seed", limit=1000).items)
