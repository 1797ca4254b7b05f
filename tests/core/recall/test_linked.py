"""``follow_links`` (perseus_vault_core/recall/linked.py): the memories linked to recall's best hits join its
candidates and are ranked with them, under the caller's view (scope, filters, where, status, time); off, the
default, recall is what it was."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Vault

from ...conftest import Clock

pytestmark = pytest.mark.both_backends

FILLER = [
    "Bob prefers tea in the afternoon.",
    "The office plants need water on Fridays.",
    "Standup is at 09:30 every day.",
    "The quarterly review is in the big room.",
]


def _ids(vault: Vault, query: str, **more: Any) -> list[int]:
    return [i.id for i in vault.recall(query, reinforce=False, **more).items]


def _bridge(vault: Vault, **scope: Any) -> tuple[int, int]:
    """Alice's service and where it runs (the second names neither Alice nor a region), linked by hand."""
    owner = vault.remember(
        category="person", key="alice", content="Alice Moreau owns the invoicing service.", **scope
    )
    where = vault.remember(
        category="fact",
        key="invoicing-region",
        content="invoicing is deployed in eu-west-1.",
        body={"team": "payments"},
        **scope,
    )
    vault.link(owner.id, where.id, "depends_on", **scope)
    vault.remember_many(
        [{"category": "note", "key": f"f{i}", "content": c, **scope} for i, c in enumerate(FILLER)]
    )
    return owner.id, where.id


def test_a_linked_memory_the_query_alone_does_not_find_joins_and_is_ranked(vault: Vault) -> None:
    owner, where = _bridge(vault)
    assert _ids(vault, "What does Alice own?") == [owner]
    found = vault.recall("What does Alice own?", reinforce=False, follow_links=True).items
    assert [i.id for i in found] == [owner, where]
    assert found[1].score < found[0].score  # ranked by its own score and the link's share, not appended first
    assert _ids(vault, "What does Alice own?", follow_links=True, limit=1) == [owner]


def test_links_are_followed_either_way_and_those_the_vault_inferred_too(vault: Vault) -> None:
    owner, where = _bridge(vault)
    assert _ids(vault, "eu-west-1", follow_links=True) == [where, owner]  # against the link's direction
    a = vault.remember(category="fact", key="ledger-owner", content="Kenji Watanabe owns ledger-api.")
    b = vault.remember(category="fact", key="ledger-db", content="ledger-api stores postings in Postgres 16.")
    assert any(
        n.entity.id == a.id for n in vault.traverse(b.id, depth=1).nodes
    )  # inferred at write, not linked
    assert _ids(vault, "Kenji", follow_links=True) == [a.id, b.id]


def test_a_neighbour_the_view_hides_never_joins(vault: Vault, clock: Clock) -> None:
    before = clock.advance(1_000)
    clock.advance(1_000)
    owner, where = _bridge(vault)
    query = "What does Alice own?"
    assert where not in _ids(vault, query, follow_links=True, category="person")
    assert where not in _ids(vault, query, follow_links=True, where={"team": "sales"})
    assert where in _ids(
        vault, query, follow_links=True, where={"$or": [{"team": "payments"}, {"team": {"$exists": False}}]}
    )
    other_owner, other_where = _bridge(vault, workspace_hash="w2")
    assert _ids(vault, query, follow_links=True, workspace_hash="w2") == [other_owner, other_where]
    vault.forget(where)
    assert where not in _ids(vault, query, follow_links=True)
    assert where not in _ids(vault, query, follow_links=True, as_of_unix_ms=before)


def test_a_link_into_another_scope_is_not_followed(vault: Vault, backend: str) -> None:
    if backend == "postgres":
        pytest.skip("PostgreSQL's schema refuses a link across scopes (links_to_id_scope_fkey)")
    owner, _ = _bridge(vault, workspace_hash="w1")
    elsewhere = vault.remember(
        category="fact",
        key="invoicing-region",
        content="invoicing is deployed in us-east-2.",
        workspace_hash="w2",
    )
    # Links never cross scopes through the API; one written behind its back is still never followed.
    vault.engine.write(
        lambda c: c.execute(
            "INSERT INTO links (id, from_id, to_id, relation, weight, source, created_at_ms, recorded_from_ms, scope) "
            "SELECT 9999, ?, ?, 'related', 1.0, NULL, 0, 0, e.scope FROM entities e WHERE e.id = ?",
            (owner, elsewhere.id, owner),
        )
    )
    assert elsewhere.id not in _ids(vault, "What does Alice own?", follow_links=True, workspace_hash="w1")


def test_off_by_default_and_the_same_ranking_without_links(vault: Vault) -> None:
    _bridge(vault)
    for query in ("What does Alice own?", "eu-west-1", "tea", "standup"):
        plain = vault.recall(query, reinforce=False).items
        assert [(i.id, i.score) for i in plain] == [
            (i.id, i.score) for i in vault.recall(query, reinforce=False, follow_links=False).items
        ]
    lone = vault.remember(category="fact", key="lone", content="The wiki lives at wiki.example.org.")
    alone = [(i.id, i.score) for i in vault.recall("wiki", reinforce=False).items]
    assert [(i.id, i.score) for i in vault.recall("wiki", reinforce=False, follow_links=True).items] == alone
    assert [i for i, _ in alone] == [lone.id]


def test_an_empty_query_refuses_it(vault: Vault) -> None:
    with pytest.raises(InvalidInput, match="follow_links"):
        vault.recall("", follow_links=True)


def test_dense_and_hybrid_recall_follow_links_too(dense_vault: Vault) -> None:
    owner, where = _bridge(dense_vault)
    for mode in ("dense", "hybrid"):
        found = _ids(dense_vault, "What does Alice own?", mode=mode, follow_links=True)
        assert found[0] == owner and where in found
