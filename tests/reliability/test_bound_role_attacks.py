"""The attack suite: a PostgreSQL role bound to one scope (storage/postgres/tenancy.py, hardening.py) tries to reach
another scope's rows, on the real server, and reaches none.

Bob's scope holds rows in every table: memories with history, links, vectors, keyword postings, trigger phrases, a
conversation, a LangGraph checkpointer's threads (``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``), a
LangGraph store's items and a key-value collection (``kv_entries``), a memory-folder binding (``vault_meta``) and
their change-log entries. Every text bob stores holds a marker, and every row of his carries his agent or his scope
key, so that a leak shows in any row or output. Alice, connected as a role bound to her own scope, first stands a
temporary object of her session in for each table, view, function and operator the policies and the owner's
functions use (tables and views in ``pg_temp``; functions and operators of the same names; her ``search_path`` with
``pg_temp`` first), then, naming the vault's real tables, tries to read, add, change and delete bob's rows in every
table, to rebind herself, to steer the functions that run as the owner, and to make the vault's ids run out; and
again through the vault's own verbs (recall, scan, history, export, triggers, conversations, the LangGraph
checkpointer and store, writes of every kind), with the vault's own scope filter taken away. Afterwards nothing
outside her scope differs, row for row, and no output holds bob's marker.

Binding takes temporary objects away where the vault's role owns the database, so these attacks first grant them
back to alice, as a database the vault's role does not own would leave them (a test does that too): the pinned
functions must hold on their own. A database migrated by the code before step 12 is upgraded on open, and the
attack that worked on it fails after.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from perseus_vault_core import KeyValues, Vault, VaultError, bind_role
from perseus_vault_core.primitives import filters
from perseus_vault_core.primitives.scopes import scope_key
from perseus_vault_core.state.checkpoints import Checkpoints
from perseus_vault_core.storage import trigger_terms
from perseus_vault_core.storage.postgres import schema

from ..conftest import Clock, FakeEmbedder, new_database
from ..core.storage.postgres.test_tenancy import _as

ALICE = {"agent_id": "alice", "workspace_hash": "ws-a"}
BOB = {"agent_id": "bob", "workspace_hash": "ws-b"}
CAROL = {"agent_id": "carol", "workspace_hash": "ws-c"}  # the owner's first memory: it makes the HNSW index
MARK = "bobsecret7741"  # in every text bob stores; "bob" is in every row of his (agent id, scope key)
PHRASES = ["launch window", "bob only phrase"]
FORGED = 2**63 - 11  # what a shadow says the ids have reached: an id past it leaves none for anyone
TABLES = (
    "vault_meta",
    "entities",
    "entity_versions",
    "links",
    "head_changes",
    "version_vectors",
    "trigger_vectors",
    "keyword_docs",
    "keyword_postings",
    "vault_scopes",
    "_migrations",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "kv_entries",
    "trigger_terms",
)


@dataclass
class World:
    url: str
    owner: Vault
    roles: dict[str, str]
    bob: dict[str, Any] = field(default_factory=dict)  # bob's ids and names, as an attacker could guess them
    opened: list[psycopg.Connection[Any]] = field(default_factory=list)
    _admin: psycopg.Connection[Any] | None = None

    def admin(self) -> psycopg.Connection[Any]:
        """The owner's connection (the server's administrator, who made the vault)."""
        if self._admin is None:
            self._admin = psycopg.connect(self.url, autocommit=True)
            self.opened.append(self._admin)
        return self._admin

    def raw(self, who: str) -> psycopg.Connection[Any]:
        """A connection of ``who``'s role, for SQL of its own."""
        self.opened.append(psycopg.connect(_as(self.url, self.roles[who]), autocommit=True))
        return self.opened[-1]

    def grant_temporary(self, who: str) -> None:
        grant_temporary(self.url, self.roles[who])

    def outside(self, scope: dict[str, str] = ALICE) -> dict[str, Any]:
        """Every row of every table but those of ``scope``, and the ids the vault gives next, read by the owner."""
        own = scope_key(**scope)
        admin = self.admin()
        out: dict[str, Any] = {}
        keyed = {
            t
            for (t,) in admin.execute(
                "SELECT table_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND column_name = 'scope'"
            )
        }
        for table in TABLES:
            scoped = table in keyed
            rows = admin.execute(
                f"SELECT * FROM {table}" + (" WHERE scope <> %s" if scoped else ""),
                (own,) if scoped else None,
            ).fetchall()
            out[table] = sorted(map(repr, rows))
        out["next ids"] = [
            admin.execute("SELECT pv_next_id(%s, %s)", pair).fetchone()[0]
            for pair in (("entities", "id"), ("entity_versions", "vid"), ("links", "id"))
        ]
        return out


def _role(url: str, name: str) -> str:
    role = f"{name}_{uuid.uuid4().hex[:8]}"  # roles are the server's, not one database's: one per run
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
    return role


def _drop_roles(url: str, roles: list[str]) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        for role in roles:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def grant_temporary(url: str, role: str) -> None:
    """``role`` may create temporary objects again, as on a database the vault's role does not own."""
    with psycopg.connect(url, autocommit=True) as admin:
        database = admin.execute("SELECT quote_ident(current_database())").fetchone()[0]
        admin.execute(f"GRANT TEMPORARY ON DATABASE {database} TO {role}")


