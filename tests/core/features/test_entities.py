"""One memory by its id (perseus_vault_core/features/entities.py), called as the facade calls it, with the engine
and a validated params model: read whole, archived, superseded, purged with its history and links; a scope that
does not match refuses and changes nothing."""

from __future__ import annotations

import pytest

from perseus_vault_core import NotFound, Vault
from perseus_vault_core.contract.params import EntityParams, SupersedeParams
from perseus_vault_core.features import entities

pytestmark = pytest.mark.both_backends


def test_each_verb_on_one_memory(vault: Vault) -> None:
    engine = vault.engine
    old = vault.remember(category="fact", key="db", content="We use MySQL.", agent_id="a")
    new = vault.remember(category="fact", key="db-now", content="We moved to Postgres.", agent_id="a")
    assert entities.get_entity(engine, EntityParams(id=old.id)).content == "We use MySQL."
    with pytest.raises(NotFound):
        entities.get_entity(engine, EntityParams(id=old.id, agent_id="b"))  # another tenant's: not found
    marked = entities.supersede(engine, SupersedeParams(old_id=old.id, new_id=new.id, agent_id="a"))
    assert marked.id == old.id and marked.superseded_by == new.id
    assert entities.forget(engine, EntityParams(id=old.id)).status == "archived"
    purged = entities.purge(engine, EntityParams(id=old.id))
    assert purged.id == old.id
    with pytest.raises(NotFound):
        entities.get_entity(engine, EntityParams(id=old.id))
    assert entities.get_entity(engine, EntityParams(id=new.id)).content == "We moved to Postgres."
