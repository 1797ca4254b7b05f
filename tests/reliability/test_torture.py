"""Many processes, one memory, under kills (docs/operations.md "Many processes, one file").

Long-lived holders with their in-memory indexes (two ``Vault`` holders in processes of their own, which embed
what they write, ``perseus-vault serve`` over stdio driven by the MCP client, the resident helper) and writers
(``perseus-vault remember`` processes, and the holders themselves) share one vault file for a bounded time,
while ``kill -9`` hits holders (between calls, or in the middle of a write) and writers at random. Throughout, a holder asked for a memory finds every write acknowledged before it was
asked (by keyword, and by meaning where the writer embedded it); at the end every acknowledged write is
in the file, SQLite's integrity check says ``ok`` and the vault's own check passes. On PostgreSQL, two
holders stand for two hosts.

The schedule is random: ``PERSEUS_VAULT_TORTURE_SEED`` replays one (each run prints its seed), and
``PERSEUS_VAULT_TORTURE_SECONDS`` sets how long each runs (default 25).
"""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from perseus_vault_core import Vault

from ..conftest import FakeEmbedder
from ._checks import integrity
from .conftest import ROOT

SECONDS = float(os.environ.get("PERSEUS_VAULT_TORTURE_SECONDS") or 25)
CLI = [sys.executable, "-m", "perseus_vault_core.cli"]
WORKERS = [sys.executable, "-m", "tests.reliability._workers"]
WORDS = (
    "ledger",
    "billing",
    "deploy",
    "queue",
    "replica",
    "schema",
    "latency",
    "cache",
    "shard",
    "token",
    "incident",
    "pager",
    "runbook",
    "region",
    "cluster",
    "budget",
    "vendor",
    "invoice",
    "backup",
    "audit",
)


