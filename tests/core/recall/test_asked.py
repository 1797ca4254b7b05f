"""What a question asks for, and whether a memory says it: a question asking when is answered by the memory
that names a time (recall/asked.py, weighed by fusion.combine)."""

from __future__ import annotations

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
        "When Jon has lost his job as a banker?",  # a verb within two words of when
        "What was the date of the outage?",
        "When's the next release?",
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
        "When I deploy, which port should I use?",  # a clause opens it; it asks which port
        "What time zone is the server in?",
        "Which date format do we use?",
        "what year of college is she in?",
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
        "Lately the builds are slow.",
        "Dec 5 works for the review.",
        "We shipped it in March.",
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
        "Caroline: May I ask what you painted?",  # the verb, opening a speaker's words
        "Caroline\nMay I?",
        '"May I?" she asked.',
        "- May we ship it?",
        "We march on the capital.",  # march and august are words too
        "An august institution.",
        "Support is 24/7, split 50/50.",
        "A $2000 budget.",
    ],
)
def test_a_memory_naming_no_time(text: str) -> None:
    assert not says_time(text)


def test_naming_a_time_is_read_by_whole_words() -> None:
    for word in (
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
    ):
        assert not says_time(f"the {word} here"), word


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

        def ids(question: str, **options: Any) -> list[int]:
            return [
                i.id for i in vault.recall(question, reinforce=False, workspace_hash="c1", **options).items
            ]

        def ranked(question: str, **options: Any) -> list[int | None]:
            return [number.get(i) for i in ids(question, **options)]

        when = "When did Caroline join the activist group?"
        assert ranked(when)[0] == 3
        assert dentist.id not in ids(when)  # a time, but nothing the question asks about
        assert dentist.id in ids(when, min_score=None)  # it is a candidate: relatedness left it out
        everything = ids(when, min_score=None, curate=False)
        turns = ids(when, min_score=None, curate=False, category="conversation")
        assert turns == [i for i in everything if i in number]  # a filter only removes
        what = "What activist group did Caroline join?"
        before = {q: ranked(q, min_score=None) for q in (what, when)}
        keyword = ranked(when, mode="fts5", min_score=None)
        monkeypatch.setattr(fusion, "ASKED_SHARE", 0.0)
        assert ranked(what, min_score=None) == before[what]  # asks no time: nothing changes
        assert ranked(when, mode="fts5", min_score=None) == keyword  # the arms stay arms
        assert ranked(when, min_score=None)[0] == 0  # the rule is what ranked the turn saying when first


def test_a_neighbour_only_context_adds_is_lifted_as_the_arms_candidates_are(
    dense_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn no arm found joins a recall beside a strong match (recall/context.py), scored by hybrid's own rule:
    for a question asking when, that rule lifts a turn naming a time there too."""
    dense_vault.remember_many(
        [
            {"category": "note", "key": f"tip{i}", "content": f"puppy training tip number {i}"}
            for i in range(300)
        ]
    )
    written = dense_vault.remember_conversation(
        "s1",
        [
            {"speaker": "Caroline", "text": "I adopted a puppy named Rex!"},
            {"speaker": "Melanie", "text": "That was last Tuesday, right after work."},
        ],
    )
    anchor, neighbour = (t.id for t in written.turns)

    def recalled() -> dict[int, Any]:
        question = "When did Caroline adopt the puppy Rex?"
        items = dense_vault.recall(question, mode="hybrid", limit=50, min_score=None, reinforce=False).items
        return {i.id: i for i in items}

    found = recalled()
    assert (
        found[anchor].ranks and found[neighbour].ranks == {}
    )  # no arm found the neighbour: context added it
    lifted = {i: item.score for i, item in found.items()}
    monkeypatch.setattr(fusion, "ASKED_SHARE", 0.0)
    plain = {i: item.score for i, item in recalled().items()}
    assert lifted[neighbour] > plain[neighbour]


def test_what_a_version_names_is_read_once_while_the_vault_is_open(
    dense_vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Versions never change, so whether one names a time is read once and held (Arms.named_times), at most
    TIMES_HELD versions at a time; a question that does not ask when reads nothing."""
    from perseus_vault_core.recall import arms, pipeline

    dense_vault.remember_many(
        [
            {"category": "note", "key": f"n{i}", "content": f"ledger migration step {i} on Monday"}
            for i in range(40)
        ]
    )
    read: list[int] = []
    openings = arms.Arms.openings

    def counted(self: Any, conn: Any, vids: list[int], chars: int) -> dict[int, str]:
        read.extend(vids)
        return openings(self, conn, vids, chars)

    monkeypatch.setattr(arms.Arms, "openings", counted)
    question = "When did the ledger migration happen?"
    first = dense_vault.recall(question, mode="hybrid", reinforce=False).items
    assert len(read) >= len(first) > 0 and len(set(read)) == len(read)
    read.clear()
    assert dense_vault.recall(question, mode="hybrid", reinforce=False).items == first and read == []
    dense_vault.recall("What is the ledger migration?", mode="hybrid", reinforce=False)
    assert read == []
    monkeypatch.setattr(pipeline, "TIMES_HELD", 5)  # more than it may hold: it starts over, and still answers
    dense_vault.engine.named_times.clear()
    dense_vault.engine.named_times.update({-i: False for i in range(1, 6)})  # full: the next read starts over
    assert dense_vault.recall(question, mode="hybrid", reinforce=False).items == first
    assert not any(vid < 0 for vid in dense_vault.engine.named_times)
