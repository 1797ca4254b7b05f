"""What a stored text may hold, and how a stored name is written on one line. Pure.

Every text the vault stores must be taken alike by both databases: valid Unicode (neither driver can
encode an unpaired surrogate) and no NUL (SQLite keeps it, PostgreSQL refuses it in text), so that a
vault moves between them (``migrate``) and a call answers the same on either.

A name that heads a line of what an agent reads (a category, a key, a topic path, a speaker: the
bullets of ``prepare``, a transcript's turns) holds no line break, so a stored memory cannot add a line
of its own there. The line breaks are :data:`LINE_BREAKS`, what ``str.splitlines`` splits on; the
params models refuse them in such names, and the renderers pass every stored name through
:func:`escape_breaks`, for the names a vault stored before that rule.
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
        return "contains an unpaired surrogate; text must be valid Unicode"
    return None


def line_break(value: str) -> str | None:
    """The first line break ``value`` holds, named ("a line break (U+2028)"); None when it is one line."""
    found = _BREAK.search(value)
    return None if found is None else f"a line break (U+{ord(found.group()):04X})"


def escape_breaks(value: str) -> str:
    """``value`` with each line break written as its escape (``\\n``, ``\\u2028``): one line, whatever
    it holds."""
    return value.translate(_ESCAPED)
