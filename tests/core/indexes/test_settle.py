"""indexes/settle.py: a process that wrote leaves the saved indexes current when it closes its vault, so
that the next process's first recall opens them instead of answering by SQL or building."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.indexes import settle, snapshot
from perseus_vault_core.indexes.mirror import SAVE_AFTER

from ...conftest import Clock, FakeEmbedder

ROOT = Path(__file__).resolve().parents[3]
WORDS = [
    "billing",
    "ledger",
    "deploy",
    "tuesday",
    "incident",
    "pager",
    "postgres",
    "decision",
    "queue",
    "invoice",
]
QUERIES = ["billing ledger", "deploy tuesday", "incident pager", "postgres decision", "queue invoice"]


def records(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "category": "note",
            "key": f"n{i}",
            "content": f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]} note {i} about {WORDS[(i * 3) % 10]}",
        }
        for i in range(start, start + n)
    ]


def answers(vault: Vault, mode: str) -> list[list[tuple[int, float]]]:
    return [
        [(i.id, round(i.score, 9)) for i in vault.recall(q, mode=mode, limit=10, reinforce=False).items]
        for q in QUERIES
    ]


def saved(path: Path) -> dict[str, tuple[int, int] | None]:
    return {name: snapshot.peek(f"{path}-{name}.pvidx") for name in ("keyword-index", "vector-index")}


def position(path: Path) -> int:
    """The end of the vault's change log."""
    with Vault(path, embedder=False, keyword_index=False, vector_index=False) as vault:
        end: int = vault.engine.read(vault.engine.backend.changes.position)
    return end


# A writer in a process of its own, which imports and exits (no recall, so it never built an index).
WRITER = """
import json, sys
from perseus_vault_core import Vault
from tests.conftest import FakeEmbedder
path, lines = sys.argv[1], sys.stdin.read().splitlines()
with Vault(path, embedder=FakeEmbedder()) as vault:
    for start in range(0, len(lines), 500):  # in batches, as a large file is fed: settled once, at close
        vault.import_jsonl(lines[start:start + 500])
print(json.dumps([[s.name, s.how] for s in vault.engine.settled]))
"""


