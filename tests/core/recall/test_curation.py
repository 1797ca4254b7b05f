"""Curation (perseus_vault_core/recall/curation.py, remembering.py, recall's curated window; docs/curation.md):
duplicates collapse, a newer fact goes first and marks the older, exact repeats are not stored twice,
and nothing is ever hidden for good. The pair rules run on the bundled model's vectors (``real_embedder``),
as they do for a user; the pure functions on their own inputs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Vault
from perseus_vault_core.recall import curation
from perseus_vault_core.recall.curation import Candidate, curate, relation, said

from ...conftest import Clock

pytestmark = pytest.mark.both_backends
DAY_MS = 86_400_000


# --- the pure rules -----------------------------------------------------------------------------------


@pytest.mark.parametrize("a, b, cosine, expected", [
    ("We deploy on Tuesdays.", "we deploy on TUESDAYS", None, "duplicate"),  # the same text, normalised
    ("Production runs in us-east-1.", "Production runs in eu-west-1.", 0.78, "update"),  # a value replaced
    ("The user prefers dark mode in every editor.", "In all my editors I like the dark theme.", 0.70, "duplicate"),
    ("ENG-1412: checkout button broken on Safari. Assignee: Aisha.",
     "ENG-1419: checkout button broken on Firefox. Assignee: Marco.", 0.93, None),  # two records
    ("Web team standup 10:15.", "Mobile team standup 9:45.", 0.72, None),  # another subject, not an update
    ("Aisha prefers Slack over email.", "Marco prefers email over Slack.", 0.80, None),  # a name exchanged
    ("Production runs in us-east-1.", "The lunch menu changes on Fridays.", 0.10, None),  # unrelated
])
def test_pairs(a: str, b: str, cosine: float | None, expected: str | None) -> None:
    assert relation(said(a), said(b), cosine) == expected


def test_an_anchor_is_held_in_another_spelling() -> None:
    text = said("We went with PostgreSQL 15 in production, from February.")
    assert all(text.holds(x) for x in ("postgres", "15", "feb", "prod"))
    assert not text.holds("16") and not text.holds("mysql")


def _candidate(i: int, relevance: float, day: int, text: str, vector: list[float] | None) -> Candidate:
    unit = None if vector is None else np.asarray(vector, dtype=np.float32) / np.linalg.norm(vector)
    return Candidate(i, relevance, True, day * DAY_MS, False, text, unit)


def test_curate_collapses_keeps_the_newest_wording_at_the_best_place_and_puts_updates_first() -> None:
    ranked = [
        _candidate(1, 0.9, 1, "Production runs in us-east-1.", [1, 0, 0]),
        _candidate(2, 0.8, 3, "Deploys go out on Tuesdays.", [0, 1, 0]),
        _candidate(3, 0.7, 5, "Production runs in eu-west-1.", [0.95, 0.05, 0]),
        _candidate(4, 0.6, 4, "deploys go out on tuesdays", [0, 1, 0]),
    ]
    done = curate(ranked)
    assert done.order == [3, 1, 4]  # the update before the fact it updates; 4 stands for 2 (newer wording)
    assert done.duplicates == {4: [2]} and done.outdated_by == {1: 3}
    assert done.apply(ranked) == [ranked[2], ranked[0], ranked[3]]
    assert done.apply(ranked, include_outdated=False) == [ranked[2], ranked[3]]


def test_curate_given_the_cosines_decides_as_it_does_computing_them() -> None:
    ranked = [
        _candidate(1, 0.9, 1, "Production runs in us-east-1.", [1, 0, 0]),
        _candidate(2, 0.8, 3, "Deploys go out on Tuesdays.", [0, 1, 0]),
        _candidate(3, 0.7, 5, "Production runs in eu-west-1.", [0.95, 0.05, 0]),
        _candidate(4, 0.6, 4, "deploys go out on tuesdays", None),  # no vector: its words decide
        _candidate(5, 0.5, 6, "Deploys go out on Tuesdays.", [0, 1, 0]),
    ]
    alone = curate(ranked)
    given = curate(ranked, sims=curation.cosines([c.vector for c in ranked]))
    assert (given.order, given.duplicates, given.outdated_by) == (alone.order, alone.duplicates, alone.outdated_by)
    assert alone.duplicates == {5: [2, 4]} and alone.outdated_by == {1: 3}


def test_turns_are_never_curated() -> None:
    turn = [Candidate(i, 0.5, True, i * DAY_MS, True, "ok, sounds good", np.asarray([1.0, 0.0])) for i in (1, 2)]
    assert curate(turn).order == [1, 2] and curate(turn).duplicates == {}


# --- in the vault, with the bundled model -------------------------------------------------------------


@pytest.fixture
def model_vault(vault_path: str | Path, clock: Clock, real_embedder: Any) -> Iterator[Vault]:
    with Vault(vault_path, clock=clock, embedder=real_embedder) as v:
        yield v


def test_a_newer_fact_ranks_first_and_marks_the_older_which_stays_reachable(model_vault: Vault, clock: Clock) -> None:
    older = model_vault.remember("fact", "prod-region", "Production runs in us-east-1.")
    clock.advance(180 * DAY_MS)
    newer = model_vault.remember("fact", "prod-region-now", "Production runs in eu-west-1.")
    assert [(s.id, s.relation) for s in newer.similar] == [(older.id, "update")]  # told to the agent at write
    items = model_vault.recall("where does production run", reinforce=False).items
    assert [i.id for i in items[:2]] == [newer.id, older.id]
    assert items[1].outdated_by == newer.id and items[0].outdated_by is None
    assert older.id not in [i.id for i in model_vault.recall("where does production run", include_outdated=False,
                                                             reinforce=False).items]
    plain = model_vault.recall("where does production run", curate=False, reinforce=False).items
    assert {i.id for i in plain[:2]} == {older.id, newer.id} and all(i.outdated_by is None for i in plain)
    assert model_vault.history("fact", "prod-region").items[0].content == "Production runs in us-east-1."
    block = model_vault.prepare("where does production run?", triggered=0).markdown
    assert "eu-west-1" in block and "us-east-1" not in block  # prepare leaves the outdated out
    assert "us-east-1" in model_vault.prepare("where does production run?", triggered=0,
                                              include_outdated=True).markdown


def test_duplicates_take_one_place_and_list_the_others(model_vault: Vault, clock: Clock) -> None:
    first = model_vault.remember("pref", "editor", "The user prefers dark mode in every editor.")
    clock.advance(DAY_MS)
    second = model_vault.remember("pref", "editor-theme", "In all my editors I like the dark theme.")
    assert [(s.id, s.relation) for s in second.similar] == [(first.id, "duplicate")]
    model_vault.remember("pref", "font", "The user reads code in a 14 pt monospace font.")
    items = model_vault.recall("which editor theme does the user like", reinforce=False).items
    assert items[0].id == second.id and items[0].duplicates == [first.id]  # the newest wording stands for both
    assert first.id not in [i.id for i in items]
    assert {i.id for i in model_vault.recall("which editor theme does the user like", curate=False,
                                             reinforce=False).items} >= {first.id, second.id}


def test_an_exact_repeat_under_a_new_key_writes_nothing_unless_asked(model_vault: Vault) -> None:
    first = model_vault.remember("decision", "db", "We chose SQLite in WAL mode.")
    versions = model_vault.counts().total
    again = model_vault.remember("note", "database-choice", "  we chose sqlite in WAL mode ")
    assert again.repeated and again.id == first.id and model_vault.counts().total == versions
    kept = model_vault.remember("note", "database-choice", "We chose SQLite in WAL mode.", keep_duplicate=True)
    assert not kept.repeated and kept.id != first.id and model_vault.counts().total == versions + 1
    same_key = model_vault.remember("decision", "db", "We chose SQLite in WAL mode.")
    assert same_key.id == first.id and not same_key.repeated  # the same key: remember's own no-op


def test_a_document_is_compared_by_its_start_and_repeated_only_whole(vault: Vault) -> None:
    """Curation reads a memory's first READ_CHARS characters (a 256 KiB body cost 0.35 s a remember when
    read whole); the exact-repeat check still reads all of it."""
    head = " ".join(f"section {i} of the runbook says step {i}." for i in range(700))  # about 25,000 characters
    assert len(head) > curation.READ_CHARS
    a, b = said(head + " The end."), said(head + " Another end.")
    assert a.words == b.words and a.normal != b.normal
    first = vault.remember("doc", "runbook", head + " The end.")
    again = vault.remember("doc", "runbook-copy", head + " The end.")
    assert again.repeated and again.id == first.id
    other = vault.remember("doc", "runbook-2", head + " Another end.")
    assert not other.repeated and other.id != first.id
    assert [(s.id, s.relation) for s in other.similar] == [(first.id, "duplicate")]  # for the agent to judge


def test_a_repeat_in_another_scope_is_stored(model_vault: Vault) -> None:
    mine = model_vault.remember("note", "k", "Standup is at 9:30.", agent_id="a")
    theirs = model_vault.remember("note", "k2", "Standup is at 9:30.", agent_id="b")
    unscoped = model_vault.remember("note", "k3", "Standup is at 9:30.")
    assert len({mine.id, theirs.id, unscoped.id}) == 3 and not (theirs.repeated or unscoped.repeated)
    assert theirs.similar == [] and unscoped.similar == []  # nothing reported from another scope


def test_a_keyword_only_vault_judges_by_words(vault: Vault) -> None:
    first = vault.remember("note", "a", "The staging database is wiped every night at 03:00 UTC.")
    again = vault.remember("note", "b", "the staging database is wiped every night at 03:00 utc")
    assert again.repeated and again.id == first.id
    other = vault.remember("note", "c", "The staging database is wiped every Sunday at 04:00 UTC.")
    assert [s.id for s in other.similar] == [first.id] and other.similar[0].relation == "update"


def test_hygiene_flags_a_paraphrase_and_not_two_tickets(model_vault: Vault) -> None:
    a = model_vault.remember("pref", "editor", "The user prefers dark mode in every editor.")
    b = model_vault.remember("pref", "editor-theme", "In all my editors I like the dark theme.")
    t1 = model_vault.remember("ticket", "eng-1412", "ENG-1412: Checkout button unresponsive on Safari 17. "
                              "Assignee: Aisha. Component: web-checkout. Priority P2.")
    t2 = model_vault.remember("ticket", "eng-1419", "ENG-1419: Checkout button unresponsive on Firefox ESR. "
                              "Assignee: Marco. Component: web-checkout. Priority P2.")
    flagged = {i.id: i.duplicate_of for i in model_vault.hygiene().items if i.duplicate_of is not None}
    assert flagged == {b.id: a.id}
    assert t1.id not in flagged and t2.id not in flagged


def test_the_window_does_not_depend_on_the_limit(model_vault: Vault, clock: Clock) -> None:
    for i in range(40):
        model_vault.remember("fact", f"f{i}", f"Service {i} runs on port {8000 + i} in the staging cluster.")
        clock.advance(DAY_MS)
    deep = [i.id for i in model_vault.recall("which port does the staging service use", limit=40,
                                             reinforce=False).items]
    for limit in (1, 5, 10, 25):
        top = [i.id for i in model_vault.recall("which port does the staging service use", limit=limit,
                                                reinforce=False).items]
        assert top == deep[:limit]
    assert curation.WINDOW <= 40


def test_two_tenants_memories_are_never_collapsed_or_ordered_together(model_vault: Vault, clock: Clock) -> None:
    a = model_vault.remember("fact", "region", "Production runs in us-east-1.", agent_id="a")
    clock.advance(90 * DAY_MS)
    b = model_vault.remember("fact", "region", "Production runs in us-east-1.", agent_id="b")
    clock.advance(90 * DAY_MS)
    c = model_vault.remember("fact", "region-2", "Production runs in eu-west-1.", agent_id="b")
    items = model_vault.recall("where does production run", reinforce=False).items  # unscoped: every tenant
    assert {a.id, b.id, c.id} <= {i.id for i in items}
    by_id = {i.id: i for i in items}
    assert by_id[a.id].outdated_by is None and not by_id[a.id].duplicates and not by_id[b.id].duplicates
    assert by_id[b.id].outdated_by == c.id  # within tenant b
