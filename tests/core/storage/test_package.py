"""The storage package (storage/__init__.py): ``open_backend`` picks the backend by the path's form, and
``driver_errors`` names psycopg's errors only once a PostgreSQL vault has loaded it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perseus_vault_core import InvalidInput
from perseus_vault_core.storage import SQLiteBackend, driver_errors, open_backend
from perseus_vault_core.storage.sqlite.connection import SQLITE_ERRORS


def test_a_path_opens_an_sqlite_file(tmp_path: Path) -> None:
    backend = open_backend(str(tmp_path / "v.db"), key=None, synchronous="FULL")
    try:
        assert isinstance(backend, SQLiteBackend) and backend.name == "sqlite"
        assert backend.path == str(tmp_path / "v.db") and not backend.encrypted
    finally:
        backend.close()


@pytest.mark.parametrize("url", ["postgresql://ada@127.0.0.1:9/vault", "postgres://ada@127.0.0.1:9/vault"])
def test_a_url_opens_postgres_which_refuses_a_key_before_connecting(url: str) -> None:
    # The PostgreSQL backend's own refusal, made before it reaches a server (none listens on port 9).
    with pytest.raises(InvalidInput) as caught:
        open_backend(url, key="secret", synchronous="FULL")
    assert caught.value.field == "key" and "encrypted at rest by its server" in str(caught.value)


def test_driver_errors_hold_psycopgs_only_once_it_is_loaded() -> None:
    assert set(SQLITE_ERRORS) <= set(driver_errors())
    code = (
        "import sys\n"
        "from perseus_vault_core.storage import driver_errors\n"
        "before = driver_errors()\n"
        "assert 'psycopg' not in sys.modules, 'importing the storage loaded psycopg'\n"
        "import psycopg\n"
        "after = driver_errors()\n"
        "assert psycopg.Error not in before and psycopg.Error in after, (before, after)\n"
        "assert after[: len(before)] == before\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