def _mentions_bob(row: Any) -> bool:
    """Whether a row's text (not its bytes, which may spell anything) names bob: his agent id, his scope key."""
    return any("bob" in str(value) for value in row if not isinstance(value, (bytes, memoryview)))


def _fill_bob(world: World, bob: Vault, folder: Path) -> None:
    """Rows of bob's in every table, written through his own role and the adapters."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.store.base import PutOp

    from perseus_vault_integrations.langchain import PerseusVaultSaver, PerseusVaultStore

    first = bob.remember("fact", "launch", f"Bob's launch code is 7741 {MARK}", recall_when=PHRASES, **BOB)
    bob.remember("fact", "launch", f"Bob's launch code is 7742 now {MARK}", recall_when=PHRASES, **BOB)
    second = bob.remember("fact", "rocket", f"the rocket waits for the launch {MARK}", **BOB)
    bob.link(first.id, second.id, "about", **BOB)
    bob.remember_conversation("bob-chat", [{"speaker": "bob", "text": f"the code is 7741 {MARK}"}], **BOB)
    PerseusVaultStore(bob, **BOB).batch([PutOp(("bob",), "secret", {"text": f"store item {MARK}"})])
    (folder / "Notes.md").write_text(f"# Notes\n\n## Work\n\n- 2026-01-01: bob keeps notes here {MARK}\n")
    bob.memory_import(folder, bind=True, **BOB)
    gone = bob.remember("fact", "gone", f"purged {MARK}", **BOB)
    bob.forget(gone.id, **BOB)
    bob.purge(gone.id, **BOB)  # the last id given: it records every table's high-water mark
    saver = PerseusVaultSaver(
        bob, **BOB
    )  # a LangGraph thread: a checkpoint, its channel's value, a pending write
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"], checkpoint["channel_versions"] = {"secret": MARK}, {"secret": 1}
    config = saver.put(
        {"configurable": {"thread_id": "bob-thread", "checkpoint_ns": ""}},
        checkpoint,
        {"source": "input", "step": 1},
        {"secret": 1},
    )
    saver.put_writes(config, [("secret", f"pending {MARK}")], "task-1")
    KeyValues(bob, **BOB).put("bob-docs", "k", {"secret": MARK})
    vids = world.owner.engine.read(
        lambda c: [
            v
            for (v,) in c.execute(
                "SELECT vid FROM entity_versions WHERE scope = ? ORDER BY vid", (scope_key(**BOB),)
            )
        ]
    )
    world.bob.update(
        entity=first.id,
        other=second.id,
        vids=vids,
        key=scope_key(**BOB),
        model=world.owner.stats().embedding_model,
    )


@pytest.fixture(scope="module")
def world(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    clock, embedder = Clock(), FakeEmbedder()
    with new_database(pg_server) as url:
        roles = {"alice": _role(url, "alice"), "bob": _role(url, "bob")}
        owner = Vault(url, clock=clock, embedder=embedder)
        world = World(url, owner, roles)
        try:
            owner.remember("fact", "first", "the owner writes the first vector", **CAROL)
            for who, scope in (("alice", ALICE), ("bob", BOB)):
                bind_role(owner, roles[who], **scope)
            with Vault(_as(url, roles["alice"]), clock=clock, embedder=embedder) as alice:
                alice.remember(
                    "fact", "mine", "alice keeps her own notes", recall_when=["launch window"], **ALICE
                )
            with Vault(_as(url, roles["bob"]), clock=clock, embedder=embedder) as bob:
                _fill_bob(world, bob, tmp_path_factory.mktemp("bob-notes"))
            world.admin().execute("ANALYZE")  # statistics exist: pg_stats must not show bob's values to alice
            yield world
        finally:
            for conn in world.opened:
                conn.close()
            owner.close()
            _drop_roles(url, list(roles.values()))


# --- the stand-ins a bound role's session makes -------------------------------------------------------


def _schema(conn: psycopg.Connection[Any]) -> str:
    return str(conn.execute("SELECT quote_ident(current_schema())").fetchone()[0])


def shadow_tables(world: World, s: str) -> list[str]:
    """Every table of the vault, and ``pg_sequences``, as a temporary table: the binding says alice is bob, the
    settings and the ids say the ids have run out, and no version uses bob's phrases."""
    key = world.bob["key"]
    return [
        *(f"CREATE TEMP TABLE {t} (LIKE {s}.{t} INCLUDING DEFAULTS)" for t in TABLES),
        "CREATE TEMP TABLE pg_sequences (schemaname name, sequencename name, last_value bigint)",
        "INSERT INTO pg_temp.vault_scopes VALUES (current_user, 'bob', 'ws-b')",
        "INSERT INTO pg_temp.vault_meta VALUES "
        + ", ".join(f"('high_water:{t}', '{FORGED}')" for t in ("entities", "entity_versions", "links"))
        + ", ('embedding_model', 'forged'), ('embedding_dimension', '1')",
        f"INSERT INTO pg_temp.entities (id, agent_id, workspace_hash, category, key, created_at_ms, scope) "
        f"VALUES ({FORGED}, 'bob', 'ws-b', 'fact', 'forged', 1, '{key}')",
        f"INSERT INTO pg_temp.pg_sequences SELECT '{s.strip(chr(34))}', relname, {FORGED} FROM pg_catalog.pg_class "
        "WHERE relkind = 'S'",
    ]


