"""storage/meta.py: the vault-wide settings by key (set, replace, remove) and the migration step that marks
the memories written before writes judged relations."""

from __future__ import annotations

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.storage.meta import RELATIONS_PENDING, get_meta, mark_relations_pending, set_meta

pytestmark = pytest.mark.both_backends


def test_a_setting_is_set_replaced_and_removed(vault: Vault) -> None:
    engine = vault.engine
    assert engine.read(lambda c: get_meta(c, "test:colour")) is None
    engine.write(lambda c: set_meta(c, "test:colour", "blue"))
    assert engine.read(lambda c: get_meta(c, "test:colour")) == "blue"
    engine.write(lambda c: set_meta(c, "test:colour", "green"))  # an upsert: one row, the new value
    assert engine.read(lambda c: get_meta(c, "test:colour")) == "green"
    count = engine.read(
        lambda c: c.execute("SELECT count(*) FROM vault_meta WHERE key = ?", ("test:colour",)).fetchone()[0]
    )
    assert count == 1
    engine.write(lambda c: set_meta(c, "test:colour", None))
    assert engine.read(lambda c: get_meta(c, "test:colour")) is None
    engine.write(lambda c: set_meta(c, "test:colour", None))  # removing what is gone is no error


def test_settings_are_kept_apart_and_an_empty_value_is_a_value(vault: Vault) -> None:
    engine = vault.engine
    engine.write(lambda c: (set_meta(c, "test:a", ""), set_meta(c, "test:b", "naïve ✓")))
    assert engine.read(lambda c: (get_meta(c, "test:a"), get_meta(c, "test:b"))) == ("", "naïve ✓")


def test_relations_pending_is_not_marked_in_a_vault_with_no_memory(vault: Vault) -> None:
    vault.engine.write(mark_relations_pending)
    assert vault.engine.read(lambda c: get_meta(c, RELATIONS_PENDING)) is None


def test_relations_pending_marks_the_highest_entity_id(vault: Vault) -> None:
    vault.remember("notes", "a", "the first memory")
    last = vault.remember("notes", "b", "the second memory")
    vault.engine.write(lambda c: set_meta(c, RELATIONS_PENDING, None))
    vault.engine.write(mark_relations_pending)
    assert vault.engine.read(lambda c: get_meta(c, RELATIONS_PENDING)) == str(last.id)
