"""The relations curation acts on, held in memory for an open vault (perseus_vault_core/recall/kept_relations.py),
are what the file holds whatever was written since and by whom: links opened, re-weighted, unlinked, closed by
a new version or by someone's word over an inferred one, purged with their memory, a closing stamped before an
earlier one (a clock stepped back), seen by the handle that wrote and by another on the same store, whether
what is held was read as recalls met it or loaded whole."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perseus_vault_core import Vault
from perseus_vault_core.contract.errors import VaultError
from perseus_vault_core.recall.curated import KEPT, current, kept
from perseus_vault_core.recall.curated import _read as curated_read
from perseus_vault_core.recall.kept_relations import RECOUNT_S, KeptRelations

from ...conftest import Clock

pytestmark = pytest.mark.both_backends
MEMORIES = 6


class Monotonic:
    """The recount's clock, stepped by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _open(where: str | Path, clock: Clock) -> tuple[Vault, Monotonic]:
    vault = Vault(where, clock=clock, embedder=False)
    ticks = Monotonic()
    backend = vault.engine.backend
    vault.engine.relations = KeptRelations(
        KEPT, lambda c: backend.next_id(c, "links") - 1, backend.changes, clock=ticks
    )
    return vault, ticks


def _agree(vault: Vault, ids: list[int]) -> None:
    for chosen in (ids, ids[::2], ids[1:4]):
        with vault.engine.reading() as conn:  # one snapshot, as a recall reads
            held = vault.engine.relations.among(conn, chosen)
            assert held is not None
            assert held == kept(conn, chosen)


SIMILAR = [
    f"memory {i} about the service" for i in range(MEMORIES)
]  # each write infers relations to the others
DISTINCT = [
    "Deploys run on Tuesdays.",
    "Alice owns billing.",
    "Staging runs Postgres 15.",
    "Lunch is at noon.",
    "The VPN needs a hardware key.",
    "Invoices go out monthly.",
]


def _memories(vault: Vault, texts: list[str] = SIMILAR) -> list[int]:
    return [vault.remember(category="fact", key=f"k{i}", content=text).id for i, text in enumerate(texts)]


OP = st.tuples(
    st.sampled_from(["link", "unlink", "update", "purge", "step back", "load"]),
    st.integers(0, MEMORIES - 1),
    st.integers(0, MEMORIES - 1),
    st.sampled_from([*KEPT, "related"]),
    st.sampled_from(["inferred", "judge", None]),
    st.sampled_from([1.0, 0.5]),
    st.booleans(),  # both handles look (a recall) after it: else the next changes pile up unseen
)


