"""indexes/snapshot.py: the in-memory indexes saved beside the vault and opened by the next process."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.indexes import snapshot
from perseus_vault_core.indexes.vocabulary import Vocabulary, pack

from ...conftest import Clock, FakeEmbedder

QUERIES = ["billing ledger", "deploy tuesday", "incident pager", "postgres decision", "ünïcode café"]
WORDS = [
    "billing",
    "ledger",
    "deploy",
    "tuesday",
    "incident",
    "pager",
    "postgres",
    "decision",
    "café",
    "ünïcode",
]


def fill(vault: Vault, n: int, start: int = 0, agent: str | None = None) -> None:
    vault.remember_many(
        [
            {
                "category": "note",
                "key": f"n{i}",
                "agent_id": agent,
                "content": f"{WORDS[i % 10]} {WORDS[(i * 7) % 10]} note {i} about {WORDS[(i * 3) % 10]}",
            }
            for i in range(start, start + n)
        ]
    )


def answers(vault: Vault, mode: str) -> list[list[tuple[int, float]]]:
    return [
        [(i.id, round(i.score, 9)) for i in vault.recall(q, mode=mode, limit=10, reinforce=False).items]
        for q in QUERIES
    ]


def built(path: Path, embedder: Any) -> None:
    """A vault whose indexes were built (and so saved) by a first process."""
    with Vault(path, embedder=embedder) as vault:
        vault.recall("billing", mode="hybrid")
        assert vault.wait_for_keyword_index(30) and vault.wait_for_vector_index(30)


def files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + "-*.pvidx"))


def test_a_new_process_answers_its_first_recall_from_the_snapshot_with_the_same_results(
    db_path: Path,
) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder) as vault:
        fill(vault, 600)
    built(db_path, embedder)
    assert [f.name for f in files(db_path)] == [
        f"{db_path.name}-keyword-index.pvidx",
        f"{db_path.name}-vector-index.pvidx",
    ]
    with Vault(db_path, embedder=embedder, keyword_index=False, vector_index=False) as sql_only:
        expected = {mode: answers(sql_only, mode) for mode in ("fts5", "dense", "hybrid")}
    with Vault(db_path, embedder=embedder) as vault:
        assert answers(vault, "fts5") == expected["fts5"]  # the first recall, with no build
        assert vault.stats().keyword_index.endswith("from a snapshot)")
        assert answers(vault, "dense") == expected["dense"]
        assert vault.stats().vector_index.endswith("from a snapshot)")
        assert answers(vault, "hybrid") == expected["hybrid"]


def test_writes_made_after_the_snapshot_are_replayed_from_the_log(db_path: Path, clock: Clock) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder, clock=clock) as vault:
        fill(vault, 300)
    built(db_path, embedder)
    with Vault(db_path, embedder=embedder, clock=clock, keyword_index=False, vector_index=False) as writer:
        fill(writer, 50, start=300)  # new heads
        writer.forget(1)
        writer.remember("note", "n2", "billing ledger rewritten entirely")  # a new version of an old head
        expected = {mode: answers(writer, mode) for mode in ("fts5", "dense")}
    with Vault(db_path, embedder=embedder, clock=clock) as vault:
        assert answers(vault, "fts5") == expected["fts5"]
        assert answers(vault, "dense") == expected["dense"]
        assert "from a snapshot" in vault.stats().keyword_index


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_damaged_snapshot_is_ignored_and_the_index_is_built(db_path: Path, damage: str) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder) as vault:
        fill(vault, 200)
        expected = answers(vault, "fts5")
    built(db_path, embedder)
    target = files(db_path)[0]
    data = target.read_bytes()
    target.write_bytes(
        {"truncate": data[: len(data) // 2], "garbage": os.urandom(len(data)), "empty": b""}[damage]
    )
    with Vault(db_path, embedder=embedder) as vault:
        assert answers(vault, "fts5") == expected
        assert vault.wait_for_keyword_index(30)
        assert "from a snapshot" not in vault.stats().keyword_index


def test_a_snapshot_of_another_history_of_the_file_is_not_used(tmp_path: Path, clock: Clock) -> None:
    """A vault restored from an older copy and written on since reaches the snapshot's log position
    with other entries: the snapshot's marker tells them apart."""
    embedder = FakeEmbedder()
    path = tmp_path / "v.db"
    with Vault(path, embedder=embedder, clock=clock) as vault:
        fill(vault, 100)
        vault.backup(str(tmp_path / "old.db"))
        fill(vault, 100, start=100)
    built(path, embedder)
    saved = {f.name.replace("v.db", ""): f.read_bytes() for f in files(path)}
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    os.replace(tmp_path / "old.db", path)
    clock.advance(5_000)
    with Vault(path, embedder=embedder, clock=clock) as vault:
        fill(vault, 100, start=500)  # the log reaches the snapshot's position with other entries
    for name, data in saved.items():
        Path(f"{path}{name}").write_bytes(data)
    with Vault(path, embedder=embedder, clock=clock, keyword_index=False, vector_index=False) as sql_only:
        expected = answers(sql_only, "fts5")
    with Vault(path, embedder=embedder, clock=clock) as vault:
        assert answers(vault, "fts5") == expected
        assert "from a snapshot" not in vault.stats().keyword_index
        assert vault.wait_for_keyword_index(30)  # built from the file instead, and saved: the reason stays
        assert "snapshot not used: it belongs to another state of this file" in vault.stats().keyword_index


