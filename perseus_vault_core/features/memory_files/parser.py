"""Markdown memory files (docs/memory-files.md): one file's bytes in, sections and dated entries out.

A memory file is what a user keeps in an Obsidian-style ``About Me/`` folder: ``##`` sections
holding dated entries. ``parse`` reads it (:mod:`.edits` changes it, every other byte of the file as it was). Pure functions over bytes and frozen values; no I/O.

How a file is read
------------------
- **Lines.** The bytes are split after every ``\\n``; a line's text drops its ``\\n`` or ``\\r\\n``
  (a lone ``\\r`` is ordinary text). Each line is decoded as UTF-8 on its own. A line that is not
  valid UTF-8 is reported in ``skipped`` ("not valid UTF-8"), ends any open entry and is never
  part of an entry's text; its bytes stay in the file. All offsets are byte offsets into the data.
  A UTF-8 byte order mark on line 1 is ignored when classifying that line.
- **Front matter.** A first line ``---`` opens it and the next ``---`` line closes it; its
  ``key: value`` lines fill ``front_matter`` (quotes around the value dropped, ``key:`` alone
  kept as ``""``, the last duplicate wins, other lines ignored). Without a closing line the
  opening line is reported ("front matter not closed") and everything after it is body.
- **Headings** count only at column 0: one to six ``#`` then a space, a tab or the line's end.
  ``#`` is the file's title and ``##`` starts a section; lines after either belong to that
  section (section ``""`` after a title or before any ``##``). A section ends at the next ``#``
  or ``##`` heading, or at the end of the file. A ``###``-``######`` heading whose text starts
  with a date begins an entry; any other such heading is an ordinary line.
- **Entries** begin at a list item (``-``, ``*``, ``+``, ``1.`` or ``1)`` then a space) or a
  ``###``+ heading whose text starts with a date (``DATE_FORMS``). The date must be a real one
  (month 1-12, a day that month has) and be followed by ``:``, a space, a tab or the line's end,
  so ``2024-03-01 - x``, ``2024-03-01 — x`` and ``2024-03-01: x`` all qualify.
- **List entries continue** over, in order of precedence:
    - lines indented deeper than the entry's first line (nested bullets, dated or not, included);
    - blank lines, only when the next non-blank line is indented deeper (they and it continue);
    - any other non-blank line that is not a list item, heading or thematic break (``---``,
      ``***``, ``___``), directly after the entry's previous line (markdown's lazy continuation).
  Anything else ends the entry: a blank line not followed by deeper indentation, a list item
  at the entry's indentation or shallower, a heading, a thematic break, a non-UTF-8 line.
- **Heading entries continue** over every following line until a heading, a dated list item at
  column 0 (it begins its own entry), a thematic break at column 0, or a non-UTF-8 line.
- **Code fences.** A line starting (after indentation) with three backticks or ``~~~`` opens a
  fence that runs to a line of at least as many of the same character. A fence opened inside an entry
  belongs to it, blank lines and all; inside any fence nothing is a heading or an entry.
- An entry never ends with blank lines; its ``end`` is just past its last line's newline.
- **Skipped lines.** Every non-blank line that is neither in an entry, nor front matter, nor a
  ``#``/``##`` heading, nor a thematic break is reported with its line number ("undated line
  outside an entry"). Blank lines are never reported.

How a file is edited
--------------------
``add_entry`` writes ``entry_line(text, date)`` as a new line right after the section's last
entry, or right after its heading when it has none, using the file's own line ending (``\\r\\n``
when its first line has one). It checks that the new bytes parse back to exactly that entry and
that removing it restores the original bytes. Where the next line would join the new entry (a
paragraph right under the heading, a sibling bullet after an indented entry) it tries the end
of the section's text, then the section's end, and raises ``ValueError`` if no place works (an
unclosed code fence running to the end of the file). Section ``""`` with no entries yet gets
its first one at the end of the text before the first ``##``. A missing section is appended at
the end of the file as ``## title`` after a blank line (none is added when the file is empty or
already ends with one).

``remove_entry`` cuts ``[start, end)``; when that is the file's unterminated last line it also
takes the newline before it, so a file without a final newline keeps having none and an
``add_entry`` at such an end is undone exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DATE_FORMS", "Entry", "ParsedFile", "Section", "Skipped", "parse", "wikilinks"]

DATE_FORMS: tuple[str, ...] = (
    "2024-03-01",
    "2024/03/01 (read as 2024-03-01)",
    "2024-03 (a month; the date is 2024-03)",
    "**2024-03-01** or **2024-03-01:** (bold, any of the forms above)",
    "[[2024-03-01]] (a daily-note wikilink, any of the forms above)",
    "_2024-03-01_ (italic, any of the forms above)",
    "(2024-03-01) (in parentheses, any of the forms above)",
)

_UNDATED = "undated line outside an entry"
_NOT_UTF8 = "not valid UTF-8"
_FRONT_MATTER_NOT_CLOSED = "front matter not closed"

# ASCII digits only: \d would also take other scripts' digits.
CORE_DATE = re.compile(r"([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?|/([0-9]{2})/([0-9]{2}))")
_WRAPPERS = (("**", "**"), ("[[", "]]"), ("_", "_"), ("(", ")"), ("", ""))
_HEADING = re.compile(r"(#{1,6})(?:[ \t](.*))?$")
_LIST_ITEM = re.compile(r"([ \t]*)(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]+(.*))?$")
_THEMATIC_BREAK = re.compile(r"[ \t]{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]*?)\\?(?:[|#][^\[\]\n]*)?\]\]")


@dataclass(frozen=True)
class Entry:
    """One dated entry: its section title, normalized date and raw markdown lines."""

    section: str
    date: str | None
    text: str
    start: int
    end: int
    line: int


@dataclass(frozen=True)
class Section:
    """A ``## `` section: from its heading line to the next ``#``/``##`` heading or the end."""

    title: str
    start: int
    end: int
    line: int


