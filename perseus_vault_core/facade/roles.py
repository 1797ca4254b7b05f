"""Database roles bound to one scope, on PostgreSQL (row-level security: docs/postgres.md, storage/postgres/tenancy.py)."""

from __future__ import annotations

from ..contract.errors import InvalidInput, NotSupported
from ..contract.models import RoleBinding
from ..contract.params.base import MAX_SCOPE_CHARS
from .vault import Vault


def bind_role(
    vault: Vault, role: str, *, agent_id: str | None = None, workspace_hash: str | None = None
) -> RoleBinding:
    """Bind the database role ``role`` to the scope (``agent_id``, ``workspace_hash``; omitted: the default
    scope, ``''``) and grant it a vault's reads and writes there: a server that connects as that role sees
    and writes that scope only, whatever its own filters do. Run as the vault's owner."""
    engine = vault.engine
    if engine.backend.name != "postgres":
        raise NotSupported(
            "row-level security needs a PostgreSQL vault; a SQLite file has one owner (its file mode)"
        )
    for name, value in (("agent_id", agent_id), ("workspace_hash", workspace_hash)):
        if value is not None and (not isinstance(value, str) or len(value) > MAX_SCOPE_CHARS):
            raise InvalidInput(name, f"must be a string of at most {MAX_SCOPE_CHARS} characters")
    from ..storage.postgres import tenancy

    scope = (agent_id or "", workspace_hash or "")
    temporary = engine.write(lambda c: tenancy.bind_role(c, role, *scope))
    return RoleBinding(role=role, agent_id=scope[0], workspace_hash=scope[1], temporary_objects=temporary)
