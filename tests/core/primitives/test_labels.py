"""A label opening a text: ``Label: text`` or the label on a line of its own."""

from __future__ import annotations

import pytest

from perseus_vault_core.primitives.labels import HEAD_CHARS, on_a_line, said


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Caroline: hi there", "Caroline"),
        ("Dr. Ada Lovelace: the engine", "Dr. Ada Lovelace"),
        ("Main DB: PostgreSQL 16.2", "Main DB"),
        ("caroline: hi", None),  # not capitalised
        ("Caroline:hi", None),  # no space after the colon
        ("Caroline: ", None),  # no text
        ("Agent 007: hi", None),  # digits
        ("One Two Three Four: hi", None),  # four words
        ("Caroline\nhi", None),  # a line, not a colon
    ],
)
def test_said(text: str, label: str | None) -> None:
    assert said(text) == label


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Caroline\nI went to the group.", ("Caroline", "I went to the group.")),
        ("Dr. Ada Lovelace\r\nHello\nagain", ("Dr. Ada Lovelace", "Hello\nagain")),
        ("Pricing\nThe plan costs $30.", ("Pricing", "The plan costs $30.")),
        ("Caroline\n\nI went.", None),  # a blank line between: a heading, then a paragraph
        ("Caroline\n I went.", None),  # the text opens with a space
        ("Caroline\n", None),  # no text
        ("Caroline: I went.", None),  # a colon, not a line
        ("the label\nI went.", None),  # not capitalised
    ],
)
def test_on_a_line(text: str, found: tuple[str, str] | None) -> None:
    assert on_a_line(text) == found


def test_the_longest_label_fits_the_characters_read() -> None:
    longest = " ".join(["A" + "b" * 30] * 3)
    assert said(f"{longest}: x") == longest and on_a_line(f"{longest}\r\nx") == (longest, "x")
    assert len(f"{longest}\r\nx") <= HEAD_CHARS and said(f"{longest}: x"[:HEAD_CHARS]) == longest