@dataclass(frozen=True)
class Skipped:
    """A line that is in no entry, and why."""

    line: int
    text: str
    reason: str


@dataclass(frozen=True)
class ParsedFile:
    """Everything ``parse`` found in one memory file."""

    name: str
    front_matter: dict[str, str]
    sections: tuple[Section, ...]
    entries: tuple[Entry, ...]
    skipped: tuple[Skipped, ...]


@dataclass(frozen=True)
class Line:
    start: int
    end: int  # just past the line's newline, if it has one
    number: int
    text: str | None  # None when the line is not valid UTF-8
    raw: bytes  # the line without its line ending


def split_lines(data: bytes) -> list[Line]:
    lines: list[Line] = []
    pos = 0
    while pos < len(data):
        newline = data.find(b"\n", pos)
        if newline == -1:
            end, raw = len(data), data[pos:]
        else:
            end, raw = newline + 1, data[pos:newline]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
        try:
            text: str | None = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        lines.append(Line(pos, end, len(lines) + 1, text, raw))
        pos = end
    return lines


def is_blank(text: str) -> bool:
    return text.strip(" \t") == ""


def _indent(text: str) -> int:
    """Leading whitespace width, a tab advancing to the next multiple of four."""
    width = 0
    for char in text:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def core_date(match: re.Match[str]) -> str | None:
    """The normalized date of a ``CORE_DATE`` match, or None when no such day exists."""
    year, month, day, slash_month, slash_day = match.groups()
    if slash_month is not None:
        month, day = slash_month, slash_day
    y, m = int(year), int(month)
    if y < 1 or not 1 <= m <= 12:
        return None
    if day is None:
        return f"{year}-{month}"
    if not 1 <= int(day) <= _days_in_month(y, m):
        return None
    return f"{year}-{month}-{day}"


def leading_date(text: str) -> str | None:
    """The date that ``text`` (an item's or heading's text) starts with, normalized, or None."""
    for opening, closing in _WRAPPERS:
        if not text.startswith(opening):
            continue
        match = CORE_DATE.match(text, len(opening))
        if match is None:
            continue
        pos = match.end()
        if opening == "**" and text.startswith(":**", pos):
            pos += 1  # "**2024-03-01:**" keeps its colon inside the bold
        if not text.startswith(closing, pos):
            continue
        pos += len(closing)
        if pos < len(text) and text[pos] not in ": \t":
            continue
        return core_date(match)
    return None


def _heading(text: str) -> tuple[int, str] | None:
    match = _HEADING.match(text)
    if match is None:
        return None
    return len(match.group(1)), (match.group(2) or "").strip()


