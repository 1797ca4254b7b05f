"""The memory-file tests' folder: a copy of tests/fixtures/memory_vault, and a vault that imported it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perseus_vault_core import Vault

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "memory_vault"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "obsidian"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture
def imported(vault: Vault, folder: Path) -> Vault:
    vault.memory_import(folder)
    return vault
