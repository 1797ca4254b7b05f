"""The heads' columns kept in memory (indexes/heads.py) and the current view's rule that reads them
(filters.head_rule): the same visibility as the SQL clause, the same pool columns, the same recall."""

from __future__ import annotations

import itertools
import random
import time
from pathlib import Path

import numpy as np
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.contract.params import RecallParams
from perseus_vault_core.engine.engine import HEADS_AFTER
from perseus_vault_core.indexes.heads import Heads
from perseus_vault_core.primitives.filters import FROM, RULE_COLUMNS, view
from perseus_vault_core.primitives.hits import POOL_COLUMNS

from ...conftest import DAY_MS, Clock, FakeEmbedder

WORDS = "ledger billing deploy canary cache session queue kafka backup restore".split()


def _varied(vault: Vault, clock: Clock, n: int = 120, seed: int = 3) -> None:
    """Memories across scopes, categories, types and topics, some not yet or no longer valid, some
    expiring, some forgotten or updated (so that heads and closed versions both exist)."""
    rng = random.Random(seed)
    now = clock.now
    for i in range(n):
        window = rng.random()
        vault.remember(
            category=rng.choice(["decision", "fact", "note"]),
            key=f"k{i}",
            content=" ".join(rng.choices(WORDS, k=6)),
            type=rng.choice(["note", "decision", "incident"]),
            topic_path=rng.choice([None, "architecture", "architecture/storage", "architecturex", "ops/db"]),
            agent_id=rng.choice([None, "a1", "a2"]),
            workspace_hash=rng.choice([None, "w1"]),
            verified=rng.random() < 0.3,
            certainty=rng.choice([None, 0.2, 0.9]),
            provenance_class=rng.choice([None, "human", "tool"]),
            valid_from_ms=now + DAY_MS if window < 0.1 else now - 2 * DAY_MS if window < 0.5 else None,
            keep_duplicate=True,  # the same six words may come up twice: both are stored
            valid_to_ms=now - 1 if 0.3 <= window < 0.4 else now + DAY_MS if 0.4 <= window < 0.5 else None,
            expires_at_ms=now + 10
            if 0.5 <= window < 0.6
            else now + 10 * DAY_MS
            if 0.6 <= window < 0.7
            else None,
        )
        clock.advance(1)
    heads = vault.scan(limit=1000, include_archived=True).items
    for entity in rng.sample(heads, 15):
        vault.forget(entity.id, agent_id=entity.agent_id, workspace_hash=entity.workspace_hash)
    clock.advance(100)  # some of the expiring ones have expired now
    at = clock.now  # and some start, end or expire at the very instant the views below are judged
    for i, window in enumerate(
        [{"valid_from_ms": at}, {"valid_to_ms": at, "valid_from_ms": at - 5}, {"expires_at_ms": at}]
    ):
        vault.remember(
            category="note", key=f"edge{i}", content=" ".join(WORDS[:3]), keep_duplicate=True, **window
        )  # type: ignore[arg-type]


FILTERS = [
    dict(zip(("include_archived", "agent_id", "workspace_hash", "category", "type", "topic_path"), combo))
    for combo in itertools.product(
        [False, True],
        [None, "a1", ""],
        [None, "w1"],
        [None, "decision"],
        [None, "incident"],
        [None, "architecture", "/architecture/storage/", "ops"],
    )
]


def test_the_rule_sees_exactly_the_heads_the_sql_clause_sees(db_path: Path, clock: Clock) -> None:
    with Vault(db_path, clock=clock, embedder=False) as vault:
        _varied(vault, clock)
        conn = vault.engine.conn()
        heads = {
            row[0]: row[1:]
            for row in conn.execute(
                f"SELECT v.vid, {', '.join(RULE_COLUMNS)} FROM {FROM} WHERE v.recorded_to_ms IS NULL"
            )
        }
        assert len(heads) == 123
        seen_some = 0
        for given in FILTERS:
            v = view(RecallParams(query="x", **given), clock.now)
            assert v.rule is not None
            by_sql = {vid for (vid,) in conn.execute(f"SELECT v.vid FROM {FROM} WHERE {v.where}", v.params)}
            by_rule = {vid for vid, row in heads.items() if v.rule(row)}
            assert by_rule == by_sql, given
            seen_some += bool(by_sql) and len(by_sql) < len(heads)
        assert seen_some > len(FILTERS) // 3  # the filters did cut, in many different ways


def test_views_the_rule_cannot_judge_have_none(clock: Clock) -> None:
    # What they read changes after a version is written (decay), or is not a head (time travel).
    assert view(RecallParams(query="x", min_decay=0.5), clock.now).rule is None
    assert view(RecallParams(query="x", as_of_unix_ms=clock.now - 1), clock.now).rule is None
    assert view(RecallParams(query="x", valid_at_unix_ms=clock.now - 1), clock.now).rule is None


