"""Shared fixtures: a real vault file per test, and a clock the test controls."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def vault(db_path: Path, clock: Clock) -> Iterator[Vault]:
    with Vault(db_path, clock=clock) as v:
        yield v


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
