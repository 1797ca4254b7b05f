"""Sharding by scope (storage/distribution.py, docs/postgres.md "Sharding by scope"): the schema and the SQL
hold the rules a distributed PostgreSQL (Citus) documents, checked on a plain PostgreSQL (and SQLite, which
has the same columns): every table carries the scope key or is one of the whole tables; on Postgres every
key of a distributed table and every foreign key between two of them includes it, and no policy holds a
subquery; ``check`` reports a row whose key is not its parent's; every join the services issue between two
distributed tables equates their keys; and an existing vault is migrated with its keys filled in."""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.primitives.scopes import scope_key
from perseus_vault_core.state.checkpoints import ChannelBlob, Checkpoints, TaskWrite
from perseus_vault_core.state.keyvalue import KeyValues
from perseus_vault_core.storage.distribution import (
    BACKFILL,
    COORDINATOR,
    DISTRIBUTED,
    GLOBAL,
    OWN_SCOPE,
    REFERENCE,
    citus_statements,
)
from perseus_vault_core.storage.postgres import schema as pg_schema
from perseus_vault_core.storage.postgres.connection import PgConnection
from perseus_vault_core.storage.postgres.connection import connect as pg_connect
from perseus_vault_core.storage.sqlite import schema as lite_schema
from perseus_vault_core.storage.sqlite.connection import connect as lite_connect

from ...conftest import Clock, FakeEmbedder

pytestmark = pytest.mark.both_backends

ALICE = {"agent_id": "alice", "workspace_hash": "ws-a"}
BOB = {"agent_id": "bob", "workspace_hash": "ws-b"}
# SQLite's own tables and FTS5's (its keyword index, with no rows of a scope: each row is a version's text).
SQLITE_INTERNAL = re.compile(r"sqlite_\w+|(entities|versions)_fts(_\w+)?")


# --- (a) every table carries the key or is a whole table ------------------------------------------------


def _tables(conn: Any, backend: str) -> dict[str, bool]:
    """Every table of the vault's schema, read from the catalog, and whether it has ``scope`` NOT NULL."""
    if backend == "sqlite":
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            n: any(c[1] == "scope" and c[3] for c in conn.execute(f"PRAGMA table_info({n})"))
            for n in names
            if not SQLITE_INTERNAL.fullmatch(n)
        }
    rows = conn.execute(
        "SELECT t.table_name, bool_or(c.column_name = 'scope' AND c.is_nullable = 'NO') FROM information_schema.tables t "
        "JOIN information_schema.columns c ON c.table_schema = t.table_schema AND c.table_name = t.table_name "
        "WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE' GROUP BY t.table_name"
    ).fetchall()
    return {str(n): bool(scoped) for n, scoped in rows}


def unplaced(tables: dict[str, bool]) -> list[str]:
    """What keeps the schema from sharding by scope: a table neither carrying the key nor named whole."""
    problems = [f"{t}: no scope key" for t in DISTRIBUTED if t in tables and not tables[t]]
    problems += [
        f"{t}: neither distributed by scope nor one of the whole tables"
        for t in tables
        if t not in DISTRIBUTED and t not in GLOBAL
    ]
    return problems


def test_every_table_carries_the_scope_key_or_is_a_whole_table(vault: Vault, backend: str) -> None:
    conn = vault.engine.conn()
    tables = _tables(conn, backend)
    assert unplaced(tables) == []
    expected = set(DISTRIBUTED) | set(GLOBAL)
    if backend == "sqlite":  # its keyword index is FTS5's, and a file has no database roles to bind
        expected -= {"keyword_docs", "keyword_postings", "vault_scopes"}
    assert set(tables) == expected
    # A new table without the key, and a distributed one that lost it, are caught.
    assert unplaced({**tables, "new_table": False, "links": False}) == [
        "links: no scope key",
        "new_table: neither distributed by scope nor one of the whole tables",
    ]
    # The whole tables are each a reference table or a coordinator's, with the reason written down.
    assert set(REFERENCE).isdisjoint(COORDINATOR) and all(len(reason) > 40 for reason in GLOBAL.values())


