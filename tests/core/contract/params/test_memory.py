"""contract/params/memory.py: what the memory-file verbs take: a file's name as the memory layer allows it,
a one-line section heading, an entry's date (YYYY-MM-DD or YYYY-MM) and non-empty text, and a deletion
that says which entry (its date, its text, or both)."""

from __future__ import annotations

from typing import Any

import pytest

from perseus_vault_core import InvalidInput
from perseus_vault_core.contract.params.base import validate
from perseus_vault_core.contract.params.memory import (
    AddMemoryParams,
    DeleteMemoryParams,
    GetMemoryParams,
    MemoryRecallParams,
)

ADD = {"file": "Opinions", "section": "Testing", "text": "Tests first"}


def refused(model: Any, data: dict[str, Any]) -> InvalidInput:
    with pytest.raises(InvalidInput) as raised:
        validate(model, data)
    return raised.value


def test_an_entry_is_added_to_a_file_s_section_with_an_optional_date() -> None:
    added = validate(AddMemoryParams, ADD)
    assert (added.file, added.section, added.text, added.date) == ("Opinions", "Testing", "Tests first", None)
    assert validate(AddMemoryParams, {**ADD, "date": "2026-01-05"}).date == "2026-01-05"
    assert validate(AddMemoryParams, {**ADD, "date": "2018-11"}).date == "2018-11"


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"date": "2026-13-01"}, "date", "must be a date as YYYY-MM-DD (or YYYY-MM)"),
        ({"date": "05/01/2026"}, "date", "must be a date as YYYY-MM-DD (or YYYY-MM)"),
        ({"date": "2026"}, "date", "must be a date as YYYY-MM-DD (or YYYY-MM)"),
        ({"text": "   "}, "text", "must not be empty"),
        ({"section": "Two\nlines"}, "section", "must be a one-line heading text"),
        ({"section": "  "}, "section", "must be a one-line heading text"),
        ({"file": ""}, "file", "must not be empty"),
        ({"file": "../secrets"}, "file", "no slashes, no leading dot"),
        ({"file": "a/b"}, "file", "no slashes"),
        ({"date": 20260105}, "date", ""),
        ({"entry": "x"}, "entry", "unknown"),
    ],
)
def test_a_bad_entry_is_refused_naming_its_field(change: dict[str, Any], field: str, says: str) -> None:
    error = refused(AddMemoryParams, {**ADD, **change})
    assert error.field == field and says in error.message


def test_a_deletion_says_which_entry() -> None:
    where = {"file": "Opinions", "section": "Testing"}
    assert validate(DeleteMemoryParams, {**where, "date": "2026-01-05"}).text is None
    assert validate(DeleteMemoryParams, {**where, "text": "Tests"}).date is None
    error = refused(DeleteMemoryParams, where)
    assert error.field == "date" and error.message == "give the entry's date, its text, or both"
    error = refused(DeleteMemoryParams, {**where, "text": " "})  # empty text would match every entry
    assert error.field == "text" and error.message == "must not be empty"


def test_reading_a_file_and_recalling_entries() -> None:
    whole = validate(GetMemoryParams, {"file": "Opinions"})
    assert whole.section is None and whole.entries is False
    assert validate(GetMemoryParams, {"file": "Opinions", "section": "Testing"}).section == "Testing"
    assert refused(GetMemoryParams, {"section": "Testing"}).field == "file"
    found = validate(MemoryRecallParams, {"query": "testing philosophy"})
    assert found.file is None and found.limit == 50
    assert refused(MemoryRecallParams, {"query": "x", "limit": 0}).field == "limit"
    assert refused(MemoryRecallParams, {"query": "x" * 100_000}).field == "query"
