"""Row-level security on Postgres (storage/postgres/tenancy.py): a role bound to one scope sees and writes
that scope only, even when the vault's own scope filter is gone."""

from __future__ import annotations

import io
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from perseus_vault_core import InvalidInput, NotFound, NotSupported, StorageError, Vault, bind_role
from perseus_vault_core.primitives import filters
from perseus_vault_core.storage.postgres import tenancy
from perseus_vault_core.storage.postgres.connection import connect, write_transaction

from ....conftest import Clock, FakeEmbedder

ALICE = {"agent_id": "alice", "workspace_hash": "ws-a"}
BOB = {"agent_id": "bob", "workspace_hash": "ws-b"}


def _as(url: str, role: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.split("@")[-1]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


@pytest.fixture
def vaults(pg_url: str, clock: Clock) -> Iterator[tuple[Vault, Vault, dict[str, int]]]:
    """The owner's vault with alice's and bob's memories, and a vault opened as a role bound to alice."""
    embedder = FakeEmbedder()
    owner = Vault(pg_url, clock=clock, embedder=embedder)
    ids = {}
    for who, scope in (("alice", ALICE), ("bob", BOB)):
        a = owner.remember(
            "fact",
            f"{who}-plan",
            f"{who} plans the billing migration",
            recall_when=[f"{who} billing"],
            **scope,
        )
        b = owner.remember("fact", f"{who}-db", f"{who} keeps the ledger in postgres", **scope)
        owner.link(a.id, b.id, "about", **scope)
        ids[who] = a.id
    role = f"alice_{uuid.uuid4().hex[:8]}"  # roles are the server's, not one database's: one per test
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    conn = connect(pg_url)
    write_transaction(conn, lambda c: tenancy.bind_role(c, role, **ALICE))
    conn.close()
    bound = Vault(_as(pg_url, role), clock=clock, embedder=embedder)
    try:
        yield owner, bound, ids
    finally:
        bound.close()
        owner.close()
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def test_with_the_vaults_scope_filter_gone_a_bound_role_still_sees_only_its_scope(
    vaults: tuple[Vault, Vault, dict[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, bound, ids = vaults
    monkeypatch.setattr(filters, "scope_clauses", lambda *args: [])  # the vault filters no scope any more
    for mode in ("fts5", "dense", "hybrid"):
        found = bound.recall("billing ledger postgres", mode=mode, reinforce=False).items
        assert found and {i.agent_id for i in found} == {"alice"}, mode
    assert {e.agent_id for e in bound.scan(limit=100).items} == {"alice"}
    for look in (bound.get_entity, bound.traverse):
        with pytest.raises(NotFound):
            look(ids["bob"])
    with pytest.raises(NotFound):
        bound.history("fact", "bob-plan", **BOB)
    assert {n.entity.id for n in bound.traverse(ids["alice"]).nodes} == {ids["alice"], ids["alice"] + 1}
    out = io.StringIO()
    bound.export_jsonl(out)
    assert "bob" not in out.getvalue() and "alice" in out.getvalue()
    assert bound.prepare("bob billing alice billing").triggered == [ids["alice"]]
    assert bound.stats().entities == 2 and owner.stats().entities == 4  # the owner is not limited
    assert bound.wait_for_keyword_index() and bound.wait_for_vector_index()
    everything: Any = bound.engine.keyword_index
    assert "2 rows" in everything.describe()  # the in-memory index holds alice's memories only


def test_a_bound_role_writes_its_scope_only_and_never_reuses_an_id(
    vaults: tuple[Vault, Vault, dict[str, int]],
) -> None:
    owner, bound, _ = vaults
    mine = bound.remember("fact", "alice-new", "alice adds a memory", **ALICE)
    assert mine.id == 5  # past bob's ids, which it cannot see
    with pytest.raises(StorageError, match="row-level security"):
        bound.remember("fact", "bob-forged", "written into bob's scope", **BOB)
    assert owner.get_entity(mine.id) is not None and owner.stats().entities == 5
    assert {e.key for e in owner.scan(limit=100, **BOB).items} == {"bob-plan", "bob-db"}


def test_binding_names_a_real_role(pg_url: str) -> None:
    conn = connect(pg_url)
    from perseus_vault_core.storage.postgres.schema import migrate

    migrate(conn, 1_000)
    with pytest.raises(InvalidInput, match="no database role 'nobody_here'"):
        write_transaction(conn, lambda c: tenancy.bind_role(c, "nobody_here", **ALICE))
    with pytest.raises(InvalidInput, match="lower-case SQL identifier"):
        write_transaction(conn, lambda c: tenancy.bind_role(c, "x; DROP TABLE entities", **ALICE))
    conn.close()


def test_the_command_line_binds_a_role_and_a_file_has_none(pg_url: str, tmp_path: Path) -> None:
    from perseus_vault_core.cli.main import main

    role = f"cli_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    try:
        assert main(["--db", pg_url, "bind-role", role, "--agent-id", "alice"]) == 0
        with Vault(pg_url, embedder=False) as owner:
            owner.remember("fact", "a", "alice's", agent_id="alice")
            owner.remember("fact", "b", "everyone's")
        with Vault(_as(pg_url, role), embedder=False) as bound:
            assert [e.key for e in bound.scan(limit=10).items] == ["a"]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
    with (
        Vault(tmp_path / "v.db", embedder=False) as lite,
        pytest.raises(NotSupported, match="needs a PostgreSQL vault"),
    ):
        bind_role(lite, "anyone", agent_id="alice")


def test_a_bound_role_sees_and_writes_its_own_checkpoints_and_key_values_only(
    vaults: tuple[Vault, Vault, dict[str, int]],
) -> None:
    """The framework state of migration 8 carries its scope, and row-level security admits the bound role's."""
    from perseus_vault_core import ChannelBlob, Checkpoints, KeyValues

    owner, bound, _ = vaults
    for scope in (ALICE, BOB):
        Checkpoints(owner, **scope).put(
            "t",
            "",
            "1",
            parent_checkpoint_id=None,
            type="json",
            checkpoint=b"{}",
            metadata={},
            channel_versions={"c": "1"},
            blobs=[ChannelBlob("c", "1", "json", scope["agent_id"].encode())],
        )
        KeyValues(owner, **scope).put("docs", "k", {"who": scope["agent_id"]})
    # Bound to alice, with the vault's own scope filter pointed at bob: the database still shows alice's rows.
    as_bob = Checkpoints(bound, **BOB)
    bob_rows = bound.engine.read(lambda c: c.execute("SELECT agent_id FROM checkpoint_blobs").fetchall())
    assert bob_rows == [("alice",)]
    assert as_bob.get("t") is None and KeyValues(bound, **BOB).get("docs", "k") is None
    stored = Checkpoints(bound, **ALICE).get("t")
    assert stored is not None and stored.blobs[0].data == b"alice"
    with pytest.raises(StorageError, match="row-level security"):
        KeyValues(bound, **BOB).put("docs", "forged", {"who": "alice"})
    assert KeyValues(owner, **BOB).get_all("docs") == {"k": {"who": "bob"}}