# --- (b) keys, foreign keys and policies as Citus takes them (Postgres) -------------------------------


def _constraint_problems(conn: PgConnection) -> list[str]:
    problems = []
    unique = conn.execute(
        "SELECT t.relname, i.relname, array_agg(a.attname::text) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(x.indkey) "
        "WHERE x.indisunique AND n.nspname = current_schema() GROUP BY t.relname, i.relname"
    ).fetchall()
    for table, index, columns in unique:
        if table in DISTRIBUTED and "scope" not in columns:
            problems.append(f"{table}: unique index {index} {sorted(columns)} lacks scope")
    foreign = conn.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text, "
        # In the key's own order (a scan of pg_attribute has none: it changed when the schema gained a table).
        "ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a "
        "ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i), "
        "ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a "
        "ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i) "
        "FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
    ).fetchall()
    for table, target, mine, theirs in foreign:
        if table in DISTRIBUTED and target in DISTRIBUTED:
            if "scope" not in mine or "scope" not in theirs or mine.index("scope") != theirs.index("scope"):
                problems.append(f"{table} -> {target} ({mine} -> {theirs}) does not pair the scope keys")
        elif target in DISTRIBUTED or table not in REFERENCE and target not in REFERENCE:
            problems.append(
                f"{table} -> {target}: a foreign key Citus takes only from a distributed table "
                "to a reference table, or between two of them"
            )
    # Citus refuses to distribute (or add to its metadata) a table whose policy holds a subquery.
    for table, policy in conn.execute(
        "SELECT c.relname, p.polname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid "
        "WHERE p.polqual::text LIKE '%{SUBLINK%' OR p.polwithcheck::text LIKE '%{SUBLINK%'"
    ).fetchall():
        problems.append(f"{table}: policy {policy} holds a subquery")
    return problems


def test_keys_foreign_keys_and_policies_include_the_scope_key(vault: Vault, backend: str) -> None:
    if backend != "postgres":
        pytest.skip("the file is never sharded: its keys are SQLite's own")
    conn = vault.engine.conn()
    assert _constraint_problems(conn) == []
    # The lookups keep their leading columns (and so their index).
    keys = dict(
        conn.execute(
            "SELECT c.conrelid::regclass::text, pg_get_constraintdef(c.oid) FROM pg_constraint c "
            "WHERE c.contype = 'p' AND c.connamespace = current_schema()::regnamespace"
        ).fetchall()
    )
    assert (
        keys["entities"] == "PRIMARY KEY (id, scope)"
        and keys["keyword_postings"] == "PRIMARY KEY (term, vid, scope)"
    )
    # A key or policy of the old kind is caught.
    conn.execute("CREATE TABLE pv_probe (id bigint PRIMARY KEY)")
    conn.execute(
        "ALTER TABLE links ADD CONSTRAINT pv_probe_fk FOREIGN KEY (from_id) REFERENCES pv_probe (id)"
    )
    conn.execute("CREATE UNIQUE INDEX pv_probe_unique ON entities (id)")
    conn.execute("CREATE POLICY probe ON links USING (from_id IN (SELECT id FROM entities))")
    assert sorted(p.split(":")[0].split(" ")[0] for p in _constraint_problems(conn)) == [
        "entities",
        "links",
        "links",
    ]


def test_the_operators_statements_name_every_table_once(vault: Vault) -> None:
    statements = citus_statements()
    named = [re.search(r"\('(\w+)'", s) for s in statements if "table" in s]
    assert sorted(m.group(1) for m in named if m) == sorted([*DISTRIBUTED, *GLOBAL])
    first = [s for s in statements if "create_distributed_table" in s]
    assert (
        first[0] == "SELECT create_distributed_table('entities', 'scope');"
    )  # the co-location group's first
    assert all("colocate_with => 'entities'" in s for s in first[1:])
    docs = (Path(__file__).resolve().parents[3] / "docs" / "postgres.md").read_text()
    assert all(s in docs for s in statements), (
        "docs/postgres.md shows the statements citus_statements() gives"
    )


