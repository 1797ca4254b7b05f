"""Opening a vault: what ``Vault(...)`` takes besides the objects it is lent (clock, embedder,
fusion weights, cross-encoder)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from .base import _STRICT_IN

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")  # postgresql://..., sqlite://..., and the like

Synchronous = Literal["OFF", "NORMAL", "FULL", "EXTRA"]


class OpenParams(BaseModel):
    model_config = _STRICT_IN

    path: str = Field(
        description="The vault file (created, with its folder, when missing and create is true), or a "
        "postgresql://user@host:5432/db URL (docs/postgres.md)"
    )
    create: bool = Field(
        default=True,
        description="Create the vault when it does not exist; false: a missing "
        "vault is NotFound and nothing is written",
    )
    synchronous: Synchronous = Field(
        default="FULL", description="SQLite's durability for writes (FULL survives power loss)"
    )
    keyword_index: bool | Literal["saved"] = Field(
        default=True,
        description=(
            "Build the in-memory keyword index after the first recall; 'saved': use the one saved beside the vault "
            "when it is there, never build or save one (a one-shot process)"
        ),
    )
    vector_index: bool | Literal["saved"] = Field(
        default=True,
        description=(
            "Build the in-memory vector index after the first recall; 'saved': as for keyword_index"
        ),
    )
    threads: int | None = Field(default=None, ge=1, description="The embedding runtime's thread count")
    key: str | bytes | None = Field(
        default=None,
        repr=False,
        description=(
            "Encrypt the file at rest (a passphrase, or x'<64 hex digits>'); by default PERSEUS_VAULT_KEY or "
            "PERSEUS_VAULT_KEY_FILE"
        ),
    )

    @field_validator("path")
    @classmethod
    def _file_path(cls, value: str) -> str:
        if value == ":memory:" or value.startswith("file:"):
            # Each thread has its own connection, and each in-memory connection its own database.
            raise ValueError("must be a file path (for a throwaway vault use a temporary directory)")
        if _URL.match(value) and not value.startswith(("postgresql://", "postgres://")):
            # Taken as a path, a URL would quietly become folders and a SQLite file named after it.
            raise ValueError(
                f"is a URL ({value.split('://')[0]}://...); a vault is a SQLite file's path or a "
                "postgresql:// URL"
            )
        return value
