"""Perseus Vault: long-term memory for AI agents in one SQLite file.

The one object to use is :class:`Vault`; everything it returns is a typed value from
:mod:`perseus_vault_core.models`, and everything it raises is a :class:`VaultError`. The other
names here (limits, params models, the verb registry, the embedder protocol) are what the adapters
in ``perseus_vault_integrations`` build on: they import nothing else from the core.

Importing the package loads none of them: each name's module is loaded the first time the name is asked
for (``__getattr__``), so that ``import perseus_vault_core`` costs milliseconds where pydantic, numpy and
the storage backends take half a second, and the command line, which first asks a resident helper
(:mod:`.resident`), loads only what it uses.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what each name is, for type checkers; at run time each loads on first use
    from .cancel import Cancelled, cancellable
    from .conversations import transcript
    from .embeddings import Embedder, LazyEmbedder
    from .errors import Conflict, InvalidInput, NotFound, NotSupported, SetupError, StorageError, VaultError
    from .fusion import Fusion
    from .models import (
        CheckReport,
        CommunitiesResult,
        Community,
        CommunityMember,
        CommunitySummary,
        ConversationResult,
        ConversationTurn,
        ConversationWrite,
        Counts,
        Entity,
        EvidenceItem,
        GlobalCommunity,
        GlobalRecallResult,
        HistoryPage,
        HygieneItem,
        HygieneReport,
        ImportReport,
        Link,
        MemoryRecallResult,
        PrepareResult,
        PurgeResult,
        RecallItem,
        RecallResult,
        RecallWhenResult,
        Remembered,
        ScanPage,
        ScopeCount,
        SimilarMemory,
        Stats,
        TraverseNode,
        TraverseResult,
        TriggeredItem,
        TurnWritten,
        MigrateReport,
        RoleBinding,
    )
    from .params import (
        ADVANCED,
        MAX_BATCH,
        MAX_INT,
        MAX_KEY_CHARS,
        MAX_LIMIT,
        MAX_OFFSET,
        MAX_QUERY_CHARS,
        MAX_TOPIC_PATH_CHARS,
        Expansion,
        RecallParams,
        is_advanced,
        validate,
    )
    from .plugins import INSTALL_HINTS, Plugin
    from .keys import read_secret_file
    from .vault import Vault
    from .checkpoints import ChannelBlob, Checkpoints, StoredCheckpoint, TaskWrite
    from .keyvalue import KeyValues
    from .migrate import migrate
    from .roles import bind_role
    from .verbs import ALIASES, BY_NAME, PROFILES, VERBS, Verb
    from .text import escape_breaks
    from .readable import readable

__version__ = "0.1.0"

# The adapters may import exactly these names (tests/test_architecture.py holds them to it).
__all__ = [
    "INSTALL_HINTS",
    "Plugin",
    "ADVANCED",
    "ALIASES",
    "BY_NAME",
    "MAX_BATCH",
    "MAX_INT",
    "MAX_KEY_CHARS",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "MAX_QUERY_CHARS",
    "MAX_TOPIC_PATH_CHARS",
    "PROFILES",
    "VERBS",
    "Cancelled",
    "ChannelBlob",
    "Checkpoints",
    "CheckReport",
    "CommunitiesResult",
    "Community",
    "CommunityMember",
    "CommunitySummary",
    "Conflict",
    "ConversationResult",
    "ConversationTurn",
    "ConversationWrite",
    "Counts",
    "Embedder",
    "Entity",
    "EvidenceItem",
    "Expansion",
    "Fusion",
    "GlobalCommunity",
    "GlobalRecallResult",
    "HistoryPage",
    "HygieneItem",
    "HygieneReport",
    "ImportReport",
    "InvalidInput",
    "KeyValues",
    "LazyEmbedder",
    "Link",
    "MemoryRecallResult",
    "MigrateReport",
    "RoleBinding",
    "NotFound",
    "NotSupported",
    "PrepareResult",
    "PurgeResult",
    "RecallItem",
    "RecallParams",
    "RecallResult",
    "RecallWhenResult",
    "Remembered",
    "ScanPage",
    "ScopeCount",
    "SetupError",
    "SimilarMemory",
    "Stats",
    "StorageError",
    "StoredCheckpoint",
    "TaskWrite",
    "TraverseNode",
    "TraverseResult",
    "TriggeredItem",
    "TurnWritten",
    "Vault",
    "VaultError",
    "Verb",
    "__version__",
    "bind_role",
    "cancellable",
    "escape_breaks",
    "readable",
    "is_advanced",
    "migrate",
    "read_secret_file",
    "transcript",
    "validate",
]

# The module each public name comes from, loaded on first use.
_WHERE = {
    "Cancelled": "cancel",
    "cancellable": "cancel",
    "transcript": "conversations",
    "Embedder": "embeddings",
    "LazyEmbedder": "embeddings",
    "Conflict": "errors",
    "InvalidInput": "errors",
    "NotFound": "errors",
    "NotSupported": "errors",
    "SetupError": "errors",
    "StorageError": "errors",
    "VaultError": "errors",
    "Fusion": "fusion",
    "CheckReport": "models",
    "CommunitiesResult": "models",
    "Community": "models",
    "CommunityMember": "models",
    "CommunitySummary": "models",
    "ConversationResult": "models",
    "ConversationTurn": "models",
    "ConversationWrite": "models",
    "Counts": "models",
    "Entity": "models",
    "EvidenceItem": "models",
    "GlobalCommunity": "models",
    "GlobalRecallResult": "models",
    "HistoryPage": "models",
    "HygieneItem": "models",
    "HygieneReport": "models",
    "ImportReport": "models",
    "Link": "models",
    "MemoryRecallResult": "models",
    "PrepareResult": "models",
    "PurgeResult": "models",
    "RecallItem": "models",
    "RecallResult": "models",
    "RecallWhenResult": "models",
    "Remembered": "models",
    "ScanPage": "models",
    "ScopeCount": "models",
    "SimilarMemory": "models",
    "Stats": "models",
    "TraverseNode": "models",
    "TraverseResult": "models",
    "TriggeredItem": "models",
    "TurnWritten": "models",
    "MigrateReport": "models",
    "RoleBinding": "models",
    "ADVANCED": "params",
    "MAX_BATCH": "params",
    "MAX_INT": "params",
    "MAX_KEY_CHARS": "params",
    "MAX_LIMIT": "params",
    "MAX_OFFSET": "params",
    "MAX_QUERY_CHARS": "params",
    "MAX_TOPIC_PATH_CHARS": "params",
    "Expansion": "params",
    "RecallParams": "params",
    "is_advanced": "params",
    "validate": "params",
    "INSTALL_HINTS": "plugins",
    "Plugin": "plugins",
    "read_secret_file": "keys",
    "Vault": "vault",
    "ChannelBlob": "checkpoints",
    "Checkpoints": "checkpoints",
    "StoredCheckpoint": "checkpoints",
    "TaskWrite": "checkpoints",
    "KeyValues": "keyvalue",
    "migrate": "migrate",
    "bind_role": "roles",
    "ALIASES": "verbs",
    "BY_NAME": "verbs",
    "PROFILES": "verbs",
    "VERBS": "verbs",
    "Verb": "verbs",
    "escape_breaks": "text",
    "readable": "readable",
}


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    setattr(sys.modules[__name__], name, value)  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package's own module type: importing a submodule named like a public name (``migrate``, the
    module of the function ``migrate``) must not put the module where the name was, as loading the name
    first used to ensure."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _WHERE and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
