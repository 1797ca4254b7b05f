"""features/remembering.py: what a write judges. An exact repeat under a new key writes nothing (unless
asked), exact to every symbol, sign and digit and only within its scope; a keyword-only vault judges by
words; remember_many is one transaction (all written or none), each item judged against the store and the
batch's earlier items (by vectors, else by shared words), a stored key the batch rewrites by its new text,
and a large batch builds the index its look-ups read first."""

from __future__ import annotations

import pytest

from perseus_vault_core import InvalidInput, Vault
from perseus_vault_core.contract.errors import Conflict

from ...conftest import Clock
from ..records.test_store import count_rows
from .test_relations import DAY_MS, links

pytestmark = pytest.mark.both_backends


def test_an_exact_repeat_under_a_new_key_writes_nothing_unless_asked(model_vault: Vault) -> None:
    first = model_vault.remember("decision", "db", "We chose SQLite in WAL mode.")
    versions = model_vault.counts().total
    again = model_vault.remember("note", "database-choice", "  we chose sqlite  in WAL mode. ")
    assert again.repeated and again.id == first.id and model_vault.counts().total == versions
    kept = model_vault.remember(
        "note", "database-choice", "We chose SQLite in WAL mode.", keep_duplicate=True
    )
    assert not kept.repeated and kept.id != first.id and model_vault.counts().total == versions + 1
    same_key = model_vault.remember("decision", "db", "We chose SQLite in WAL mode.")
    assert same_key.id == first.id and not same_key.repeated  # the same key: remember's own no-op


@pytest.mark.parametrize(
    "first, second",
    [
        ("The engine is written in C++.", "The engine is written in C#."),
        ("Temperature is -5 C.", "Temperature is 5 C."),
        ("We chose SQLite in WAL mode.", "We chose SQLite in WAL mode"),
        (":", ";"),
        ("Ship v2.0 on Friday", "Ship v2.1 on Friday"),
    ],
)
def test_an_exact_repeat_is_exact_every_symbol_sign_and_digit_counts(
    vault: Vault, first: str, second: str
) -> None:
    """Only Unicode's canonical form, letter case and whitespace are set aside: a distinct fact is stored."""
    one = vault.remember("fact", "lang-tools", first)
    two = vault.remember("fact", "lang-tools-2", second)
    assert not two.repeated and two.id != one.id and vault.get_entity(two.id).content == second
    same = vault.remember("fact", "lang-tools-3", "  " + first.upper().replace(" ", "   ") + "\n")
    assert (same.repeated and same.id == one.id) == (first.upper() != first or True)


def test_a_repeat_in_another_scope_is_stored(model_vault: Vault) -> None:
    mine = model_vault.remember("note", "k", "Standup is at 9:30.", agent_id="a")
    theirs = model_vault.remember("note", "k2", "Standup is at 9:30.", agent_id="b")
    unscoped = model_vault.remember("note", "k3", "Standup is at 9:30.")
    assert len({mine.id, theirs.id, unscoped.id}) == 3 and not (theirs.repeated or unscoped.repeated)
    assert theirs.similar == [] and unscoped.similar == []  # nothing reported from another scope


def test_a_keyword_only_vault_judges_by_words(vault: Vault) -> None:
    first = vault.remember("note", "a", "The staging database is wiped every night at 03:00 UTC.")
    again = vault.remember("note", "b", "the staging database is wiped every night at 03:00 utc.")
    assert again.repeated and again.id == first.id
    other = vault.remember("note", "c", "The staging database is wiped every night at 04:00 UTC.")
    assert [s.id for s in other.similar] == [first.id] and other.similar[0].relation == "update"


def test_remember_many_is_one_transaction(vault: Vault) -> None:
    out = vault.remember_many(
        [
            {"category": "fact", "key": "a", "content": "alpha"},
            {"category": "fact", "key": "b", "content": "beta"},
            {"category": "fact", "key": "a", "content": "alpha two"},
        ]
    )
    assert [e.key for e in out] == ["a", "b", "a"]
    assert out[0].id == out[2].id and out[2].version == 2 and out[0].id < out[1].id
    before = count_rows(vault, "entity_versions")
    with pytest.raises(InvalidInput) as err:
        vault.remember_many(
            [{"category": "fact", "key": "c", "content": "gamma"}, {"category": "fact", "key": "d"}]
        )
    assert err.value.field == "items.1.content"
    assert count_rows(vault, "entity_versions") == before
    assert vault.recall("gamma").items == []


def test_remember_many_rolls_back_on_a_conflict_midway(vault: Vault) -> None:
    old = vault.remember("fact", "old", "old fact")
    new = vault.remember("fact", "new", "new fact")
    vault.supersede(old.id, new.id)
    before = count_rows(vault, "entity_versions")
    with pytest.raises(Conflict):
        vault.remember_many(
            [
                {"category": "fact", "key": "fresh", "content": "fresh fact"},
                {"category": "fact", "key": "old", "content": "changed"},
            ]
        )
    assert count_rows(vault, "entity_versions") == before
    assert vault.check().ok


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


def test_a_turn_of_any_shape_is_judged_against_nothing_and_never_a_candidate(vault: Vault) -> None:
    """recall/turns.py says what a turn is; remember and remember_many ask it with the body they are given: a
    turn repeats and updates nothing (two turns may say the same words, and both were said), and no memory is
    judged a repeat or an update of a turn."""
    note = vault.remember("note", "n", "The staging database is wiped every night at 03:00 UTC.")
    session = {"session_id": "s1", "role": "human", "message": {"type": "human"}}
    turns = [
        vault.remember(
            "chat", "said", "the staging database is wiped every night at 03:00 utc.", body=session
        ),
        vault.remember(
            "chat", "typed", "The staging database is wiped every night at 03:00 UTC.", type="turn"
        ),
    ]
    assert all(not t.repeated and t.id != note.id and t.similar == [] for t in turns)
    # a label alone on the first line places a memory in a dialogue for recall, but a titled note looks the
    # same: it is judged as a note
    titled = vault.remember("chat", "line", "Ann\nThe staging database is wiped every night at 03:00 UTC.")
    assert note.id in [s.id for s in titled.similar]
    batch = vault.remember_many(
        [
            {
                "category": "chat",
                "key": f"b{i}",
                "content": "The staging database is wiped at 04:00 UTC.",
                "body": session,
            }
            for i in range(2)
        ],
        similar=True,
    )
    assert [b.similar for b in batch] == [[], []]
    assert all({a, b} == {titled.id, note.id} for a, b, *_ in links(vault))  # the titled note's, no turn's
    other = vault.remember("note", "n2", "The staging database is wiped every night at 04:00 UTC.")
    assert note.id in [s.id for s in other.similar]  # an update of the note; the turns are no candidates
    assert not {t.id for t in turns} & {s.id for s in other.similar}
