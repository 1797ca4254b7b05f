"""A label opening a text: ``Label: text``, or the label on a line of its own over the text. Pure functions.

A label is one to three capitalised words without digits, each at most 31 letters (``Caroline``, ``Dr. Ada
Lovelace``, ``Main DB``). A chat pasted line by line names its speakers so (``Caroline: hi``, or ``Caroline``, a
line break, ``hi``), and a note its subject (``Main DB: PostgreSQL 16.2``, ``Pricing`` over a paragraph). Two parts
of the vault read it: recall places a labelled memory in a dialogue (recall/turns.py), and the embedding text
writes a label on a line of its own as ``Label: text`` (embeddings/base.py), the form the model reads a summary
in, so a memory's vector does not depend on which of the two forms it was written in.
"""

from __future__ import annotations

import re

LABEL = r"[A-Z][A-Za-z'.-]{0,30}(?: [A-Z][A-Za-z'.-]{0,30}){0,2}"
# The most of a text a label reads: three words of 31 letters, two spaces, the separator (``: `` or a line break,
# ``\r\n`` at most) and the first character of the text.
HEAD_CHARS = 100
_SAID = re.compile(rf"^({LABEL}): \S")
_ON_A_LINE = re.compile(rf"^({LABEL})\r?\n(?=\S)")


def said(text: str) -> str | None:
    """The label of a text that opens ``Label: text`` (a colon, a space, then text), else ``None``."""
    found = _SAID.match(text)
    return found.group(1) if found is not None else None


def on_a_line(text: str) -> tuple[str, str] | None:
    """The label and the rest of a text whose first line is a label and nothing else, the next line opening with
    text (``Caroline``, a line break, ``I went``), else ``None``."""
    found = _ON_A_LINE.match(text)
    return (found.group(1), text[found.end() :]) if found is not None else None