# --- (c) check reports a row whose key is not its parent's ---------------------------------------------


def test_check_reports_a_row_whose_scope_key_is_not_its_parents(dense_vault: Vault, backend: str) -> None:
    v = dense_vault
    a = v.remember("fact", "a", "alice keeps the ledger", **ALICE)
    b = v.remember("fact", "b", "alice plans the billing", **ALICE)
    v.link(a.id, b.id, "about", **ALICE)
    KeyValues(v, **ALICE).put("docs", "k", {"x": 1})
    assert v.check().ok, v.check().problems
    write = v.engine.write
    if (
        backend == "postgres"
    ):  # the composite foreign keys refuse such rows: only a table without one takes them
        write(lambda c: c.execute("UPDATE kv_entries SET scope = 'wrong'"))
        write(
            lambda c: c.execute(
                "UPDATE keyword_postings SET scope = 'wrong' WHERE vid = "
                "(SELECT min(vid) FROM keyword_postings)"
            )
        )
        problems = v.check().problems
        assert any("1 kv_entries rows carry a scope key" in p for p in problems), problems
        assert any("the keyword index does not match its rows" in p for p in problems), problems
        with pytest.raises(Exception, match="foreign key"):
            write(
                lambda c: c.execute("UPDATE entity_versions SET scope = 'wrong' WHERE entity_id = ?", (b.id,))
            )
        return
    right = scope_key(**ALICE)
    for table, where, expected in (
        ("entity_versions", f"entity_id = {b.id}", "1 versions belong to no entity (of their scope key)"),
        # The written link (b's write also keeps an inferred b -> a link: features/relations.py).
        ("links", f"from_id = {a.id} AND to_id = {b.id}", "1 links point at missing entities"),
        (
            "version_vectors",
            "vid = (SELECT max(vid) FROM version_vectors)",
            "1 vectors match no version (of their scope key)",
        ),
        (
            "entities",
            f"id = {a.id}",
            "1 entities rows carry a scope key that is not their agent and workspace's",
        ),
        ("kv_entries", "TRUE", "1 kv_entries rows carry a scope key"),
    ):
        write(lambda c: c.execute(f"UPDATE {table} SET scope = 'wrong' WHERE {where}"))
        problems = v.check().problems
        assert any(expected in p for p in problems), (expected, problems)
        write(lambda c: c.execute(f"UPDATE {table} SET scope = ? WHERE {where}", (right,)))
        assert v.check().ok, (table, v.check().problems)


# --- (d) every join between distributed tables equates their keys --------------------------------------

_TABLE = "|".join(DISTRIBUTED)
_REFERENCE = re.compile(
    rf"\b(FROM|JOIN)\s+({_TABLE})\b(?:\s+(?:AS\s+)?(?!(?:ON|WHERE|JOIN|CROSS|LEFT|INNER|GROUP|ORDER|"
    r"LIMIT|USING|SET|RETURNING|UNION)\b)(\w+))?",
    re.IGNORECASE,
)
_END = re.compile(
    r"\b(JOIN|CROSS|LEFT|INNER|WHERE|GROUP|ORDER|LIMIT|UNION|RETURNING|HAVING)\b", re.IGNORECASE
)


def _balanced(sql: str, start: int) -> int:
    """Where the clause starting at ``start`` ends: at a closing parenthesis it did not open, or the end."""
    depth = 0
    for i in range(start, len(sql)):
        if sql[i] == "(":
            depth += 1
        elif sql[i] == ")":
            if depth == 0:
                return i
            depth -= 1
    return len(sql)


def _opening(sql: str, at: int) -> int:
    """The parenthesis that encloses position ``at`` (-1 at the top level)."""
    depth = 0
    for i in range(at - 1, -1, -1):
        if sql[i] == ")":
            depth += 1
        elif sql[i] == "(":
            if depth == 0:
                return i
            depth -= 1
    return -1