def shadow_views(world: World, s: str) -> list[str]:
    """The binding and ``pg_sequences`` as temporary views."""
    return [
        "CREATE TEMP VIEW vault_scopes AS SELECT CAST(current_user AS name) AS role, text 'bob' AS agent_id, "
        "text 'ws-b' AS workspace_hash",
        f"CREATE TEMP VIEW pg_sequences AS SELECT name '{s.strip(chr(34))}' AS schemaname, relname AS sequencename, "
        f"bigint '{FORGED}' AS last_value FROM pg_catalog.pg_class WHERE relkind = 'S'",
    ]


# What each kind of function answers when an attacker writes it: whatever lets the attack through.
_FORGED_RESULT = {
    "text": "'{key}'",
    "boolean": "true",
    "bigint": str(FORGED),
    "integer": "4",
    "double precision": "1.0",
    "void": "",
    "regclass": "NULL",
}
# PostgreSQL's own functions the policies' functions call, with what a stand-in answers.
BUILTINS = (
    ("current_setting(text)", "text", "'read committed'"),
    ("starts_with(text, text)", "boolean", "true"),
    ("pg_advisory_xact_lock(bigint)", "void", ""),
    ("substr(text, integer)", "text", '\'["bob", "ws-b"]\''),
    ("octet_length(text)", "integer", "3"),
    ("length(bytea)", "integer", "4"),
    ("pg_get_serial_sequence(text, text)", "text", "NULL"),
    ("pg_sequence_last_value(regclass)", "bigint", str(FORGED)),
    ("jsonb_build_array(text, text)", "jsonb", '\'["bob", "ws-b"]\''),
)


def shadow_functions(world: World, s: str) -> list[str]:
    """A temporary function in place of every function of the vault's schema (but triggers) and of PostgreSQL's own
    that they call, each answering what helps the attacker."""
    conn = world.admin()
    vault = conn.execute(
        "SELECT p.proname, pg_get_function_identity_arguments(p.oid), format_type(p.prorettype, NULL) FROM pg_proc p "
        "WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'pv\\_%' "
        "AND p.prorettype <> 'trigger'::regtype"
    ).fetchall()
    assert len(vault) >= 8, vault
    stand_ins = [
        (f"{name}({args})", kind, _FORGED_RESULT[kind].format(key=world.bob["key"]))
        for name, args, kind in vault
    ]
    return [
        f"CREATE FUNCTION pg_temp.{signature} RETURNS {kind} LANGUAGE sql AS $$ "
        + (f"SELECT CAST({answer} AS {kind})" if answer else "SELECT")
        + " $$"
        for signature, kind, answer in (*stand_ins, *BUILTINS)
    ]


# The operators the policies and the functions use, each as a temporary one that is always true.
OPERATORS = (
    ("=", "text", "text"),
    ("=", "bigint", "bigint"),
    ("<=", "bigint", "bigint"),
    ("<>", "text", "text"),
    ("~~", "text", "text"),
    ("@>", "jsonb", "jsonb"),
    ("=", "jsonb", "jsonb"),
    ("=", "name", "name"),
)


def shadow_operators(world: World, s: str) -> list[str]:
    made = [
        f"CREATE FUNCTION pg_temp.pv_always(a {left}, b {right}) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$"
        for left, right in sorted({(left, right) for _, left, right in OPERATORS})
    ]
    return made + [
        f"CREATE OPERATOR pg_temp.{op} (LEFTARG = {left}, RIGHTARG = {right}, FUNCTION = pg_temp.pv_always)"
        for op, left, right in OPERATORS
    ]


def shadow_everything(world: World, s: str) -> list[str]:
    return shadow_tables(world, s) + shadow_functions(world, s) + shadow_operators(world, s)


SHADOWS: dict[str, Callable[[World, str], list[str]]] = {
    "none": lambda world, s: [],
    "tables": shadow_tables,
    "views": shadow_views,
    "functions": shadow_functions,
    "operators": shadow_operators,
    "everything": shadow_everything,
}


def install(world: World, conn: Any, shadows: str, s: str) -> None:
    """Make ``shadows``' stand-ins in ``conn``'s session (the vault's schema ``s``), every one of them (none may fail
    quietly), and put ``pg_temp`` first in its search path, the catalog last."""
    for sql in SHADOWS[shadows](world, s):
        conn.execute(sql)
    conn.execute(f"SET search_path = pg_temp, {s}, pg_catalog")
    if shadows in ("tables", "views", "everything"):  # the session itself now reads the stand-in
        assert conn.execute("SELECT agent_id FROM vault_scopes").fetchall() == [("bob",)]


# --- the attacks ------------------------------------------------------------------------------------


