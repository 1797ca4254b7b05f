"""Operations: moving data in and out of the file and looking after it.

These are the operator's verbs (``verbs.ADMIN_VERBS``): the command line offers them, an agent's
MCP server does not, since they name paths on the server's disk or change the whole file.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .base import _STRICT_IN, ScopeParams


class ImportParams(BaseModel):
    """``import_jsonl``: one JSONL file, imported in one transaction."""

    model_config = _STRICT_IN

    source: str = Field(
        description="The JSONL file: an export, or one memory a line shaped like remember's arguments"
    )


class ExportParams(ScopeParams):
    """``export_jsonl``: every memory in scope, with its history, and every link, as JSONL."""

    target: str = Field(description="The file to write (readable by its owner only)")


class BackupParams(BaseModel):
    """``backup``: a consistent copy of the vault, made while others keep writing."""

    model_config = _STRICT_IN

    target: str = Field(description="The copy's path (refused if a file is there)")


class RekeyParams(BaseModel):
    """``rekey``: the key an encrypted vault is re-encrypted under."""

    model_config = _STRICT_IN

    new_key: str = Field(min_length=1, description="The new key; afterwards only it opens the vault")
