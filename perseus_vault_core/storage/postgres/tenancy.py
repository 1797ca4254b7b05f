"""Row-level security: a database role bound to one scope sees and writes that scope's rows only.

A scope-bound server (``serve --agent-id ... --workspace-hash ...``) already filters every query by its
scope. On Postgres the database enforces it as well, as defence in depth: connect the bound server with a
role of its own, bound here (:func:`bind_role`) to its (agent, workspace), and even a query the vault got
wrong cannot return another tenant's memory. The vault's own role (the tables' owner) is not limited:
Postgres exempts a table's owner from its policies, so unbound vaults pay nothing.

How (schema migration 7): every table has row-level security on. ``vault_scopes`` binds roles to scopes,
and a role reads its own binding only. ``entities`` admits the rows of the scope the connected role is
bound to (a role bound to none sees nothing; the owner, everything). Every other table admits
the rows whose entity or version the role can see, by a subquery on the table above it, which its
own policy already limits: versions by their entity, links by both their entities, vectors by their
version, the change log by its version (and the rebuild marks, vid 0),
trigger-phrase vectors by a visible version whose ``recall_when`` holds the phrase; keyword postings and
documents carry their entity's scope, and admit the role's, as the framework state of migration 8 does
(checkpoints, their blobs and writes, key-value entries). ``next_id`` must see
past every tenant's ids, so it reads them through ``pv_next_id`` (``SECURITY DEFINER`` too): it learns a
number, never a row.

A bound role may write its scope's memories and links, and read the vault's settings; it cannot change
the schema, so the first vector of a fresh vault (which makes the HNSW index) is written by the owner.

Migration 9 restates every policy by the scope key (:mod:`...scopes`) each row carries, because a
distributed PostgreSQL (Citus) takes no subquery in a policy: ``pv_bound_scope()`` reads the connected role's
binding, and a row is admitted when its ``scope`` is that one (and, for a row that also names its agent and
workspace, when its key is theirs). A key names one scope exactly, so no other scope's rows pass. The
foreign keys that include the key (a version's to its entity, a link's to both ends, a vector's and a
keyword document's to their version) keep a bound role from hanging a row of its own scope on another's.
The change log's entries carry their version's scope too; a trigger phrase's vector is admitted while a
version the role can see uses the phrase (``pv_phrase_used``, a function, which Citus takes).
"""

from __future__ import annotations

import re

from ...dialect import POSTGRES
from ...errors import InvalidInput
from ..base import Connection

# A version's recall_when (a JSON list) holds the phrase: its JSON text, with LIKE's own characters escaped.
_USES_PHRASE = ("v.recall_when LIKE '%' || replace(replace(replace(CAST(to_json(phrase) AS text), '\\', '\\\\'), "
                "'%', '\\%'), '_', '\\_') || '%'")

SCHEMA = """
CREATE TABLE vault_scopes (role name PRIMARY KEY, agent_id text NOT NULL, workspace_hash text NOT NULL);

ALTER TABLE vault_scopes ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON vault_scopes USING (role = current_user);  -- a role reads its own binding only

CREATE FUNCTION pv_next_id(tab text, col text) RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    seq bigint;
    top bigint;
BEGIN
    IF tab NOT IN ('entities', 'entity_versions', 'links') OR col NOT IN ('id', 'vid') THEN
        RAISE EXCEPTION 'pv_next_id: no identity %.%', tab, col;
    END IF;
    SELECT coalesce(last_value, 0) INTO seq FROM pg_sequences WHERE schemaname = current_schema()
        AND sequencename = split_part(pg_get_serial_sequence(tab, col), '.', 2);
    EXECUTE format('SELECT coalesce(max(%I), 0) FROM %I', col, tab) INTO top;
    RETURN greatest(coalesce(seq, 0), top) + 1;
END $$;

ALTER TABLE entities ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON entities
    USING ((agent_id, workspace_hash) IN (SELECT agent_id, workspace_hash FROM vault_scopes));
ALTER TABLE entity_versions ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON entity_versions USING (entity_id IN (SELECT id FROM entities));
ALTER TABLE links ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON links USING (from_id IN (SELECT id FROM entities) AND to_id IN (SELECT id FROM entities));
ALTER TABLE version_vectors ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON version_vectors USING (vid IN (SELECT vid FROM entity_versions));
ALTER TABLE keyword_docs ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON keyword_docs
    USING ((agent_id, workspace_hash) IN (SELECT agent_id, workspace_hash FROM vault_scopes));
ALTER TABLE keyword_postings ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON keyword_postings
    USING ((agent_id, workspace_hash) IN (SELECT agent_id, workspace_hash FROM vault_scopes));
ALTER TABLE head_changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON head_changes USING (vid = 0 OR vid IN (SELECT vid FROM entity_versions));
ALTER TABLE trigger_vectors ENABLE ROW LEVEL SECURITY;
CREATE POLICY scoped ON trigger_vectors USING (EXISTS (SELECT 1 FROM entity_versions v WHERE """ + _USES_PHRASE + "));\n"

