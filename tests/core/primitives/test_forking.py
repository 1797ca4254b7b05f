"""forking.py: a child forked while the engine's background threads run never hangs."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.indexes import keyword, mirror
from perseus_vault_core.primitives.forking import GATE, Gate

from ...conftest import FakeEmbedder

FORK = multiprocessing.get_context("fork")


def test_a_fork_waits_for_the_task_inside_to_reach_a_checkpoint() -> None:
    gate = Gate()
    log: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def task() -> None:
        with gate.inside():
            entered.set()
            release.wait(10)
            log.append("task at checkpoint")
            gate.checkpoint()  # the fork happens here
            log.append("task resumed")

    worker = threading.Thread(target=task)
    worker.start()
    entered.wait(10)
    forking = threading.Thread(
        target=lambda: (gate._before_fork(), log.append("forked"), gate._after_fork_in_parent())
    )
    forking.start()
    time.sleep(0.05)
    assert log == []  # the fork waits while the task is between checkpoints
    release.set()
    forking.join(10)
    worker.join(10)
    assert log == ["task at checkpoint", "forked", "task resumed"]
    assert gate.busy == 0


def test_a_task_that_forks_does_not_wait_for_itself_and_outsiders_never_pause() -> None:
    gate = Gate()
    gate.checkpoint()  # outside the gate: a no-op
    with gate.inside():
        with gate.inside():  # re-entrant on one thread
            assert gate.busy == 1
        gate._before_fork()  # returns at once: the only task inside is the caller
        gate._after_fork_in_parent()
    assert gate.busy == 0


def _slow_index(self: Any, slot: int, values: Any) -> None:
    time.sleep(0.0005)
    _ORIGINAL_INDEX(self, slot, values)


_ORIGINAL_INDEX = keyword.KeywordIndex._index


def _in_child(path: str, inherited: Vault, out: Any) -> None:
    with Vault(path, embedder=FakeEmbedder()) as fresh:  # a new vault on the same file
        new = len(fresh.recall("ledger", mode="hybrid", limit=5).items)
    old = len(inherited.recall("ledger", mode="hybrid", limit=5).items)  # the vault the parent opened
    out.put((new, old, inherited.engine.keyword_index.ready, id(inherited.engine.conn())))


def test_a_child_forked_mid_build_recalls_on_a_new_and_on_the_inherited_vault(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keyword.KeywordIndex, "_index", _slow_index)  # a build that lasts seconds
    monkeypatch.setattr(mirror, "CHECKPOINT_ROWS", 16)
    with Vault(db_path, embedder=FakeEmbedder()) as vault:
        vault.remember_many(
            [
                {"category": "note", "key": f"n{i}", "content": f"ledger entry {i} for billing"}
                for i in range(3000)
            ]
        )
        assert vault.recall("ledger", mode="hybrid").items  # starts both background builds
        deadline = time.monotonic() + 10
        while GATE.busy == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert GATE.busy > 0 and not vault.engine.keyword_index.ready  # the build is running now
        out = FORK.Queue()
        child = FORK.Process(target=_in_child, args=(str(db_path), vault, out))
        child.start()
        child.join(60)
        assert child.exitcode == 0, "the child hung or failed"
        new, old, ready, conn = out.get(timeout=5)
        assert (new, old, ready) == (5, 5, False)  # the child's copy of the mirror starts over
        assert conn != id(vault.engine.conn())  # on a connection of its own, never the parent's
        assert vault.wait_for_keyword_index(60)  # and the parent's build went on
        assert len(vault.recall("ledger", mode="hybrid", limit=5).items) == 5


def test_curation_s_relations_are_read_inside_the_gate(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relations curation acts on are read on a background thread (engine.warm_relations): inside the gate,
    like the index builds, so a fork never copies that thread inside SQLite (a child forked then crashed when it
    collected the half-read connection it inherited)."""
    from perseus_vault_core.recall.kept_relations import KeptRelations

    seen: list[int] = []
    original = KeptRelations.load

    def load(self: Any, conn: Any, check: Any = lambda: None) -> None:
        seen.append(GATE.busy)
        original(self, conn, check)

    monkeypatch.setattr(KeptRelations, "load", load)
    with Vault(db_path, embedder=FakeEmbedder()) as vault:
        vault.remember("note", "a", "ledger entry for billing")
        assert vault.recall("ledger", mode="fts5").items  # curated: starts the load
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
    assert seen and seen[0] >= 1
