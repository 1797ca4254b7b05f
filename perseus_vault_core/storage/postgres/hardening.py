"""Migration 13: a role bound to one scope (:mod:`.tenancy`) cannot reach past it with objects of its own session.

Row-level security calls functions (``pv_bound_scope()`` and the checks of migration 11), and a few functions run as
the tables' owner (``SECURITY DEFINER``). Until this step each found its tables by the caller's ``search_path``, in
which a session's temporary schema comes first unless it is named last: a bound role that made a temporary table
``vault_scopes`` holding another scope's binding was, to every policy, bound to that scope, and read, wrote and
deleted that tenant's memories; one that shadowed ``entity_versions``, ``vault_meta`` or ``pg_sequences`` steered what
the owner's functions deleted, stored or counted. Now every function a policy calls and every function that runs as
the owner (:data:`PINNED`, and migration 12's ``pv_phrase_vector_fits``, made so)

- runs with ``search_path = pg_catalog, <the vault's schema>, pg_temp``: the catalog first, so no type or function
  of a session's own comes before PostgreSQL's, and the temporary schema last, where PostgreSQL never looks for a
  function or an operator unless it is named;
- names every table it reads with the vault's schema, so no other object of that name is ever read.

``pv_decay`` stays as it was: it reads no table and calls only PostgreSQL's functions, and the planner inlines it into
the query that calls it, which a function with a ``SET`` clause never is.

Where the vault's role may, binding a role also takes away what no bound role needs (:func:`lock_down`): temporary
objects on the vault's database (``TEMPORARY``, which PostgreSQL grants to ``PUBLIC``, so it is taken from
``PUBLIC``) and creating objects in the vault's schema. The pinned functions hold without that; it closes the door
the attack came through, for whatever a later function might forget.

Reads are admitted by the scope key alone (``scope = pv_bound_scope()``, :func:`policies_by_key`); that a row's key
is its own agent's and workspace's is checked on the rows a role writes (``WITH CHECK``), where it matters. The second
comparison on every row read made PostgreSQL guess that a scope's rows were a handful, and plan a bound role's reads
as nested loops over the whole scope (a ``remember`` took 3.6 times the owner's, before statistics).
"""

from __future__ import annotations

from ...primitives.dialect import POSTGRES
from ..base import CHANGE_LOG_KEEP, Connection
from .connection import WRITE_LOCK

_OWN = POSTGRES.scope_key("agent_id", "workspace_hash")

# Every function a policy calls, or that runs as the tables' owner, with its arguments: pinned by this step.
PINNED = (
    "pv_bound_scope()",
    "pv_next_id(text, text)",
    "pv_given_id(text, text, bigint)",
    "pv_high_water(text)",
    "pv_keep_high_water(text)",
    "pv_own_meta(text)",
    "pv_version_visible(bigint)",
    "pv_trim_changes()",
    "pv_versions_immutable()",
)
# The tables whose rows name their agent and workspace beside their key: a row written must be its own scope's.
NAMED = (
    "entities",
    "keyword_docs",
    "keyword_postings",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "kv_entries",
)


def search_path(schema: str) -> str:
    """The pinned path, ``schema`` quoted: the catalog, the vault's schema, the session's temporary schema last."""
    return f"pg_catalog, {schema}, pg_temp"


def functions(s: str) -> str:
    """Every function of :data:`PINNED`, in the vault's schema ``s`` (quoted), its tables named with it."""
    return _scope_functions(s) + _id_functions(s)


def _id_functions(s: str) -> str:
    """The ids: what comes next, the check of a bound role's, a purge's high-water mark."""
    pin = f"SET search_path = {search_path(s)}"
    literal = s.replace("'", "''")  # the schema inside a string literal
    ids = " ".join(
        f"WHEN '{t}.{c}' THEN SELECT max({c}) INTO top FROM {s}.{t};"
        for t, c in (("entities", "id"), ("entity_versions", "vid"), ("links", "id"))
    )
    return f"""
-- Past every tenant's ids (run as the owner, whom no policy limits): the table's identity sequence, its largest id,
-- and the largest a purge removed. Each table's own statement, so that each is planned once per session.
CREATE OR REPLACE FUNCTION {s}.pv_next_id(tab text, col text) RETURNS bigint
LANGUAGE plpgsql STABLE SECURITY DEFINER {pin} AS $$
DECLARE
    top bigint;
BEGIN
    CASE tab || '.' || col {ids}
    ELSE RAISE EXCEPTION 'pv_next_id: no identity %.%', tab, col;
    END CASE;
    RETURN greatest(coalesce(pg_sequence_last_value(CAST(pg_get_serial_sequence('{literal}.' || tab, col) AS regclass)), 0),
                    coalesce(top, 0), {s}.pv_high_water(tab)) + 1;
END $$;

CREATE OR REPLACE FUNCTION {s}.pv_given_id(tab text, col text, given bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE {pin} AS $$
DECLARE
    wanted bigint;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = 'a role bound to a scope writes in READ COMMITTED transactions, as the vault does';
    END IF;
    PERFORM pg_advisory_xact_lock({WRITE_LOCK});
    wanted := {s}.pv_next_id(tab, col);
    IF given IS DISTINCT FROM wanted THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', MESSAGE = format(
            'a role bound to a scope gives a new row of %s the id the vault gives next (%s), not %s', tab, wanted, given);
    END IF;
    RETURN true;
END $$;

CREATE OR REPLACE FUNCTION {s}.pv_high_water(tab text) RETURNS bigint LANGUAGE sql STABLE {pin} AS $$
    SELECT coalesce(max(CAST(value AS bigint)), 0) FROM {s}.vault_meta WHERE key = 'high_water:' || tab
$$;

CREATE OR REPLACE FUNCTION {s}.pv_keep_high_water(tab text) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER {pin} AS $$
BEGIN
    IF tab NOT IN ('entities', 'entity_versions', 'links') THEN
        RAISE EXCEPTION 'pv_keep_high_water: no identity %', tab;
    END IF;
    INSERT INTO {s}.vault_meta (key, value) VALUES ('high_water:' || tab,
        CAST({s}.pv_next_id(tab, CASE tab WHEN 'entity_versions' THEN 'vid' ELSE 'id' END) - 1 AS text))
        ON CONFLICT (key) DO UPDATE SET value = excluded.value;
END $$;
"""