def write_in_a_process(path: Path, lines: list[dict[str, Any]]) -> list[list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", WRITER, str(path)],
        input="\n".join(map(json.dumps, lines)),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result: list[list[str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_new_process_after_a_writer_exited_answers_from_the_saved_indexes_as_the_sql_path_does(
    db_path: Path,
) -> None:
    n = settle.MIN_HEADS + 200
    assert write_in_a_process(db_path, records(n)) == [["keyword-index", "built"], ["vector-index", "built"]]
    assert saved(db_path) == {"keyword-index": (position(db_path), n), "vector-index": (position(db_path), n)}
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder, keyword_index=False, vector_index=False) as sql_only:
        expected = {mode: answers(sql_only, mode) for mode in ("fts5", "dense", "hybrid")}
    with Vault(
        db_path, embedder=embedder, keyword_index="saved", vector_index="saved"
    ) as one_shot:  # as the CLI opens it
        assert {mode: answers(one_shot, mode) for mode in ("fts5", "dense", "hybrid")} == expected
        stats = one_shot.stats()
        assert stats.keyword_index.endswith("from a snapshot)") and stats.vector_index.endswith(
            "from a snapshot)"
        )
        assert one_shot.engine.keyword_index is not None and not one_shot.engine.keyword_index._building


def test_a_write_near_the_saved_position_costs_nothing_and_a_far_one_is_replayed(
    db_path: Path, clock: Clock
) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder, clock=clock) as vault:
        vault.remember_many(records(settle.MIN_HEADS))
    first = saved(db_path)
    assert first["keyword-index"] is not None and first["vector-index"] is not None
    with Vault(db_path, embedder=embedder, clock=clock, keyword_index="saved", vector_index="saved") as vault:
        vault.remember("note", "one", "a single billing note")  # the next reader replays an entry or two
    assert [s.how for s in vault.engine.settled] == ["current", "current"]
    assert saved(db_path) == first
    with Vault(db_path, embedder=embedder, clock=clock, keyword_index="saved", vector_index="saved") as vault:
        vault.remember_many(records(SAVE_AFTER, start=settle.MIN_HEADS))  # too many to replay at every start
    # from the saved ones, not built: opened at the close and replayed, or opened by the batch's candidate
    # look-ups before its write and followed to its end
    assert all(s.how in ("replayed", "followed") for s in vault.engine.settled), vault.engine.settled
    end = position(db_path)
    assert saved(db_path) == {
        "keyword-index": (end, settle.MIN_HEADS + 1 + SAVE_AFTER),
        "vector-index": (end, settle.MIN_HEADS + 1 + SAVE_AFTER),
    }
    with Vault(db_path, embedder=embedder, clock=clock, keyword_index=False, vector_index=False) as sql_only:
        expected = answers(sql_only, "fts5")
    with Vault(db_path, embedder=embedder, clock=clock, keyword_index="saved") as vault:
        assert answers(vault, "fts5") == expected


def test_a_process_that_holds_its_index_saves_it_by_following_the_log(db_path: Path) -> None:
    with Vault(db_path, embedder=False) as vault:
        vault.remember_many(records(settle.MIN_HEADS))
        vault.recall("billing")
        assert vault.wait_for_keyword_index(30)
        vault.remember_many(records(2 * SAVE_AFTER, start=settle.MIN_HEADS))
    assert [(s.name, s.how) for s in vault.engine.settled] == [
        ("keyword-index", "followed"),
        ("vector-index", "none"),
    ]
    assert saved(db_path)["keyword-index"] == (position(db_path), settle.MIN_HEADS + 2 * SAVE_AFTER)


def test_small_vaults_readers_small_writes_and_processes_without_indexes_leave_nothing(db_path: Path) -> None:
    with Vault(db_path, embedder=False) as vault:
        vault.remember_many(records(settle.MIN_HEADS - 1))  # the SQL path answers as fast as a snapshot here
    assert [s.how for s in vault.engine.settled] == ["small", "small"]
    with Vault(db_path, embedder=False, keyword_index=False, vector_index=False) as vault:
        vault.remember_many(records(SAVE_AFTER, start=settle.MIN_HEADS))  # asked for no index work at all
    assert vault.engine.settled == []
    with Vault(db_path, embedder=False, keyword_index="saved") as vault:
        vault.recall("billing")  # a reader: nothing to settle
    assert vault.engine.settled == []
    with Vault(db_path, embedder=False, keyword_index="saved", vector_index="saved") as vault:  # as the CLI
        vault.remember(
            "note", "one", "a single billing note"
        )  # none saved, but a build is not worth one write
        vault.forget(1)
        vault.purge(1)
    assert [s.how for s in vault.engine.settled] == ["left", "left"]
    assert saved(db_path) == {"keyword-index": None, "vector-index": None}


def test_a_settle_that_cannot_save_still_closes_the_vault(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot, "write", refuse)
    with Vault(db_path, embedder=False) as vault:
        vault.remember_many(records(settle.MIN_HEADS))
    assert vault.engine.settled[0].how.startswith("failed: ")
    with Vault(db_path, embedder=False) as vault:  # closed whole: the file opens and holds every write
        assert vault.stats().entities == settle.MIN_HEADS


def test_a_migrated_vault_is_left_with_its_indexes_saved(tmp_path: Path) -> None:
    from perseus_vault_core import migrate

    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with Vault(source, embedder=FakeEmbedder(), keyword_index=False, vector_index=False) as vault:
        vault.remember_many(records(settle.MIN_HEADS + 10))
    migrate(source, target)
    assert saved(target) == {
        "keyword-index": (position(target), settle.MIN_HEADS + 10),
        "vector-index": (position(target), settle.MIN_HEADS + 10),
    }
    with Vault(target, embedder=FakeEmbedder(), keyword_index="saved", vector_index="saved") as one_shot:
        answers(one_shot, "dense")
        assert one_shot.stats().vector_index.endswith("from a snapshot)")