def _clause(sql: str, start: int) -> str:
    """An ON clause from ``start`` to the next keyword at its own depth."""
    end = _balanced(sql, start)
    depth = 0
    for i in range(start, end):
        if sql[i] == "(":
            depth += 1
        elif sql[i] == ")":
            depth -= 1
        elif depth == 0 and _END.match(sql, i) and (i == 0 or not sql[i - 1].isalnum() and sql[i - 1] != "_"):
            return sql[start:i]
    return sql[start:end]


def _equates(clause: str, a: str, b: str) -> bool:
    return bool(re.search(rf"\b{a}\.scope\s*=\s*{b}\.scope\b|\b{b}\.scope\s*=\s*{a}\.scope\b", clause))


def cross_scope_joins(sql: str) -> list[str]:
    """The joins and correlated subqueries of ``sql`` between two distributed tables that do not equate
    their scope keys (a regex-level reading of the SQL the services write)."""
    sql = " ".join(sql.split())
    refs = [
        (m.start(), m.group(1).upper(), m.group(2), m.group(3) or m.group(2))
        for m in _REFERENCE.finditer(sql)
    ]
    distributed = {alias for _, _, _, alias in refs}
    found = []
    for at, kind, table, alias in refs:
        if kind == "JOIN":
            on = re.compile(r"\s*(?:AS\s+)?\w*\s*ON\b", re.IGNORECASE).match(
                sql, at + len("JOIN ") + len(table)
            )
            if on is None:
                found.append(f"JOIN {table} {alias} without ON")
                continue
            clause = _clause(sql, on.end())
            others = {a for a in re.findall(r"\b(\w+)\.\w+", clause) if a in distributed and a != alias}
            if others and not any(_equates(clause, alias, o) for o in others):
                found.append(f"JOIN {table} {alias} ON {clause.strip()}")
        else:  # a subquery's FROM: correlated when its WHERE names a distributed alias defined outside it
            opened = _opening(sql, at)
            if opened < 0 or not re.match(r"\(\s*SELECT\b", sql[opened:], re.IGNORECASE):
                continue
            body = sql[opened + 1 : _balanced(sql, opened + 1)]
            inner = {m.group(3) or m.group(2) for m in _REFERENCE.finditer(body)}
            where = body[body.upper().find(" WHERE ") + 1 :] if " WHERE " in body.upper() else ""
            outer = {a for a in re.findall(r"\b(\w+)\.\w+", where) if a in distributed and a not in inner}
            if outer and not any(_equates(where, alias, o) for o in outer):
                found.append(
                    f"subquery on {table} {alias} correlated on {sorted(outer)} without the scope key"
                )
    return found


@pytest.mark.parametrize(
    ("sql", "broken"),
    [
        ("SELECT 1 FROM entity_versions v JOIN entities e ON e.id = v.entity_id WHERE v.vid = 1", True),
        (
            "SELECT 1 FROM entity_versions v CROSS JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope",
            False,
        ),
        (
            "SELECT 1 FROM entity_versions v JOIN entities e ON e.id = v.entity_id AND v.scope = e.scope "
            "LEFT JOIN version_vectors x ON x.vid = v.vid WHERE e.id = 1",
            True,
        ),
        (
            "SELECT 1 FROM json_each(:vids) j CROSS JOIN entity_versions v ON v.vid = j.value "
            "CROSS JOIN entities e ON e.id = v.entity_id AND e.scope = v.scope",
            False,
        ),
        (
            "SELECT count(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM entity_versions v WHERE v.entity_id = e.id)",
            True,
        ),
        (
            "SELECT count(*) FROM entities e WHERE NOT EXISTS "
            "(SELECT 1 FROM entity_versions v WHERE v.entity_id = e.id AND v.scope = e.scope AND v.recorded_to_ms IS NULL)",
            False,
        ),
        (
            "SELECT e.id FROM entities e WHERE e.id IN (SELECT l.to_id FROM links l WHERE l.relation = 'x')",
            False,
        ),
        (
            "SELECT (SELECT x.embedding FROM version_vectors x WHERE x.vid = v.vid) FROM entity_versions v",
            True,
        ),
        ('SELECT kh.vid FROM kq JOIN keyword_postings p ON p.term = kq.term COLLATE "C" WHERE p.head', False),
    ],
)
def test_the_join_checker_finds_a_join_that_ignores_the_scope_key(sql: str, broken: bool) -> None:
    assert bool(cross_scope_joins(sql)) is broken, cross_scope_joins(sql)


FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "memory_vault"


def _workload(v: Vault, tmp: Path, clock: Clock) -> None:
    """Every verb that reads or writes a scope's rows, scoped and not."""
    at = clock.now
    for who in (ALICE, BOB):
        clock.advance(1_000)
        made = v.remember_many(
            [
                {
                    "category": "fact",
                    "key": f"k{i}",
                    "content": f"{who['agent_id']} note {i} about the billing ledger",
                    "recall_when": ["billing ledger"],
                    **who,
                }
                for i in range(6)
            ]
        )
        v.remember("fact", "k0", "the billing ledger moved to postgres", valid_from_ms=at + 10, **who)
        v.link(made[0].id, made[1].id, "about", **who)
        v.link(made[1].id, made[2].id, "about", weight=0.5, **who)
        v.unlink(made[1].id, made[2].id, **who)
        v.link(made[2].id, made[3].id, "about", **who)
        v.forget(made[4].id, **who)
        v.purge(made[4].id, **who)
        v.supersede(made[5].id, made[3].id, **who)
    ids = [e.id for e in v.scan(limit=100, **ALICE).items]
    for mode in ("fts5", "dense", "hybrid"):
        v.recall("billing ledger", mode=mode, **ALICE)
        v.recall("billing ledger", mode=mode, agent_id="alice")
        v.recall("billing ledger", mode=mode)
        v.recall("billing ledger", mode=mode, as_of_unix_ms=at + 1_500, **ALICE)
        v.recall("billing ledger", mode=mode, valid_at_unix_ms=at + 5, **ALICE)
    v.recall("", **ALICE)
    v.search("ledger", **ALICE)
    v.recall_by_vector(np.ones(FakeEmbedder().dimension, dtype=np.float32), **ALICE)
    v.scan(limit=3, **ALICE)
    v.counts(**ALICE)
    v.traverse(ids[0], depth=3, **ALICE)
    v.traverse(ids[0], depth=2, as_of_unix_ms=at + 1_500, **ALICE)
    v.history("fact", "k0", **ALICE)
    v.as_of("fact", "k0", at + 1_500, **ALICE)
    v.valid_at("fact", "k0", at + 5, **ALICE)
    v.recent(limit=5, **ALICE)
    v.get_entity(ids[0], **ALICE)
    found = v.communities(**ALICE).communities
    if found:
        v.community_summary(found[0].id, **ALICE)
    v.communities(containing=ids[:2], **ALICE)
    v.global_recall("billing", **ALICE)
    v.recall_when("the billing ledger", **ALICE)
    v.prepare("the billing ledger", **ALICE)
    v.hygiene(min_age_days=0, **ALICE)
    folder = tmp / "notes"
    shutil.copytree(FOLDER, folder)
    v.memory_import(folder, bind=True, **ALICE)
    v.add_memory("Preferences", "Meetings", "likes sharding", **ALICE)
    v.get_memory("Preferences", entries=True, **ALICE)
    v.list_memory_files(**ALICE)
    v.memory_recall("sharding", **ALICE)
    v.delete_memory("Preferences", "Meetings", text="likes sharding", **ALICE)
    v.memory_export(tmp / "out", **ALICE)
    v.memory_unbind(**ALICE)
    v.remember_conversation(
        "s1",
        [
            {"speaker": "ann", "text": "shall we shard the ledger?"},
            {"speaker": "bo", "text": "by scope, yes"},
        ],
        **ALICE,
    )
    v.conversation("s1", **ALICE)
    out = io.StringIO()
    v.export_jsonl(out, **ALICE)
    v.import_jsonl(io.StringIO(out.getvalue().replace('"alice"', '"carol"')))
    v.embed()
    v.wait_for_keyword_index()
    v.wait_for_vector_index()
    v.recall("billing ledger", mode="hybrid", **ALICE)
    points = Checkpoints(v, **ALICE)
    points.put(
        "t",
        "",
        "c1",
        parent_checkpoint_id=None,
        type="json",
        checkpoint=b"s",
        metadata={"step": 1},
        channel_versions={"m": "1"},
        blobs=[ChannelBlob("m", "1", "json", b"x")],
    )
    points.put_writes("t", "", "c1", [TaskWrite("task", "", 0, "m", "json", b"w")])
    points.get("t")
    list(points.list("t"))
    points.copy_thread("t", "t2")
    points.delete_runs(["r"])
    points.delete_thread("t2")
    values = KeyValues(v, **ALICE)
    values.put_many("docs", [("a", {"x": 1}), ("b", {"x": 2})])
    values.get("docs", "a")
    values.get_many("docs", ["a", "b"])
    values.get_all("docs")
    values.delete("docs", "a")
    v.stats()
    assert v.check().ok, v.check().problems


