"""Names in the memory-file layer: what its entities are called, and what a file name or an entry
date may be (the params models check these; the layer relies on them). Pure."""

from __future__ import annotations

import datetime as dt
import unicodedata

ENTRY_TYPE = "memory_entry"
FILE_TYPE = "memory_file"
FILE_CATEGORY = "memory_file"
NOTE_TYPE = "markdown_note"
NOTE_CATEGORY = "markdown_note"
LINK_RELATION = "wikilink"
MAX_FILE_NAME = 100


def valid_date(text: str) -> bool:
    """``YYYY-MM-DD`` (a real day) or ``YYYY-MM``: the dates add_memory writes."""
    for form in ("%Y-%m-%d", "%Y-%m"):
        try:
            parsed = dt.datetime.strptime(text, form)
        except ValueError:
            continue
        return parsed.strftime(form) == text
    return False


def entry_category(file: str) -> str:
    return f"memory:{file}"


def check_name(name: str) -> str | None:
    """Why ``name`` cannot be a memory file's name (None when it can)."""
    if not name or not name.strip():
        return "must not be empty"
    if len(name) > MAX_FILE_NAME:
        return f"must be at most {MAX_FILE_NAME} characters"
    if has_control(name):  # a line break in a name would forge lines in reports and logs
        return "must not contain control characters (line breaks, tabs, ...)"
    if any(c in name for c in '/\\:*?"<>|\x00') or name.startswith("."):
        return "must be a plain file name without .md (no slashes, no leading dot)"
    return None


def is_control(c: str) -> bool:
    """A control or formatting character (C0, DEL, C1 such as NEL), a line or paragraph separator,
    or an invisible format character such as a right-to-left override: none belongs in a file name."""
    return unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")


def has_control(text: str) -> bool:
    return any(is_control(c) for c in text)