def test_held_columns_are_the_files_and_the_limit_holds(db_path: Path, clock: Clock) -> None:
    with Vault(db_path, clock=clock, embedder=False) as vault:
        _varied(vault, clock, n=60)
        conn = vault.engine.conn()
        vids = [vid for (vid,) in conn.execute("SELECT vid FROM entity_versions ORDER BY vid")]
        sql = f"SELECT v.vid, {', '.join(POOL_COLUMNS + RULE_COLUMNS)} FROM {FROM} WHERE v.vid = ?"
        heads = Heads()
        heads.LIMIT = 40
        for batch in (vids[:30], vids[10:50], vids[::-1], [10**9]):  # the last: a version that does not exist
            for vid, got in zip(batch, heads.rows(conn, batch)):
                row = conn.execute(sql, (vid,)).fetchone()
                if row is None:
                    assert got is None
                else:
                    assert got == (tuple(row[1 : len(POOL_COLUMNS) + 1]), tuple(row[len(POOL_COLUMNS) + 1 :]))
            assert len(heads) <= heads.LIMIT


def test_the_background_pass_holds_every_head(db_path: Path, clock: Clock) -> None:
    with Vault(db_path, clock=clock, embedder=False) as vault:
        _varied(vault, clock, n=80)
        engine = vault.engine
        assert engine.keyword_index is not None
        engine.reset_indexes()  # what remember's look-ups kept (versions updated since): start as a new process
        engine.keyword_index.heads.clear()
        vault.recall("ledger")  # builds the index
        assert vault.wait_for_keyword_index()
        for _ in range(HEADS_AFTER - 2):
            vault.recall("ledger")
        assert (
            not engine.keyword_index.heads.filled and not engine.keyword_index.heads._filling
        )  # a short-lived process
        vault.recall("ledger")  # the HEADS_AFTER-th: a long-running process, the pass starts
        deadline = time.monotonic() + 10
        while not engine.keyword_index.heads.filled and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engine.keyword_index.heads.filled
        count = (
            engine.conn()
            .execute("SELECT count(*) FROM entity_versions WHERE recorded_to_ms IS NULL")
            .fetchone()[0]
        )
        assert len(engine.keyword_index.heads) == count
        assert engine.vector_index is None or engine.vector_index.heads is engine.keyword_index.heads


def _page(vault: Vault, query: str, mode: str, **given: object) -> list[tuple[int, float, dict[str, int]]]:
    result = vault.recall(query, mode=mode, limit=15, reinforce=False, **given)  # type: ignore[arg-type]
    return [(item.id, item.score, item.ranks) for item in result.items]


@pytest.mark.parametrize("mode", ["fts5", "dense", "hybrid"])
def test_recall_from_held_heads_is_recall_by_sql(db_path: Path, clock: Clock, mode: str) -> None:
    """Every filter, every mode: the walk that checks candidates in memory gives the page the walk
    that checks them by SQL gives, score for score."""
    with Vault(db_path, clock=clock, embedder=FakeEmbedder()) as vault:
        _varied(vault, clock)
        assert vault.wait_for_keyword_index() and vault.wait_for_vector_index()
        engine = vault.engine
        shared = engine.keyword_index.heads  # type: ignore[union-attr]
        for given, query in zip(
            FILTERS[::3], itertools.cycle(["ledger billing", "canary deploy", "kafka queue"])
        ):
            held = _page(vault, query, mode, **given)
            assert len(shared) > 0
            for index in (engine.keyword_index, engine.vector_index):
                index.heads = None  # type: ignore[union-attr,assignment]
            try:
                assert held == _page(vault, query, mode, **given), given
            finally:
                for index in (engine.keyword_index, engine.vector_index):
                    index.heads = shared  # type: ignore[union-attr]


def test_the_vector_index_scores_heads_as_the_file_does(db_path: Path, clock: Clock) -> None:
    with Vault(db_path, clock=clock, embedder=FakeEmbedder()) as vault:
        _varied(vault, clock, n=50)
        assert vault.wait_for_vector_index()
        engine = vault.engine
        conn = engine.conn()
        vids = [
            vid for (vid,) in conn.execute("SELECT vid FROM entity_versions WHERE recorded_to_ms IS NULL")
        ]
        query = FakeEmbedder().embed(["ledger billing backup"])[0]
        by_file = engine.backend.vectors.cosines(conn, vids + [10**9], query)
        assert engine.vector_index is not None
        by_index = engine.vector_index.cosines(conn, vids + [10**9], query)
        assert by_index == by_file and len(by_file) == len(vids)  # every score bit for bit
        assert isinstance(next(iter(by_index.values())), float) and not isinstance(
            next(iter(by_index)), np.integer
        )


def test_no_write_changes_a_column_the_memory_holds() -> None:
    """The memory is sound only while nothing rewrites what it holds: every UPDATE in the engine sets
    ``recorded_to_ms`` (closing a version) or the entity's usage counters, and nothing else."""
    import re

    root = Path(__file__).resolve().parents[3] / "perseus_vault_core"
    held = {c.split(".")[1] for c in POOL_COLUMNS + RULE_COLUMNS} | {"agent_id", "workspace_hash", "category"}
    updates = []
    for path in root.rglob("*.py"):
        for match in re.finditer(
            r"UPDATE\s+(entity_versions|entities)\s+SET\s+(.*?)(?:WHERE|\"|$)",
            path.read_text(encoding="utf-8"),
            flags=re.S,
        ):
            columns = set(re.findall(r"(\w+)\s*=", match.group(2)))
            updates.append((path.name, match.group(1), columns))
            assert not columns & held, (path.name, columns & held)
    assert updates  # the pattern finds the engine's updates (closing a version, reinforcement)
