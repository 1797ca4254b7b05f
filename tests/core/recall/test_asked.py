"""What a question asks for, and whether a memory says it: a question asking when is answered by the memory
that names a time (recall/asked.py, weighed by fusion.combine)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from perseus_vault_core import Vault
from perseus_vault_core.recall import fusion
from perseus_vault_core.recall.asked import asks_time, says_time


@pytest.mark.parametrize(
    "question",
    [
        "When did Caroline join the activist group?",
        "when is the board demo",
        "  When's the next release?",
        "What year did we move to Postgres?",
        "what time is standup?",
        "Which month was the outage in?",
        "How long ago was Caroline's 18th birthday?",
        "In which year did ledger go live?",
        "Since when has dispatch run on Go?",
        "On what date did the migration finish?",
    ],
)
def test_a_question_asking_when(question: str) -> None:
    assert asks_time(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did Caroline do when she joined the group?",  # when inside, the question asks what
        "Whenever the pager fires, who answers?",
        "What database does ledger use?",
        "How long is the retention?",  # a span, not a time
        "Who did Maria have dinner with on May 3, 2023?",  # names a time, asks who
        "",
    ],
)
def test_a_question_asking_something_else(question: str) -> None:
    assert not asks_time(question)


@pytest.mark.parametrize(
    "text",
    [
        "I just joined a new LGBTQ activist group last Tues.",
        "Took a short trip last week to Rome.",
        "I donated my old car to a homeless shelter yesterday.",
        "We moved ledger to Postgres in 2024.",
        "The board demo is Thursday 3pm.",
        "Lucia joined in June from Twilio.",
        "It shipped on 2024-03-05.",
        "Renew it before 3/1.",
        "A few years ago I went to England.",
        "Recently I had a setback.",
        "We met on May 3.",
        "Standup is at 10:30 am.",
        "Send the daily briefing at 7:00.",
        "Moved the invoice run to the 5th.",
    ],
)
def test_a_memory_naming_a_time(text: str) -> None:
    assert says_time(text)


@pytest.mark.parametrize(
    "text",
    [
        "Our group, 'Connected LGBTQ Activists', is so supportive.",
        "May I ask what you painted?",  # the verb, opening a sentence
        "It may rain.",
        "ledger has its own Postgres 15 cluster, ledger-db.",
        "The p95 is 450 ms at 300 req/s.",
        "A 3:1 ratio of reads to writes.",
    ],
)
def test_a_memory_naming_no_time(text: str) -> None:
    assert not says_time(text)


def test_naming_a_time_is_read_by_whole_words() -> None:
    rng = random.Random()
    words = [
        "dancing",
        "agonist",
        "marchers",
        "mayor",
        "sundial",
        "wedge",
        "fridge",
        "todays",
        "agos",
        "2024x",
    ]
    for _ in range(200):
        text = " ".join(rng.choices(words, k=rng.randint(1, 12)))
        assert not says_time(text), text


TURNS = [
    (
        "Caroline",
        "Joining the activist group was the best thing I did; the people there are so supportive of each other"
        " and of me.",
    ),
    ("Melanie", "That's great, Caroline! What does the activist group do together?"),
    ("Caroline", "The activist group runs workshops and marches for LGBTQ rights in the city."),
    (
        "Caroline",
        "Hey Mel! I just joined a new LGBTQ activist group last Tues. I'm meeting so many cool people!",
    ),
    ("Melanie", "I painted a lake sunrise with my kids, it was lovely."),
    ("Caroline", "I love the activist group, the people in it make me feel at home."),
]


def _conversation(vault: Vault) -> dict[int, int]:
    written = vault.remember_conversation(
        "session-1", [{"speaker": s, "text": t} for s, t in TURNS], workspace_hash="c1"
    )
    return {turn.id: n for n, turn in enumerate(written.turns)}


def test_hybrid_ranks_the_memory_naming_a_time_first_for_a_question_asking_when(
    tmp_path: Any, real_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the bundled model: the turns about the group share the question's words and meaning; the one that
    says when ranks first in hybrid. The rule lifts only for a question asking when, only in hybrid, and judges
    nothing related: an unrelated memory naming a time stays out under ``min_score="auto"``."""
    with Vault(tmp_path / "when.db", embedder=real_embedder) as vault:
        number = _conversation(vault)
        dentist = vault.remember(
            "note", "dentist", "Dentist appointment next Monday at 9am.", workspace_hash="c1"
        )

        def ranked(question: str, **options: Any) -> list[int | None]:
            items = vault.recall(question, reinforce=False, workspace_hash="c1", **options).items
            return [number.get(i.id) for i in items]

        when = "When did Caroline join the activist group?"
        assert ranked(when)[0] == 3
        assert ranked(when, category="conversation")[0] == 3 and dentist.id not in number  # a filter removes
        assert None not in ranked(when)  # the dentist: a time, but nothing the question asks about
        what = "What activist group did Caroline join?"
        before = {q: ranked(q, min_score=None) for q in (what, when)}
        keyword = ranked(when, mode="fts5", min_score=None)
        monkeypatch.setattr(fusion, "ASKED_SHARE", 0.0)
        assert ranked(what, min_score=None) == before[what]  # asks no time: nothing changes
        assert ranked(when, mode="fts5", min_score=None) == keyword  # the arms stay arms
        assert ranked(when, min_score=None)[0] == 0  # the rule is what ranked the turn saying when first