_OWN = POSTGRES.scope_key("agent_id", "workspace_hash")
BY_SCOPE = f"""
CREATE FUNCTION pv_bound_scope() RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT {_OWN} FROM vault_scopes WHERE role = current_user
$$;
-- PL/pgSQL, so that the planner never inlines the query into a policy (Citus refuses a policy's subquery).
CREATE FUNCTION pv_phrase_used(phrase text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM entity_versions v WHERE {_USES_PHRASE});
END $$;
""" + "".join(f"""
DROP POLICY scoped ON {table};
CREATE POLICY scoped ON {table} USING ({rule});""" for table, rule in (
    ("entities", f"scope = pv_bound_scope() AND scope = {_OWN}"),
    ("entity_versions", "scope = pv_bound_scope()"),
    ("links", "scope = pv_bound_scope()"),
    ("version_vectors", "scope = pv_bound_scope()"),
    ("keyword_docs", f"scope = pv_bound_scope() AND scope = {_OWN}"),
    ("keyword_postings", f"scope = pv_bound_scope() AND scope = {_OWN}"),
    ("checkpoints", f"scope = pv_bound_scope() AND scope = {_OWN}"),
    ("checkpoint_blobs", f"scope = pv_bound_scope() AND scope = {_OWN}"),
    ("checkpoint_writes", f"scope = pv_bound_scope() AND scope = {_OWN}"),
    ("kv_entries", f"scope = pv_bound_scope() AND scope = {_OWN}"),
    ("head_changes", "vid = 0 OR scope = pv_bound_scope()"),
    ("trigger_vectors", "pv_phrase_used(phrase)"),
)) + "\n"

_ROLE = re.compile(r"[a-z_][a-z0-9_$]{0,62}")


def bind_role(conn: Connection, role: str, agent_id: str, workspace_hash: str) -> None:
    """Bind the existing database role ``role`` to one scope and grant it what a vault's reads and writes
    need (run as the tables' owner, in a write transaction). A role is bound to one scope; binding it
    again moves it."""
    if not _ROLE.fullmatch(role):
        raise InvalidInput("role", "must be a lower-case SQL identifier (letters, digits, _ and $)")
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = ?", (role,)).fetchone()
    if exists is None:
        raise InvalidInput("role", f"no database role {role!r}: CREATE ROLE {role} LOGIN PASSWORD '...' first")
    conn.execute("INSERT INTO vault_scopes (role, agent_id, workspace_hash) VALUES (?, ?, ?) ON CONFLICT (role) "
                 "DO UPDATE SET agent_id = excluded.agent_id, workspace_hash = excluded.workspace_hash",
                 (role, agent_id, workspace_hash))
    for grant in (
        f"GRANT USAGE ON SCHEMA {_schema(conn)} TO {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON entities, entity_versions, links, version_vectors, keyword_docs, "
        f"keyword_postings, head_changes, trigger_vectors, checkpoints, checkpoint_blobs, checkpoint_writes, "
        f"kv_entries TO {role}",
        f"GRANT SELECT, INSERT, UPDATE ON vault_meta TO {role}",
        f"GRANT SELECT ON _migrations, vault_scopes TO {role}",
        f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {_schema(conn)} TO {role}",
    ):
        conn.execute(grant)


def _schema(conn: Connection) -> str:
    return '"' + str(conn.execute("SELECT current_schema()").fetchone()[0]).replace('"', '""') + '"'
