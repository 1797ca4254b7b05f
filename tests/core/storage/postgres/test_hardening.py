"""Two roles bound to two scopes (storage/postgres/tenancy.py) attack each other and the shared tables with SQL
of their own, the vault's scope filter nowhere in the way: every attack is refused or changes nothing, and the
other tenant's vault goes on working. What a bound role may do through the vault (write, purge, import, bind a
memory folder) still works."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.primitives.scopes import scope_key
from perseus_vault_core.storage.postgres import schema, tenancy
from perseus_vault_core.storage.postgres.connection import connect, write_transaction

from ....conftest import Clock, FakeEmbedder
from .test_tenancy import ALICE, BOB, _as

TOP = 2**63 - 1  # bigint's largest: an id there leaves no next id for anyone


@dataclass
class Tenants:
    url: str
    owner: Vault
    alice: Vault  # opened as alice's bound role
    bob: Vault  # opened as bob's bound role
    roles: dict[str, str]
    raw: Callable[
        [str], psycopg.Connection[Any]
    ]  # a connection of the named tenant's role, for SQL of its own

    def head(self, entity_id: int) -> int:
        """The vid of an entity's current version."""
        return int(
            self.owner.engine.read(
                lambda c: c.execute(
                    "SELECT vid FROM entity_versions WHERE entity_id = ? AND recorded_to_ms IS NULL",
                    (entity_id,),
                ).fetchone()[0]
            )
        )

    def ids(self) -> dict[str, int]:
        """Each id table's next id, as the vault reads it."""
        return self.owner.engine.read(
            lambda c: {
                t: schema.next_id(c, t, col)  # type: ignore[arg-type]
                for t, col in (("entities", "id"), ("entity_versions", "vid"), ("links", "id"))
            }
        )


def _role(url: str, name: str, scope: dict[str, str]) -> str:
    role = f"{name}_{uuid.uuid4().hex[:8]}"  # roles are the server's, not one database's: one per test
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    conn = connect(url)
    write_transaction(conn, lambda c: tenancy.bind_role(c, role, **scope))
    conn.close()
    return role


def _drop(url: str, roles: list[str]) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        for role in roles:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


@pytest.fixture
def tenants(pg_url: str, clock: Clock) -> Iterator[Tenants]:
    embedder = FakeEmbedder()
    owner = Vault(pg_url, clock=clock, embedder=embedder)
    owner.remember("fact", "first", "the owner writes the first vector", **ALICE)  # it makes the HNSW index
    roles = {"alice": _role(pg_url, "alice", ALICE), "bob": _role(pg_url, "bob", BOB)}
    opened: list[psycopg.Connection[Any]] = []

    def raw(who: str) -> psycopg.Connection[Any]:
        opened.append(psycopg.connect(_as(pg_url, roles[who]), autocommit=True))
        return opened[-1]

    alice = Vault(_as(pg_url, roles["alice"]), clock=clock, embedder=embedder)
    bob = Vault(_as(pg_url, roles["bob"]), clock=clock, embedder=embedder)
    try:
        yield Tenants(pg_url, owner, alice, bob, roles, raw)
    finally:
        for conn in opened:
            conn.close()
        for vault in (alice, bob, owner):
            vault.close()
        _drop(pg_url, list(roles.values()))