def list_item(text: str) -> tuple[int, str] | None:
    """(indent width, item text) for a list item line, else None (thematic breaks are not items)."""
    if _THEMATIC_BREAK.match(text):
        return None
    match = _LIST_ITEM.match(text)
    if match is None:
        return None
    return _indent(match.group(1)), (match.group(2) or "")


def _fence_opening(text: str) -> str | None:
    match = _FENCE.match(text)
    if match is None:
        return None
    marker = match.group(1)
    if marker[0] == "`" and "`" in text[match.end() :]:
        return None  # an inline code span, not a fence
    return marker


def _closes_fence(text: str, marker: str) -> bool:
    stripped = text.strip(" \t")
    return len(stripped) >= len(marker) and stripped == marker[0] * len(stripped)


def _parse_front_matter(lines: list[Line], skipped: list[Skipped]) -> tuple[dict[str, str], int]:
    """The front matter's pairs and the index of the first body line."""
    if not lines or lines[0].text is None or lines[0].text.lstrip("\ufeff").rstrip(" \t") != "---":
        return {}, 0
    for index in range(1, len(lines)):
        text = lines[index].text
        if text is not None and text.rstrip(" \t") == "---":
            break
    else:
        skipped.append(Skipped(1, lines[0].text, _FRONT_MATTER_NOT_CLOSED))
        return {}, 1
    pairs: dict[str, str] = {}
    for line in lines[1:index]:
        if line.text is None:
            skipped.append(Skipped(line.number, line.raw.decode("utf-8", "replace"), _NOT_UTF8))
            continue
        pair = _front_matter_pair(line.text)
        if pair is not None:
            pairs[pair[0]] = pair[1]
    return pairs, index + 1


def _front_matter_pair(text: str) -> tuple[str, str] | None:
    """``key: value`` as (key, value): the key is the text before the first colon (blanks before the
    colon dropped; it must not start with a blank, ``#`` or ``-``); the colon is followed by a blank
    or ends the line; surrounding whitespace and one pair of matching quotes are dropped from the value.

    String scanning, not a regular expression: the one this replaces backtracked quadratically on a
    long line without a colon, and a front matter line can be as long as the file."""
    colon = text.find(":")
    if colon < 1 or text[0].isspace() or text[0] in "#-":
        return None
    rest = text[colon + 1 :]
    if rest and rest[0] not in " \t":
        return None
    value = rest.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return text[:colon].rstrip(" \t"), value


