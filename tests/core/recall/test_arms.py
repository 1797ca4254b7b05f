"""Which index answers each arm (recall/arms.py): the in-memory index when it can vouch for the snapshot and
covers the view, else the backend's search, with the same hits; the view's rules applied to an index's
ranking, deeper when a pruned ranking falls short."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import Filters
from perseus_vault_core.indexes.keyword import KeywordIndex
from perseus_vault_core.indexes.vector import VectorIndex
from perseus_vault_core.primitives.dialect import dialect
from perseus_vault_core.primitives.filters import narrow, view
from perseus_vault_core.primitives.hits import Ranking
from perseus_vault_core.recall.arms import Arms

from ...conftest import Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends  # the contract suite: SQLite and PostgreSQL (tests/conftest.py)


class _Mirror:
    """A stand-in keyword index: it ranks with the rankings it was given, in turn, then cannot vouch for the
    snapshot (None); it records the depth each search asked for."""

    def __init__(self, *rankings: Ranking) -> None:
        self.rankings = list(rankings)
        self.depths: list[int | None] = []

    def search(
        self,
        conn: Any,
        stems: Any,
        agent_id: Any = None,
        workspace_hash: Any = None,
        depth: int | None = None,
    ) -> Ranking | None:
        self.depths.append(depth)
        return self.rankings.pop(0) if self.rankings else None


def _billing(vault: Vault, clock: Clock) -> list[int]:
    """Six billing notes, the even ones archived; their entity ids."""
    ids = []
    for i in range(6):
        ids.append(vault.remember("note", f"k{i}", f"billing ledger note {i}").id)
        clock.advance(10)
    for i in ids[::2]:
        vault.forget(i)
    return ids


def _found(result: tuple[list[Any], float]) -> tuple[list[tuple[int, int, float]], float]:
    hits, top = result
    return [(h.entity_id, h.vid, h.score) for h in hits], top


def test_the_backend_answers_when_the_index_cannot_or_may_not(vault: Vault, clock: Clock) -> None:
    ids = _billing(vault, clock)
    backend, conn = vault.engine.backend, vault.engine.conn()
    mirror = _Mirror()
    arms = Arms(backend, keyword_index=cast(KeywordIndex, mirror))
    v = view(Filters(), clock.now)
    with backend.read_snapshot(conn):
        expected = _found(backend.keyword.search(conn, ["billing", "ledger"], v, 1000))
        assert expected[0]
        assert _found(arms.keyword(conn, ["billing", "ledger"], ["bill", "ledger"], v, 1000)) == expected
        assert mirror.depths == [2 * 1000 + 64]  # asked, could not vouch: SQL answered
        history = view(Filters(as_of_unix_ms=clock.now), clock.now)
        listed = narrow(v, ids[:3], dialect(conn))
        for words, stems, at in (
            (["billing"], ["bill"], history),
            (["café"], ["cafe"], v),
            (["billing"], ["bill"], listed),
        ):
            assert _found(arms.keyword(conn, words, stems, at, 10)) == _found(
                backend.keyword.search(conn, words, at, 10)
            )
        assert arms.keyword(conn, [], [], v, 10) == ([], 0.0)
    assert mirror.depths == [
        2 * 1000 + 64
    ]  # a point in time, non-ASCII words, a list of ids, no words: never asked


def test_an_index_ranks_and_the_view_filters_deeper_when_a_pruned_ranking_falls_short(
    vault: Vault, clock: Clock
) -> None:
    ids = _billing(vault, clock)
    backend, conn = vault.engine.backend, vault.engine.conn()
    heads = dict(
        conn.execute("SELECT entity_id, vid FROM entity_versions WHERE recorded_to_ms IS NULL").fetchall()
    )
    eids = np.array(ids, dtype=np.int64)
    vids = np.array([heads[e] for e in ids], dtype=np.int64)
    scores = np.linspace(6.0, 1.0, 6)  # the first best: the archived ones sit first, third and fifth
    pruned = Ranking(vids, eids, scores, ceiling=7.5, exact=2)  # only the best two in order
    mirror = _Mirror(pruned, Ranking(vids, eids, scores, ceiling=7.5))
    arms = Arms(backend, keyword_index=cast(KeywordIndex, mirror))
    with backend.read_snapshot(conn):
        hits, top = arms.keyword(conn, ["billing"], ["bill"], view(Filters(), clock.now), 2)
    assert [h.entity_id for h in hits] == [ids[1], ids[3]] and top == 7.5  # the visible ones, best first
    assert mirror.depths == [2 * 2 + 64, None]  # the pruned ranking showed one: every match ranked


class _Vectors:
    """A stand-in vector index: its answers, or None where it cannot vouch for the snapshot."""

    def __init__(self, cosines: dict[int, float] | None, found: tuple[Ranking, bool] | None) -> None:
        self.answers, self.found = cosines, found

    def cosines(self, conn: Any, vids: Any, query: Any) -> dict[int, float] | None:
        return self.answers

    def search(
        self,
        conn: Any,
        query: Any,
        depth: int,
        agent_id: Any = None,
        workspace_hash: Any = None,
        keep: Any = None,
    ) -> tuple[Ranking, bool] | None:
        return self.found


def test_dense_candidates_and_cosines_come_from_the_vector_index_when_it_can_answer(
    dense_vault: Vault, clock: Clock, fake_embedder: FakeEmbedder
) -> None:
    ids = _billing(dense_vault, clock)
    backend, conn = dense_vault.engine.backend, dense_vault.engine.conn()
    query = fake_embedder.embed(["billing ledger"])[0]
    now, then = view(Filters(), clock.now), view(Filters(as_of_unix_ms=clock.now), clock.now)
    with backend.read_snapshot(conn):
        vids = [
            vid for (vid,) in conn.execute("SELECT vid FROM entity_versions WHERE recorded_to_ms IS NULL")
        ]
        stored = backend.vectors.cosines(conn, vids, query)
        assert len(stored) == len(ids)
        sql = backend.vectors.candidates(conn, query, 10, None, None, 10)
        own = (Ranking(np.array(vids[:1]), np.array(ids[:1]), np.ones(1, dtype=np.float32)), True)
        held = Arms(backend, vector_index=cast(VectorIndex, _Vectors({vids[0]: 0.5}, own)))
        assert held.cosines(conn, vids, query, now) == {vids[0]: 0.5}
        assert (
            held.cosines(conn, vids, query, then) == stored
        )  # a point in time: the versions may be no heads
        assert held.dense(conn, query, 10, None, None, 10) is own
        behind = Arms(backend, vector_index=cast(VectorIndex, _Vectors(None, None)))
        assert behind.cosines(conn, vids, query, now) == stored
        answer, complete = behind.dense(conn, query, 10, None, None, 10)
        assert (answer.vids.tolist(), answer.scores.tolist(), complete) == (
            sql[0].vids.tolist(),
            sql[0].scores.tolist(),
            sql[1],
        )
