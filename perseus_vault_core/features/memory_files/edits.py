"""Editing a memory file byte for byte: ``add_entry`` and ``remove_entry`` (docs/memory-files.md).

Every other byte of the file stays as it was: an added entry goes where :func:`parser.parse` will
read it back whole, in its section, and removing it again gives the original bytes. Pure functions.
"""

from __future__ import annotations

from .parser import CORE_DATE, Entry, Line, core_date, is_blank, leading_date, list_item, parse, split_lines


def entry_line(text: str, date: str | None) -> str:
    """The markdown ``add_entry`` writes: ``- DATE: text``, or ``- text`` without a date.

    Line endings become ``\\n``, blank lines around the text are dropped, and every line after
    the first is indented by two spaces so that it stays part of the entry (blank lines inside
    stay empty). No trailing newline.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    while lines and is_blank(lines[0]):
        lines.pop(0)
    while lines and is_blank(lines[-1]):
        lines.pop()
    head = lines[0].lstrip(" \t") if lines else ""
    if date is None:
        first = f"- {head}".rstrip(" ")
    else:
        first = f"- {date}: {head}" if head else f"- {date}"
    rest = ["" if is_blank(line) else "  " + line for line in lines[1:]]
    return "\n".join([first, *rest])


def _newline(data: bytes) -> bytes:
    newline = data.find(b"\n")
    return b"\r\n" if newline > 0 and data[newline - 1 : newline] == b"\r" else b"\n"


def _blank_tail_start(lines: list[Line], low: int, high: int) -> int:
    """Where the run of blank lines ending at offset ``high`` starts (not before ``low``)."""
    position = high
    for line in reversed(lines):
        if line.end > high or line.start < low:
            if line.start < low:
                break
            continue
        if line.text is None or not is_blank(line.text):
            break
        position = line.start
    return position


def _insert(data: bytes, position: int, block: bytes, newline: bytes) -> tuple[bytes, int]:
    if position == len(data) and data and not data.endswith(b"\n"):
        return data + newline + block, len(data) + len(newline)
    return data[:position] + block + newline + data[position:], position


def add_entry(data: bytes, section: str, text: str, date: str | None) -> tuple[bytes, int]:
    """Add one entry to ``section``; return the new bytes and the offset of the entry's first line.

    Raises ``ValueError`` for a section title with a line break, a ``date`` that is not a real
    ``YYYY-MM-DD`` or ``YYYY-MM``, an entry with no date (neither ``date`` nor a date starting
    ``text``), or a file where the entry could not be placed without changing other lines.
    """
    title = section.strip()
    if "\n" in section or "\r" in section:
        raise ValueError(f"a section title cannot contain a line break: {section!r}")
    if date is not None:
        match = CORE_DATE.fullmatch(date)
        if match is None or "/" in date or core_date(match) != date:
            raise ValueError(f"date must be a real YYYY-MM-DD or YYYY-MM, got {date!r}")
    line = entry_line(text, date)
    item = list_item(line.split("\n", 1)[0])
    if item is None or leading_date(item[1]) is None:
        raise ValueError("an entry needs a date: pass date, or start text with one")
    newline = _newline(data)
    block = line.replace("\n", newline.decode()).encode("utf-8")
    lines = split_lines(data)
    parsed = parse("", data)

    # The preferred place first, then the end of the section's text, then the section's end:
    # the later ones help when the next line would join the new entry (a paragraph right
    # under the heading, a sibling bullet after an indented entry).
    own = [entry for entry in parsed.entries if entry.section == title]
    matching = [candidate for candidate in parsed.sections if candidate.title == title]
    if own:
        last = own[-1]
        low = last.end
        enclosing = [s for s in parsed.sections if s.start <= last.start < s.end]
        if title and enclosing:
            high = enclosing[-1].end
        else:
            high = next((s.start for s in parsed.sections if s.start > last.start), len(data))
        positions = [last.end]
    elif matching:
        heading = next(candidate for candidate in lines if candidate.start == matching[0].start)
        low, high = heading.end, matching[0].end
        positions = [heading.end]
    elif title == "":
        low, high = 0, parsed.sections[0].start if parsed.sections else len(data)
        positions = []
    else:
        return _append_section(data, title, block, newline)
    positions += [_blank_tail_start(lines, low, high), high]

    for position in dict.fromkeys(positions):
        new, offset = _insert(data, position, block, newline)
        placed = next((entry for entry in parse("", new).entries if entry.start == offset), None)
        if placed is not None and placed.section == title and remove_entry(new, placed) == data:
            return new, offset
    raise ValueError(f"cannot add an entry to section {title!r} without changing other lines")


def _append_section(data: bytes, title: str, block: bytes, newline: bytes) -> tuple[bytes, int]:
    if not data:
        prefix = b""
    elif not data.endswith(b"\n"):
        prefix = newline + newline
    else:
        last = split_lines(data)[-1].text
        prefix = b"" if last is not None and is_blank(last) else newline
    heading = f"## {title}".encode() + newline
    new = data + prefix + heading + block + newline
    offset = len(data) + len(prefix) + len(heading)
    placed = next((entry for entry in parse("", new).entries if entry.start == offset), None)
    if placed is None or placed.section != title or placed.end != len(new):
        raise ValueError(f"cannot append section {title!r} to this file (an unclosed code fence?)")
    return new, offset


def remove_entry(data: bytes, entry: Entry) -> bytes:
    """``data`` without the entry's bytes ``[start, end)``.

    When the entry is the file's last line and has no newline, the newline before it goes too,
    so the file still ends without one (and an ``add_entry`` there is undone exactly).
    """
    start, end = entry.start, entry.end
    if end == len(data) and start < end and start > 0 and not data.endswith(b"\n"):
        if data[start - 1 : start] == b"\n":
            start -= 2 if data[start - 2 : start] == b"\r\n" else 1
    return data[:start] + data[end:]
