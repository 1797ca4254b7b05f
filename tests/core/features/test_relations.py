"""features/relations.py and remembering.py: what a write judges of a new memory and its candidates, kept as
inferred links; what wins over them (the agent's links and supersedes, a judge's verdicts); batches judged
against the store and among themselves; the conflicts hygiene lists. On both backends, with the fake
embedder (the bundled model's own candidates are measured in benchmarks/curation.py)."""

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


def test_a_batch_is_judged_against_the_store_and_among_itself(dense_vault: Vault, clock: Clock) -> None:
    old = dense_vault.remember("fact", "prod-region", "Production runs in us-east-1.")
    clock.advance(DAY_MS)
    made = dense_vault.remember_many(
        [
            {"category": "fact", "key": "staging", "content": "Staging deploys run on Tuesdays."},
            {"category": "fact", "key": "prod-now", "content": "Production runs in eu-west-1."},
            {"category": "fact", "key": "staging-day", "content": "Staging deploys run on Thursdays."},
        ],
        similar=True,
    )
    assert made[1].similar[0].id == old.id and made[1].similar[0].relation == "update"
    assert made[0].id in [s.id for s in made[2].similar]  # an earlier memory of the same batch
    assert (made[1].id, old.id, "updates", "inferred") in links(dense_vault)
    plain = dense_vault.remember_many(
        [{"category": "fact", "key": "prod-2", "content": "Production runs in eu-west-2."}]
    )
    assert not hasattr(plain[0], "similar") or not plain[0].similar  # only when asked


def test_a_batch_item_that_rewrites_a_stored_memory_is_judged_once_per_pair(
    dense_vault: Vault, clock: Clock
) -> None:
    """A batch that writes a stored key anew, and a memory like it: the stored one is found in the store and in
    the batch, and kept once (the inspector's benchmark store failed here on a unique link)."""
    dense_vault.remember("fact", "prod-region", "Production runs in us-east-1.")
    clock.advance(DAY_MS)
    made = dense_vault.remember_many(
        [
            {"category": "fact", "key": "prod-region", "content": "Production runs in us-east-2."},
            {"category": "fact", "key": "prod-now", "content": "Production runs in us-east-2 now."},
            {"category": "fact", "key": "prod-region", "content": "Production runs in us-east-2, zone b."},
        ],
        similar=True,
    )
    assert made[0].id == made[2].id
    assert all(len({s.id for s in m.similar}) == len(m.similar) for m in made)
    pairs = [(a, b, r) for a, b, r, _ in links(dense_vault)]
    assert len(pairs) == len(set(pairs))


def test_a_batch_without_vectors_meets_its_nearest_earlier_memories_by_words(vault: Vault) -> None:
    """A keyword-only batch compares each memory with the earlier ones sharing most of its words, not with all
    of them (a batch of thousands stays linear in its size)."""
    made = vault.remember_many(
        [
            {"category": "note", "key": f"n{i}", "content": f"filler text number {i} about gardening"}
            for i in range(60)
        ]
        + [
            {"category": "fact", "key": "db", "content": "The primary database is Postgres 16."},
            {"category": "fact", "key": "db-now", "content": "The primary database is Postgres 17."},
        ],
        similar=True,
    )
    assert made[-2].id in [s.id for s in made[-1].similar]
    assert all(s.id != made[-1].id for m in made[:60] for s in m.similar)


def test_a_stored_key_the_batch_rewrites_is_judged_by_its_new_text(dense_vault: Vault) -> None:
    """From the review: a batch rewrote k1 and then wrote k1's old text under k2: k2 is no repeat of k1 now."""
    dense_vault.remember("fact", "k1", "The cafeteria opens at 8 on weekdays.")
    made = dense_vault.remember_many(
        [
            {"category": "fact", "key": "k1", "content": "The gym opens at 6 on weekdays."},
            {"category": "fact", "key": "k2", "content": "The cafeteria opens at 8 on weekdays."},
        ],
        similar=True,
    )
    assert all(s.relation != "duplicate" for s in made[1].similar)
    assert [s.text for s in made[1].similar if s.id == made[0].id] in (
        [],
        ["The gym opens at 6 on weekdays."],
    )
    assert all(r != "duplicates" for _, _, r, _ in links(dense_vault))
    gym = dense_vault.recall("gym opens", reinforce=False).items
    assert made[0].id in [i.id for i in gym] and not any(made[0].id in (i.duplicates or []) for i in gym)


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


@pytest.mark.parametrize("seed", range(6))
def test_a_batch_without_vectors_meets_the_earlier_items_sharing_the_most_of_their_words(seed: int) -> None:
    """remembering._Batch.nearest without vectors: the POOL earlier items of the scope with the best Jaccard of
    content words, ties by position, as sorting every earlier item would give (many ties: a small vocabulary)."""
    import random

    from perseus_vault_core.contract.params import RememberInput
    from perseus_vault_core.features.remembering import POOL, _Batch
    from perseus_vault_core.recall.curation import jaccard, said

    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(rng.choice([8, 40, 400]))]
    items = [
        RememberInput(
            category="note",
            key=f"k{i}",
            content=" ".join(rng.choices(vocab, k=rng.randint(1, 10))),
            agent_id=rng.choice(["a", "b"]),
        )
        for i in range(300)
    ]
    texts = [item.content for item in items]
    batch = _Batch.of(items, texts, [None] * len(items))
    ids = [rng.randint(1, 250) for _ in items]  # a key written twice is one entity
    for i in range(0, len(items), 7):
        words = said(texts[i]).words
        every = sorted(
            (
                k
                for k in range(i)
                if ids[k] != ids[i]
                and items[k].agent_id == items[i].agent_id
                and words & said(texts[k]).words
            ),
            key=lambda k: (-jaccard(words, said(texts[k]).words), k),
        )
        assert batch.nearest(i, ids) == [(k, None) for k in every[:POOL]]


def test_a_batch_judged_against_stored_memories_builds_the_index_its_look_ups_read_first(
    vault: Vault,
) -> None:
    """A batch of BUILD_FOR memories or more, judged against a stored vault, has its look-ups answered from the
    in-memory index (built once, first) instead of each reading the file; a smaller batch leaves it unbuilt."""
    from perseus_vault_core.features.remembering import BUILD_FOR

    index = vault.engine.keyword_index
    assert index is not None
    vault.remember_many(
        [{"category": "note", "key": f"a{i}", "content": f"billing note {i}"} for i in range(40)]
    )
    vault.remember_many(
        [{"category": "note", "key": f"b{i}", "content": f"billing note {i}"} for i in range(BUILD_FOR - 1)]
    )
    assert not index.ready  # an empty store had nothing to look up, and a small batch builds nothing
    chosen = vault.remember_many(
        [{"category": "note", "key": f"c{i}", "content": f"billing note {i}"} for i in range(BUILD_FOR)],
        similar=True,
    )
    assert index.ready
    assert all(
        any(s.relation == "duplicate" for s in e.similar) for e in chosen
    )  # "billing note 0" twice before
