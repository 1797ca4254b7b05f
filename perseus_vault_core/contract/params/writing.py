"""Writing: what remember, its batch, and the verbs on one memory or link take."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from ..errors import InvalidInput
from ..text import line_break
from .base import (
    _STRICT_IN,
    MAX_BATCH,
    MAX_BODY_BYTES,
    MAX_BODY_DEPTH,
    MAX_CATEGORY_CHARS,
    MAX_KEY_CHARS,
    MAX_RECALL_WHEN,
    MAX_RELATION_CHARS,
    MAX_SCOPE_CHARS,
    MAX_TOPIC_PATH_CHARS,
    MAX_TRIGGER_CHARS,
    MAX_TYPE_CHARS,
    MAX_WEIGHT,
    Id,
    ScopeParams,
    UnixMs,
    _depth,
    _optional_text,
    advanced,
    check_line,
    check_text,
    texts_problem,
)

# --- writing -----------------------------------------------------------------------------------


class RememberInput(BaseModel):
    """One memory to create or update, addressed by (category, key) within its scope."""

    model_config = _STRICT_IN

    category: str = Field(
        min_length=1, max_length=MAX_CATEGORY_CHARS, description="e.g. decision, preference, architecture"
    )
    key: str = Field(
        min_length=1,
        max_length=MAX_KEY_CHARS,
        description="Its stable name, e.g. 'db-engine'; the same key updates it",
    )
    content: str = Field(description="What to remember, in a sentence or a few")
    summary: str | None = Field(default=None, description="A one-line summary (searched with the content)")
    type: str = Field(
        default="note",
        min_length=1,
        max_length=MAX_TYPE_CHARS,
        description="e.g. note, fact, decision, insight, reference",
    )
    topic_path: str | None = Field(
        default=None, max_length=MAX_TOPIC_PATH_CHARS, description="Slash path, e.g. architecture/storage"
    )
    body: dict[str, Any] | None = Field(
        default=None,
        validate_default=True,
        description="Other structured fields to keep with it (a JSON object)",
    )
    agent_id: str | None = Field(
        default=None, max_length=MAX_SCOPE_CHARS, description="The agent it belongs to"
    )
    workspace_hash: str | None = Field(
        default=None, max_length=MAX_SCOPE_CHARS, description="The workspace it belongs to"
    )
    source: str | None = advanced(
        max_length=1024, description="Where it came from (a URL, file, person or tool)"
    )
    verified: bool = advanced(False, description="A person or trusted source confirmed it (ranks it higher)")
    certainty: float | None = advanced(ge=0.0, le=1.0, description="How sure the writer is, 0 to 1")
    provenance_class: str | None = advanced(max_length=64, description="e.g. human, tool, ai_draft, imported")
    recall_when: list[str] = Field(
        default_factory=list,
        max_length=MAX_RECALL_WHEN,
        description=("Phrases: a later context matching one brings it back unasked"),
    )
    valid_from_ms: UnixMs | None = advanced(description="When it became true in the world")
    valid_to_ms: UnixMs | None = advanced(description="When it stopped being true in the world")
    expires_at_ms: UnixMs | None = advanced(description="When the vault should stop recalling it")

    @field_validator("category", "key", "type")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return check_line(value)

    @field_validator("content", "summary", "agent_id", "workspace_hash", "source", "provenance_class")
    @classmethod
    def _valid_text(cls, value: str | None) -> str | None:
        return _optional_text(value)

    @field_validator("content")
    @classmethod
    def _says_something(cls, value: str) -> str:
        """A memory says something: empty or blank content is refused (recall could never find it)."""
        if not value.strip():
            raise ValueError("must hold some text (it is empty or only whitespace)")
        return value

    @field_validator("topic_path")
    @classmethod
    def _topic(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = check_line(value.strip().strip("/"))  # a name, as category and key are (see the text module)
        return value or None

    @field_validator("recall_when")
    @classmethod
    def _triggers(cls, value: list[str]) -> list[str]:
        out = []
        for phrase in value:
            if len(phrase) > MAX_TRIGGER_CHARS:
                raise ValueError(f"a trigger phrase is longer than {MAX_TRIGGER_CHARS} characters")
            if check_text(phrase).strip():
                found = line_break(
                    phrase.strip()
                )  # prepare quotes the phrase that triggered a memory in its line
                if found is not None:
                    raise ValueError(f"a trigger phrase holds {found}; each must be one line")
                out.append(phrase.strip())
        return out

    @field_validator("body")
    @classmethod
    def _body(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        if value:
            if _depth(value) > MAX_BODY_DEPTH:
                raise ValueError(f"is nested deeper than {MAX_BODY_DEPTH} levels")
            for name in ("content", "summary"):
                if name in value and value[name] != info.data.get(name):
                    raise ValueError(f"body.{name} conflicts with the {name} argument; pass it once")
            why = texts_problem(value)
            if why is not None:
                raise ValueError(why)
            try:
                json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
            except (TypeError, ValueError, UnicodeEncodeError) as exc:
                raise ValueError(f"must be a JSON object of finite numbers and valid text ({exc})") from exc
        return value

    @model_validator(mode="after")
    def _size(self) -> RememberInput:
        """Content, summary and body together within MAX_BODY_BYTES; without a body, the text is to blame."""
        size = len(self.content.encode("utf-8", "surrogatepass")) + len(
            (self.summary or "").encode("utf-8", "surrogatepass")
        )
        if self.body:
            size += len(json.dumps(self.body, allow_nan=False, ensure_ascii=False).encode("utf-8"))
        if size > MAX_BODY_BYTES:  # InvalidInput names its field, under the item's path (see invalid())
            if not self.body:
                raise InvalidInput(
                    "content", f"is {size} bytes with the summary; the limit is {MAX_BODY_BYTES}"
                )
            raise InvalidInput(
                "body", f"is {size} bytes with content and summary; the limit is {MAX_BODY_BYTES}"
            )
        return self

    @field_validator("valid_to_ms")
    @classmethod
    def _valid_window(cls, value: int | None, info: ValidationInfo) -> int | None:
        start = info.data.get("valid_from_ms")
        if value is not None and start is not None and value <= start:
            raise ValueError("must be later than valid_from_ms")
        return value

    def extra_body(self) -> dict[str, Any]:
        """Body fields other than content and summary (those have their own columns)."""
        return {k: v for k, v in (self.body or {}).items() if k not in ("content", "summary")}


class RememberParams(RememberInput):
    """``remember``: one memory, and whether to store it when its scope already holds the same text."""

    keep_duplicate: bool = advanced(
        False,
        description=(
            "Store it under its new key even when a memory of its scope holds exactly this text (else that one is "
            "returned, repeated set, nothing written)"
        ),
    )

    def memory(self) -> RememberInput:
        """What is stored: the memory without the call's own option."""
        return RememberInput.model_validate(self.model_dump(exclude={"keep_duplicate"}, exclude_unset=True))


