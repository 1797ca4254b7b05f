"""Editing a memory file byte for byte (features/memory_files/edits.py): an added entry parses back whole in
its section, where add_entry said, and removing it gives the original bytes; bad input is refused."""

from __future__ import annotations

import pytest

from perseus_vault_core.features.memory_files.edits import add_entry, entry_line, remove_entry
from perseus_vault_core.features.memory_files.parser import Entry, parse

from .test_parser import OPINIONS


def roundtrip(data: bytes, section: str, text: str, date: str | None) -> tuple[bytes, Entry]:
    """Add an entry, check it parses back where add_entry said, and that removing it restores ``data``."""
    new, offset = add_entry(data, section, text, date)
    parsed = parse("f", new)
    added = next(e for e in parsed.entries if e.start == offset)
    assert added.section == section.strip()
    assert added.text == entry_line(text, date)
    assert remove_entry(new, added) == data
    before = parse("f", data)
    assert [(e.section, e.date, e.text) for e in parsed.entries if e is not added] == [
        (e.section, e.date, e.text) for e in before.entries
    ]
    return new, added


def test_add_to_section_with_entries() -> None:
    data = OPINIONS.encode()
    new, added = roundtrip(data, "Testing", "Tests are a design tool.", "2025-03-01")
    testing = [e for e in parse("f", new).entries if e.section == "Testing"]
    assert testing[-1] == added and added.date == "2025-03-01"
    assert new[added.start : added.end] == b"- 2025-03-01: Tests are a design tool.\n"
    assert new == data[: added.start] + b"- 2025-03-01: Tests are a design tool.\n" + data[added.start :]
    assert data[: added.start].endswith(b"lazy continuation of the 2023 entry\n")


def test_add_multiline_entry() -> None:
    data = OPINIONS.encode()
    new, added = roundtrip(data, "Work pace", "Rest days are work.\n\n- naps count\nreally", "2025-03-02")
    assert added.text == "- 2025-03-02: Rest days are work.\n\n  - naps count\n  really"
    assert added.end == len(new)


def test_add_to_empty_section() -> None:
    data = b"# Me\n\n## Empty\n\n## Full\n- 2024-01-01: x\n"
    new, added = roundtrip(data, "Empty", "first", "2024-05-05")
    assert new == b"# Me\n\n## Empty\n- 2024-05-05: first\n\n## Full\n- 2024-01-01: x\n"


def test_add_to_section_whose_heading_is_followed_by_a_paragraph() -> None:
    data = b"## Empty\nA description that would join the entry.\n\n## Next\n"
    new, _ = roundtrip(data, "Empty", "first", "2024-05-05")
    assert new == b"## Empty\nA description that would join the entry.\n- 2024-05-05: first\n\n## Next\n"


def test_add_after_indented_entry_with_sibling() -> None:
    data = b"## S\n- Work\n  - 2024-01-01: nested\n  - other\n## T\n"
    new, _ = roundtrip(data, "S", "top", "2024-02-02")
    assert new == b"## S\n- Work\n  - 2024-01-01: nested\n  - other\n- 2024-02-02: top\n## T\n"


def test_add_to_file_without_trailing_newline() -> None:
    data = b"## S\n- 2024-01-01: last line has no newline"
    new, added = roundtrip(data, "S", "appended", "2024-01-02")
    assert new == data + b"\n- 2024-01-02: appended"
    heading_only = b"## S"
    new, _ = roundtrip(heading_only, "S", "first", "2024-01-02")
    assert new == b"## S\n- 2024-01-02: first"


def test_add_to_crlf_file() -> None:
    data = OPINIONS.replace("\n", "\r\n").encode()
    new, added = roundtrip(data, "Testing", "one\ntwo", "2025-03-01")
    assert new[added.start : added.end] == b"- 2025-03-01: one\r\n  two\r\n"
    no_final = b"## S\r\n- 2024-01-01: x"
    new, _ = roundtrip(no_final, "S", "y", "2024-01-02")
    assert new == b"## S\r\n- 2024-01-01: x\r\n- 2024-01-02: y"


