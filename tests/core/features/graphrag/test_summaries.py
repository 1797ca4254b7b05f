"""Community summaries (docs/graphrag.md): extractive, a new one when membership changes (the old one
superseded, and back when the membership comes back), scoped and budgeted; writing, reading and polishing
them through community_summary is test_verbs.py's."""

from __future__ import annotations

import pytest

from perseus_vault_core import InvalidInput, NotFound, Vault
from perseus_vault_core.features.graphrag.summaries import extract

from .test_communities import THEMES, build


def separate(vault: Vault) -> dict[str, list[int]]:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])
    return ids


def community_of(vault: Vault, member: int) -> str:
    return next(c.id for c in vault.communities().communities if member in c.members)


def test_extract_picks_each_central_members_most_shared_sentence() -> None:
    members = [
        (1, None, "Lunch was good. SQLite keeps the vault storage durable."),
        (2, "Storage engine", "We picked SQLite for storage."),
        (3, None, "Backups copy the SQLite file every night."),
    ]
    title, text, terms = extract(members, size=3, max_chars=1000)
    assert terms[:2] == ["sqlite", "storage"]
    assert title == "Community: sqlite, storage"
    lines = text.splitlines()
    assert lines[0] == "3 linked memories about sqlite, storage."
    assert lines[1] == "- SQLite keeps the vault storage durable. (#1)"  # not the lunch sentence
    assert lines[2].endswith("(#2)") and lines[3].endswith("(#3)")
    short_title, short, _ = extract(members, size=3, max_chars=len(lines[0]) + len(lines[1]) + 1)
    assert short.splitlines() == lines[:2]
    assert extract(members, 3, 1000) == (title, text, terms)  # pure: the same input, the same text


def test_membership_change_writes_a_new_summary_and_supersedes_the_old(vault: Vault) -> None:
    ids = separate(vault)
    old_id = community_of(vault, ids["billing"][0])
    old = vault.community_summary(old_id)
    extra = vault.remember("billing", "billing-5", "Credit notes reverse invoices in billing").id
    vault.link(extra, ids["billing"][0])
    vault.link(extra, ids["billing"][2])
    new_id = community_of(vault, extra)
    assert new_id != old_id
    with pytest.raises(NotFound):
        vault.community_summary(old_id)  # that community no longer exists
    new = vault.community_summary(new_id)
    assert new.materialized and new.replaced == [old.entity.id]
    assert vault.get_entity(old.entity.id).status == "archived"
    assert extra in new.members


def test_a_membership_that_comes_back_gets_its_summary_back(vault: Vault) -> None:
    """A -> B -> A: the first summary is archived when B replaces it, and restored (not refused)
    when A returns; switching methods back and forth works the same way."""
    ids = separate(vault)
    a_id = community_of(vault, ids["oncall"][0])
    a = vault.global_recall("incidents", communities=1).communities[0]
    assert a.community.id == a_id
    extra = vault.remember("oncall", "oncall-5", "Pager alerts go to the on-call lead").id
    vault.link(extra, ids["oncall"][0])
    b = vault.global_recall("incidents", communities=1).communities[0]
    assert b.community.id != a_id and vault.get_entity(a.summary_id).status == "archived"
    vault.forget(extra)
    back = vault.global_recall("incidents", communities=1).communities[0]
    assert back.community.id == a_id and back.summary_id == a.summary_id
    assert vault.get_entity(a.summary_id).status == "active"
    assert vault.get_entity(b.summary_id).status == "archived"
    for method in ("modularity", "label_propagation", "modularity"):
        assert vault.global_recall("incidents", communities=1, method=method).communities


def test_summary_respects_scope_and_budget(vault: Vault) -> None:
    mine = build(vault, agent_id="alice")
    build(vault, agent_id="bob")
    cid = next(
        c.id for c in vault.communities(agent_id="alice").communities if mine["oncall"][0] in c.members
    )
    with pytest.raises(NotFound):
        vault.community_summary(cid, agent_id="bob")
    out = vault.community_summary(cid, agent_id="alice", max_chars=200)
    assert out.entity.agent_id == "alice" and len(out.text) <= 200
    for bad, field in (({"max_chars": 10}, "max_chars"), ({"method": "x"}, "method"), ({"nope": 1}, "nope")):
        with pytest.raises(InvalidInput) as err:
            vault.community_summary(cid, agent_id="alice", **bad)
        assert err.value.field == field


def test_summary_texts_come_from_the_members(vault: Vault) -> None:
    ids = separate(vault)
    out = vault.community_summary(community_of(vault, ids["billing"][0]))
    sentences = [line[2:].rsplit(" (#", 1)[0] for line in out.text.splitlines()[1:]]
    assert sentences and all(s in THEMES["billing"] for s in sentences)
