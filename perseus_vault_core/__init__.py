"""Perseus Vault: long-term memory for AI agents in one SQLite file.

The one object to use is :class:`Vault`; everything it returns is a typed value from
:mod:`perseus_vault_core.models`, and everything it raises is a :class:`VaultError`.
"""

from .errors import Conflict, InvalidInput, NotFound, NotSupported, SetupError, StorageError, VaultError
from .models import (
    CheckReport,
    Entity,
    HistoryPage,
    ImportReport,
    Link,
    PurgeResult,
    RecallItem,
    RecallResult,
    ScanPage,
    Stats,
    TraverseNode,
    TraverseResult,
)
from .vault import Vault

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "Conflict",
    "Entity",
    "HistoryPage",
    "ImportReport",
    "InvalidInput",
    "Link",
    "NotFound",
    "NotSupported",
    "PurgeResult",
    "RecallItem",
    "RecallResult",
    "ScanPage",
    "SetupError",
    "Stats",
    "StorageError",
    "TraverseNode",
    "TraverseResult",
    "Vault",
    "VaultError",
]