def _scope_functions(s: str) -> str:
    """The binding, what a bound role may see of the settings and the change log, and the versions' immutability."""
    pin = f"SET search_path = {search_path(s)}"
    return f"""
CREATE OR REPLACE FUNCTION {s}.pv_bound_scope() RETURNS text LANGUAGE sql STABLE PARALLEL SAFE {pin} AS $$
    SELECT {_OWN} FROM {s}.vault_scopes WHERE role = current_user
$$;

CREATE OR REPLACE FUNCTION {s}.pv_own_meta(k text) RETURNS boolean LANGUAGE plpgsql STABLE {pin} AS $$
DECLARE
    bound record;
BEGIN
    IF NOT starts_with(k, 'memory_folder:') THEN
        RETURN false;
    END IF;
    SELECT agent_id, workspace_hash INTO bound FROM {s}.vault_scopes WHERE role = current_user;
    RETURN FOUND AND CAST(substr(k, 15) AS jsonb) = jsonb_build_array(bound.agent_id, bound.workspace_hash);
EXCEPTION WHEN invalid_text_representation THEN
    RETURN false;
END $$;

CREATE OR REPLACE FUNCTION {s}.pv_version_visible(given bigint) RETURNS boolean LANGUAGE plpgsql STABLE {pin} AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM {s}.entity_versions WHERE vid = given);
END $$;

CREATE OR REPLACE FUNCTION {s}.pv_trim_changes() RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER {pin} AS $$
    DELETE FROM {s}.head_changes WHERE seq <= (SELECT max(seq) FROM {s}.head_changes) - {CHANGE_LOG_KEEP}
$$;

CREATE OR REPLACE FUNCTION {s}.pv_versions_immutable() RETURNS trigger LANGUAGE plpgsql {pin} AS $$
BEGIN
    RAISE EXCEPTION 'entity versions are immutable';
END $$;
"""


def policies_by_key(s: str) -> str:
    """Reads by the scope key alone; a row written is also its agent's and workspace's own."""
    return (
        "".join(
            f"""
ALTER POLICY scoped ON {s}.{table} USING (scope = pv_bound_scope())
    WITH CHECK (scope = pv_bound_scope() AND scope = {_OWN});"""
            for table in NAMED
        )
        + "\n"
    )


def schema_name(conn: Connection) -> str:
    """The vault's schema (the connection's current one, where the migrations made the tables), quoted."""
    return str(conn.execute("SELECT quote_ident(current_schema())").fetchone()[0])


def statements(conn: Connection) -> str:
    """Migration 13's SQL for the vault's schema (see the module docstring)."""
    s = schema_name(conn)
    return functions(s) + policies_by_key(s)


def lock_down(conn: Connection, role: str) -> None:
    """Take from ``role`` what no bound role needs, where the vault's role may: temporary objects on the vault's
    database (from ``PUBLIC`` too, since every role holds ``PUBLIC``'s rights and PostgreSQL grants ``TEMPORARY`` to
    ``PUBLIC``: other roles that need temporary tables there are granted it by name), and creating objects in the
    vault's schema or database. The database's owner (or a superuser) may; another owner's database is left as it
    is, and :func:`.tenancy.bind_role` reports what the role can still create."""
    database, owns_database, owns_schema = conn.execute(
        "SELECT quote_ident(current_database()), "
        "pg_has_role((SELECT datdba FROM pg_database WHERE datname = current_database()), 'MEMBER'), "
        "pg_has_role((SELECT nspowner FROM pg_namespace WHERE nspname = current_schema()), 'MEMBER')"
    ).fetchone()
    if owns_database:
        conn.execute(f"REVOKE TEMPORARY ON DATABASE {database} FROM PUBLIC")
        conn.execute(f"REVOKE TEMPORARY, CREATE ON DATABASE {database} FROM {role}")
    if owns_schema:
        conn.execute(f"REVOKE CREATE ON SCHEMA {schema_name(conn)} FROM PUBLIC, {role}")


__all__ = [
    "NAMED",
    "PINNED",
    "functions",
    "lock_down",
    "policies_by_key",
    "schema_name",
    "search_path",
    "statements",
]
