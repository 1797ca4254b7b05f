"""What a stored text may hold, and how a stored name is written on one line. Pure.

Every text the vault stores must be taken alike by both databases: valid Unicode (neither driver can
encode an unpaired surrogate) and no NUL (SQLite keeps it, PostgreSQL refuses it in text), so that a
vault moves between them (``migrate``) and a call answers the same on either.

A name that heads a line of what an agent reads (a category, a key, a topic path, a speaker: the
bullets of ``prepare``, a transcript's turns) holds no line break, so a stored memory cannot add a line
of its own there. The line breaks are :data:`LINE_BREAKS`, what ``str.splitlines`` splits on; the
params models refuse them in such names, and the renderers pass every stored name through
:func:`escape_breaks`, for the names a vault stored before that rule.

A terminal obeys the control characters it is sent (ESC starts a sequence that can clear the screen,
recolour it or set the window's title), so the CLI writes every stored text through :func:`for_terminal`:
the controls other than a line feed and a tab as their escapes.
"""

from __future__ import annotations

import re

# What str.splitlines splits on (\r\n is \r then \n): a renderer or reader may end a line at any of them.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_BREAK = re.compile(f"[{re.escape(LINE_BREAKS)}]")
_ESCAPED = {ord(c): ascii(c)[1:-1] for c in LINE_BREAKS}  # "\n" -> "\\n", "\u2028" -> "\\u2028"


def problem(value: str) -> str | None:
    """Why ``value`` cannot be stored (None when it can): a NUL or an unpaired surrogate."""
    if "\x00" in value:
        return "contains NUL (U+0000), which a vault does not store"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return ("contains an unpaired surrogate; text must be valid Unicode"
                " (on a command line: bytes that are not UTF-8)")
    return None


def line_break(value: str) -> str | None:
    """The first line break ``value`` holds, named ("a line break (U+2028)"); None when it is one line."""
    found = _BREAK.search(value)
    return None if found is None else f"a line break (U+{ord(found.group()):04X})"


def escape_breaks(value: str) -> str:
    """``value`` with each line break written as its escape (``\\n``, ``\\u2028``): one line, whatever
    it holds."""
    return value.translate(_ESCAPED)


# C0 controls but line feed and tab, DEL, and the C1 controls: what a terminal may act on.
_CONTROLS = [c for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) not in "\n\t"]
_FOR_TEXT = {c: f"\\x{c:02x}" for c in _CONTROLS}  # ESC -> "\x1b"
_FOR_JSON = {c: f"\\u{c:04x}" for c in _CONTROLS if c >= 0x7F}  # JSON escapes C0 itself; a string's escape


def for_terminal(value: str, json: bool = False) -> str:
    """``value`` with every control character a terminal acts on written as its escape (``\\x1b``), line
    feeds and tabs kept; with ``json``, ``value`` is a JSON document (whose encoder escaped C0 already) and
    DEL and the C1 controls, found only inside its strings, become ``\\u`` escapes: the same JSON value."""
    return value.translate(_FOR_JSON if json else _FOR_TEXT)
