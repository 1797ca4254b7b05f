"""The measures of benchmarks/memory_files.py's recall_quality. Pure."""

from __future__ import annotations

import pytest

from benchmarks.memory_files import score, shared_words


def test_score_is_recall_and_precision_of_one_answer() -> None:
    assert score(["a", "b", "x"], {"a", "b", "c", "d"}) == (0.5, pytest.approx(2 / 3))
    assert score([], {"a"}) == (0.0, 0.0)  # found nothing it should have
    assert score([], set()) == (1.0, 1.0)
    assert score(["a", "a"], {"a"}) == (1.0, 0.5)  # returned twice is returned twice


def test_shared_words_count_the_question_words_an_entry_holds() -> None:
    assert (
        shared_words("How has my view on remote work changed?", "- 2017-03-12: Working from home is a trap.")
        == 1
    )
    assert shared_words("What do I think about exercise?", "- 2020-05-05: Started running in lockdown.") == 0
