"""facade/roles.py: ``bind_role`` binds a PostgreSQL role to one scope (the default scope when none is
named) and says what it bound; a bad scope is refused by name before the database is touched, and a SQLite
vault, which has no roles, refuses it. What a bound role may then do: storage/postgres/test_tenancy.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from perseus_vault_core import InvalidInput, NotSupported, StorageError, Vault, bind_role
from perseus_vault_core.contract.params.base import MAX_SCOPE_CHARS


@pytest.fixture
def role(pg_url: str) -> Iterator[str]:
    name = f"roles_{uuid.uuid4().hex[:8]}"  # roles are the server's, not one database's: one per test
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {name} LOGIN")
    try:
        yield name
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {name}")
            admin.execute(f"DROP ROLE {name}")


def _as(url: str, role: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.split('@')[-1]}"))


def test_a_sqlite_vault_has_no_roles_to_bind(tmp_path: Path) -> None:
    with Vault(tmp_path / "v.db", embedder=False) as vault, pytest.raises(NotSupported) as raised:
        bind_role(vault, "anyone", agent_id="alice")
    assert "needs a PostgreSQL vault" in str(raised.value)


@pytest.mark.parametrize(
    ("scope", "field"),
    [
        ({"agent_id": "a" * (MAX_SCOPE_CHARS + 1)}, "agent_id"),
        ({"agent_id": 7}, "agent_id"),
        ({"agent_id": "alice", "workspace_hash": ["ws"]}, "workspace_hash"),
        ({"workspace_hash": "w" * (MAX_SCOPE_CHARS + 1)}, "workspace_hash"),
    ],
)
def test_a_bad_scope_is_refused_by_name_and_binds_nothing(
    pg_url: str, role: str, scope: dict[str, Any], field: str
) -> None:
    with Vault(pg_url, embedder=False) as owner:
        with pytest.raises(InvalidInput) as raised:
            bind_role(owner, role, **scope)
        assert raised.value.field == field and str(MAX_SCOPE_CHARS) in raised.value.message
        owner.remember("fact", "a", "everyone's")
    with pytest.raises(StorageError, match="permission denied"):  # no grant was made: it reads nothing at all
        Vault(_as(pg_url, role), embedder=False).close()


def test_a_role_bound_without_a_scope_gets_the_default_scope(pg_url: str, role: str) -> None:
    with Vault(pg_url, embedder=False) as owner:
        binding = bind_role(owner, role)
        assert (binding.role, binding.agent_id, binding.workspace_hash) == (role, "", "")
        owner.remember("fact", "shared", "the default scope's")
        owner.remember("fact", "alice", "alice's", agent_id="alice")
        again = bind_role(owner, role, agent_id="alice", workspace_hash=None)
        assert (again.agent_id, again.workspace_hash) == ("alice", "")  # bound again: the new scope
    with Vault(_as(pg_url, role), embedder=False) as bound:
        assert [e.key for e in bound.scan(limit=10).items] == ["alice"]