@settings(max_examples=30, deadline=None)
@given(ops=st.lists(OP, max_size=25))
def test_held_relations_are_the_file_s_after_any_writes(
    ops: list[tuple[str, int, int, str, str | None, float, bool]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock()
        writer, writer_ticks = _open(Path(tmp) / "v.db", clock)
        reader, reader_ticks = _open(Path(tmp) / "v.db", clock)
        ids = _memories(writer)
        live = list(ids)  # a purged memory is never met again: what is held of it is never asked for
        _agree(writer, live)
        _agree(reader, live)
        for op, a, b, relation, source, weight, look in ops:
            clock.advance(1_000)
            try:
                if op == "link" and a != b:
                    writer.link(ids[a], ids[b], relation, weight, source=source)
                elif op == "unlink":
                    writer.unlink(ids[a], ids[b])
                elif op == "update":
                    writer.remember(
                        category="fact", key=f"k{a}", content=f"memory {a} changed at {clock.now}"
                    )
                elif op == "purge":
                    writer.forget(ids[a])
                    writer.purge(ids[a])
                    live.remove(ids[a])
                elif op == "load":  # every relation read at once: a memory not held then has none
                    handle = (writer, reader)[a % 2]
                    with handle.engine.reading() as conn:
                        handle.engine.relations.load(conn)
                elif (
                    op == "step back"
                ):  # an unlink stamped before the latest closing seen: a recount finds it
                    clock.advance(-60_000)
                    try:
                        writer.unlink(ids[a], ids[b])
                    finally:
                        clock.advance(60_000)
                    writer_ticks.now += RECOUNT_S
                    reader_ticks.now += RECOUNT_S
            except VaultError:  # a purged memory, a link to itself: refused, nothing changed
                pass
            if look:
                _agree(writer, live)
                _agree(reader, live)
        _agree(writer, live)
        _agree(reader, live)
        writer.close()
        reader.close()


def test_what_another_handle_writes_is_seen_at_its_next_recall(vault_path: str | Path, clock: Clock) -> None:
    writer, _ = _open(vault_path, clock)
    reader, _ = _open(vault_path, clock)
    try:
        ids = _memories(writer, DISTINCT)
        _agree(reader, ids)  # held: nothing linked yet
        writer.link(ids[1], ids[0], "updates", source="inferred")
        writer.link(ids[3], ids[2], "same_subject", source="inferred")
        writer.link(ids[4], ids[5], "related", source="inferred")  # not a relation curation acts on
        conn = reader.engine.conn()
        assert reader.engine.relations.among(conn, ids) == [
            (ids[1], ids[0], "updates", "inferred"),
            (ids[3], ids[2], "same_subject", "inferred"),
        ]
        clock.advance(1_000)
        writer.remember(
            category="fact", key="k1", content="memory 1, a new version"
        )  # closes its inferred links
        writer.unlink(ids[3], ids[2])
        assert reader.engine.relations.among(conn, ids) == []
        _agree(writer, ids)
    finally:
        writer.close()
        reader.close()


def test_a_load_holds_every_relation_and_changes_after_it_are_seen(
    vault_path: str | Path, clock: Clock
) -> None:
    writer, _ = _open(vault_path, clock)
    reader, _ = _open(vault_path, clock)
    try:
        ids = _memories(writer)  # similar memories: each write inferred relations to the ones before it
        held = reader.engine.relations
        with reader.engine.reading() as conn:
            held.load(conn)
        assert held.complete and not held.loading
        _agree(reader, ids)
        clock.advance(1_000)
        writer.remember(category="fact", key="k2", content="memory 2, a new version")
        writer.link(ids[5], ids[0], "duplicates", source="judge")
        writer.unlink(ids[4], ids[3])
        fresh = writer.remember(category="fact", key="k9", content="memory 9 about the service").id
        _agree(reader, [*ids, fresh])
        assert held.complete  # changes touched some memories, read again when met; the rest stays held
    finally:
        writer.close()
        reader.close()


def test_a_curated_recall_loads_them_in_the_background(
    vault_path: str | Path, clock: Clock, backend: str
) -> None:
    with Vault(vault_path, clock=clock, embedder=False) as vault:
        _memories(vault)
        held = vault.engine.relations
        if backend == "postgres":  # the server answers a window's links in one round trip: nothing is held
            assert held is None and vault.recall("memory about the service").items
            return
        assert held is not None
        vault.recall("memory about the service", curate=False)
        assert not held.complete and not held.loading  # asked not to curate: nothing read
        vault.recall("memory about the service")
        deadline = time.monotonic() + 30
        while not held.complete and time.monotonic() < deadline:
            time.sleep(0.01)
        assert held.complete


def test_a_load_holds_the_linked_memories_versions_so_a_first_window_reads_no_text(
    vault_path: str | Path, clock: Clock
) -> None:
    """What curation needs of each linked memory's current version is read with the links, so a window met for
    the first time reads nothing from the file; what it holds is what the file gives (curated.py's read)."""
    with Vault(vault_path, clock=clock, embedder=False) as vault:
        ids = _memories(vault)
        backend = vault.engine.backend
        held = KeptRelations(
            KEPT, lambda c: backend.next_id(c, "links") - 1, backend.changes, current=current
        )
        with vault.engine.reading() as conn:
            held.load(conn)
            vids = {
                int(e): int(v)
                for e, v in conn.execute(
                    "SELECT entity_id, vid FROM entity_versions WHERE recorded_to_ms IS NULL"
                )
            }
            linked = sorted({end for row in held.among(conn, ids) or [] for end in row[:2]})
            assert linked  # similar memories: each write inferred relations to the ones before it

            def unread(missing: list[int]) -> dict[int, object]:
                raise AssertionError(f"read again: {missing}")

            found = held.versions([vids[i] for i in linked], unread)
            assert found == curated_read(conn, [vids[i] for i in linked])
            assert {fact[0] for fact in found.values()} == set(linked)


def test_a_load_after_unseen_closings_still_sees_the_next_one(vault_path: str | Path, clock: Clock) -> None:
    """A load taken after closings the holder had not seen counts its stamp from its own latest closing, so a
    closing after the load (here one that would leave a stamp counted from the earlier closing unchanged) is
    seen at the next look."""
    writer, _ = _open(vault_path, clock)
    reader, _ = _open(vault_path, clock)
    try:
        a, b, c, d, e = _memories(writer, DISTINCT[:5])
        writer.link(a, b, "duplicates")
        clock.advance(1_000)
        writer.unlink(a, b)  # the closing the reader sees first
        writer.link(c, d, "duplicates")
        writer.link(a, e, "duplicates")
        _agree(reader, [a, b, c, d, e])
        clock.advance(1_000)
        writer.unlink(c, d)  # unseen by the reader before its load
        with reader.engine.reading() as conn:
            reader.engine.relations.load(conn)
        clock.advance(1_000)
        writer.unlink(a, e)
        _agree(reader, [a, b, c, d, e])
    finally:
        writer.close()
        reader.close()


def test_what_is_read_again_after_a_recount_follows_later_changes(
    vault_path: str | Path, clock: Clock
) -> None:
    """A recount that forgets everything (an unlink stamped before the latest closing seen) starts again from
    the snapshot it forgot in, so a change after it is seen."""
    writer, _ = _open(vault_path, clock)
    reader, ticks = _open(vault_path, clock)
    try:
        ids = _memories(writer, DISTINCT)
        writer.link(ids[0], ids[1], "duplicates")
        writer.link(ids[2], ids[3], "updates")
        writer.link(ids[4], ids[5], "same_subject")
        clock.advance(10_000)
        writer.unlink(ids[4], ids[5])
        _agree(reader, ids)
        clock.advance(-60_000)
        writer.unlink(ids[0], ids[1])  # stamped before the latest closing: only a recount finds it
        clock.advance(60_000)
        ticks.now += RECOUNT_S
        _agree(reader, ids)  # the recount forgets; what this look reads is current
        clock.advance(1_000)
        writer.unlink(ids[2], ids[3])
        _agree(reader, ids)
    finally:
        writer.close()
        reader.close()
