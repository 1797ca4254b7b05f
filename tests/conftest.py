"""Shared fixtures: a real vault file per test, and a clock the test controls."""

from __future__ import annotations

import subprocess

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Vault

DAY_MS = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class Clock:
    """A settable clock in unix milliseconds; every vault call reads it."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "vault.db"


class FakeEmbedder:
    """A deterministic stand-in for the model in fast tests: hashed bag of stemmed words, unit length.

    Texts sharing words get similar vectors, as with a real model (but no paraphrase magic: tests
    about meaning use the real bundled model, see ``real_embedder``).
    """

    identity = "fake-hash-embedder@1"
    dimension = 64

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from perseus_vault_core.porter import stem
        from perseus_vault_core.query import tokenize

        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                digest = hashlib.blake2b(stem(token).encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "little") % self.dimension] += 1.0
            out[row, 0] += 0.01  # never the zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def vault(db_path: Path, clock: Clock) -> Iterator[Vault]:
    """A keyword-only vault (no embedder): recall defaults to fts5, as a vault without vectors does."""
    with Vault(db_path, clock=clock, embedder=False) as v:
        yield v


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def dense_vault(db_path: Path, clock: Clock, fake_embedder: FakeEmbedder) -> Iterator[Vault]:
    """A vault that embeds on write with the fast deterministic fake embedder."""
    with Vault(db_path, clock=clock, embedder=fake_embedder) as v:
        yield v


@pytest.fixture(scope="session")
def real_embedder() -> Any:
    """The bundled all-MiniLM-L6-v2 on its default (ONNX) runtime, loaded once per test run."""
    from perseus_vault_core.embed import load

    return load()


def shared_data() -> Path:
    """The evaluation collections (read at run time, never copied into the repo).

    ``$PERSEUS_VAULT_DATA``, else ``shared/data`` beside the checkout or beside any folder above it.
    """
    env = os.environ.get("PERSEUS_VAULT_DATA")
    here = Path(__file__).resolve()
    candidates = [Path(env)] if env else [parent / "shared" / "data" for parent in here.parents]
    for path in candidates:
        if (path / "scifact" / "corpus.jsonl").exists():
            return path
    raise RuntimeError(f"evaluation data not found (looked in {candidates[0]}...); set PERSEUS_VAULT_DATA")


def wait_for_port(port: int, proc: "subprocess.Popen[bytes]", timeout: float = 60.0, host: str = "127.0.0.1") -> None:
    """Wait until a server process listens on ``host`` (loopback), ``port``; fail at once, with its
    stderr, if it exits first (a server that cannot start should not cost the whole timeout)."""
    import socket
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {proc.stderr.read() if proc.stderr else b''!r}")
            time.sleep(0.1)
