"""Looking after the file: ``stats``, ``check``, ``reindex``, ``backup`` and ``rekey``, each the storage
backend's (docs/operations.md), with what the open vault adds: the in-memory indexes' state in ``stats``,
their reset and the relations judged after a ``reindex``, the refusals that need no database."""

from __future__ import annotations

from pathlib import Path

from ..contract.errors import Conflict, InvalidInput
from ..contract.models import CheckReport, ReindexReport, Stats
from ..contract.params import BackupParams, NoParams, RekeyParams
from ..engine.engine import Engine
from . import backfill


def stats(engine: Engine, p: NoParams) -> Stats:
    """Counts, sizes, versions, embedding coverage and model, and the in-memory indexes' state."""
    describe = [i.describe() if i is not None else "off" for i in (engine.keyword_index, engine.vector_index)]
    return engine.read(lambda c: engine.backend.stats(c, *describe))


def check(engine: Engine, p: NoParams) -> CheckReport:
    """Integrity of the file, keyword indexes in sync with their rows, and the vault's invariants."""
    return engine.backend.check()


def reindex(engine: Engine, p: NoParams, progress: backfill.Progress | None = None) -> ReindexReport:
    """Rebuild the keyword indexes (and drop the in-memory ones), judge the relations of memories written
    before writes did, then check."""
    engine.backend.reindex()
    engine.reset_indexes()
    judged = backfill.relations(engine, progress)
    return ReindexReport(relations_judged=judged, **engine.backend.check().model_dump())


def backup(engine: Engine, p: BackupParams) -> str:
    """A consistent copy at ``p.target`` while others keep writing; the copy's path."""
    folder = Path(p.target).resolve().parent
    if not folder.is_dir():
        raise InvalidInput("target", f"folder {folder} does not exist")
    return engine.backend.backup(p.target)


def rekey(engine: Engine, p: RekeyParams) -> None:
    """Re-encrypt an encrypted vault under ``p.new_key``."""
    if not engine.backend.encrypted:
        raise Conflict("the vault is not encrypted; rekey changes the key of an encrypted vault")
    engine.backend.rekey(p.new_key)
