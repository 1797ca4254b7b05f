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

Migration 9 restates every policy by the scope key (:mod:`...primitives.scopes`) each row carries, because a
distributed PostgreSQL (Citus) takes no subquery in a policy: ``pv_bound_scope()`` reads the connected role's
binding, and a row is admitted when its ``scope`` is that one (and, for a row that also names its agent and
workspace, when its key is theirs). A key names one scope exactly, so no other scope's rows pass. The
foreign keys that include the key (a version's to its entity, a link's to both ends, a vector's and a
keyword document's to their version) keep a bound role from hanging a row of its own scope on another's.
The change log's entries carry their version's scope too; a trigger phrase's vector is admitted while a
version the role can see uses the phrase (``pv_phrase_used``, a function, which Citus takes).

Migration 11 (:data:`RESTRICTED`) keeps a bound role off everything that is not its scope's rows, since what it
writes there reaches every tenant:

- ids: a bound role's new entity, version or link takes the id the vault gives next (``pv_given_id``, a
  restrictive policy), so no role can place an id at bigint's end and leave no next id for anyone. It may
  update only the columns the vault updates (usage counters, a closed version's or link's end, a vector, an
  index row's head flag), never an id, and delete an id-giving row only once a purge has recorded the
  table's high-water mark past it (``pv_keep_high_water``), so no id is ever given twice. It has no right on
  any sequence.
- ``vault_meta``: it reads the vault's settings and writes only its own scope's memory-folder binding (and
  sees no other scope's: they would name the other tenants).
- ``trigger_vectors``, the phrase vectors every tenant shares: it adds a missing phrase's vector of the
  recorded model and dimension (``pv_add_phrase_vectors``), never changes or deletes one; a purge deletes the
  vectors of phrases no version uses any more (``pv_forget_phrases``), whoever's they were.
- ``head_changes``: it appends entries for its own versions only, of the kinds a write makes (never a
  rebuild or a re-embed, on which every process rebuilds its indexes), and the log is trimmed by
  ``pv_trim_changes``, which keeps what the vault always keeps.

The functions that write for a bound role are ``SECURITY DEFINER`` (they run as the tables' owner) and do
only that one thing; :func:`grant` lists what a bound role is given, and the migration applies it again to
every role bound before it.

Migration 12 keeps trigger-phrase vectors per scope (:func:`phrases_by_scope`): a ``remember`` whose phrase another
scope had stored skipped embedding it and ran measurably faster, which told one tenant what phrases another uses, and
the first tenant to store a phrase's vector decided it for all. A bound role now reads and writes its scope's own, by
the key, and the functions above that shared them go.

Migration 13 (:mod:`.hardening`) pins every function a policy calls, and every one that runs as the owner, to the
vault's schema (a bound role's temporary table of the same name had bound it to another scope), admits reads by the
scope key alone, and takes from a bound role what it does not need on the database (temporary objects) where the
vault's role may.
"""

from __future__ import annotations

import re

from ...contract.errors import InvalidInput
from ...primitives.dialect import POSTGRES
from ..base import CHANGE_LOG_KEEP, OP_GONE, OP_HEAD, OP_VECTOR, Connection
from .connection import WRITE_LOCK
from .hardening import lock_down, schema_name, search_path, statements

# A version's recall_when (a JSON list) holds the phrase: its JSON text, with LIKE's own characters escaped.
_USES_PHRASE = (
    "v.recall_when LIKE '%' || replace(replace(replace(CAST(to_json(phrase) AS text), '\\', '\\\\'), "
    "'%', '\\%'), '_', '\\_') || '%'"
)

SCHEMA = (
    """
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
CREATE POLICY scoped ON trigger_vectors USING (EXISTS (SELECT 1 FROM entity_versions v WHERE """
    + _USES_PHRASE
    + "));\n"
)

_OWN = POSTGRES.scope_key("agent_id", "workspace_hash")
BY_SCOPE = (
    f"""
CREATE FUNCTION pv_bound_scope() RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT {_OWN} FROM vault_scopes WHERE role = current_user
$$;
-- PL/pgSQL, so that the planner never inlines the query into a policy (Citus refuses a policy's subquery).
CREATE FUNCTION pv_phrase_used(phrase text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM entity_versions v WHERE {_USES_PHRASE});
END $$;
"""
    + "".join(
        f"""
DROP POLICY scoped ON {table};
CREATE POLICY scoped ON {table} USING ({rule});"""
        for table, rule in (
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
        )
    )
    + "\n"
)

# The functions that run as the tables' owner: only the owner and bound roles may call them.
_DEFINED = (
    "pv_next_id(text, text)",
    "pv_keep_high_water(text)",
    "pv_add_phrase_vectors(text, text[], bytea[])",
    "pv_forget_phrases(text[])",
    "pv_trim_changes()",
)

# A bound role's row takes the id the vault gives next (pv_next_id), checked one writer at a time: it takes the
# vault's write lock (the vault's own writes hold it already) and reads, in READ COMMITTED, every commit before it.
_IDS = (("entities", "id"), ("entity_versions", "vid"), ("links", "id"))
RESTRICTED = (
    f"""
CREATE FUNCTION pv_given_id(tab text, col text, given bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    wanted bigint;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = 'a role bound to a scope writes in READ COMMITTED transactions, as the vault does';
    END IF;
    PERFORM pg_advisory_xact_lock({WRITE_LOCK});
    wanted := pv_next_id(tab, col);
    IF given IS DISTINCT FROM wanted THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', MESSAGE = format(
            'a role bound to a scope gives a new row of %s the id the vault gives next (%s), not %s', tab, wanted, given);
    END IF;
    RETURN true;
END $$;

CREATE FUNCTION pv_high_water(tab text) RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT coalesce(max(CAST(value AS bigint)), 0) FROM vault_meta WHERE key = 'high_water:' || tab
$$;
CREATE FUNCTION pv_keep_high_water(tab text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF tab NOT IN ('entities', 'entity_versions', 'links') THEN
        RAISE EXCEPTION 'pv_keep_high_water: no identity %', tab;
    END IF;
    INSERT INTO vault_meta (key, value) VALUES ('high_water:' || tab,
        CAST(pv_next_id(tab, CASE tab WHEN 'entity_versions' THEN 'vid' ELSE 'id' END) - 1 AS text))
        ON CONFLICT (key) DO UPDATE SET value = excluded.value;
END $$;
"""
    + "".join(
        f"""
CREATE POLICY given_id ON {table} AS RESTRICTIVE FOR INSERT WITH CHECK (pv_given_id('{table}', '{column}', {column}));
CREATE POLICY kept_id ON {table} AS RESTRICTIVE FOR DELETE USING ({column} <= pv_high_water('{table}'));"""
        for table, column in _IDS
    )
    + f"""

-- The settings are the owner's; a scope's memory-folder binding (memory_files/sync.py: 'memory_folder:' and the scope as
-- a JSON list) is that scope's, and no other scope's is shown.
CREATE FUNCTION pv_own_meta(k text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
DECLARE
    bound record;
BEGIN
    IF NOT starts_with(k, 'memory_folder:') THEN
        RETURN false;
    END IF;
    SELECT agent_id, workspace_hash INTO bound FROM vault_scopes WHERE role = current_user;
    RETURN FOUND AND CAST(substr(k, 15) AS jsonb) = jsonb_build_array(bound.agent_id, bound.workspace_hash);
EXCEPTION WHEN invalid_text_representation THEN
    RETURN false;
END $$;
ALTER TABLE vault_meta ENABLE ROW LEVEL SECURITY;
CREATE POLICY settings ON vault_meta FOR SELECT USING (NOT starts_with(key, 'memory_folder:'));
CREATE POLICY own_binding ON vault_meta USING (pv_own_meta(key));

-- Phrase vectors: a bound role adds missing ones (of the recorded model and dimension) and changes none; the
-- owner writes as before. A purge deletes those of phrases no version uses any more.
CREATE FUNCTION pv_add_phrase_vectors(m text, phrases text[], vectors bytea[]) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    INSERT INTO trigger_vectors (model, phrase, embedding)
    SELECT m, u.phrase, u.embedding FROM unnest(phrases, vectors) AS u(phrase, embedding)
    WHERE m = (SELECT value FROM vault_meta WHERE key = 'embedding_model')
      AND length(u.embedding) = 4 * (SELECT CAST(value AS bigint) FROM vault_meta WHERE key = 'embedding_dimension')
    ON CONFLICT (model, phrase) DO NOTHING
$$;
CREATE FUNCTION pv_keep_phrase_vectors(m text, phrases text[], vectors bytea[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF pv_bound_scope() IS NOT NULL THEN
        PERFORM pv_add_phrase_vectors(m, phrases, vectors);
    ELSE
        INSERT INTO trigger_vectors (model, phrase, embedding)
        SELECT m, u.phrase, u.embedding FROM unnest(phrases, vectors) AS u(phrase, embedding)
        ON CONFLICT (model, phrase) DO UPDATE SET embedding = excluded.embedding;
    END IF;
END $$;
CREATE FUNCTION pv_forget_phrases(phrases text[]) RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DELETE FROM trigger_vectors t WHERE t.phrase = ANY(phrases) AND NOT EXISTS (
        SELECT 1 FROM entity_versions v
        WHERE v.recall_when <> '[]' AND CAST(v.recall_when AS jsonb) @> jsonb_build_array(t.phrase))
$$;

-- The change log: a bound role appends entries for versions it can see (its own), of the kinds a write makes (a
-- head made or closed, a vector written), never a rebuild or a re-embed, which every process acts on;
-- trimming keeps the newest {CHANGE_LOG_KEEP:,} entries, as the vault always has (storage/base.py).
CREATE FUNCTION pv_version_visible(given bigint) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM entity_versions WHERE vid = given);
END $$;
CREATE POLICY own_version ON head_changes AS RESTRICTIVE FOR INSERT
    WITH CHECK (vid <> 0 AND op IN ({OP_HEAD}, {OP_GONE}, {OP_VECTOR}) AND pv_version_visible(vid));
CREATE FUNCTION pv_trim_changes() RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    DELETE FROM head_changes WHERE seq <= (SELECT max(seq) FROM head_changes) - {CHANGE_LOG_KEEP}
$$;

REVOKE EXECUTE ON FUNCTION {", ".join(_DEFINED)} FROM PUBLIC;
"""
)


# Migration 12: the functions that shared phrase vectors with a bound role, gone with the sharing.
_SHARING = (
    "pv_phrase_used(text)",
    "pv_add_phrase_vectors(text, text[], bytea[])",
    "pv_keep_phrase_vectors(text, text[], bytea[])",
    "pv_forget_phrases(text[])",
)


def phrases_by_scope(s: str) -> str:
    """``trigger_vectors`` per scope (migration 12, in the vault's schema ``s``): the scope key in its key, each vector
    copied to every scope whose versions use its phrase (one no version uses any more is dropped), and admitted to a
    bound role by the key, as every scoped table's rows are; a scope's vectors are of the vault's model and dimension
    (``pv_phrase_vector_fits``), which every reader of that scope's, the owner too, expects."""
    return f"""
DROP POLICY scoped ON {s}.trigger_vectors;
DROP FUNCTION {", ".join(f"{s}.{f}" for f in _SHARING)};
ALTER TABLE {s}.trigger_vectors ADD COLUMN scope text COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE {s}.trigger_vectors DROP CONSTRAINT trigger_vectors_pkey, ADD PRIMARY KEY (model, phrase, scope);
INSERT INTO {s}.trigger_vectors (model, phrase, embedding, scope)
SELECT t.model, t.phrase, t.embedding, u.scope FROM {s}.trigger_vectors t JOIN (
    SELECT DISTINCT v.scope, p.phrase FROM {s}.entity_versions v,
        jsonb_array_elements_text(CAST(v.recall_when AS jsonb)) AS p(phrase)
    WHERE v.recall_when <> '[]') u ON u.phrase = t.phrase
WHERE t.scope = '';
DELETE FROM {s}.trigger_vectors WHERE scope = '';
CREATE FUNCTION {s}.pv_phrase_vector_fits(m text, embedding bytea) RETURNS boolean
LANGUAGE sql STABLE SET search_path = {search_path(s)} AS $$
    SELECT m = (SELECT value FROM {s}.vault_meta WHERE key = 'embedding_model')
       AND length(embedding) = 4 * (SELECT CAST(value AS bigint) FROM {s}.vault_meta WHERE key = 'embedding_dimension')
$$;
CREATE POLICY scoped ON {s}.trigger_vectors USING (scope = pv_bound_scope());
CREATE POLICY fits ON {s}.trigger_vectors AS RESTRICTIVE USING (true) WITH CHECK (pv_phrase_vector_fits(model, embedding));
"""


# What a bound role is given. Rows of its scope (every table but the shared ones): read, add, delete; of updates,
# only the columns the vault updates (never an id or a scope key). The shared tables: read (vault_meta: its own
# binding too, by the policies above); head_changes: append. The functions above for the rest. Trigger-phrase
# vectors are its scope's own from migration 12, and from 13 it may not create temporary objects (hardening.py).
_SCOPED = (
    "entities",
    "entity_versions",
    "links",
    "version_vectors",
    "keyword_docs",
    "keyword_postings",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "kv_entries",
    "trigger_vectors",
    "trigger_terms",
)
_SHARED = ("head_changes", "vault_meta", "_migrations", "vault_scopes")
_UPDATED = {
    "entities": "retrieval_count, last_accessed_ms",
    "entity_versions": "recorded_to_ms",
    "links": "recorded_to_ms",
    "version_vectors": "embedding, bits, vec",
    "keyword_docs": "head",
    "keyword_postings": "head",
    "trigger_vectors": "embedding",
}
_CALLED = (
    "pv_next_id(text, text)",
    "pv_keep_high_water(text)",
    "pv_trim_changes()",
)  # of _DEFINED, those left
_WHOLE_ROWS = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "kv_entries", "vault_meta")
_ROLE = re.compile(r"[a-z_][a-z0-9_$]{0,62}")


def bind_role(conn: Connection, role: str, agent_id: str, workspace_hash: str) -> bool:
    """Bind the existing database role ``role`` to one scope and grant it what a vault's reads and writes
    need (run as the tables' owner, in a write transaction). A role is bound to one scope; binding it
    again moves it. Returns whether the role may still create temporary objects on the database (it may where
    the vault's role does not own the database: :func:`.hardening.lock_down`)."""
    if not _ROLE.fullmatch(role):
        raise InvalidInput("role", "must be a lower-case SQL identifier (letters, digits, _ and $)")
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = ?", (role,)).fetchone()
    if exists is None:
        raise InvalidInput(
            "role", f"no database role {role!r}: CREATE ROLE {role} LOGIN PASSWORD '...' first"
        )
    conn.execute(
        "INSERT INTO vault_scopes (role, agent_id, workspace_hash) VALUES (?, ?, ?) ON CONFLICT (role) "
        "DO UPDATE SET agent_id = excluded.agent_id, workspace_hash = excluded.workspace_hash",
        (role, agent_id, workspace_hash),
    )
    grant(conn, role)
    return bool(
        conn.execute("SELECT has_database_privilege(?, current_database(), 'TEMPORARY')", (role,)).fetchone()[
            0
        ]
    )


def grant(conn: Connection, role: str) -> None:
    """Give the bound role ``role`` exactly what a bound vault needs, taking back anything more it was given on
    the vault's tables and sequences (a role bound before migration 11 had more), and what no bound role needs on
    the database where the vault's role may (:func:`.hardening.lock_down`)."""
    # The tables the schema has by now: an earlier migration grants again before a later one makes its table.
    present = [
        t
        for t in (*_SCOPED, *_SHARED)
        if conn.execute("SELECT to_regclass(?)", (t,)).fetchone()[0] is not None
    ]
    scoped = ", ".join(t for t in _SCOPED if t in present)
    tables = ", ".join(present)
    sequences = ", ".join(
        row[0]
        for row in conn.execute(
            "SELECT pg_get_serial_sequence(t, c) FROM (VALUES ('entities', 'id'), ('entity_versions', 'vid'), "
            "('links', 'id'), ('head_changes', 'seq')) AS identity(t, c)"
        ).fetchall()
    )
    for statement in (
        f"REVOKE ALL ON {tables} FROM {role}",
        f"REVOKE ALL ON SEQUENCE {sequences} FROM {role}",
        f"GRANT USAGE ON SCHEMA {schema_name(conn)} TO {role}",
        f"GRANT SELECT ON {tables} TO {role}",
        f"GRANT INSERT, DELETE ON {scoped}, vault_meta TO {role}",
        f"GRANT INSERT ON head_changes TO {role}",
        f"GRANT UPDATE ON {', '.join(_WHOLE_ROWS)} TO {role}",
        *(f"GRANT UPDATE ({columns}) ON {table} TO {role}" for table, columns in _UPDATED.items()),
        f"GRANT EXECUTE ON FUNCTION {', '.join(_CALLED)} TO {role}",
    ):
        conn.execute(statement)
    lock_down(conn, role)


def restrict(conn: Connection) -> None:
    """Migration 11: :data:`RESTRICTED`, and every role already bound given what :func:`grant` gives, no more."""
    conn.execute(RESTRICTED)
    _grant_bound(conn)


def scope_phrases(conn: Connection) -> None:
    """Migration 12: :func:`phrases_by_scope`, and every role already bound given its scope's phrase vectors."""
    conn.execute(phrases_by_scope(schema_name(conn)))
    _grant_bound(conn)


def harden(conn: Connection) -> None:
    """Migration 13: :func:`.hardening.statements` (functions pinned to the vault's schema, reads by the key alone),
    and every role already bound given what :func:`grant` gives now (no temporary objects, where the vault's role
    may take them)."""
    conn.execute(statements(conn))
    _grant_bound(conn)


def grant_bound(conn: Connection) -> None:
    """Every role already bound given what :func:`grant` gives now (after a migration that adds a table)."""
    _grant_bound(conn)


def _grant_bound(conn: Connection) -> None:
    bound = conn.execute(
        "SELECT s.role FROM vault_scopes s JOIN pg_roles r ON r.rolname = s.role ORDER BY s.role"
    )
    for (role,) in bound.fetchall():
        grant(conn, role)
