"""``/files``: the memory files (``list_memory_files``); ``/files?file=NAME``: one file's entries by date,
newest first, and the file verbatim (``get_memory`` with its entries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..layout import Page, Scope, message, table, text_block, when
from ..markup import Markup, el, join
from ..query import Ask, Context


def render(ctx: Context, ask: Ask) -> Page:
    name = ask.text("file")
    if name is None:
        listed = ctx.vault.list_memory_files(**ask.scope.args())
        rows = (
            [
                el("a", f.file, href=ask.scope.link("/files", file=f.file)),
                f"{f.entries:,}",
                ", ".join(f.sections),
                when(f.updated_at_ms),
            ]
            for f in listed.files
        )
        bound = (
            message(
                f"Bound to the folder {listed.bound_folder}: adding or deleting an entry rewrites its file."
            )
            if listed.bound_folder
            else None
        )
        return Page(
            "Memory files",
            join(
                bound,
                table(
                    ("file", "entries", "sections", "updated"),
                    rows,
                    empty="no memory files (perseus-vault memory import FOLDER)",
                ),
            ),
        )
    section = ask.text("section")
    text = ctx.vault.get_memory(name, section, entries=True, **ask.scope.args())
    return Page(
        f"Memory file {name}",
        join(
            el("p", el("a", "All memory files", href=ask.scope.link("/files"))),
            _sections(
                ask.scope,
                name,
                section,
                ctx.vault.get_memory(name, entries=True, **ask.scope.args()).entries
                if section is not None
                else text.entries,
            ),
            el(
                "section",
                el("h2", "Entries by date"),
                table(
                    ("date", "section", "entry"),
                    (
                        [
                            e.date or "undated",
                            e.section or "(before any section)",
                            text_block(e.text, "entry"),
                        ]
                        for e in sorted(text.entries or [], key=lambda e: e.date or "", reverse=True)
                    ),
                    empty="no dated entries",
                ),
            ),
            el("details", el("summary", "The file as stored"), text_block(text.text, "file")),
        ),
    )


def _sections(scope: Scope, name: str, chosen: str | None, entries: Sequence[Any] | None) -> Markup | None:
    """Links to the sections that hold entries, in file order (reading the file again is cheaper than
    listing every memory file of the store)."""
    sections = list(dict.fromkeys(e.section for e in entries or [] if e.section))
    if not sections:
        return None
    links = [
        el(
            "a",
            title,
            href=scope.link("/files", file=name, section=title),
            aria_current="page" if title == chosen else None,
        )
        for title in sections
    ]
    return el(
        "p",
        "Sections: ",
        [[", " if i else "", link] for i, link in enumerate(links)],
        " · ",
        el("a", "whole file", href=scope.link("/files", file=name)),
        class_="sections",
    )
