"""What the framework-state modules (``checkpoints``, ``keyvalue``) share: a view of one scope of a vault,
the checks of their plain arguments (text, JSON objects), each refused by name."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..contract.errors import InvalidInput
from ..contract.text import problem
from ..facade.vault import Vault
from ..primitives.scopes import scope_key


def text(name: str, value: Any) -> str:
    """``value``, if it is text both databases store alike (:mod:`..contract.text`: no NUL, valid Unicode)."""
    if not isinstance(value, str):
        raise InvalidInput(name, f"must be a string, not {type(value).__name__}")
    why = problem(value)
    if why is not None:
        raise InvalidInput(name, why)
    return value


def optional_text(name: str, value: Any) -> str | None:
    return None if value is None else text(name, value)


def json_object(name: str, value: Any) -> str:
    """``value`` (a dict) as compact JSON text (a NUL in it is written as its escape, which both databases
    store; an unpaired surrogate is refused, since neither driver can send it)."""
    if not isinstance(value, Mapping):
        raise InvalidInput(name, f"must be a dict, not {type(value).__name__}")
    try:
        dumped = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(name, f"must be JSON (strings, numbers, booleans, lists, dicts): {exc}") from None
    return text(name, dumped)


class Scoped:
    """Reads and writes one scope of ``vault``: ``scope`` holds its ``agent_id`` (``a``) and ``workspace_hash``
    (``w``) as SQL parameters, ``''`` for the unscoped vault, and their scope key (``s``, :mod:`..primitives.scopes`)."""

    def __init__(
        self, vault: Vault, *, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> None:
        if not isinstance(vault, Vault):
            raise InvalidInput("vault", f"must be a Vault, not {type(vault).__name__}")
        self._engine = vault.engine  # the edge leases this engine's connection around each call
        self.scope = {
            "a": text("agent_id", agent_id or ""),
            "w": text("workspace_hash", workspace_hash or ""),
        }
        self.scope["s"] = scope_key(self.scope["a"], self.scope["w"])
