"""storage/checks.py: the vault's invariants as counting queries, each breach reported on a line of its own
with its count (on SQLite; storage/postgres/test_maintenance.py runs ``check`` on PostgreSQL)."""

from __future__ import annotations

from perseus_vault_core import Vault
from perseus_vault_core.primitives.dbapi import Connection
from perseus_vault_core.storage.checks import invariant_problems


def problems(vault: Vault) -> list[str]:
    return vault.engine.read(invariant_problems)


def two_memories(vault: Vault) -> tuple[int, int]:
    a = vault.remember("fact", "alpha", "the quokka lives on Rottnest").id
    b = vault.remember("fact", "beta", "the wombat digs burrows").id
    vault.remember("fact", "alpha", "the quokka lives on Rottnest Island")  # a second version
    vault.link(a, b, "related_to")
    return a, b


def test_a_healthy_vault_breaks_no_invariant(vault: Vault) -> None:
    assert problems(vault) == []
    two_memories(vault)
    assert problems(vault) == []


def test_an_entity_whose_scope_key_is_not_its_own_is_reported(vault: Vault) -> None:
    a, _ = two_memories(vault)
    vault.engine.write(lambda c: c.execute("UPDATE entities SET scope = 'elsewhere' WHERE id = ?", (a,)))
    found = problems(vault)
    assert "1 entities rows carry a scope key that is not their agent and workspace's" in found
    # its versions and links keep the old key: they are reported as outside its scope too
    assert "1 entities have no current version (in their scope)" in found
    assert "2 versions belong to no entity (of their scope key)" in found
    assert any(p.startswith("1 links point at missing entities") for p in found)


def test_versions_that_overlap_in_transaction_time_are_reported(vault: Vault) -> None:
    a, _ = two_memories(vault)

    def overlap(c: Connection) -> None:
        c.execute(
            "UPDATE entity_versions SET recorded_to_ms = recorded_to_ms + 1000 "
            "WHERE entity_id = ? AND version = 1",
            (a,),
        )

    vault.engine.write(overlap)
    assert problems(vault) == ["1 versions overlap the next version of their entity in transaction time"]


def test_a_link_to_a_missing_entity_is_reported(vault: Vault) -> None:
    a, _ = two_memories(vault)
    conn = vault.engine.conn()
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        vault.engine.write(
            lambda c: c.execute(
                "INSERT INTO links (from_id, to_id, relation, weight, created_at_ms, recorded_from_ms, scope) "
                "VALUES (?, 999999, 'related_to', 1.0, 0, 0, '')",
                (a,),
            )
        )
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    assert problems(vault) == [
        "1 links point at missing entities (or at entities outside the link's scope key)"
    ]


def test_a_vector_of_the_wrong_size_is_reported(dense_vault: Vault) -> None:
    vault = dense_vault
    two_memories(vault)
    vault.embed()
    assert problems(vault) == []
    vault.engine.write(
        lambda c: c.execute(
            "UPDATE version_vectors SET embedding = zeroblob(8) WHERE vid = (SELECT min(vid) FROM version_vectors)"
        )
    )
    [line] = problems(vault)
    assert line.startswith("1 vectors match no version (of their scope key) or are not the model's size")
