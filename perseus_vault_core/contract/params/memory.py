"""Memory files: their names, sections, dated entries, and the verbs over them."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, field_validator, model_validator

from ..errors import InvalidInput
from ..memory_names import check_name, valid_date  # the memory layer owns what a file name may be
from ..text import line_break
from .base import (
    MAX_ENTRY_CHARS,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_SCOPE_CHARS,
    MAX_SECTION_CHARS,
    ScopeParams,
    _optional_text,
    _words,
    advanced,
    check_text,
)

# --- memory files ------------------------------------------------------------------------------


def _file_name(value: str) -> str:
    why = check_name(check_text(value))
    if why is not None:
        raise ValueError(why)
    return value


def _section_title(value: str) -> str:
    if not value.strip() or line_break(value) is not None:
        raise ValueError("must be a one-line heading text")
    return check_text(value)


def _entry_date(value: str | None) -> str | None:
    if value is not None and not valid_date(value):
        raise ValueError("must be a date as YYYY-MM-DD (or YYYY-MM)")
    return value


def _entry_text(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("must not be empty")
    return _optional_text(value)


FileName = Annotated[str, AfterValidator(_file_name)]
SectionTitle = Annotated[str, Field(max_length=MAX_SECTION_CHARS), AfterValidator(_section_title)]
EntryDate = Annotated[str | None, Field(max_length=32), AfterValidator(_entry_date)]
_FILE = "The memory file's name without .md (list_memory_files names them)"
_SECTION = "The section's heading text (without ##)"


class MemoryRecallParams(ScopeParams):
    query: str = Field(
        max_length=MAX_QUERY_CHARS, description=("The topic, in content words ('testing philosophy')")
    )
    file: str | None = Field(
        default=None,
        max_length=4_096,
        description=("Only this memory file (exact case, without .md); omit for all files"),
    )
    limit: int = Field(
        default=50, ge=1, le=MAX_LIMIT, description=("Most entries (the least relevant are dropped)")
    )

    @field_validator("query")
    @classmethod
    def _query_text(cls, value: str) -> str:
        return _words(value)

    @field_validator("file")
    @classmethod
    def _file_text(cls, value: str | None) -> str | None:
        return _optional_text(value)


class ListMemoryFilesParams(ScopeParams):
    """``list_memory_files``: the memory files of a scope."""


class GetMemoryParams(ScopeParams):
    file: FileName = Field(description=_FILE)
    section: str | None = Field(
        default=None,
        max_length=MAX_SECTION_CHARS,
        description=("One section's heading text (without ##); omit for the whole file"),
    )
    entries: bool = advanced(False, description="Also list its entries, each with its section and date")

    @field_validator("section")
    @classmethod
    def _section(cls, value: str | None) -> str | None:
        return _optional_text(value)


class AddMemoryParams(ScopeParams):
    file: FileName = Field(description="The memory file's name without .md; created if missing")
    section: SectionTitle = Field(description=_SECTION)
    text: Annotated[str, AfterValidator(_entry_text)] = Field(
        max_length=MAX_ENTRY_CHARS, description="The entry's text"
    )
    date: EntryDate = Field(default=None, description="The entry's date, YYYY-MM-DD (default today, UTC)")


class DeleteMemoryParams(ScopeParams):
    file: FileName = Field(description=_FILE)
    section: SectionTitle = Field(description=_SECTION)
    date: str | None = Field(default=None, max_length=32, description="The entry's date, YYYY-MM-DD")
    text: Annotated[str | None, AfterValidator(_entry_text)] = Field(
        default=None,
        max_length=MAX_ENTRY_CHARS,
        description=(
            "The entry's text, or a part of it that only that entry contains (not empty: that would match every entry)"
        ),
    )

    @model_validator(mode="after")
    def _chosen(self) -> DeleteMemoryParams:
        if self.date is None and self.text is None:  # InvalidInput names its field (see invalid())
            raise InvalidInput("date", "give the entry's date, its text, or both")
        return self


class MemoryImportParams(ScopeParams):
    """``memory_import``: a folder's memory files and notes, reconciled with the vault's."""

    folder: str = Field(description="The folder to import: its memory files and its other markdown notes")
    memory_dir: str = Field(
        default="About Me",
        description=("The subfolder holding the memory files (the folder itself when there is none)"),
    )
    bind: bool = Field(default=False, description="Let add_memory and delete_memory rewrite the files there")
    agent_id: str | None = Field(
        default=None, max_length=MAX_SCOPE_CHARS, description="The agent the entries belong to"
    )
    workspace_hash: str | None = Field(
        default=None, max_length=MAX_SCOPE_CHARS, description="The workspace the entries belong to"
    )


class MemoryExportParams(ScopeParams):
    """``memory_export``: every memory file in scope, written byte for byte as stored."""

    folder: str = Field(
        description="The folder to write each memory file to, as <file>.md (created if missing)"
    )
