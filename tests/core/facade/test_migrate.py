"""migrate (perseus_vault_core/facade/migrate.py): a vault copied to PostgreSQL and back, losslessly."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from perseus_vault_core import Conflict, InvalidInput, SetupError, Vault, migrate

from ...conftest import Clock, FakeEmbedder


def _fill(v: Vault, clock: Clock) -> None:
    a = v.remember(
        "decision", "db", "We chose Postgres for the shared memory", recall_when=["which database"]
    )
    clock.advance(1000)
    v.remember("decision", "db", "We chose Postgres with pgvector for the shared memory")  # a second version
    b = v.remember("fact", "team", "Four agents share one memory")
    v.remember("fact", "own", "Alice keeps her own memory", agent_id="alice", workspace_hash="ws")
    c = v.remember("note", "old", "A note about caches that was archived")
    v.link(a.id, b.id, "supports")
    v.forget(c.id)
    clock.advance(1000)
    v.recall("postgres memory")  # usage counters are part of the export


def _export(v: Vault) -> str:
    out = io.StringIO()
    v.export_jsonl(out)
    return out.getvalue()


def test_sqlite_to_postgres_and_back_is_lossless(tmp_path: Path, pg_url: str, clock: Clock) -> None:
    embedder = FakeEmbedder()
    with Vault(tmp_path / "a.db", clock=clock, embedder=embedder) as src:
        _fill(src, clock)
        original = _export(src)
        report = migrate(src, pg_url)
    # links: the one written and the one the vault inferred between two of the memories (copied as they are)
    assert (report.entities, report.versions, report.links, report.vectors, report.phrase_vectors) == (
        4,
        6,
        2,
        6,
        1,
    )
    assert report.lines == len(original.splitlines()) and "secret" not in report.target
    calls = embedder.texts
    with Vault(pg_url, clock=clock, embedder=embedder) as copy:
        assert _export(copy) == original
        answer = copy.recall(
            "postgres memory", mode="dense", reinforce=False, curate=False
        )  # the vectors alone
        assert answer.items[0].key == "db" and embedder.texts == calls + 1  # only the query was embedded
        back = migrate(copy, tmp_path / "b.db")
    assert back.sha256 == report.sha256
    with (
        Vault(tmp_path / "b.db", clock=clock, embedder=embedder) as again,
        Vault(tmp_path / "a.db", clock=clock, embedder=embedder) as first,
    ):
        assert _export(again) == original
        for mode in ("fts5", "dense", "hybrid"):
            assert [
                (i.id, i.score) for i in again.recall("shared memory", mode=mode, reinforce=False).items
            ] == [(i.id, i.score) for i in first.recall("shared memory", mode=mode, reinforce=False).items]


def test_a_target_that_holds_memories_is_refused_and_unchanged(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "a.db", clock=clock, embedder=False) as src:
        _fill(src, clock)
    with Vault(tmp_path / "b.db", clock=clock, embedder=False) as dst:
        dst.remember("fact", "mine", "already here")
        before = _export(dst)
    with pytest.raises(Conflict, match="already holds 1 memories"):
        migrate(tmp_path / "a.db", tmp_path / "b.db")
    with Vault(tmp_path / "b.db", clock=clock, embedder=False) as dst:
        assert _export(dst) == before
    with pytest.raises(InvalidInput, match="is the source itself"):
        migrate(tmp_path / "a.db", tmp_path / "a.db")


def test_a_source_missing_vectors_of_a_model_not_here_is_refused(tmp_path: Path, clock: Clock) -> None:
    with Vault(tmp_path / "a.db", clock=clock, embedder=FakeEmbedder()) as src:
        src.remember("fact", "a", "embedded")
    with Vault(tmp_path / "a.db", clock=clock, embedder=False) as src:
        src.remember("fact", "b", "written without the model")  # no vector
    with pytest.raises(SetupError, match="run `perseus-vault embed` on the source first"):
        migrate(tmp_path / "a.db", tmp_path / "b.db")
    with Vault(tmp_path / "b.db", clock=clock, embedder=False) as dst:
        assert dst.stats().entities == 0  # nothing half-copied


def test_the_command_line_copies_and_says_what(tmp_path: Path, pg_url: str, clock: Clock) -> None:
    with Vault(tmp_path / "a.db", clock=clock, embedder=False) as src:
        _fill(src, clock)
    done = subprocess.run(
        [sys.executable, "-m", "perseus_vault_core.cli", "migrate", str(tmp_path / "a.db"), pg_url],
        capture_output=True,
        text=True,
        env={"PERSEUS_VAULT_EMBEDDER": "none", "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "copied 4 memories (6 versions, 2 links, 0 vectors) and 0 rows of framework state from "
    )
    again = subprocess.run(
        [sys.executable, "-m", "perseus_vault_core.cli", "migrate", str(tmp_path / "a.db"), pg_url],
        capture_output=True,
        text=True,
        env={"PERSEUS_VAULT_EMBEDDER": "none", "PATH": ""},
    )
    assert again.returncode == 1 and again.stderr.startswith("error: the target already holds 4 memories")


def test_checkpoints_and_key_values_travel_too(tmp_path: Path, pg_url: str, clock: Clock) -> None:
    """Framework state is no memory and not in the export: it is copied row for row, every scope's, to
    PostgreSQL and back, and a target holding some is refused."""
    from perseus_vault_core import ChannelBlob, Checkpoints, KeyValues, TaskWrite

    with Vault(tmp_path / "a.db", clock=clock, embedder=False) as src:
        _fill(src, clock)
        for scope in ({}, {"agent_id": "alice"}):
            saved = Checkpoints(src, **scope)
            for i in range(3):
                saved.put(
                    "thread",
                    "",
                    f"0{i}",
                    parent_checkpoint_id=f"0{i - 1}" if i else None,
                    type="msgpack",
                    checkpoint=bytes([i, 0, 255]),
                    metadata={"step": i, "who": "ада"},
                    channel_versions={"messages": str(i)},
                    blobs=[ChannelBlob("messages", str(i), "msgpack", b"\x00" * i + b"m")],
                )
            saved.put_writes("thread", "", "02", [TaskWrite("task", "~0", 0, "messages", "msgpack", b"\x01")])
            KeyValues(src, **scope).put_many(
                "docstore/data", [(f"n{i}", {"text": f"node {i}"}) for i in range(700)]
            )
        report = migrate(src, pg_url)
    assert report.state_rows == 2 * (3 + 3 + 1 + 700)
    with Vault(pg_url, embedder=False) as copy:
        alice = Checkpoints(copy, agent_id="alice")
        latest = alice.get("thread")
        assert (
            latest is not None and latest.checkpoint == bytes([2, 0, 255]) and latest.metadata["who"] == "ада"
        )
        assert [b.data for b in latest.blobs] == [b"\x00\x00m"] and [w.data for w in latest.writes] == [
            b"\x01"
        ]
        assert [c.checkpoint_id for c in alice.list("thread")] == ["02", "01", "00"]
        assert len(KeyValues(copy).get_all("docstore/data")) == 700
        back = migrate(copy, tmp_path / "b.db")
    assert back.state_rows == report.state_rows
    with Vault(tmp_path / "c.db", embedder=False) as other:
        KeyValues(other).put("c", "k", {"v": 1})
        with (
            Vault(tmp_path / "a.db", embedder=False) as src,
            pytest.raises(Conflict, match="framework state"),
        ):
            migrate(src, tmp_path / "c.db")