def test_a_purge_deletes_the_snapshots_and_the_next_ones_do_not_hold_the_purged_memory(db_path: Path) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder) as vault:
        fill(vault, 100)
        # in a batch, which starts no index build (a remember's look-ups would: one built before the write is
        # saved without it, a write behind, and rightly left so)
        secret = vault.remember_many([{"category": "note", "key": "secret", "content": "zanzibar quokka"}])[
            0
        ].id
    built(db_path, embedder)
    assert b"zanzibar" in files(db_path)[0].read_bytes()  # the keyword snapshot holds the vocabulary
    with Vault(db_path, embedder=embedder) as vault:
        vault.recall("zanzibar", mode="hybrid")
        vault.forget(secret)
        vault.purge(secret)
        assert files(db_path) == []
    built(db_path, embedder)  # a new process builds, and saves without it
    keyword_file = files(db_path)[0]
    found = snapshot.load(str(keyword_file))
    assert found is not None
    meta, arrays = found
    indptr, slots = arrays["indptr"], arrays["slots"]
    alive = arrays["alive"][: meta["n"]]
    tid = Vocabulary(arrays["terms"], arrays["term_offsets"], arrays["term_ids"]).get("zanzibar")
    assert tid is None or indptr[tid] == indptr[tid + 1]  # no postings left for the purged memory's words
    assert alive[slots].all()
    vectors = snapshot.load(str(files(db_path)[1]))
    assert vectors is not None
    vmeta, varrays = vectors
    live = varrays["alive"][: vmeta["n"]]
    assert not np.any(varrays["matrix"][: vmeta["n"]][~live])


def test_snapshot_files_take_the_vault_files_mode(db_path: Path) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder) as vault:
        fill(vault, 50)
    os.chmod(db_path, 0o640)
    built(db_path, embedder)
    assert {stat.S_IMODE(f.stat().st_mode) for f in files(db_path)} == {0o640}