class _Parser:
    """One pass over the body lines; holds the open section, entry and code fence."""

    def __init__(self, data: bytes, lines: list[Line], skipped: list[Skipped]) -> None:
        self.data = data
        self.lines = lines
        self.skipped = skipped
        self.sections: list[Section] = []
        self.entries: list[Entry] = []
        self.section = ""
        self.open_section: tuple[str, int, int] | None = None  # title, start, line
        self.entry_lines: list[int] = []  # indexes of the open entry's lines
        self.entry_kind = ""  # "item" or "heading" while an entry is open
        self.entry_indent = 0
        self.entry_date = ""
        self.entry_section = ""
        self.fence: str | None = None
        self.fence_owned = False

    def run(self, first: int) -> None:
        index = first
        while index < len(self.lines):
            index = self.step(index)
        self.close_entry()
        self.close_section(len(self.data))

    def text_of(self, index: int) -> str | None:
        text = self.lines[index].text
        return text.lstrip("\ufeff") if index == 0 and text is not None else text

    def step(self, index: int) -> int:
        """Handle line ``index``; return the index of the next line to handle."""
        line = self.lines[index]
        text = self.text_of(index)
        if text is None:
            self.close_entry()
            self.skipped.append(Skipped(line.number, line.raw.decode("utf-8", "replace"), _NOT_UTF8))
            return index + 1
        if self.fence is not None:
            if self.fence_owned:
                self.entry_lines.append(index)
            elif not is_blank(text):
                self.skip(index)
            if _closes_fence(text, self.fence):
                self.fence = None
            return index + 1
        if self.entry_lines:
            continued = self.continues(index, text)
            if continued is not None:
                return continued
            self.close_entry()
        return self.outside(index, text)

    def continues(self, index: int, text: str) -> int | None:
        """Take line ``index`` (and maybe more) into the open entry; None when it ends the entry."""
        if self.entry_kind == "heading":
            if _heading(text) or (_indent(text) == 0 and _THEMATIC_BREAK.match(text)):
                return None
            item = list_item(text)
            if item is not None and item[0] == 0 and leading_date(item[1]):
                return None
            return self.take(index, text)
        if is_blank(text):
            ahead = index + 1
            while ahead < len(self.lines):
                following = self.lines[ahead].text
                if following is None or not is_blank(following):
                    break
                ahead += 1
            following = self.lines[ahead].text if ahead < len(self.lines) else None
            if following is None or _indent(following) <= self.entry_indent:
                return None
            self.entry_lines.extend(range(index, ahead))
            return ahead
        if _indent(text) > self.entry_indent:
            return self.take(index, text)
        if _heading(text) or list_item(text) or _THEMATIC_BREAK.match(text):
            return None
        return self.take(index, text)  # lazy continuation of the entry's last line

    def take(self, index: int, text: str) -> int:
        self.entry_lines.append(index)
        marker = _fence_opening(text)
        if marker is not None:
            self.fence, self.fence_owned = marker, True
        return index + 1

    def outside(self, index: int, text: str) -> int:
        """Handle a line that no open entry took."""
        if is_blank(text) or _THEMATIC_BREAK.match(text):
            return index + 1
        line = self.lines[index]
        heading = _heading(text)
        if heading is not None:
            level, title = heading
            if level <= 2:
                self.close_section(line.start)
                self.section = title if level == 2 else ""
                if level == 2:
                    self.open_section = (title, line.start, line.number)
                return index + 1
            date = leading_date(title)
            if date is not None:
                self.open_entry(index, "heading", 0, date)
            else:
                self.skip(index)
            return index + 1
        item = list_item(text)
        if item is not None:
            date = leading_date(item[1])
            if date is not None:
                self.open_entry(index, "item", item[0], date)
            else:
                self.skip(index)
            return index + 1
        marker = _fence_opening(text)
        if marker is not None:
            self.fence, self.fence_owned = marker, False
        self.skip(index)
        return index + 1

    def skip(self, index: int) -> None:
        line = self.lines[index]
        self.skipped.append(Skipped(line.number, line.text or "", _UNDATED))

    def open_entry(self, index: int, kind: str, indent: int, date: str) -> None:
        self.entry_lines = [index]
        self.entry_kind, self.entry_indent, self.entry_date = kind, indent, date
        self.entry_section = self.section

    def close_entry(self) -> None:
        if self.fence_owned:
            self.fence, self.fence_owned = None, False
        indexes = self.entry_lines
        while len(indexes) > 1 and is_blank(self.lines[indexes[-1]].text or ""):
            indexes.pop()
        if indexes:
            first, last = self.lines[indexes[0]], self.lines[indexes[-1]]
            text = "\n".join(self.lines[i].text or "" for i in indexes)
            self.entries.append(
                Entry(self.entry_section, self.entry_date, text, first.start, last.end, first.number)
            )
        self.entry_lines = []
        self.entry_kind = ""

    def close_section(self, end: int) -> None:
        if self.open_section is not None:
            title, start, number = self.open_section
            self.sections.append(Section(title, start, end, number))
            self.open_section = None


def parse(name: str, data: bytes) -> ParsedFile:
    """Read one memory file (``name`` without ``.md``). Never raises; the module docstring has the rules."""
    lines = split_lines(data)
    skipped: list[Skipped] = []
    front_matter, first = _parse_front_matter(lines, skipped)
    parser = _Parser(data, lines, skipped)
    parser.run(first)
    skipped.sort(key=lambda item: item.line)
    return ParsedFile(name, front_matter, tuple(parser.sections), tuple(parser.entries), tuple(skipped))


def wikilinks(text: str) -> list[str]:
    """Targets of ``[[Target]]``, ``[[Target|alias]]``, ``[[Target#heading]]`` (and ``![[embeds]]``),
    in order of first appearance, without duplicates or empty targets."""
    targets: dict[str, None] = {}
    for match in _WIKILINK.finditer(text):
        target = match.group(1).strip()
        if target:
            targets.setdefault(target, None)
    return list(targets)