def test_add_new_section() -> None:
    data = OPINIONS.encode()
    new, offset = add_entry(data, "Food", "Spicy, always.", "2025-04-01")
    assert new == data + b"\n## Food\n- 2025-04-01: Spicy, always.\n"
    added = next(e for e in parse("f", new).entries if e.start == offset)
    assert added.section == "Food" and added.date == "2025-04-01"
    # The entry goes; the heading it needed stays (remove_entry removes an entry, not a section).
    assert remove_entry(new, added) == data + b"\n## Food\n"
    assert parse("f", new).sections[-1].title == "Food"

    assert add_entry(b"no newline", "New", "x", "2024-01-01")[0] == b"no newline\n\n## New\n- 2024-01-01: x\n"
    assert add_entry(b"", "New", "x", "2024-01-01") == (b"## New\n- 2024-01-01: x\n", 7)
    assert add_entry(b"a\r\n\r\n", "New", "x", "2024-01-01")[0] == b"a\r\n\r\n## New\r\n- 2024-01-01: x\r\n"


def test_add_to_section_without_heading() -> None:
    data = b"---\na: b\n---\n# Me\n\n## S\n- 2024-01-01: x\n"
    new, _ = roundtrip(data, "", "top level", "2024-01-02")
    assert new == b"---\na: b\n---\n# Me\n- 2024-01-02: top level\n\n## S\n- 2024-01-01: x\n"
    new2, _ = roundtrip(new, "", "again", "2024-01-03")
    assert b"- 2024-01-02: top level\n- 2024-01-03: again\n" in new2


def test_add_with_date_in_text_and_bad_input() -> None:
    data = b"## S\n"
    new, added = roundtrip(data, "S", "2024-06-01: the date is in the text", None)
    assert added.date == "2024-06-01"
    with pytest.raises(ValueError, match="needs a date"):
        add_entry(data, "S", "no date anywhere", None)
    for bad in ("2024-13-01", "2024/06/01", "June 2024", "", "2024-6-1"):
        with pytest.raises(ValueError, match="date"):
            add_entry(data, "S", "x", bad)
    with pytest.raises(ValueError, match="line break"):
        add_entry(data, "S\n## T", "x", "2024-01-01")


def test_add_refuses_when_an_unclosed_fence_would_swallow_the_entry() -> None:
    data = b"## S\n- 2024-01-01: code\n  ```\n  never closed\n"
    with pytest.raises(ValueError):
        add_entry(data, "S", "x", "2024-01-02")
    with pytest.raises(ValueError):
        add_entry(data, "New", "x", "2024-01-02")


def test_remove_entry() -> None:
    data = OPINIONS.encode()
    parsed = parse("Opinions", data)
    removed = remove_entry(data, parsed.entries[2])
    assert removed == data[: parsed.entries[2].start] + data[parsed.entries[2].end :]
    after = parse("Opinions", removed)
    assert [e.date for e in after.entries] == [e.date for e in parsed.entries if e != parsed.entries[2]]
    last = b"## S\n- 2024-01-01: a\n- 2024-01-02: b"
    assert remove_entry(last, parse("f", last).entries[-1]) == b"## S\n- 2024-01-01: a"
    assert remove_entry(last, parse("f", last).entries[0]) == b"## S\n- 2024-01-02: b"
    whole = b"- 2024-01-01: alone"
    assert remove_entry(whole, parse("f", whole).entries[0]) == b""


def test_entry_line() -> None:
    assert entry_line("Tabs over spaces.", "2024-03-01") == "- 2024-03-01: Tabs over spaces."
    assert entry_line("2024-03-01: dated text", None) == "- 2024-03-01: dated text"
    assert entry_line("plain", None) == "- plain"
    assert entry_line("", "2024-03") == "- 2024-03"
    assert entry_line("\n\n first\r\nsecond\r\n\n  - nested\n   \nlast\n\n", "2024-03-01") == (
        "- 2024-03-01: first\n  second\n\n    - nested\n\n  last"
    )