def test_every_join_the_services_issue_equates_the_scope_keys(
    backend: str, vault_path: str | Path, clock: Clock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend != "postgres":
        pytest.skip(
            "the SQL is recorded on Postgres, which the sharded database is (SQLite's own SQL never is)"
        )
    with Vault(vault_path, clock=clock, embedder=FakeEmbedder()) as v:
        seen: list[str] = []
        execute, executemany = PgConnection.execute, PgConnection.executemany

        def recorded(self: PgConnection, sql: str, *args: Any, **kwargs: Any) -> Any:
            seen.append(sql)
            return execute(self, sql, *args, **kwargs)

        def recorded_many(self: PgConnection, sql: str, *args: Any, **kwargs: Any) -> Any:
            seen.append(sql)
            return executemany(self, sql, *args, **kwargs)

        monkeypatch.setattr(PgConnection, "execute", recorded)
        monkeypatch.setattr(PgConnection, "executemany", recorded_many)
        _workload(v, tmp_path, clock)
    joined = {
        s for s in seen if re.search(rf"\b({_TABLE})\b", s) and re.search(r"\bJOIN\b|\(\s*SELECT\b", s, re.I)
    }
    assert len(joined) > 40, "the workload reached the services' joins"
    assert {s: cross_scope_joins(s) for s in joined if cross_scope_joins(s)} == {}
    routed = [s for s in seen if "e.scope = :scope" in s]
    assert len(routed) > 20, "calls naming a whole scope name its key, by which Citus routes them"


def test_a_call_naming_a_whole_scope_names_its_key_on_postgres_only() -> None:
    from perseus_vault_core.primitives.dialect import POSTGRES, SQLITE
    from perseus_vault_core.primitives.filters import scope_clauses

    params: dict[str, Any] = {}
    assert scope_clauses("alice", "ws-a", params, POSTGRES)[-1] == "e.scope = :scope"
    assert params["scope"] == scope_key("alice", "ws-a") == "5:alicews-a"
    assert "e.scope = :scope" not in scope_clauses("alice", "ws-a", {}, SQLITE)  # a file is never sharded
    assert "e.scope = :scope" not in scope_clauses("alice", None, {}, POSTGRES)  # no one shard holds an agent


# --- (e) an existing vault is migrated with its keys filled in ----------------------------------------


def _old_vault(backend: str, location: str | Path) -> Any:
    """A database at the schema before the scope key, holding two scopes' rows of every scoped table."""
    if backend == "sqlite":
        conn = lite_connect(str(location))
        steps, module = lite_schema.MIGRATIONS, lite_schema
    else:
        conn = pg_connect(str(location))
        steps, module = pg_schema.MIGRATIONS, pg_schema
    before = next(version for version, name, _ in steps if "scope key" in name) - 1
    original = module.MIGRATIONS
    module.MIGRATIONS = steps[:before]  # type: ignore[attr-defined]
    try:
        assert module.migrate(conn, 1) == before
    finally:
        module.MIGRATIONS = original  # type: ignore[attr-defined]
    if backend == "sqlite":
        conn.execute("BEGIN")
    blob, bits = np.ones(4, dtype=np.float32).tobytes(), b"\x0f"
    for n, (agent, workspace) in enumerate((("alice", "ws-a"), ("bob\x1f", "ws-b"))):
        eid, vid = 10 + 2 * n, 20 + 2 * n
        conn.execute(
            "INSERT INTO entities (id, agent_id, workspace_hash, category, key, created_at_ms) "
            "VALUES (?, ?, ?, 'fact', ?, 1), (?, ?, ?, 'fact', ?, 1)",
            (eid, agent, workspace, f"k{n}", eid + 1, agent, workspace, f"j{n}"),
        )
        for e, v in ((eid, vid), (eid + 1, vid + 1)):
            conn.execute(
                "INSERT INTO entity_versions (vid, entity_id, version, change, recorded_from_ms, type, "
                "content, tags, body, verified, recall_when, status, updated_at_ms) VALUES "
                "(?, ?, 1, 'create', 1, 'fact', 'ledger', 'fact', '{}', 0, '[]', 'active', 1)",
                (v, e),
            )
            conn.execute(
                "INSERT INTO version_vectors (vid, embedding, bits) VALUES (?, ?, ?)", (v, blob, bits)
            )
        conn.execute(
            "INSERT INTO links (id, from_id, to_id, relation, weight, created_at_ms, recorded_from_ms) "
            "VALUES (?, ?, ?, 'about', 1.0, 1, 1)",
            (30 + n, eid, eid + 1),
        )
        conn.execute("INSERT INTO head_changes (vid, op) VALUES (?, 1), (?, 1), (0, 0)", (vid, vid + 1))
        conn.execute(
            "INSERT INTO kv_entries (agent_id, workspace_hash, collection, key, value, updated_at_ms) "
            "VALUES (?, ?, 'docs', 'k', '{}', 1)",
            (agent, workspace),
        )
        conn.execute(
            "INSERT INTO checkpoints (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, "
            "type, checkpoint, channel_versions, metadata) VALUES (?, ?, 't', '', 'c', 'json', ?, '{}', '{}')",
            (agent, workspace, b"state"),
        )
        conn.execute(
            "INSERT INTO checkpoint_blobs (agent_id, workspace_hash, thread_id, checkpoint_ns, channel, "
            "version, type, blob) VALUES (?, ?, 't', '', 'm', '1', 'json', ?)",
            (agent, workspace, b"x"),
        )
        conn.execute(
            "INSERT INTO checkpoint_writes (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, "
            "task_id, idx, channel, type, blob) VALUES (?, ?, 't', '', 'c', 'task', 0, 'm', 'json', ?)",
            (agent, workspace, b"w"),
        )
        if backend == "postgres":
            for v in (vid, vid + 1):
                conn.execute(
                    "INSERT INTO keyword_docs (vid, entity_id, agent_id, workspace_hash, head, length) "
                    "VALUES (?, ?, ?, ?, true, 2)",
                    (v, v - 10, agent, workspace),
                )
                conn.execute(
                    "INSERT INTO keyword_postings (term, vid, freq, length, entity_id, agent_id, "
                    "workspace_hash, head) VALUES ('ledger', ?, 1.0, 2, ?, ?, ?, true)",
                    (v, v - 10, agent, workspace),
                )
    conn.execute("COMMIT" if backend == "sqlite" else "SELECT 1")
    return conn


@pytest.fixture
def old_location(backend: str, vault_path: str | Path) -> Iterator[str | Path]:
    yield vault_path


def test_migrating_an_existing_vault_fills_in_every_rows_scope_key(
    backend: str, old_location: str | Path, clock: Clock
) -> None:
    conn = _old_vault(backend, old_location)
    conn.close()
    with Vault(old_location, clock=clock, embedder=False) as v:
        c = v.engine.conn()
        expected = {"alice": scope_key("alice", "ws-a"), "bob\x1f": scope_key("bob\x1f", "ws-b")}
        assert expected["bob\x1f"] == "4:bob\x1fws-b"
        for table in OWN_SCOPE:
            rows = c.execute(f"SELECT agent_id, scope FROM {table}").fetchall()
            assert sorted(rows) == sorted(
                (a, s) for a, s in expected.items() for _ in range(len(rows) // 2)
            ), table
        children = [t for t in BACKFILL if backend == "postgres" or not t.startswith("keyword_")]
        by_entity = {"entity_versions": "entity_id", "links": "from_id"}
        for table in children:
            column = by_entity.get(table, "vid")
            entity = {"entity_versions": "t.entity_id", "links": "t.from_id"}.get(table, "t.vid - 10")
            rows = c.execute(
                f"SELECT t.{column}, t.scope, e.agent_id FROM {table} t JOIN entities e ON e.id = {entity}"
            ).fetchall()
            assert rows and all(scope == expected[agent] for _, scope, agent in rows), (table, rows)
        if backend == "postgres":  # the change log's entries name their version's scope (a rebuild's, none)
            logged = c.execute(
                "SELECT c.vid, c.scope, v.scope FROM head_changes c LEFT JOIN entity_versions v "
                "ON v.vid = c.vid"
            ).fetchall()
            assert len(logged) == 6 and all(mine == (theirs or "") for _, mine, theirs in logged), logged
        # The vault works on the migrated rows: its checks pass, a scoped read finds them.
        report = v.check()
        assert not [p for p in report.problems if "scope" in p or "belong" in p or "point at" in p], (
            report.problems
        )
        assert [e.key for e in v.scan(limit=10, agent_id="bob\x1f", workspace_hash="ws-b").items] == [
            "k1",
            "j1",
        ]
        assert v.get_entity(10, **ALICE).key == "k0"


def test_every_row_is_given_its_id_and_a_purged_id_never_returns(vault: Vault, backend: str) -> None:
    """On a distributed PostgreSQL an identity default would be each shard's; the vault gives every row its id.
    Proved by taking the defaults away: on Postgres the id columns lose their identity (an insert that relied
    on it would fail on NOT NULL); on both, ids ascend and a purge's ids are never given again."""
    if backend == "postgres":
        conn = vault.engine.backend.conn()
        for table, column in (("entities", "id"), ("entity_versions", "vid"), ("links", "id")):
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN {column} DROP IDENTITY")
    a = vault.remember("note", "a", "first")
    b = vault.remember("note", "b", "second")
    vault.remember("note", "a", "first, updated")  # a new version: its vid given
    vault.link(a.id, b.id, "related")  # a link: its id given
    vault.link(a.id, b.id, "related", weight=0.5)  # re-weighted: a new row, a new id
    (community,) = vault.communities().communities
    summary = vault.community_summary(community.id)  # a summary entity linked to its members: link_many's ids
    assert summary.materialized
    top = vault.remember("note", "c", "third")
    history = vault.history("note", "a")
    assert [v.version for v in history.items] == [2, 1]
    vault.forget(top.id)
    vault.purge(top.id)
    again = vault.remember("note", "d", "fourth")
    assert again.id > top.id  # the purged entity's id is not given again, nor its version's
    conn = vault.engine.backend.conn()
    vids = [int(r[0]) for r in conn.execute("SELECT vid FROM entity_versions ORDER BY vid")]
    assert vids == sorted(set(vids)) and vids[-1] > vids[-2]
    links = [int(r[0]) for r in conn.execute("SELECT id FROM links ORDER BY id")]
    assert len(links) == 4 and links == sorted(set(links))  # a-b twice, the summary to both members