def attacks(world: World, s: str) -> list[tuple[str, Any]]:
    """Statements that would add, change or delete rows of bob's, or rebind alice, or run the ids out."""
    b, key, vid = world.bob, world.bob["key"], world.bob["vids"][-1]
    fitting = bytes(4 * FakeEmbedder.dimension)
    next_ids = world.outside()["next ids"]
    adds = [
        (
            f"INSERT INTO {s}.entities (id, agent_id, workspace_hash, category, key, created_at_ms, scope) "
            "VALUES (%s, 'bob', 'ws-b', 'fact', 'forged', 1, %s)",
            (next_ids[0], key),
        ),
        (
            f"INSERT INTO {s}.entity_versions (vid, entity_id, version, change, recorded_from_ms, type, content, tags, body, "
            "verified, recall_when, status, updated_at_ms, scope) VALUES (%s, %s, 9, 'update', 1, 'fact', 'forged', '', "
            "'{}', 0, '[]', 'active', 1, %s)",
            (next_ids[1], b["entity"], key),
        ),
        (
            f"INSERT INTO {s}.links (id, from_id, to_id, relation, weight, created_at_ms, recorded_from_ms, scope) "
            "VALUES (%s, %s, %s, 'forged', 1, 1, 1, %s)",
            (next_ids[2], b["entity"], b["other"], key),
        ),
        (
            f"INSERT INTO {s}.version_vectors (vid, embedding, bits, vec, scope) VALUES (%s, %s, %s, NULL, %s) "
            "ON CONFLICT (vid, scope) DO UPDATE SET embedding = excluded.embedding",
            (vid, fitting, b"\x00", key),
        ),
        (
            f"INSERT INTO {s}.keyword_docs (vid, entity_id, agent_id, workspace_hash, head, length, scope) "
            "VALUES (%s, %s, 'bob', 'ws-b', true, 1, %s) ON CONFLICT (vid, scope) DO UPDATE SET head = false",
            (vid, b["entity"], key),
        ),
        (
            f"INSERT INTO {s}.keyword_postings (term, vid, freq, length, entity_id, agent_id, workspace_hash, head, scope) "
            "VALUES ('forged', %s, 1, 1, %s, 'bob', 'ws-b', true, %s)",
            (vid, b["entity"], key),
        ),
        (
            f"INSERT INTO {s}.checkpoints (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, type, "
            "checkpoint, channel_versions, metadata, scope) VALUES ('bob', 'ws-b', 'bob-thread', '', '1', 'json', "
            "'\\x00', '{}', '{}', %s) ON CONFLICT DO NOTHING",
            (key,),
        ),
        (
            f"INSERT INTO {s}.checkpoint_blobs (agent_id, workspace_hash, thread_id, checkpoint_ns, channel, version, "
            "type, blob, scope) VALUES ('bob', 'ws-b', 'forged', '', 'c', '1', 'json', NULL, %s)",
            (key,),
        ),
        (
            f"INSERT INTO {s}.checkpoint_writes (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, "
            "task_id, idx, channel, type, blob, scope) VALUES ('bob', 'ws-b', 'forged', '', '1', 't', 0, 'c', 'json', "
            "'\\x00', %s)",
            (key,),
        ),
        (
            f"INSERT INTO {s}.kv_entries (agent_id, workspace_hash, collection, key, value, updated_at_ms, scope) "
            "VALUES ('bob', 'ws-b', 'bob-docs', 'k', '\"forged\"', 1, %s) ON CONFLICT (agent_id, workspace_hash, "
            "collection, key, scope) DO UPDATE SET value = excluded.value",
            (key,),
        ),
        (
            f"INSERT INTO {s}.trigger_vectors (model, phrase, embedding, scope) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (model, phrase, scope) DO UPDATE SET embedding = excluded.embedding",
            (b["model"], PHRASES[1], fitting, key),
        ),
        (
            f"INSERT INTO {s}.trigger_vectors (model, phrase, embedding) VALUES (%s, 'forged phrase', %s)",
            (b["model"], fitting),
        ),
        (f"INSERT INTO {s}.head_changes (vid, op, scope) VALUES (%s, -1, %s)", (vid, key)),
        (
            f"INSERT INTO {s}.vault_meta (key, value) VALUES ('memory_folder:[\"bob\", \"ws-b\"]', '/tmp/forged') "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            None,
        ),
        (
            f"INSERT INTO {s}.vault_scopes VALUES (current_user, 'bob', 'ws-b') ON CONFLICT (role) "
            "DO UPDATE SET agent_id = 'bob', workspace_hash = 'ws-b'",
            None,
        ),
        (f"INSERT INTO {s}._migrations VALUES (999, 'forged', 1)", None),
        # Its own scope's row, at the id a shadow says comes next: every later id would be past bigint's end.
        (
            f"INSERT INTO {s}.entities (id, agent_id, workspace_hash, category, key, created_at_ms, scope) "
            "VALUES (%s, 'alice', 'ws-a', 'fact', 'last id', 1, %s)",
            (FORGED + 1, scope_key(**ALICE)),
        ),
    ]
    changes = [
        (f"UPDATE {s}.entities SET retrieval_count = 999, last_accessed_ms = 1 WHERE agent_id = 'bob'", None),
        (
            f"UPDATE {s}.entity_versions SET recorded_to_ms = 1 WHERE scope = %s AND recorded_to_ms IS NULL",
            (key,),
        ),
        (f"UPDATE {s}.links SET recorded_to_ms = 1 WHERE scope = %s", (key,)),
        (f"UPDATE {s}.version_vectors SET embedding = %s WHERE scope = %s", (fitting, key)),
        *(
            (f"UPDATE {s}.{t} SET head = false WHERE scope = %s", (key,))
            for t in ("keyword_docs", "keyword_postings")
        ),
        (f"UPDATE {s}.checkpoints SET metadata = '{{}}' WHERE agent_id = 'bob'", None),
        (f"UPDATE {s}.checkpoint_blobs SET blob = NULL WHERE agent_id = 'bob'", None),
        (f"UPDATE {s}.checkpoint_writes SET blob = '\\x00' WHERE agent_id = 'bob'", None),
        (f"UPDATE {s}.kv_entries SET value = '\"forged\"' WHERE agent_id = 'bob'", None),
        (f"UPDATE {s}.trigger_vectors SET embedding = %s WHERE phrase = ANY(%s)", (fitting, PHRASES)),
        (f"UPDATE {s}.head_changes SET op = 0", None),
        (f"UPDATE {s}.vault_meta SET value = '/tmp/forged' WHERE key LIKE 'memory_folder:%%bob%%'", None),
        (f"UPDATE {s}.vault_meta SET value = %s WHERE key LIKE 'high_water:%%'", (str(FORGED),)),
        (f"UPDATE {s}.vault_scopes SET agent_id = 'bob', workspace_hash = 'ws-b'", None),
        (f"UPDATE {s}._migrations SET name = 'forged'", None),
    ]
    deletes = [
        (f"DELETE FROM {s}.{t} WHERE scope = %s", (key,))
        for t in TABLES
        if t not in ("vault_meta", "vault_scopes", "_migrations")
    ]
    deletes += [
        (f"DELETE FROM {s}.trigger_vectors WHERE phrase = ANY(%s)", (PHRASES,)),
        (f"DELETE FROM {s}.vault_meta WHERE key LIKE '%%bob%%' OR key LIKE 'high_water:%%'", None),
        (f"DELETE FROM {s}.vault_scopes WHERE role <> current_user", None),
        (f"DELETE FROM {s}._migrations", None),
    ]
    # The functions that run as the owner, with the stand-ins in place (and those of before step 12).
    functions = [
        *((f"SELECT {s}.pv_keep_high_water(%s)", (t,)) for t in ("entities", "entity_versions", "links")),
        (f"SELECT {s}.pv_trim_changes()", None),
        (f"SELECT {s}.pv_forget_phrases(%s)", (PHRASES,)),
        (
            f"SELECT {s}.pv_add_phrase_vectors('forged', ARRAY['forged phrase', %s], ARRAY[%s, %s])",
            (PHRASES[1], b"\x00" * 4, b"\x00" * 4),
        ),
    ]
    return adds + changes + deletes + functions