class Lines:
    """A process spoken to a line at a time (a holder worker), its answers read on a thread of their own."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env
        )
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.put(line.rstrip("\n"))
        self.answers.put(None)

    def next(self, timeout: float = 120) -> str:
        answer = self.answers.get(timeout=timeout)
        assert answer is not None, f"the process ended (status {self.proc.wait(30)})"
        return answer

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.next()

    def end(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait(60)


class Holder:
    """One long-lived holder: how to start it, ask it for a memory, make it write, and kill it."""

    def __init__(self, name: str, db: str, env: dict[str, str], runtime: Path | None = None) -> None:
        self.name, self.db, self.env, self.runtime = name, db, env, runtime
        self.lines: Lines | None = None
        self.helper: subprocess.Popen[str] | None = None
        self.target = 0  # the process a kill -9 hits
        self.answered = 0
        self.start()

    @property
    def embeds(self) -> bool:
        return self.name.startswith("vault")

    def start(self) -> None:
        if self.name == "helper":
            assert self.runtime is not None
            self.log = Path(tempfile.mkstemp(prefix="pv-helper-", dir=self.runtime.parent)[1])
            with open(self.log, "w") as log:
                self.helper = subprocess.Popen(
                    [*CLI, "--db", self.db, "resident", "--idle", "600"],
                    cwd=ROOT,
                    env=self.env,
                    stderr=log,
                    text=True,
                )
            deadline = time.monotonic() + 60
            while "serving" not in self.log.read_text():
                assert self.helper.poll() is None and time.monotonic() < deadline, self.log.read_text()
                time.sleep(0.02)
            self.target, self.answered = self.helper.pid, 0
            return
        if self.name == "serve":
            self.lines = Lines([*WORKERS, "mcp", self.db], self.env)
            self.target = int(self.lines.next().split()[1])
            return
        self.lines = Lines([*WORKERS, "hold", self.db, "fake"], self.env)
        assert self.lines.next() == "ready"
        self.target = self.lines.proc.pid

    def find(self, mode: str, key: str, query: str) -> str:
        if self.lines is not None:
            return self.lines.ask(f"find {mode} {key} {query}")
        done = subprocess.run(
            [*CLI, "--db", self.db, "recall", query, "--mode", mode, "--min-score", "0", "--no-reinforce"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=self.env,
            timeout=120,
        )
        answered = self.log.read_text().count("answered recall")
        assert answered == self.answered + 1, f"the helper did not answer ({done.stderr})"
        self.answered = answered
        return f"found {key}" if f"[fact/{key}]" in done.stdout else f"missing {key} {done.stdout!r}"

    def write(self, key: str, text: str) -> str:
        assert self.lines is not None
        return self.lines.ask(f"write {key} {text}")

    def kill(self, mid_write: str | None = None) -> None:
        """``kill -9``, at once, or (``mid_write``: a write's line) while it writes."""
        if mid_write is not None and self.lines is not None and self.lines.proc.stdin is not None:
            self.lines.proc.stdin.write(mid_write + "\n")
            self.lines.proc.stdin.flush()
        os.kill(self.target, signal.SIGKILL)
        if self.lines is not None:
            self.lines.end()  # a driver whose server died exits; a killed holder is reaped
        if self.helper is not None:
            self.helper.wait(60)

    def end(self) -> None:
        if self.lines is not None:
            self.lines.end()
        if self.helper is not None:
            subprocess.run(
                [*CLI, "--db", self.db, "resident", "--stop"],
                cwd=ROOT,
                env=self.env,
                timeout=60,
                capture_output=True,
            )
            self.helper.wait(60)


class Torture:
    """The run's state: what was acknowledged, by whom, and what every check found."""

    def __init__(self, db: str, env: dict[str, str], seed: int) -> None:
        self.db, self.env, self.rng = db, env, random.Random(seed)
        self.acked: dict[str, tuple[str, bool]] = {}  # key -> (its text, written with vectors)
        self.lock = threading.Lock()
        self.writers: list[subprocess.Popen[str]] = []
        self.n = 0
        self.failures: list[str] = []
        self.kills = {"writer": 0, "holder": 0}
        self.checks = 0

    def text(self) -> tuple[str, str]:
        with self.lock:
            self.n += 1
            n = self.n
        words = " ".join(self.rng.sample(WORDS, 4))
        return f"k{n}", f"tok{n}q {words} note {n}"

    def cli_writer(self) -> None:
        """A ``perseus-vault remember`` on a thread of its own: acknowledged when it says so and exits 0."""
        key, text = self.text()
        proc = subprocess.Popen(
            [*CLI, "--db", self.db, "remember", "fact", key, text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=self.env,
        )
        with self.lock:
            self.writers.append(proc)

        def wait() -> None:
            out, err = proc.communicate()
            if proc.returncode == 0 and out.startswith("stored as #"):
                with self.lock:
                    self.acked[key] = (text, False)
            elif proc.returncode != -signal.SIGKILL:
                self.failures.append(f"remember {key}: status {proc.returncode}: {err.strip()}")

        threading.Thread(target=wait, daemon=True).start()

    def write_through(self, holder: Holder) -> str:
        key, text = self.text()
        answer = holder.write(key, text)
        assert answer == f"ack {key}", answer
        with self.lock:
            self.acked[key] = (text, holder.embeds)
        return key

    def check(self, holder: Holder, keys: list[str]) -> None:
        """``holder`` finds each of ``keys`` (each acknowledged before this call): by its own word, and by
        meaning where it was embedded and the holder embeds."""
        self.checks += len(keys)
        for key in keys:
            text, embedded = self.acked[key]
            found = holder.find("fts5", key, text.split()[0])
            if found != f"found {key}":
                self.failures.append(f"{holder.name}: {found}")
            if embedded and holder.embeds:
                found = holder.find("dense", key, text)
                if found != f"found {key}":
                    self.failures.append(f"{holder.name} (dense): {found}")

    def snapshot(self) -> list[str]:
        with self.lock:
            return list(self.acked)

    def kill_a_writer(self) -> None:
        with self.lock:
            running = [p for p in self.writers if p.poll() is None]
        if running:
            self.rng.choice(running).send_signal(signal.SIGKILL)
            self.kills["writer"] += 1

    def settle_writers(self) -> None:
        with self.lock:
            writers = list(self.writers)
        for proc in writers:
            proc.wait(120)
        time.sleep(0.2)  # their threads record the acknowledgements


def run(db: str, env: dict[str, str], names: list[str], seed: int, runtime: Path | None = None) -> Torture:
    t = Torture(db, env, seed)
    holders = [Holder(name, db, env, runtime) for name in names]
    try:
        deadline = time.monotonic() + SECONDS
        step = 0
        while time.monotonic() < deadline and not t.failures:
            step += 1
            for _ in range(t.rng.randint(1, 3)):
                t.cli_writer()
            writer = t.rng.choice([h for h in holders if h.lines is not None])
            newest = t.write_through(writer)
            if t.rng.random() < 0.3:
                t.kill_a_writer()
            # A holder asked now must find the write it was told of, and the writes acknowledged before.
            asked = t.rng.choice(holders)
            t.check(asked, [newest, *t.rng.sample(t.snapshot(), min(3, len(t.acked)))])
            if t.rng.random() < 0.15:
                victim = t.rng.choice(holders)
                key, text = t.text()  # a write it may be in the middle of: not acknowledged, not required
                victim.kill(f"write {key} {text}" if t.rng.random() < 0.5 else None)
                t.kills["holder"] += 1
                victim.start()
                t.settle_writers()
                t.check(victim, t.snapshot())  # a new holder: everything so far
            if step % 10 == 0:
                t.settle_writers()
                keys = t.snapshot()
                for holder in holders:
                    t.check(holder, t.rng.sample(keys, min(15, len(keys))))
        t.settle_writers()
        keys = t.snapshot()
        for holder in holders:
            t.check(holder, keys if holder.name != "helper" else t.rng.sample(keys, min(20, len(keys))))
    finally:
        for holder in holders:
            holder.end()
    print(f"{len(t.acked)} writes acknowledged, {t.checks} found by holders, kills: {t.kills}")
    return t


@pytest.fixture
def seed() -> Iterator[int]:
    chosen = int(os.environ.get("PERSEUS_VAULT_TORTURE_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"PERSEUS_VAULT_TORTURE_SEED={chosen}")
    yield chosen


@pytest.mark.skipif(
    not os.path.exists("/proc/self/task"), reason="finds the MCP server's process in /proc (Linux)"
)
def test_holders_and_writers_under_kill_9_on_one_file(tmp_path: Path, seed: int) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="pv-", dir="/tmp"))  # short enough for a socket path
    os.chmod(runtime, 0o700)
    env = {**os.environ, "PERSEUS_VAULT_EMBEDDER": "none", "PERSEUS_VAULT_RUNTIME_DIR": str(runtime)}
    env.pop("PERSEUS_VAULT_RESIDENT", None)
    db = str(tmp_path / "v.db")
    with Vault(db, embedder=FakeEmbedder()) as vault:  # a vector already, so the holders' vector index builds
        vault.remember("fact", "seed", "the vault as the torture test found it")
    t = run(db, env, ["vault-a", "vault-b", "serve", "helper"], seed, runtime)
    assert not t.failures, f"seed {seed}: {t.failures[:5]}"
    assert len(t.acked) > 20
    assert integrity(db) == "ok"
    with Vault(db, embedder=False) as after:
        held = everything(after)
        assert set(t.acked) <= held, f"seed {seed}: lost {sorted(set(t.acked) - held)[:10]}"
        assert after.check().ok


def everything(vault: Vault) -> set[str]:
    """Every memory's key, page by page."""
    keys, cursor = set(), None
    while True:
        page = vault.scan(cursor=cursor, limit=500)
        keys |= {e.key for e in page.items}
        if not page.has_more:
            return keys
        cursor = page.next_cursor


def test_two_holders_as_two_hosts_under_kill_9_on_postgres(pg_url: str, seed: int) -> None:
    env = {**os.environ, "PERSEUS_VAULT_EMBEDDER": "none"}
    with Vault(pg_url, embedder=FakeEmbedder()) as vault:
        vault.remember("fact", "seed", "the vault as the torture test found it")
    t = run(pg_url, env, ["vault-a", "vault-b"], seed)
    assert not t.failures, f"seed {seed}: {t.failures[:5]}"
    assert len(t.acked) > 20
    with Vault(pg_url, embedder=False) as after:
        held = everything(after)
        assert set(t.acked) <= held, f"seed {seed}: lost {sorted(set(t.acked) - held)[:10]}"
        assert after.check().ok
