"""The vault's one error tree.

Every failure the engine reports is a ``VaultError``; the CLI turns it into one line
and an exit code, the MCP server into a tool error. Nothing else leaks out: SQLite
and pydantic errors are mapped to these at the API's edge (facade/edge.py).

    VaultError
    ├── InvalidInput     a caller's argument is wrong (names the field); nothing was written
    ├── NotFound         the entity, fact or link asked for does not exist in that scope
    ├── Conflict         the request is well formed but the store's state forbids it
    ├── NotSupported     a mode or feature this build does not provide
    ├── StorageError     the database failed beneath us (still busy after retries, corrupt, full)
    └── SetupError       this environment cannot run the vault (and the message says how to fix it)
"""

from __future__ import annotations


class VaultError(Exception):
    """Root of every error the vault raises on purpose."""


class InvalidInput(VaultError, ValueError):
    """An argument is missing, unknown, of the wrong type or out of bounds.

    Exists so that callers (and agents reading a tool error) learn *which* field to fix;
    the store is unchanged when it is raised.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


class NotFound(VaultError, LookupError):
    """The addressed entity, fact or link does not exist (in the caller's scope)."""


class Conflict(VaultError):
    """The call is valid, but the current state forbids it (e.g. purging an active entity)."""


class NotSupported(VaultError, NotImplementedError):
    """A mode or feature that this build does not provide; never silently replaced by another."""


class StorageError(VaultError):
    """SQLite reported a failure we could not recover from (busy past the retry budget, I/O, corruption)."""


class SetupError(VaultError, RuntimeError):
    """The environment cannot run the vault, e.g. no SQLite build that can load extensions."""


__all__ = ["Conflict", "InvalidInput", "NotFound", "NotSupported", "SetupError", "StorageError", "VaultError"]
