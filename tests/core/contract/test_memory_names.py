"""contract/memory_names.py: what a memory file's name and an entry's date may be, and the category an
entry of a file is filed under."""

from __future__ import annotations

import pytest

from perseus_vault_core.contract.memory_names import (
    MAX_FILE_NAME,
    check_name,
    entry_category,
    has_control,
    is_control,
    valid_date,
)


@pytest.mark.parametrize("text", ["2026-01-31", "2024-02-29", "2026-12", "1999-01"])
def test_a_real_day_or_month_is_a_valid_date(text: str) -> None:
    assert valid_date(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2026",
        "2026-02-30",
        "2025-02-29",
        "2026-13",
        "2026-1-05",
        "2026-01-5",
        "26-01-01",
        "2026/01/01",
        "2026-01-01T00:00",
        " 2026-01-01",
        "2026-01-01 ",
        "yesterday",
    ],
)
def test_anything_else_is_not(text: str) -> None:
    assert not valid_date(text)


def test_an_entry_is_filed_under_its_file() -> None:
    assert entry_category("people") == "memory:people"


@pytest.mark.parametrize(
    "name", ["people", "Project Notes", "2026 plans", "café", "a" * MAX_FILE_NAME, "x.y"]
)
def test_a_plain_name_is_taken(name: str) -> None:
    assert check_name(name) is None


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a" * (MAX_FILE_NAME + 1), f"at most {MAX_FILE_NAME}"),
        ("two\nlines", "control"),
        ("tab\there", "control"),
        ("next\u0085line", "control"),
        ("right\u202eleft", "control"),
        ("para\u2029graph", "control"),
        ("notes/people", "plain file name"),
        ("notes\\people", "plain file name"),
        ("c:people", "plain file name"),
        ("who?", "plain file name"),
        ("a|b", "plain file name"),
        (".hidden", "plain file name"),
    ],
)
def test_a_name_that_cannot_be_a_file_says_why(name: str, said: str) -> None:
    reason = check_name(name)
    assert reason is not None and said in reason


@pytest.mark.parametrize(
    ("c", "control"),
    [
        ("\x00", True),
        ("\x7f", True),
        ("\u200b", True),
        ("\u2028", True),
        ("a", False),
        (" ", False),
        ("é", False),
        ("-", False),
    ],
)
def test_control_characters(c: str, control: bool) -> None:
    assert is_control(c) is control
    assert has_control(f"ab{c}cd") is control


def test_text_without_control_characters() -> None:
    assert not has_control("")
    assert not has_control("plain words, with punctuation.")
