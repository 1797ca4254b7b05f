"""Fixtures shared by the core's tests in several folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from perseus_vault_core import Vault

from ..conftest import Clock


@pytest.fixture
def dense_notes(dense_vault: Vault, clock: Clock) -> dict[str, int]:
    """Four notes a second apart and twelve fillers in a vault with vectors: the ids of the notes by name
    (``db``, ``cache``, ``deploy``, ``queue``; the billing ledger is in ``db`` and ``queue``)."""
    texts = {
        "db": "The billing ledger runs on postgres with nightly backups",
        "cache": "Redis caches session tokens for the login service",
        "deploy": "Deploys go through the canary stage before production",
        "queue": "Kafka carries billing events to the ledger workers",
    }
    out = {}
    for key, text in texts.items():
        out[key] = dense_vault.remember("note", key, text).id
        clock.advance(1000)
    for i in range(12):
        dense_vault.remember("filler", f"f{i}", f"Lunch menu {i}: soup, bread and seasonal fruit")
    return out


@pytest.fixture
def model_vault(vault_path: str | Path, clock: Clock, real_embedder: Any) -> Iterator[Vault]:
    """A vault that embeds with the bundled model (``real_embedder``), as it does for a user."""
    with Vault(vault_path, clock=clock, embedder=real_embedder) as v:
        yield v
