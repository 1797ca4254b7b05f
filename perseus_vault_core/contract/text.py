"""What a stored text may hold, how a stored name is written on one line, and how a memory's text is cut
to fit a page. Pure.

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

A memory is cut to fit a page (``preview_cap``, or a page past the response budget; records/store.py):
:func:`preview` cuts its content and names the tool that reads it whole, :func:`preview_body` keeps the
body's fields that fit. :func:`collapse_whitespace` puts a text on one line, :func:`clip_line` on one
short line.
"""

from __future__ import annotations

import json
import re
from typing import Any

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
        return (
            "contains an unpaired surrogate; text must be valid Unicode"
            " (on a command line: bytes that are not UTF-8)"
        )
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
    feeds and tabs kept (a CR LF line end read as its line feed); with ``json``, ``value`` is a JSON
    document (whose encoder escaped C0 already) and DEL and the C1 controls, found only inside its
    strings, become ``\\u`` escapes: the same JSON value."""
    return value.translate(_FOR_JSON) if json else value.replace("\r\n", "\n").translate(_FOR_TEXT)


def collapse_whitespace(text: str) -> str:
    """``text`` on one line: each run of whitespace (line breaks among them) as one space."""
    return " ".join(text.split())


def clip_line(text: str, limit: int) -> str:
    """``text`` on one line (:func:`collapse_whitespace`), cut to ``limit`` characters with an ellipsis."""
    text = collapse_whitespace(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preview(content: str, cap: int, entity_id: int, *, cut: bool = False) -> str:
    """Cut ``content`` at ``cap`` characters, with a footer naming the tool that reads the whole
    memory (also when only its other fields were cut: ``cut``)."""
    if len(content) <= cap and not cut:
        return content
    what = (
        f"truncated at {cap} of {len(content)} characters" if len(content) > cap else "its other fields cut"
    )
    return (
        content[:cap] + f"\n[... preview, {what}; the whole memory: "
        f"perseus_vault_get_entity(id={entity_id}), or vault.get_entity({entity_id}) in Python]"
    )


def preview_body(body: dict[str, Any], cap: int) -> tuple[dict[str, Any], bool]:
    """``body`` within about ``cap`` characters of JSON, and whether anything was cut: the fields
    that fit whole are kept, in order; then text fields that did not fit are cut into the room
    left; other fields that do not fit are left out. Pure."""
    costs = {name: len(name) + 4 + len(json.dumps(value, ensure_ascii=False)) for name, value in body.items()}
    kept: set[str] = set()
    used = 2
    for name, cost in costs.items():
        if used + cost <= cap:
            kept.add(name)
            used += cost
    cut: dict[str, str] = {}
    for name, value in body.items():
        room = cap - used - len(name) - 7
        if name not in kept and isinstance(value, str) and room >= 20:
            cut[name] = value[:room] + "…"
            used = cap
    out = {name: cut.get(name, value) for name, value in body.items() if name in kept or name in cut}
    return out, len(kept) < len(body)
