"""Community summaries (docs/graphrag.md): extractive, materialized once, refreshed when membership changes."""

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


def test_summary_is_materialized_once_as_a_linked_entity(vault: Vault) -> None:
    ids = separate(vault)
    cid = community_of(vault, ids["storage"][0])
    first = vault.community_summary(cid)
    assert first.materialized and not first.polished and first.replaced == []
    entity = first.entity
    assert (entity.type, entity.category, entity.key) == ("community_summary", "community_summary", cid)
    assert entity.body["community_id"] == cid and entity.body["size"] == 5
    assert first.text == entity.content == first.extractive
    assert "sqlite" in first.text.splitlines()[0].lower()
    assert first.members == sorted(ids["storage"])
    walk = vault.traverse(entity.id, depth=1, direction="out", relations=["summarizes"])
    assert sorted(n.entity.id for n in walk.nodes if n.depth == 1) == sorted(ids["storage"])
    again = vault.community_summary(cid)
    assert not again.materialized
    assert (again.entity.id, again.entity.version) == (entity.id, entity.version)
    listed = {c.id: c.summary_id for c in vault.communities().communities}
    assert listed[cid] == entity.id and sum(v is not None for v in listed.values()) == 1


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


def test_polish_rewrites_an_unpolished_summary_once(vault: Vault) -> None:
    ids = separate(vault)
    cid = community_of(vault, ids["oncall"][0])
    plain = vault.community_summary(cid)
    calls: list[str] = []

    def llm(text: str) -> str:
        calls.append(text)
        return "On-call: weekly pager rotation, sev1 escalation, reviews within two days."

    polished = vault.community_summary(cid, polish=llm)
    assert polished.materialized and polished.polished and polished.entity.id == plain.entity.id
    again = vault.community_summary(cid, polish=llm)
    assert not again.materialized and again.polished and len(calls) == 1


def test_refresh_rewrites_only_when_the_text_changed(vault: Vault) -> None:
    ids = separate(vault)
    cid = community_of(vault, ids["oncall"][0])
    first = vault.community_summary(cid)
    assert not vault.community_summary(cid, refresh=True).materialized  # same text: unchanged
    vault.remember("oncall", "oncall-0", "The pager rotation for incidents changes every Tuesday")
    refreshed = vault.community_summary(cid, refresh=True)
    assert refreshed.materialized and refreshed.entity.id == first.entity.id
    assert refreshed.entity.version == first.entity.version + 1
    assert "Tuesday" in refreshed.text


def test_polish_rewrites_and_keeps_the_extractive_text_as_evidence(vault: Vault) -> None:
    ids = separate(vault)
    cid = community_of(vault, ids["storage"][0])
    seen: list[str] = []

    def llm(text: str) -> str:
        seen.append(text)
        return "The team runs its storage on SQLite with nightly backups."

    out = vault.community_summary(cid, polish=llm)
    assert (
        out.polished
        and out.text == out.entity.content == "The team runs its storage on SQLite with nightly backups."
    )
    assert out.extractive == seen[0] == out.entity.body["extractive"]
    assert out.entity.provenance_class == "ai_draft"


def test_a_failing_polish_writes_nothing(vault: Vault) -> None:
    ids = separate(vault)
    cid = community_of(vault, ids["storage"][0])
    before = vault.stats().entities

    def broken(text: str) -> str:
        raise RuntimeError("model offline")

    with pytest.raises(InvalidInput) as err:
        vault.community_summary(cid, polish=broken)
    assert err.value.field == "polish" and "model offline" in str(err.value)
    with pytest.raises(InvalidInput):
        vault.community_summary(cid, polish=lambda text: "   ")
    with pytest.raises(InvalidInput):
        vault.community_summary(cid, polish="not callable")  # type: ignore[arg-type]
    assert vault.stats().entities == before


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