def _attempt(conn: psycopg.Connection[Any], sql: str, params: Any) -> None:
    """Run one attack in a transaction of its own; an error is the database refusing it."""
    try:
        conn.execute(sql, params)
    except psycopg.Error:
        pass


def leaks(world: World, conn: psycopg.Connection[Any], s: str) -> list[str]:
    """What of bob's ``conn`` reads: a row of any table holding "bob", a function that answers as if alice were bob,
    a notice a leaky function of hers raised on bob's text, a statistic of bob's values."""
    found = []
    for table in TABLES:
        found += [
            f"{table}: {row!r}" for row in conn.execute(f"SELECT * FROM {s}.{table}") if _mentions_bob(row)
        ]
    found += [
        f"pv_bound_scope() = {scope!r}"
        for (scope,) in conn.execute(f"SELECT {s}.pv_bound_scope()")
        if scope != scope_key(**ALICE)
    ]
    if conn.execute(f"SELECT {s}.pv_version_visible(%s)", (world.bob["vids"][0],)).fetchone()[0]:
        found.append("pv_version_visible says bob's version is visible")
    if conn.execute(f"SELECT {s}.pv_own_meta(%s)", ('memory_folder:["bob", "ws-b"]',)).fetchone()[0]:
        found.append("pv_own_meta says bob's memory folder is alice's")
    found += [
        f"pg_stats: {row!r}"
        for row in conn.execute("SELECT * FROM pg_catalog.pg_stats WHERE schemaname = %s", (s.strip('"'),))
        if _mentions_bob(row)
    ]
    notices: list[str] = []
    conn.add_notice_handler(lambda diagnostic: notices.append(str(diagnostic.message_primary)))
    conn.execute(
        "CREATE FUNCTION pg_temp.pv_leak(t text) RETURNS boolean LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE NOTICE '%', t; RETURN true; END $$"
    )
    conn.execute(f"SELECT count(*) FROM {s}.entity_versions WHERE pg_temp.pv_leak(content)")
    found += [f"a notice: {n}" for n in notices if MARK in n]
    return found


@pytest.mark.parametrize("shadows", list(SHADOWS))
def test_a_bound_role_with_its_own_stand_ins_reads_and_changes_nothing_of_another_scope(
    world: World, shadows: str
) -> None:
    world.grant_temporary("alice")
    before = world.outside()
    alice = world.raw("alice")
    s = _schema(alice)
    install(world, alice, shadows, s)
    for sql, params in attacks(world, s):
        _attempt(alice, sql, params)
    assert leaks(world, alice, s) == []
    assert world.outside() == before
    assert alice.execute(f"SELECT {s}.pv_next_id('entities', 'id')").fetchone()[0] == before["next ids"][0]