def _refused(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> str:
    """``sql`` fails as ``conn``'s role (the error's text), and leaves nothing behind."""
    with pytest.raises(psycopg.Error) as error:
        conn.execute(sql, params)
    return str(error.value)


def _changes_nothing(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> None:
    """``sql`` either fails or touches no row (row-level security hides the rows it names)."""
    try:
        assert conn.execute(sql, params).rowcount == 0, sql
    except psycopg.Error:
        pass


def test_a_bound_role_cannot_choose_an_id_so_no_tenant_is_locked_out(tenants: Tenants) -> None:
    mine = tenants.alice.remember("fact", "a1", "alice's first", **ALICE)
    other = tenants.alice.remember("fact", "a2", "alice's second", **ALICE)
    vid = tenants.head(mine.id)
    alice = tenants.raw("alice")
    key = scope_key(ALICE["agent_id"], ALICE["workspace_hash"])
    for huge in (TOP, tenants.ids()["entities"] + 5):
        message = _refused(
            alice,
            "INSERT INTO entities (id, agent_id, workspace_hash, category, key, created_at_ms, "
            "scope) VALUES (%s, 'alice', 'ws-a', 'fact', 'forged', 1, %s)",
            (huge, key),
        )
        assert "the id the vault gives next" in message
    _refused(
        alice,
        "INSERT INTO entity_versions (vid, entity_id, version, change, recorded_from_ms, type, content, "
        "tags, body, verified, recall_when, status, updated_at_ms, scope) VALUES (%s, %s, 9, 'create', 1, "
        "'fact', 'x', '', '{}', 0, '[]', 'active', 1, %s)",
        (TOP, mine.id, key),
    )
    _refused(
        alice,
        "INSERT INTO links (id, from_id, to_id, relation, weight, created_at_ms, recorded_from_ms, scope) "
        "VALUES (%s, %s, %s, 'r', 1, 1, 1, %s)",
        (TOP, mine.id, other.id, key),
    )
    for sql in (
        "UPDATE entities SET id = %s WHERE id = %s",
        "UPDATE entity_versions SET vid = %s WHERE vid = %s",
        "UPDATE entity_versions SET recorded_from_ms = %s WHERE vid = %s",
    ):
        assert "permission denied" in _refused(alice, sql, (TOP, vid if "versions" in sql else mine.id))
    for sql in (
        "SELECT setval(pg_get_serial_sequence('entities', 'id'), %s)" % (TOP - 1),
        "SELECT nextval(pg_get_serial_sequence('links', 'id'))",
    ):
        assert "permission denied" in _refused(alice, sql)
    # Ids are handed out one writer at a time, each reading the others' commits: an older snapshot would lie.
    alice.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    assert "READ COMMITTED" in _refused(
        alice,
        "INSERT INTO entities (id, agent_id, workspace_hash, category, key, "
        "created_at_ms, scope) VALUES (%s, 'alice', 'ws-a', 'fact', 'rr', 1, %s)",
        (tenants.ids()["entities"], key),
    )
    alice.execute("ROLLBACK")
    before = tenants.ids()
    theirs = tenants.bob.remember("fact", "b1", "bob still writes", **BOB)
    assert theirs.id == before["entities"]
    tenants.bob.link(theirs.id, tenants.bob.remember("fact", "b2", "and links", **BOB).id, "about", **BOB)
    # The id the vault would give next is what a bound role's own SQL may insert.
    nxt = tenants.ids()["entities"]
    alice.execute(
        "INSERT INTO entities (id, agent_id, workspace_hash, category, key, created_at_ms, scope) "
        "VALUES (%s, 'alice', 'ws-a', 'fact', 'by-hand', 1, %s)",
        (nxt, key),
    )
    assert tenants.ids()["entities"] == nxt + 1


def test_a_bound_role_leaves_the_vaults_settings_and_the_other_bindings_alone(
    tenants: Tenants, tmp_path: Path
) -> None:
    alice = tenants.raw("alice")
    dimension = tenants.owner.engine.read(
        lambda c: c.execute("SELECT value FROM vault_meta WHERE key = 'embedding_dimension'").fetchone()[0]
    )
    for sql in (
        "UPDATE vault_meta SET value = '999' WHERE key = 'embedding_dimension'",
        "DELETE FROM vault_meta WHERE key IN ('embedding_model', 'embedding_dimension', 'vault_id')",
        "INSERT INTO vault_meta VALUES ('embedding_model', 'x') ON CONFLICT (key) DO UPDATE SET value = 'x'",
        f"INSERT INTO vault_meta VALUES ('high_water:entities', '{TOP - 1}') "
        f"ON CONFLICT (key) DO UPDATE SET value = '{TOP - 1}'",
        "INSERT INTO vault_meta VALUES ('anything', 'x')",
    ):
        _changes_nothing(alice, sql)
    stored = tenants.owner.engine.read(
        lambda c: dict(c.execute("SELECT key, value FROM vault_meta").fetchall())
    )
    assert stored["embedding_dimension"] == dimension and "anything" not in stored
    assert int(stored.get("high_water:entities", 0)) < 1000
    with Vault(tenants.url, embedder=FakeEmbedder()) as again:  # every server still opens the vault
        assert again.recall("owner writes", agent_id="alice", workspace_hash="ws-a").items
    # Each tenant binds its own memory folder, and sees no other tenant's binding.
    for who, vault, scope in (("alice", tenants.alice, ALICE), ("bob", tenants.bob, BOB)):
        folder = tmp_path / who
        folder.mkdir()
        (folder / "Notes.md").write_text(f"# Notes\n\n## Work\n\n- 2026-01-01: {who} keeps notes here\n")
        vault.memory_import(folder, bind=True, **scope)
    keys = [k for (k,) in alice.execute("SELECT key FROM vault_meta WHERE key LIKE 'memory%'")]
    assert keys == ['memory_folder:["alice", "ws-a"]']
    _changes_nothing(alice, "DELETE FROM vault_meta WHERE key LIKE 'memory%bob%'")
    _changes_nothing(alice, "UPDATE vault_meta SET value = '/tmp/elsewhere' WHERE key LIKE 'memory%bob%'")
    assert tenants.bob.memory_unbind(**BOB) and tenants.alice.memory_unbind(**ALICE)


def test_each_scope_keeps_its_own_phrase_vectors_and_a_bound_role_touches_no_others(tenants: Tenants) -> None:
    tenants.bob.remember("fact", "b", "bob's billing run", recall_when=["billing run", "bob only"], **BOB)
    mine = tenants.alice.remember(
        "fact", "a", "alice's billing run", recall_when=["billing run", "alice only"], **ALICE
    )
    alice_key, bob_key = scope_key(**ALICE), scope_key(**BOB)

    def stored() -> dict[tuple[str, str], bytes]:
        return tenants.owner.engine.read(
            lambda c: {
                (s, p): bytes(e)
                for s, p, e in c.execute("SELECT scope, phrase, embedding FROM trigger_vectors")
            }
        )

    before = stored()
    assert set(before) == {
        (bob_key, "billing run"),
        (bob_key, "bob only"),
        (alice_key, "billing run"),
        (alice_key, "alice only"),
    }  # a phrase both use is kept by each
    alice = tenants.raw("alice")
    assert alice.execute("SELECT phrase FROM trigger_vectors ORDER BY phrase").fetchall() == [
        ("alice only",),
        ("billing run",),
    ]  # its own scope's
    model = tenants.owner.stats().embedding_model
    fitting = bytes(4 * FakeEmbedder.dimension)
    for sql, params in (
        ("UPDATE trigger_vectors SET embedding = %s WHERE scope = %s", (fitting, bob_key)),
        ("DELETE FROM trigger_vectors WHERE scope = %s", (bob_key,)),
        (
            "INSERT INTO trigger_vectors VALUES (%s, 'bob only', %s, %s) ON CONFLICT DO NOTHING",
            (model, fitting, bob_key),
        ),
        ("INSERT INTO trigger_vectors VALUES (%s, 'new for bob', %s, %s)", (model, fitting, bob_key)),
    ):
        _changes_nothing(alice, sql, params)
    # Its own are of the vault's model and dimension, which every reader of its scope (the owner too) expects.
    for sql, params in (
        ("UPDATE trigger_vectors SET embedding = '\\x00' WHERE scope = %s", (alice_key,)),
        ("INSERT INTO trigger_vectors VALUES ('another-model', 'odd', %s, %s)", (fitting, alice_key)),
    ):
        assert "row-level security" in _refused(alice, sql, params)
    assert stored() == before
    tenants.alice.forget(mine.id, **ALICE)
    tenants.alice.purge(mine.id, **ALICE)
    after = (
        stored()
    )  # alice's phrases are gone with her memory; bob's stay as they were, "billing run" included
    assert after == {k: v for k, v in before.items() if k[0] == bob_key}
    assert tenants.bob.recall_when("the billing run is due", **BOB).items


def test_a_bound_role_cannot_forge_or_trim_the_change_log(tenants: Tenants) -> None:
    theirs = tenants.bob.remember("fact", "b", "bob's", **BOB)
    head = tenants.head(theirs.id)
    own = tenants.head(tenants.alice.remember("fact", "a", "alice's", **ALICE).id)
    alice = tenants.raw("alice")
    key = scope_key(ALICE["agent_id"], ALICE["workspace_hash"])
    log = tenants.owner.engine.read(
        lambda c: c.execute("SELECT seq, vid, op FROM head_changes ORDER BY seq").fetchall()
    )
    for sql, params in (
        ("INSERT INTO head_changes (vid, op, scope) VALUES (0, 0, '')", None),  # "rebuild everything"
        ("INSERT INTO head_changes (vid, op, scope) VALUES (0, 3, %s)", (key,)),
        ("INSERT INTO head_changes (vid, op, scope) VALUES (%s, -1, %s)", (head, key)),  # bob's head
        ("INSERT INTO head_changes (vid, op, scope) VALUES (%s, 0, %s)", (own, key)),  # a rebuild
        ("INSERT INTO head_changes (vid, op, scope) VALUES (%s, 3, %s)", (own, key)),  # a re-embed
        ("DELETE FROM head_changes", None),
        ("UPDATE head_changes SET op = 0", None),
    ):
        _changes_nothing(alice, sql, params)
    alice.execute("SELECT pv_trim_changes()")  # the vault's trim: it keeps what the vault always keeps
    assert (
        tenants.owner.engine.read(
            lambda c: c.execute("SELECT seq, vid, op FROM head_changes ORDER BY seq").fetchall()
        )
        == log
    )
    alice.execute(
        "INSERT INTO head_changes (vid, op, scope) VALUES (%s, 2, %s)", (own, key)
    )  # as a write would
    assert tenants.owner.get_entity(theirs.id).content == "bob's"


def test_a_bound_roles_purge_and_import_keep_every_tenants_ids_ascending(tenants: Tenants) -> None:
    gone = tenants.alice.remember("fact", "gone", "to be purged", **ALICE)
    tenants.alice.forget(gone.id, **ALICE)
    tenants.alice.purge(gone.id, **ALICE)
    assert (
        tenants.bob.remember("fact", "b", "bob's", **BOB).id == gone.id + 1
    )  # the purged id is never given again
    kept = tenants.alice.remember("fact", "kept", "alice's", **ALICE)
    _changes_nothing(
        tenants.raw("alice"), "DELETE FROM entities WHERE id = %s", (kept.id,)
    )  # no purge: no delete
    # An import through a bound role gives new ids: a file's own would be the caller's choice.
    record = {
        "record": "entity",
        "id": 2**53 - 1,
        "category": "fact",
        "key": "imported",
        "created_at_ms": 1,
        "retrieval_count": 0,
        "last_accessed_ms": None,
        **ALICE,
        "versions": [
            {
                "version": 1,
                "change": "create",
                "recorded_from_ms": 1,
                "recorded_to_ms": None,
                "updated_at_ms": 1,
                "type": "fact",
                "topic_path": None,
                "content": "from a file",
                "summary": None,
                "body": {},
                "source": None,
                "verified": False,
                "certainty": None,
                "provenance_class": None,
                "recall_when": [],
                "status": "active",
                "valid_from_ms": None,
                "valid_to_ms": None,
                "expires_at_ms": None,
                "supersedes": None,
                "superseded_by": None,
            }
        ],
    }
    lines = [json.dumps({"format": 1, "record": "vault"}), json.dumps(record)]
    expected = tenants.ids()["entities"]
    assert tenants.alice.import_jsonl(io.StringIO("\n".join(lines) + "\n")).created == 1
    assert tenants.alice.scan(limit=100, **ALICE).items[-1].id == expected
    assert tenants.bob.remember("fact", "b2", "bob's next", **BOB).id == expected + 1


def test_roles_bound_before_this_schema_lose_what_they_no_longer_need(
    pg_url: str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = [step for step in schema.MIGRATIONS if step[0] <= 10]
    monkeypatch.setattr(schema, "MIGRATIONS", steps)
    with Vault(pg_url, clock=clock, embedder=False) as owner:
        owner.remember("fact", "b", "bob's", **BOB)
    role = f"alice_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:  # what binding a role granted before
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute("INSERT INTO vault_scopes VALUES (%s, 'alice', 'ws-a')", (role,))
        admin.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON entities, entity_versions, links, version_vectors, "
            f"keyword_docs, keyword_postings, head_changes, trigger_vectors, checkpoints, checkpoint_blobs, "
            f"checkpoint_writes, kv_entries TO {role}"
        )
        admin.execute(f"GRANT SELECT, INSERT, UPDATE ON vault_meta TO {role}")
        admin.execute(f"GRANT SELECT ON _migrations, vault_scopes TO {role}")
        admin.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}")
    monkeypatch.undo()
    try:
        with Vault(
            pg_url, clock=clock, embedder=False
        ) as owner:  # the owner opens it first: the new step runs
            assert owner.stats().schema_version == schema.LATEST
        with (
            Vault(_as(pg_url, role), clock=clock, embedder=False) as alice,
            psycopg.connect(_as(pg_url, role), autocommit=True) as raw,
        ):
            assert alice.remember("fact", "a", "alice's", **ALICE).id == 2
            _changes_nothing(raw, "UPDATE vault_meta SET value = 'x'")
            assert "permission denied" in _refused(
                raw, "SELECT setval(pg_get_serial_sequence('entities', 'id'), 10)"
            )
            assert "permission denied" in _refused(raw, "UPDATE entities SET id = 99")
    finally:
        _drop(pg_url, [role])
