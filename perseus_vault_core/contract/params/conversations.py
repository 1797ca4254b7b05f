"""Conversations: messages remembered as turns, and a session read back."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from ..errors import InvalidInput
from .base import (
    _STRICT_IN,
    _TIME_HELP,
    MAX_BATCH,
    MAX_INT,
    MAX_LIMIT,
    MAX_MESSAGE_CHARS,
    MAX_MESSAGE_ID_CHARS,
    MAX_SCOPE_CHARS,
    MAX_SESSION_CHARS,
    MAX_SPEAKER_CHARS,
    MAX_TYPE_CHARS,
    Id,
    ScopeParams,
    UnixMs,
    check_line,
    check_text,
)

# --- conversations -----------------------------------------------------------------------------


def _one_line_name(value: str) -> str:
    """A name shown at the head of a line (a speaker, a role, a message id): not blank, one line."""
    if not value.strip():
        raise ValueError("must not be blank")
    if any(ord(c) < 0x20 or c == "\x7f" for c in value):  # a line break would forge turns in a transcript
        raise ValueError("must not contain control characters (line breaks, tabs, ...)")
    return check_line(value)  # nor NEL, U+2028 or U+2029, which end a line too


def _optional_name(value: str | None) -> str | None:
    return None if value is None else _one_line_name(value)


OptionalName = Annotated[str | None, AfterValidator(_optional_name)]


def _session_name(value: str) -> str:
    _one_line_name(value)
    if "#" in value:  # a turn's key is "<session>#<turn>": the first '#' must end the session's name
        raise ValueError("must not contain '#'")
    if value != value.strip():
        raise ValueError("must not begin or end with a space")
    return value


def _message_text(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return check_text(value)


SessionName = Annotated[str, Field(min_length=1, max_length=MAX_SESSION_CHARS), AfterValidator(_session_name)]
_SESSION = "The chat's name or thread id (no '#')"


class MessageInput(BaseModel):
    """One message of a conversation, as a chat agent has it."""

    model_config = _STRICT_IN

    speaker: OptionalName = Field(
        default=None,
        max_length=MAX_SPEAKER_CHARS,
        description="Who said it, e.g. 'Caroline' (default: the role)",
    )
    text: Annotated[str, AfterValidator(_message_text)] = Field(
        max_length=MAX_MESSAGE_CHARS, description="What was said"
    )
    time: UnixMs | None = Field(default=None, description="When it was said (" + _TIME_HELP + ")")
    role: OptionalName = Field(
        default=None, max_length=MAX_TYPE_CHARS, description="e.g. user, assistant, system"
    )
    id: OptionalName = Field(
        default=None,
        max_length=MAX_MESSAGE_ID_CHARS,
        description=("Its own id: sent again, it changes nothing (or updates the turn's text)"),
    )

    @model_validator(mode="after")
    def _someone(self) -> MessageInput:
        if self.speaker is None and self.role is None:  # InvalidInput names its field (see invalid())
            raise InvalidInput("speaker", "give the speaker, the role, or both")
        return self

    @property
    def who(self) -> str:
        return self.speaker if self.speaker is not None else str(self.role)


class RememberConversationParams(ScopeParams):
    """``remember_conversation``: messages appended to a session as turns, in one transaction."""

    session: SessionName = Field(description=_SESSION)
    agent_id: str | None = Field(
        default=None, max_length=MAX_SCOPE_CHARS, description="The agent the turns belong to"
    )
    workspace_hash: str | None = Field(
        default=None, max_length=MAX_SCOPE_CHARS, description="The workspace the turns belong to"
    )
    messages: list[MessageInput] = Field(
        max_length=MAX_BATCH, description=("In the order said, each {speaker or role, text, time?, id?}")
    )

    @field_validator("messages")
    @classmethod
    def _distinct_ids(cls, value: list[MessageInput]) -> list[MessageInput]:
        seen: dict[str, int] = {}
        for n, message in enumerate(value):
            if message.id is not None:
                if message.id in seen:  # one message twice in a call is a caller's slip, not an edit
                    raise InvalidInput(f"{n}.id", f"repeats the id of message {seen[message.id]}")
                seen[message.id] = n
        return value


class ConversationParams(ScopeParams):
    """``conversation``: a session's turns in order, a page at a time or around one turn."""

    session: SessionName = Field(description=_SESSION)
    around: Id | None = Field(
        default=None,
        description=("A turn's memory id (e.g. a recall hit): it, with the turns before and after"),
    )
    before: int = Field(default=3, ge=0, le=100, description="With around: how many turns before it")
    after: int = Field(default=3, ge=0, le=100, description="With around: how many turns after it")
    from_turn: int = Field(
        default=1,
        ge=1,
        le=MAX_INT,
        description=("Without around: the first turn (next_turn of the last page)"),
    )
    limit: int = Field(default=100, ge=1, le=MAX_LIMIT, description="Without around: most turns per page")

    @model_validator(mode="after")
    def _one_way(self) -> ConversationParams:
        # An argument that would be ignored is refused, so that a caller never misreads the answer.
        given = self.model_fields_set
        for name in ("before", "after") if self.around is None else ("from_turn", "limit"):
            if name in given:
                raise InvalidInput(
                    name,
                    "applies only with around"
                    if self.around is None
                    else "does not apply with around (use before and after)",
                )
        return self
