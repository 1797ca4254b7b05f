"""What the framework-state modules (``checkpoints``, ``keyvalue``) share: a view of one scope of a vault,
and the checks of their plain arguments (text, JSON objects), each refused by name."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .errors import InvalidInput
from .vault import Vault


def text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidInput(name, f"must be a string, not {type(value).__name__}")
    return value


def json_object(name: str, value: Any) -> str:
    """``value`` (a dict) as compact JSON text."""
    if not isinstance(value, Mapping):
        raise InvalidInput(name, f"must be a dict, not {type(value).__name__}")
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(name, f"must be JSON (strings, numbers, booleans, lists, dicts): {exc}") from None


class Scoped:
    """Reads and writes one scope of ``vault``: ``scope`` holds its ``agent_id`` (``a``) and ``workspace_hash``
    (``w``) as SQL parameters, ``''`` for the unscoped vault."""

    def __init__(self, vault: Vault, *, agent_id: str | None = None, workspace_hash: str | None = None) -> None:
        if not isinstance(vault, Vault):
            raise InvalidInput("vault", f"must be a Vault, not {type(vault).__name__}")
        self._engine = vault._engine  # the edge leases this engine's connection around each call
        self.scope = {"a": text("agent_id", agent_id or ""), "w": text("workspace_hash", workspace_hash or "")}
