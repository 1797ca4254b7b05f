"""One memory by its id: read it whole, archive it, mark it superseded, delete it for good (docs/time.md
says what each keeps of its history). The rows change in records/store.py; each verb here is its one
transaction, stamped by the engine's clock."""

from __future__ import annotations

from ..contract.models import Entity, PurgeResult
from ..contract.params import EntityParams, SupersedeParams
from ..engine.engine import Engine
from ..records import store


def get_entity(engine: Engine, p: EntityParams) -> Entity:
    """The memory, whole (its current version); scope fields, when given, must match it."""
    return store.to_entity(store.scoped_head(engine.conn(), p.id, p.agent_id, p.workspace_hash), engine.now())


def forget(engine: Engine, p: EntityParams) -> Entity:
    """Archive the memory (reversible: remembering its (category, key) again restores it); it, as it now
    stands."""
    engine.write(lambda c: store.forget(engine.backend, c, p.id, p.agent_id, p.workspace_hash, engine.now()))
    return engine.entity(p.id)


def purge(engine: Engine, p: EntityParams) -> PurgeResult:
    """Delete an archived memory, its history and its links; then the saved index snapshots that may hold
    it."""
    result = engine.write(lambda c: store.purge(engine.backend, c, p.id, p.agent_id, p.workspace_hash))
    engine.forget_snapshots()
    return result


def supersede(engine: Engine, p: SupersedeParams) -> Entity:
    """Mark ``p.old_id`` superseded by ``p.new_id``; the old memory as it now stands."""
    engine.write(
        lambda c: store.supersede(
            engine.backend, c, p.old_id, p.new_id, p.agent_id, p.workspace_hash, engine.now()
        )
    )
    return engine.entity(p.old_id)