def test_an_unwritable_folder_leaves_the_index_in_memory(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> str:
        raise PermissionError("read-only folder")

    monkeypatch.setattr(snapshot, "write", refuse)
    with Vault(db_path, embedder=False) as vault:
        fill(vault, 50)
        expected = answers(vault, "fts5")
        assert vault.wait_for_keyword_index(30)
        assert answers(vault, "fts5") == expected
        assert files(db_path) == []
        assert "not saved: PermissionError: read-only folder" in vault.stats().keyword_index


def test_the_snapshot_is_saved_again_once_far_behind(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perseus_vault_core.indexes import mirror

    monkeypatch.setattr(mirror, "SAVE_AFTER", 20)
    with Vault(db_path, embedder=False) as vault:
        fill(vault, 100)
        vault.recall("billing", mode="fts5")
        assert vault.wait_for_keyword_index(30)
        first = snapshot.load(str(files(db_path)[0]))
        assert first is not None
        fill(vault, 40, start=100)
        vault.recall("billing", mode="fts5")  # catches up with the log, then saves in the background
        index = vault.engine.keyword_index
        assert index is not None
        for _ in range(500):
            if not index._saving and index._saved_seq == index.seq:
                break
            import time

            time.sleep(0.01)
        again = snapshot.load(str(files(db_path)[0]))
        assert again is not None and again[0]["seq"] > first[0]["seq"] and again[0]["n"] == 140


def test_the_vocabulary_finds_every_term_by_binary_search_and_takes_new_ones() -> None:
    terms = {"zeta": 0, "alpha": 1, "café": 2, "b": 3, "ünïcode": 4, "bb": 5}
    packed = pack(list(terms.items()))
    vocabulary = Vocabulary(packed["terms"], packed["term_offsets"], packed["term_ids"])
    assert all(vocabulary.get(term) == tid for term, tid in terms.items())
    assert vocabulary.get("nothing") is None and vocabulary.get("") is None and vocabulary.get("zz") is None
    assert vocabulary.setdefault("alpha", 99) == 1 and vocabulary.setdefault("new", 6) == 6
    assert vocabulary.get("new") == 6 and len(vocabulary) == 7
    assert dict(vocabulary.items()) == {**terms, "new": 6}
    empty = pack([])
    assert Vocabulary(empty["terms"], empty["term_offsets"], empty["term_ids"]).get("a") is None


def test_a_padded_array_is_saved_as_its_zero_padded_copy_would_be(tmp_path: Path) -> None:
    matrix = np.arange(12, dtype=np.float32).reshape(4, 3) + 1
    flags = np.ones(4, dtype=bool)
    direct = snapshot.write(
        str(tmp_path / "a"), {"k": 1}, {"m": snapshot.Padded(matrix, 7), "f": snapshot.Padded(flags, 9)}
    )
    copied = snapshot.write(
        str(tmp_path / "b"),
        {"k": 1},
        {
            "m": np.vstack([matrix, np.zeros((3, 3), np.float32)]),
            "f": np.concatenate([flags, np.zeros(5, bool)]),
        },
    )
    assert Path(direct).read_bytes() == Path(copied).read_bytes()
    snapshot.commit(direct, str(tmp_path / "a"))
    found = snapshot.load(str(tmp_path / "a"))
    assert found is not None
    assert (
        found[1]["m"].shape == (7, 3) and (found[1]["m"][:4] == matrix).all() and not found[1]["m"][4:].any()
    )
    assert found[1]["f"].tolist() == [True] * 4 + [False] * 5


def test_a_purge_by_a_process_without_indexes_deletes_the_saved_ones(db_path: Path) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder) as vault:
        fill(vault, 50)
        secret = vault.remember("note", "secret", "zanzibar quokka").id
    built(db_path, embedder)
    assert len(files(db_path)) == 2
    with Vault(db_path, embedder=embedder, keyword_index=False, vector_index=False) as vault:
        vault.forget(secret)
        vault.purge(secret)
    assert files(db_path) == []


def test_saved_only_opens_a_saved_index_and_never_builds_or_saves_one(db_path: Path) -> None:
    embedder = FakeEmbedder()
    with Vault(db_path, embedder=embedder) as vault:
        fill(vault, 300)
    with Vault(db_path, embedder=embedder, keyword_index="saved", vector_index="saved") as one_shot:
        assert one_shot.stats().keyword_index == "not loaded (none saved)"
        sql_answers = {mode: answers(one_shot, mode) for mode in ("fts5", "dense")}  # by SQL: nothing saved
        time.sleep(0.2)
        assert one_shot.stats().keyword_index == "not loaded (none saved)"
        assert not one_shot.wait_for_keyword_index(0.5)  # and nothing is built, even when asked
    assert files(db_path) == []
    built(db_path, embedder)
    with Vault(db_path, embedder=embedder, keyword_index="saved", vector_index="saved") as one_shot:
        assert one_shot.stats().keyword_index == "not loaded (saved beside the vault)"
        fill(one_shot, 10, start=300)  # replayed from the log at the first recall
        assert answers(one_shot, "fts5")[:2] != []
        assert one_shot.stats().keyword_index.endswith("from a snapshot)")
        assert answers(one_shot, "dense") and one_shot.stats().vector_index.endswith("from a snapshot)")
    with Vault(db_path, embedder=embedder, keyword_index=False, vector_index=False) as sql_only:
        assert {
            mode: answers(sql_only, mode) for mode in ("fts5", "dense")
        } != sql_answers  # 10 more memories
        expected = {mode: answers(sql_only, mode) for mode in ("fts5", "dense")}
    with Vault(db_path, embedder=embedder, keyword_index="saved", vector_index="saved") as one_shot:
        assert {mode: answers(one_shot, mode) for mode in ("fts5", "dense")} == expected


def test_a_large_replay_is_queued_and_answers_exactly_while_it_is_indexed(
    db_path: Path, clock: Clock
) -> None:
    from perseus_vault_core.indexes import keyword

    with Vault(db_path, embedder=False, clock=clock) as vault:
        fill(vault, 300)
    with Vault(db_path, embedder=False, clock=clock) as vault:
        vault.recall("billing")
        assert vault.wait_for_keyword_index(30)
    with Vault(db_path, embedder=False, clock=clock, keyword_index=False) as writer:
        fill(writer, 150, start=300)  # 150 new heads, ascii and not
        writer.remember(
            "note", "n7", "billing ledger rewritten: café ünïcode straße"
        )  # a new version of an old head
        writer.forget(3)
        first = writer.recall("note billing ledger", mode="fts5", limit=10, reinforce=False).items
        expected = [answers(writer, "fts5")] + [
            [
                (i.id, round(i.score, 9))
                for i in writer.recall(q, limit=10, reinforce=False, agent_id="x").items
            ]
            for q in QUERIES
        ]
    with Vault(db_path, embedder=False, clock=clock) as vault:
        index = vault.engine.keyword_index
        assert index is not None
        assert vault.recall("note billing ledger", mode="fts5", limit=10, reinforce=False).items == first
        assert len(index._pending) >= 150 > keyword.FLUSH_ROWS  # the first answer scanned the queue
        for round_ in range(2):  # each later answer indexes a batch of it first
            got = [answers(vault, "fts5")] + [
                [
                    (i.id, round(i.score, 9))
                    for i in vault.recall(q, limit=10, reinforce=False, agent_id="x").items
                ]
                for q in QUERIES
            ]
            assert got == expected, round_
        assert not index._pending  # all indexed by now
        assert "from a snapshot" in vault.stats().keyword_index
