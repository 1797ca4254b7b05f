"""features/relations.py: what a write judges of a new memory and its candidates, kept as inferred links;
what wins over them (the agent's links and supersedes, a judge's verdicts); the conflicts hygiene lists.
Batches judged against the store and among themselves are test_remembering.py's. On both backends, with
the fake embedder (the bundled model's own candidates are measured in benchmarks/curation.py)."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput, Vault

from ...conftest import Clock

pytestmark = pytest.mark.both_backends
DAY_MS = 86_400_000


def links(vault: Vault, open_only: bool = True) -> list[tuple[int, int, str, str]]:
    sql = "SELECT from_id, to_id, relation, source FROM links" + (
        " WHERE recorded_to_ms IS NULL" if open_only else ""
    )
    return sorted(
        (int(a), int(b), str(r), str(s)) for a, b, r, s in vault.engine.conn().execute(sql + " ORDER BY id")
    )


def test_a_write_keeps_its_candidates_as_inferred_links_from_the_newer(
    dense_vault: Vault, clock: Clock
) -> None:
    old = dense_vault.remember(
        "fact", "prod-region", "Production runs in us-east-1.", valid_from_ms=clock.now
    )
    dense_vault.remember("note", "lunch", "Lunch is at noon in the atrium.")
    clock.advance(DAY_MS)
    new = dense_vault.remember("fact", "prod-region-now", "Production runs in eu-west-1.")
    assert [(s.id, s.relation) for s in new.similar] == [(old.id, "update")]
    assert links(dense_vault) == [(new.id, old.id, "updates", "inferred")]
    # A memory written later but true earlier is the older of the pair: the link still goes newer -> older.
    back = dense_vault.remember(
        "fact", "prod-region-2019", "Production runs in us-west-2.", valid_from_ms=clock.now - 400 * DAY_MS
    )
    assert (new.id, back.id, "updates", "inferred") in links(dense_vault) or (
        old.id,
        back.id,
        "updates",
        "inferred",
    ) in links(dense_vault)


def test_a_new_version_is_judged_anew_and_its_old_judgements_stay_as_history(
    dense_vault: Vault, clock: Clock
) -> None:
    old = dense_vault.remember("fact", "prod-region", "Production runs in us-east-1.")
    clock.advance(DAY_MS)
    new = dense_vault.remember("fact", "prod-region-now", "Production runs in eu-west-1.")
    assert links(dense_vault) == [(new.id, old.id, "updates", "inferred")]
    clock.advance(DAY_MS)
    dense_vault.remember(
        "fact", "prod-region-now", "The lunch menu changes every Friday."
    )  # another text entirely
    assert links(dense_vault) == []
    assert (new.id, old.id, "updates", "inferred") in links(dense_vault, open_only=False)


def test_the_agents_link_supersede_and_unlink_win_over_inference(dense_vault: Vault, clock: Clock) -> None:
    a = dense_vault.remember("fact", "a", "Production runs in us-east-1.")
    dense_vault.link(a.id, dense_vault.remember("note", "x", "Unrelated words here.").id, "mentions")
    b_first = dense_vault.remember("fact", "b", "Staging runs in us-east-1.")
    dense_vault.link(b_first.id, a.id, "distinct")  # the agent said so: never inferred again for this pair
    clock.advance(DAY_MS)
    dense_vault.remember("fact", "b", "Staging runs in us-east-1 still.")  # a new version: judged anew
    assert not any(s == "inferred" and {x, y} == {a.id, b_first.id} for x, y, _, s in links(dense_vault))
    c = dense_vault.remember("fact", "c", "Production runs in eu-west-1.")
    assert (c.id, a.id, "updates", "inferred") in links(dense_vault)
    dense_vault.unlink(
        c.id, a.id, "updates"
    )  # judged wrong: closed, and not opened again by a recall or reopen
    dense_vault.recall("where does production run")
    assert not any({x, y} == {a.id, c.id} for x, y, _, _ in links(dense_vault))
    assert not any({x.newer, x.older} == {a.id, c.id} for x in dense_vault.hygiene().conflicts)


def test_a_kept_relation_is_read_not_judged_again(vault_path: Any, clock: Clock, fake_embedder: Any) -> None:
    with Vault(vault_path, clock=clock, embedder=fake_embedder) as vault:
        old = vault.remember("fact", "prod-region", "Production runs in us-east-1.")
        clock.advance(DAY_MS)
        new = vault.remember("fact", "prod-region-now", "Production runs in eu-west-1.")
        before = links(vault, open_only=False)
    with Vault(vault_path, clock=clock, embedder=fake_embedder) as vault:  # reopened
        for query in ("where does production run", "production region"):
            items = vault.recall(query, reinforce=False).items
            assert [i.id for i in items[:2]] == [new.id, old.id] and items[1].outdated_by == new.id
        assert links(vault, open_only=False) == before  # read, never judged again


def test_a_judge_decides_its_updates_supersede_and_its_verdicts_are_kept(
    vault_path: Any, clock: Clock, fake_embedder: Any
) -> None:
    seen: list[tuple[str, list[int]]] = []

    def judge(memory: Any, candidates: list[Any]) -> dict[int, str]:
        seen.append((memory.content, [c.id for c in candidates]))
        return {c.id: "update" if "moved" in memory.content else "distinct" for c in candidates}

    with Vault(vault_path, clock=clock, embedder=fake_embedder, judge=judge) as vault:
        old = vault.remember("fact", "region", "Production runs in us-east-1 today.")
        clock.advance(DAY_MS)
        other = vault.remember("fact", "staging", "Staging runs in us-east-1 today.")
        assert [s.relation for s in other.similar] == ["distinct"] and vault.get_entity(
            old.id
        ).status == "active"
        clock.advance(DAY_MS)
        new = vault.remember("fact", "region-now", "Production moved: it runs in eu-west-1 today.")
        assert {s.id: s.relation for s in new.similar}.get(old.id) == "update"
        assert vault.get_entity(old.id).superseded_by == new.id
        assert (other.id, old.id, "distinct", "judge") in links(vault)
        assert vault.hygiene().conflicts == []
        assert [ids for _, ids in seen] == [
            [old.id],
            [other.id, old.id] if seen[1][1][0] == other.id else [old.id, other.id],
        ]  # asked only for writes with candidates


def test_a_judge_that_says_nothing_a_judge_can_say_fails_the_write_and_writes_nothing(
    vault_path: Any, clock: Clock, fake_embedder: Any
) -> None:
    with Vault(
        vault_path, clock=clock, embedder=fake_embedder, judge=lambda m, c: {x.id: "maybe" for x in c}
    ) as vault:
        vault.remember("fact", "region", "Production runs in us-east-1 today.")
        with pytest.raises(InvalidInput, match="judge: returned 'maybe' for #1"):
            vault.remember("fact", "region-now", "Production runs in eu-west-1 today.")
        assert vault.counts().total == 1
    with Vault(
        vault_path, clock=clock, embedder=fake_embedder, judge=lambda m, c: {str(x.id): "update" for x in c}
    ) as vault:
        with pytest.raises(
            InvalidInput, match=r"judge: returned a verdict keyed by '1' \(str\); a key is a candidate's id"
        ):
            vault.remember("fact", "region-now", "Production runs in eu-west-1 today.")
        assert vault.counts().total == 1
    with pytest.raises(InvalidInput, match="judge: must be callable"):
        Vault(vault_path, judge="no")


def test_someones_link_closes_the_pairs_inferred_links(dense_vault: Vault, clock: Clock) -> None:
    """A link the agent writes after the vault inferred one between the same two memories wins: the inferred
    link closes (either way round), so the agent's "distinct" takes away the outdated mark."""
    old = dense_vault.remember("fact", "room-101", "Room 101 seats 12 people.")
    clock.advance(DAY_MS)
    new = dense_vault.remember("fact", "room-102", "Room 102 seats 12 people.")
    assert (new.id, old.id, "updates", "inferred") in links(dense_vault)
    dense_vault.link(old.id, new.id, "distinct")
    assert links(dense_vault) == [(old.id, new.id, "distinct", "None")]  # the agent's (no source), alone
    assert all(i.outdated_by is None for i in dense_vault.recall("room seats", reinforce=False).items)


def test_hygiene_lists_the_pairs_nobody_settled(dense_vault: Vault, clock: Clock) -> None:
    old = dense_vault.remember("fact", "prod-region", "Production runs in us-east-1.")
    clock.advance(DAY_MS)
    new = dense_vault.remember("fact", "prod-region-now", "Production runs in eu-west-1.")
    [conflict] = dense_vault.hygiene().conflicts
    assert (conflict.newer, conflict.older, conflict.relation) == (new.id, old.id, "updates")
    assert conflict.older_preview == "Production runs in us-east-1."
    dense_vault.supersede(old.id, new.id)
    assert dense_vault.hygiene().conflicts == []