def test_through_the_vaults_own_verbs_with_the_scope_filter_gone(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alice's vault, one connection in its pool carrying her stand-ins, its own scope filter taken away, asks for
    bob's rows and writes into his scope with every verb: it reads none, and writes none."""
    from langgraph.store.base import GetOp, PutOp, SearchOp

    from perseus_vault_integrations.langchain import PerseusVaultSaver, PerseusVaultStore

    world.grant_temporary("alice")
    before = world.outside()
    b = world.bob
    monkeypatch.setattr(filters, "scope_clauses", lambda *args: [])
    url = _as(world.url, world.roles["alice"])
    url += ("&" if "?" in url else "?") + "pool_size=1"
    seen: list[str] = []
    with Vault(url, embedder=FakeEmbedder(), keyword_index=False, vector_index=False) as alice:
        conn = alice.engine.conn()  # the pool's one connection: every verb below runs on it
        for sql in [
            *shadow_views(world, _schema(conn.raw)),
            *shadow_functions(world, _schema(conn.raw)),
            *shadow_operators(world, _schema(conn.raw)),
        ]:
            conn.raw.execute(sql)
        reads: list[Callable[[], Any]] = [
            *(
                lambda m=m, k=k: alice.recall("launch code rocket store notes", mode=m, reinforce=False, **k)
                for m in ("fts5", "dense", "hybrid")
                for k in (BOB, {})
            ),
            lambda: alice.scan(limit=100, **BOB),
            lambda: alice.scan(limit=100),
            lambda: alice.get_entity(b["entity"]),
            lambda: alice.traverse(b["entity"]),
            lambda: alice.history("fact", "launch", **BOB),
            lambda: alice.recall_when("the launch window", **BOB),
            lambda: alice.prepare("the launch window is near", **BOB),
            lambda: alice.conversation("bob-chat", **BOB),
            lambda: alice.list_memory_files(**BOB),
            lambda: alice.stats(),
            lambda: (lambda out: (alice.export_jsonl(out), out.getvalue()))(io.StringIO()),
            lambda: Checkpoints(alice, **BOB).get("bob-thread"),
            lambda: KeyValues(alice, **BOB).get_all("bob-docs"),
            lambda: PerseusVaultSaver(alice, **BOB).get_tuple({"configurable": {"thread_id": "bob-thread"}}),
            lambda: PerseusVaultStore(alice, **BOB).batch(
                [GetOp(("bob",), "secret"), SearchOp(("bob",), query="item")]
            ),
        ]
        writes: list[Callable[[], Any]] = [
            lambda: alice.remember("fact", "forged", "written into bob's scope", **BOB),
            lambda: alice.remember("fact", "launch", "bob's memory, rewritten", **BOB),
            lambda: alice.forget(b["entity"], **BOB),
            lambda: alice.purge(b["entity"], **BOB),
            lambda: alice.link(b["entity"], b["other"], "forged", **BOB),
            lambda: alice.unlink(b["entity"], b["other"], "about", **BOB),
            lambda: alice.remember_conversation("bob-chat", [{"speaker": "x", "text": "forged"}], **BOB),
            lambda: KeyValues(alice, **BOB).put("bob-docs", "k", {"forged": True}),
            lambda: KeyValues(alice, **BOB).delete("bob-docs", "k"),
            lambda: Checkpoints(alice, **BOB).delete_thread("bob-thread"),
            lambda: PerseusVaultStore(alice, **BOB).batch([PutOp(("bob",), "secret", {"text": "forged"})]),
            lambda: PerseusVaultStore(alice, **BOB).batch([PutOp(("bob",), "secret", None)]),
        ]
        for call in reads + writes:
            try:
                seen.append(repr(call()))
            except VaultError as error:  # refused: the database's row-level security, or nothing found
                seen.append(str(error))
        assert conn.raw.execute("SELECT agent_id FROM vault_scopes").fetchall() == [
            ("bob",)
        ]  # the stand-in held
    assert [out for out in seen if MARK in out or "bob's launch" in out.lower()] == []
    assert world.outside() == before


# --- what binding takes away, what a database the vault's role does not own keeps -----------------------


def test_binding_takes_temporary_objects_away_where_the_vault_owns_the_database(
    pg_url: str, clock: Clock
) -> None:
    role = _role(pg_url, "alice")
    try:
        with Vault(pg_url, clock=clock, embedder=False) as owner:
            binding = bind_role(owner, role, **ALICE)
        assert binding.temporary_objects is False
        with psycopg.connect(_as(pg_url, role), autocommit=True) as alice:
            for sql in (
                "CREATE TEMP TABLE vault_scopes (role name, agent_id text, workspace_hash text)",
                "CREATE TEMP VIEW vault_scopes AS SELECT 1",
                "CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
                "CREATE TABLE public.vault_scopes_2 (x int)",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    alice.execute(sql)
        with psycopg.connect(pg_url, autocommit=True) as admin:  # PUBLIC no longer holds TEMPORARY here
            public = admin.execute(
                "SELECT count(*) FROM pg_database d, aclexplode(d.datacl) a WHERE d.datname = "
                "current_database() AND a.grantee = 0 AND a.privilege_type = 'TEMPORARY'"
            ).fetchone()
            assert public == (0,)
    finally:
        _drop_roles(pg_url, [role])


def test_where_the_vaults_role_does_not_own_the_database_the_pinned_functions_hold(
    pg_url: str, clock: Clock
) -> None:
    """A vault made by a role that owns neither the database nor its schema (a managed database, say): binding
    leaves temporary objects where they were and says so, and a stand-in binding still binds nothing."""
    roles = {"owner": _role(pg_url, "vowner"), "alice": _role(pg_url, "alice"), "bob": _role(pg_url, "bob")}
    try:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"GRANT CREATE ON SCHEMA public TO {roles['owner']}")
        with Vault(_as(pg_url, roles["owner"]), clock=clock, embedder=False) as owner:
            binding = bind_role(owner, roles["alice"], **ALICE)
            bind_role(owner, roles["bob"], **BOB)
            owner.remember("fact", "launch", f"Bob's launch code is 7741 {MARK}", **BOB)
            with psycopg.connect(_as(pg_url, roles["alice"]), autocommit=True) as alice:
                alice.execute(
                    "CREATE TEMP TABLE vault_scopes (role name, agent_id text, workspace_hash text)"
                )
                alice.execute("INSERT INTO vault_scopes VALUES (current_user, 'bob', 'ws-b')")
                assert alice.execute("SELECT public.pv_bound_scope()").fetchone() == (scope_key(**ALICE),)
                assert alice.execute("SELECT content FROM public.entity_versions").fetchall() == []
                with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
                    alice.execute(
                        "INSERT INTO public.kv_entries (agent_id, workspace_hash, collection, key, value, "
                        "updated_at_ms, scope) VALUES ('bob', 'ws-b', 'c', 'k', '1', 1, %s)",
                        (scope_key(**BOB),),
                    )
        assert binding.temporary_objects is True  # and the binding says so
    finally:
        _drop_roles(pg_url, list(roles.values()))


def test_every_function_a_policy_calls_or_that_runs_as_the_owner_pins_its_search_path(pg_url: str) -> None:
    with Vault(pg_url, embedder=False), psycopg.connect(pg_url, autocommit=True) as conn:
        s = _schema(conn)
        rows = conn.execute(
            "SELECT p.oid::regprocedure::text, p.prosecdef, coalesce(p.proconfig, '{}'), "
            "EXISTS (SELECT 1 FROM pg_depend d WHERE d.refobjid = p.oid AND d.classid = 'pg_policy'::regclass) "
            "FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'pv\\_%'"
        ).fetchall()
        pinned = f"search_path=pg_catalog, {s}, pg_temp"  # the catalog first, the session's own objects last
        by_policy = {name for name, _, _, used in rows if used}
        assert {"pv_bound_scope()", "pv_given_id(text,text,bigint)", "pv_own_meta(text)"} <= by_policy
        loose = [name for name, definer, config, used in rows if (definer or used) and pinned not in config]
        assert loose == []
        # Every function of the vault's but pv_decay (inlined into its callers, it reads no table) is pinned.
        assert sorted(name for name, _, config, _ in rows if pinned not in config) == [
            "pv_decay(bigint,bigint,bigint,bigint)"
        ]
        bodies = dict(
            conn.execute(
                "SELECT p.oid::regprocedure::text, p.prosrc FROM pg_proc p "
                "WHERE p.pronamespace = current_schema()::regnamespace"
            ).fetchall()
        )
    unqualified = [
        (name, table)
        for name, body in bodies.items()
        for table in re.findall(r"\b(?:FROM|JOIN|INTO|UPDATE|EXISTS)\s+(\w+)", body, re.IGNORECASE)
        if table in TABLES
    ]
    assert unqualified == []  # every table a function reads is named with its schema


# --- a database made before step 12 ------------------------------------------------------------------

# What binding a role granted before step 12 (tenancy.grant as it was), run as it ran then.
_GRANTED_BEFORE = """
REVOKE ALL ON entities, entity_versions, links, version_vectors, keyword_docs, keyword_postings, checkpoints,
    checkpoint_blobs, checkpoint_writes, kv_entries, head_changes, trigger_vectors, vault_meta, _migrations,
    vault_scopes FROM {role};
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT ON entities, entity_versions, links, version_vectors, keyword_docs, keyword_postings, checkpoints,
    checkpoint_blobs, checkpoint_writes, kv_entries, head_changes, trigger_vectors, vault_meta, _migrations,
    vault_scopes TO {role};
GRANT INSERT, DELETE ON entities, entity_versions, links, version_vectors, keyword_docs, keyword_postings,
    checkpoints, checkpoint_blobs, checkpoint_writes, kv_entries, vault_meta TO {role};
GRANT INSERT ON head_changes TO {role};
GRANT UPDATE ON checkpoints, checkpoint_blobs, checkpoint_writes, kv_entries, vault_meta TO {role};
GRANT UPDATE (retrieval_count, last_accessed_ms) ON entities TO {role};
GRANT UPDATE (recorded_to_ms) ON entity_versions TO {role};
GRANT UPDATE (recorded_to_ms) ON links TO {role};
GRANT UPDATE (embedding, bits, vec) ON version_vectors TO {role};
GRANT UPDATE (head) ON keyword_docs TO {role};
GRANT UPDATE (head) ON keyword_postings TO {role};
GRANT EXECUTE ON FUNCTION pv_next_id(text, text), pv_keep_high_water(text), pv_add_phrase_vectors(text, text[],
    bytea[]), pv_forget_phrases(text[]), pv_trim_changes() TO {role};
"""


def test_a_database_made_before_step_12_is_upgraded_on_open(
    pg_url: str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(schema, "MIGRATIONS", [step for step in schema.MIGRATIONS if step[0] <= 11])
    monkeypatch.setattr(trigger_terms, "write", lambda *a, **k: None)  # step 14's index: not there yet
    roles = {"alice": _role(pg_url, "alice"), "bob": _role(pg_url, "bob")}
    try:
        with Vault(
            pg_url, clock=clock, embedder=False
        ) as owner:  # the schema, and rows, as step 11 left them
            owner.remember("fact", "mine", "alice's notes", recall_when=["launch window"], **ALICE)
            owner.remember("fact", "launch", f"Bob's launch code is 7741 {MARK}", recall_when=PHRASES, **BOB)
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for who, scope in (("alice", ALICE), ("bob", BOB)):
                admin.execute("INSERT INTO vault_scopes VALUES (%s, %s, %s)", (roles[who], *scope.values()))
                admin.execute(_GRANTED_BEFORE.format(role=roles[who]))
            # Phrase vectors were one per phrase, whoever used it; one no version uses any more is dropped.
            vectors = {p: bytes([i]) * 4 * FakeEmbedder.dimension for i, p in enumerate([*PHRASES, "unused"])}
            for phrase, vector in vectors.items():
                admin.execute(
                    "INSERT INTO trigger_vectors VALUES (%s, %s, %s)", (FakeEmbedder.identity, phrase, vector)
                )
            admin.execute(
                "INSERT INTO vault_meta VALUES ('embedding_model', %s), ('embedding_dimension', %s)",
                (FakeEmbedder.identity, str(FakeEmbedder.dimension)),
            )
        with psycopg.connect(_as(pg_url, roles["alice"]), autocommit=True) as alice:  # the attack worked then
            alice.execute("CREATE TEMP TABLE vault_scopes (role name, agent_id text, workspace_hash text)")
            alice.execute("INSERT INTO vault_scopes VALUES (current_user, 'bob', 'ws-b')")
            assert MARK in repr(alice.execute("SELECT content FROM public.entity_versions").fetchall())
        monkeypatch.undo()

        with Vault(pg_url, clock=clock, embedder=FakeEmbedder()) as owner:  # the owner opens it: step 12 runs
            assert owner.stats().schema_version == schema.LATEST
            stored = owner.engine.read(
                lambda c: {
                    (s, p): bytes(e)
                    for s, p, e in c.execute("SELECT scope, phrase, embedding FROM trigger_vectors")
                }
            )
        a, b = scope_key(**ALICE), scope_key(**BOB)
        assert stored == {
            (a, "launch window"): vectors["launch window"],
            (b, "launch window"): vectors["launch window"],
            (b, "bob only phrase"): vectors["bob only phrase"],
        }
        with psycopg.connect(_as(pg_url, roles["alice"]), autocommit=True) as alice:
            with pytest.raises(
                psycopg.errors.InsufficientPrivilege
            ):  # binding's rights, applied to the old roles
                alice.execute(
                    "CREATE TEMP TABLE vault_scopes (role name, agent_id text, workspace_hash text)"
                )
            assert alice.execute("SELECT content FROM public.entity_versions").fetchall() == [
                ("alice's notes",)
            ]
        grant_temporary(pg_url, roles["alice"])  # the pinned functions hold without the revoke
        with psycopg.connect(_as(pg_url, roles["alice"]), autocommit=True) as alice:
            alice.execute("CREATE TEMP TABLE vault_scopes (role name, agent_id text, workspace_hash text)")
            alice.execute("INSERT INTO vault_scopes VALUES (current_user, 'bob', 'ws-b')")
            assert alice.execute("SELECT content FROM public.entity_versions").fetchall() == [
                ("alice's notes",)
            ]
        with Vault(_as(pg_url, roles["alice"]), clock=clock, embedder=FakeEmbedder()) as alice_vault:
            alice_vault.remember(
                "fact", "new", "written after the upgrade", recall_when=["after the upgrade"], **ALICE
            )
            assert [i.key for i in alice_vault.recall_when("right after the upgrade", **ALICE).items] == [
                "new"
            ]
            assert alice_vault.recall_when("the launch window", semantic=True, **ALICE).items[0].key == "mine"
    finally:
        _drop_roles(pg_url, list(roles.values()))


def test_the_suite_names_every_table(world: World) -> None:
    """A table added to the vault is attacked too: the suite's list is the schema's."""
    tables = {
        t
        for (t,) in world.admin().execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
    }
    assert tables == set(TABLES)
    assert json.dumps(sorted(tables))  # every name is plain
