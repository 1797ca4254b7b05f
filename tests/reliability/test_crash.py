"""Crash safety (docs/operations.md): a writer killed with SIGKILL mid-ingest loses nothing it acknowledged,
shows no part of a batch it did not, and leaves a file whose indexes match its rows.

One file takes every kill in turn (so later rounds recover a WAL that earlier rounds left behind);
each round starts a real writer process, lets it commit batches for a random moment, kills it and
then inspects the file from this process.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from perseus_vault_core import Vault

from ..conftest import FakeEmbedder
from ._checks import holds_vault, index_problems, open_conn
from ._workers import CATEGORY

ROOT = Path(__file__).resolve().parents[2]
KILLS = 25
PG_KILLS = 10  # each Postgres round also starts a server connection and reads the database's clock
BATCH = 4  # memories per batch, plus one update of the writer's tally


def _spawn(db: Path | str, writer: str, first: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.reliability._workers",
            "batches",
            str(db),
            writer,
            str(first),
            str(BATCH),
            "600",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class Lines:
    """The child's stdout, read in a thread so the parent can kill at any moment."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append(line.strip())
            if line.strip() == "ready":
                self.ready.set()
        self.ready.set()

    def join(self) -> list[str]:
        self._thread.join(30)
        return self.lines


def _present_batches(db: Path | str, writer: str) -> dict[int, int]:
    """Batch number -> how many of its memories the file (or database) holds."""
    conn = open_conn(db)
    try:
        counts: dict[int, int] = {}
        for (key,) in conn.execute(
            "SELECT key FROM entities WHERE category = ? AND agent_id = ?", (CATEGORY, writer)
        ):
            n = int(key.split("-b")[1].split("-")[0])
            counts[n] = counts.get(n, 0) + 1
        return counts
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_sigkill_during_batch_ingest_loses_nothing_acknowledged(vault_path: Path | str, backend: str) -> None:
    db = vault_path  # one file, or one database, takes every kill in turn
    kills = KILLS if backend == "sqlite" else PG_KILLS
    rng = random.Random(20261130)
    writer = "w"
    next_batch = 0
    acknowledged: set[int] = set()
    committed_unsaid = 0
    earlier: set[int] = set()
    for round_ in range(kills):
        proc = _spawn(db, writer, next_batch)
        out = Lines(proc)
        if round_ % 5 == 4:
            time.sleep(rng.uniform(0.0, 1.0))  # some kills land while the process starts (opening, migrating)
        else:
            assert out.ready.wait(60), proc.stderr.read() if proc.stderr else ""
            time.sleep(rng.uniform(0.02, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        lines = out.join()
        assert not [line for line in lines if line.startswith("error")], lines
        assert proc.returncode == -signal.SIGKILL, (
            proc.returncode,
            proc.stderr.read() if proc.stderr else "",
        )
        acked_now = {int(line.split()[1]) for line in lines if line.startswith("ack ")}
        acknowledged |= acked_now

        exists = holds_vault(db)
        if exists:
            assert index_problems(db) == [], f"after kill {round_ + 1}"
        present = _present_batches(db, writer) if exists else {}
        # Every acknowledged batch is whole; any other batch is whole or absent (at most the one in flight).
        assert {n for n in acknowledged if present.get(n) != BATCH} == set(), f"after kill {round_ + 1}"
        assert all(count == BATCH for count in present.values()), present
        unacknowledged = set(present) - acknowledged - earlier
        assert unacknowledged <= {next_batch + len(acked_now)}, (unacknowledged, acked_now)
        if unacknowledged:
            committed_unsaid += 1  # committed, killed before it could say so: whole, as it must be
        earlier = set(present)
        # The tally's head names the newest batch on file: its update is in the same transaction.
        if present:
            with Vault(db, embedder=False) as vault:
                tally = vault.history("tally", writer, agent_id=writer, limit=1).items[0]
                assert tally.content.endswith(f"through batch {max(present)}")
        next_batch = max(present) + 1 if present else next_batch
    assert len(acknowledged) >= kills  # the kills did land amid real work
    print(
        f"{kills} kills, {len(acknowledged)} batches acknowledged, {committed_unsaid} committed but unacknowledged"
    )


RAW_KEY = "x'" + "2d" * 32 + "'"


def _snapshot(db: Path) -> dict[str, bytes | None]:
    """The bytes of the main file, -wal and -shm (None: the file does not exist)."""
    files = {suffix: Path(f"{db}{suffix}") for suffix in ("", "-wal", "-shm", "-journal")}
    return {suffix: path.read_bytes() if path.exists() else None for suffix, path in files.items()}


@pytest.mark.slow
def test_a_wrong_key_never_touches_an_encrypted_vault_a_crash_left(tmp_path: Path) -> None:
    """SIGKILL an encrypted writer mid-work, leaving a hot WAL. Opening with a wrong key used to recover
    that WAL, checkpoint it into the main file and delete -wal and -shm before the key check failed;
    now every byte of every file stays as it was, and the right key then finds every acknowledged batch."""
    pytest.importorskip("sqlcipher3")
    from perseus_vault_core import SetupError

    db = tmp_path / "secret.db"
    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none", PERSEUS_VAULT_KEY=RAW_KEY)
    env.pop("PERSEUS_VAULT_KEY_FILE", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._workers", "batches", str(db), "w", "0", str(BATCH), "600"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = Lines(proc)
    assert out.ready.wait(60), proc.stderr.read() if proc.stderr else ""
    deadline = time.monotonic() + 60
    while sum(line.startswith("ack ") for line in out.lines) < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    acknowledged = {int(line.split()[1]) for line in out.join() if line.startswith("ack ")}
    assert len(acknowledged) >= 5, out.lines

    before = _snapshot(db)
    assert before["-wal"] and before["-shm"] is not None  # a hot WAL: written, never checkpointed away
    for wrong in ("x'" + "3e" * 32 + "'", "a wrong passphrase"):
        with pytest.raises(SetupError, match="wrong encryption key"):
            Vault(db, embedder=False, key=wrong)
        assert _snapshot(db) == before  # bytes, sizes and existence of every file

    with Vault(db, embedder=False, key=RAW_KEY) as vault:
        keys = {
            key
            for (key,) in vault.engine.conn().execute(
                "SELECT key FROM entities WHERE category = ?", (CATEGORY,)
            )
        }
        assert vault.check().ok
    present: dict[int, int] = {}
    for key in keys:
        n = int(key.split("-b")[1].split("-")[0])
        present[n] = present.get(n, 0) + 1
    assert all(present.get(n) == BATCH for n in acknowledged), (sorted(acknowledged), present)


SAVE_KILLS = 6


def _temporaries(db: Path) -> list[str]:
    return [
        name for name in os.listdir(db.parent) if name.startswith(db.name + "-") and name.endswith(".tmp")
    ]


def _page(db: Path, query: str, saved: bool) -> list[tuple[int, float]]:
    """A one-shot process's answer: from the saved keyword index when ``saved`` (and one is usable), else FTS5."""
    options: dict[str, object] = {"keyword_index": "saved"} if saved else {"keyword_index": False}
    with Vault(db, embedder=False, **options) as vault:  # type: ignore[arg-type]
        return [(item.id, item.score) for item in vault.recall(query, limit=20, reinforce=False).items]


@pytest.mark.slow
def test_sigkill_mid_save_leaves_a_usable_index_or_none_and_no_stray_file(tmp_path: Path) -> None:
    """Kill a process while it writes a keyword-index snapshot (the moment its temporary file appears):
    the next process opens the old snapshot or the new one, answers exactly as FTS5 does, finds the
    indexes and rows in agreement, and the next save deletes what the killed one left."""
    db = tmp_path / "saves.db"
    with Vault(db, embedder=FakeEmbedder()) as vault:  # vectors too: the checks expect one per version
        vault.import_jsonl(
            json.dumps(
                {
                    "category": "note",
                    "key": f"k{i}",
                    "content": f"durable memory {i} about storage engines, sqlite pages and index {i % 97} snapshots",
                }
            )
            for i in range(20_000)
        )
    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none")
    mid_save = 0
    for round_ in range(SAVE_KILLS):
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._workers", "saves", str(db), "50"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not _temporaries(db) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        mid_save += bool(_temporaries(db))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
        assert index_problems(db) == [], f"after kill {round_ + 1}"
        for query in ("storage engines", "index 42 snapshots", "sqlite pages"):
            assert _page(db, query, saved=True) == _page(db, query, saved=False), (round_, query)
    assert mid_save >= SAVE_KILLS - 1, mid_save  # the kills did land mid-save
    assert _temporaries(db)  # what the last kill left, until a save sweeps it
    with Vault(db, embedder=False) as vault:
        vault.reindex()
        vault.recall("storage engines")
        assert vault.wait_for_keyword_index()
    assert _temporaries(db) == []


# --- one complete file: what a process leaves when it ends (docs/operations.md#one-sqlite-file) ---

BIG = 20_000  # memories already in the vault: the background builds that a recall starts take a while


def _big_vault(db: Path) -> None:
    # No index work here: it would leave saved indexes (indexes/settle.py), and the process after it builds none.
    with Vault(db, embedder=FakeEmbedder(), keyword_index=False, vector_index=False) as vault:
        vault.import_jsonl(
            json.dumps(
                {
                    "category": "note",
                    "key": f"k{i}",
                    "content": f"durable memory {i} about storage engines, sqlite pages and index {i % 97} snapshots",
                }
            )
            for i in range(BIG)
        )


def _alone(db: Path, tmp_path: Path) -> Path:
    """A copy of the main file alone, as a user copies it (no -wal, no -shm)."""
    copy = tmp_path / "alone" / "copy.db"
    copy.parent.mkdir()
    copy.write_bytes(db.read_bytes())
    return copy


def _run_builder(db: Path, ending: str, batches: int = 5) -> tuple[subprocess.Popen[str], Lines]:
    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability._workers", "build", str(db), "w", str(batches), ending],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, Lines(proc)


def _acknowledged_in(copy: Path, lines: list[str]) -> None:
    acknowledged = {int(line.split()[1]) for line in lines if line.startswith("ack ")}
    assert acknowledged, lines
    present = _present_batches(copy, "w")
    assert {n for n in acknowledged if present.get(n) != BATCH} == set(), (sorted(acknowledged), present)
    with Vault(copy, embedder=False) as vault:
        assert vault.stats().entities == BIG + BATCH * len(acknowledged) + 1  # and the writer's tally
        assert vault.check().ok


@pytest.mark.slow
@pytest.mark.parametrize("ending", ["close", "exit"])
def test_a_process_that_ends_right_after_its_writes_leaves_one_complete_file(
    tmp_path: Path, ending: str
) -> None:
    """Write, recall (which starts the background index builds over 20,000 memories), then close and
    exit at once, or exit without closing: the builds end first, the WAL is checkpointed and deleted,
    no temporary is left, and the main file copied alone holds every write."""
    db = tmp_path / "ends.db"
    _big_vault(db)
    proc, out = _run_builder(db, ending)
    assert proc.wait(120) == 0, proc.stderr.read() if proc.stderr else ""
    lines = out.join()
    assert "building True" in lines, lines  # it ended while a build was running
    leftovers = sorted(
        name for name in os.listdir(tmp_path) if name != "ends.db" and not name.endswith(".pvidx")
    )
    assert leftovers == [], leftovers  # no -wal, no -shm, no temporary
    _acknowledged_in(_alone(db, tmp_path), lines)


@pytest.mark.slow
def test_sigkill_during_a_background_build_leaves_every_acknowledged_write_in_the_file(
    tmp_path: Path,
) -> None:
    """Kill a process while its background index build runs: every write it acknowledged is already in
    the main file (each write is checkpointed after its commit), so the file copied alone holds them."""
    db = tmp_path / "killed.db"
    _big_vault(db)
    proc, out = _run_builder(db, "wait")
    deadline = time.monotonic() + 120
    while not any(line.startswith("building") for line in out.lines) and time.monotonic() < deadline:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    lines = out.join()
    assert "building True" in lines, (lines, proc.stderr.read() if proc.stderr else "")
    assert Path(f"{db}-wal").exists()  # the killed process left its WAL behind, as a kill does
    _acknowledged_in(_alone(db, tmp_path), lines)
