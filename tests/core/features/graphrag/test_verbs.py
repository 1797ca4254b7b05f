"""features/graphrag/verbs.py: the verbs over communities. communities keeps those containing given
memories; community_summary writes a summary once (an entity linked to its members), reads it after,
rewrites it on refresh only when its text changed, and polishes it once with the caller's model, keeping
the extractive text, writing nothing when the model fails; global_recall writes the summaries it needs
once, their vectors their members' centroid."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Vault

from .test_communities import build
from .test_global_recall import chosen_members
from .test_summaries import community_of, separate


def test_containing_keeps_the_communities_of_those_memories(vault: Vault) -> None:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])
    mine = vault.communities(containing=[ids["billing"][2]])
    assert [c.members for c in mine.communities] == [sorted(ids["billing"])] and mine.total == 1
    two = vault.communities(containing=[ids["storage"][0], ids["oncall"][3], 10**9])
    assert {tuple(c.members) for c in two.communities} == {
        tuple(sorted(ids["storage"])),
        tuple(sorted(ids["oncall"])),
    }
    lonely = vault.remember("n", "alone", "no links").id
    assert vault.communities(containing=[lonely]).communities == []
    with pytest.raises(InvalidInput) as err:
        vault.communities(containing=[0])
    assert err.value.field == "containing.0"


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


def test_summaries_are_written_once_then_reused(vault: Vault) -> None:
    ids = build(vault)
    vault.unlink(ids["storage"][4], ids["billing"][4])
    vault.global_recall("storage engine")
    summaries = vault.recall("", type="community_summary", limit=100).items
    assert len(summaries) == 3
    versions = {s.id: s.version for s in summaries}
    vault.global_recall("billing")
    assert {s.id: s.version for s in vault.recall("", type="community_summary", limit=100).items} == versions


def test_summary_vectors_are_their_members_centroid_with_no_model_call(
    dense_vault: Vault, fake_embedder: Any
) -> None:
    """A summary's vector is the unit mean of its members' vectors: the first global_recall embeds only
    its question, however many communities it summarizes."""
    import numpy as np

    ids = build(dense_vault)
    dense_vault.unlink(ids["storage"][4], ids["billing"][4])
    before = fake_embedder.texts
    result = dense_vault.global_recall("invoices and refunds", communities=1, mode="dense")
    assert fake_embedder.texts - before == 1  # the question; three summaries written without the model
    assert chosen_members(result) == [sorted(ids["billing"])]
    vectors = dense_vault.engine.backend.vectors
    conn = dense_vault.engine.conn()
    for community in dense_vault.communities().communities:
        members = vectors.head_vectors(conn, community.members)
        mean = np.mean([members[m] for m in community.members], axis=0)
        stored = vectors.head_vectors(conn, [community.summary_id])[community.summary_id]
        assert np.allclose(stored, mean / np.linalg.norm(mean), atol=1e-6)