class FileText(RememberInput):
    """A memory file or an imported note, stored byte for byte: it may be empty (an empty note exports
    as an empty file), unlike a memory an agent remembers."""

    @field_validator("content")
    @classmethod
    def _says_something(cls, value: str) -> str:
        return value


class RememberManyParams(BaseModel):
    """``remember_many``: a batch written in one transaction (all or none)."""

    model_config = _STRICT_IN

    items: list[RememberInput] = Field(
        max_length=MAX_BATCH,
        description=("The memories to store, each with remember's fields (category, key, content, ...)"),
    )
    similar: bool = Field(
        default=False,
        description=(
            "Return each memory with its candidates (what remember returns): the memories it may repeat, update or "
            "contradict"
        ),
    )


class EntityParams(ScopeParams):
    """One memory by id (``get_entity``, ``forget``, ``purge``); scope fields, when given, must match it."""

    id: Id = Field(description="The memory's id")


class SupersedeParams(ScopeParams):
    old_id: Id = Field(description="The memory being replaced")
    new_id: Id = Field(description="The memory that replaces it")


class LinkParams(ScopeParams):
    from_id: Id = Field(description="The memory the link starts from")
    to_id: Id = Field(description="The memory the link points to")
    relation: str = Field(
        default="related",
        min_length=1,
        max_length=MAX_RELATION_CHARS,
        description="The link's type, e.g. related, depends_on, caused_by",
    )
    # Bounded: a stored weight feeds sums (centrality, community edges) that must stay finite for every reader.
    weight: float = Field(
        default=1.0,
        ge=-MAX_WEIGHT,
        le=MAX_WEIGHT,
        description="The link's strength (communities and traverse use it)",
    )
    source: str | None = Field(default=None, max_length=1024, description="Where the link came from")

    @field_validator("relation")
    @classmethod
    def _relation(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return check_line(value)

    @field_validator("source")
    @classmethod
    def _source(cls, value: str | None) -> str | None:
        return _optional_text(value)


class UnlinkParams(ScopeParams):
    from_id: Id = Field(description="The memory the link starts from")
    to_id: Id = Field(description="The memory the link points to")
    relation: str | None = Field(
        default=None,
        max_length=MAX_RELATION_CHARS,
        description="Close only links of this type (omit for every link between the two)",
    )

    @field_validator("relation")
    @classmethod
    def _relation(cls, value: str | None) -> str | None:
        return _optional_text(value)


class EmbedParams(BaseModel):
    model_config = _STRICT_IN

    reembed: bool = Field(
        default=False,
        description=("Re-embed every memory (after a model change), not only those without a vector"),
    )


class NoParams(BaseModel):
    """A verb without arguments (``stats``)."""

    model_config = _STRICT_IN
