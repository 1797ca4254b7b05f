"""Perseus Vault: long-term memory for AI agents in one SQLite file.

The one object to use is :class:`Vault`; everything it returns is a typed value from
:mod:`perseus_vault_core.contract.models`, and everything it raises is a :class:`VaultError`. The other
names here (limits, params models, the verb registry, the embedder protocol) are what the adapters
in ``perseus_vault_integrations`` build on: they import nothing else from the core.

Importing the package loads none of them: each name's module is loaded the first time the name is asked
for (``__getattr__``), so that ``import perseus_vault_core`` costs milliseconds where pydantic, numpy and
the storage backends take half a second, and the command line, which first asks a resident helper
(:mod:`.resident`), loads only what it uses.
"""

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what each name is, for type checkers; at run time each loads on first use
    from .contract.errors import (
        Conflict,
        InvalidInput,
        NotFound,
        NotSupported,
        SetupError,
        StorageError,
        VaultError,
    )
    from .contract.models import (
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
        MigrateReport,
        PrepareResult,
        PurgeResult,
        RecallItem,
        RecallResult,
        RecallWhenResult,
        ReindexReport,
        Remembered,
        RoleBinding,
        ScanPage,
        ScopeCount,
        SimilarMemory,
        Stats,
        TraverseNode,
        TraverseResult,
        TriggeredItem,
        TurnWritten,
    )
    from .contract.params import (
        ADVANCED,
        MAX_BATCH,
        MAX_INT,
        MAX_KEY_CHARS,
        MAX_LIMIT,
        MAX_OFFSET,
        MAX_QUERY_CHARS,
        MAX_TOPIC_PATH_CHARS,
        Expansion,
        Fusion,
        RecallParams,
        is_advanced,
        validate,
    )
    from .contract.readable import date, iso_time, no_version, readable, true_from, truth
    from .contract.text import escape_breaks
    from .contract.verbs import ALIASES, BY_NAME, PROFILES, VERBS, Verb
    from .embeddings import Embedder, LazyEmbedder
    from .facade.migrate import migrate
    from .facade.plugins import INSTALL_HINTS, Plugin
    from .facade.roles import bind_role
    from .facade.vault import Vault
    from .features.conversations import transcript
    from .primitives.cancel import Cancelled, cancellable
    from .primitives.keys import read_secret_file
    from .state.checkpoints import ChannelBlob, Checkpoints, StoredCheckpoint, TaskWrite
    from .state.keyvalue import KeyValues

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
    "ReindexReport",
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
    "date",
    "iso_time",
    "no_version",
    "true_from",
    "truth",
    "is_advanced",
    "migrate",
    "read_secret_file",
    "transcript",
    "validate",
]

# The module each public name comes from, loaded on first use.
_WHERE = {
    "Cancelled": "primitives.cancel",
    "cancellable": "primitives.cancel",
    "transcript": "features.conversations",
    "Embedder": "embeddings",
    "LazyEmbedder": "embeddings",
    "Conflict": "contract.errors",
    "InvalidInput": "contract.errors",
    "NotFound": "contract.errors",
    "NotSupported": "contract.errors",
    "SetupError": "contract.errors",
    "StorageError": "contract.errors",
    "VaultError": "contract.errors",
    "Fusion": "contract.params",
    "CheckReport": "contract.models",
    "ReindexReport": "contract.models",
    "CommunitiesResult": "contract.models",
    "Community": "contract.models",
    "CommunityMember": "contract.models",
    "CommunitySummary": "contract.models",
    "ConversationResult": "contract.models",
    "ConversationTurn": "contract.models",
    "ConversationWrite": "contract.models",
    "Counts": "contract.models",
    "Entity": "contract.models",
    "EvidenceItem": "contract.models",
    "GlobalCommunity": "contract.models",
    "GlobalRecallResult": "contract.models",
    "HistoryPage": "contract.models",
    "HygieneItem": "contract.models",
    "HygieneReport": "contract.models",
    "ImportReport": "contract.models",
    "Link": "contract.models",
    "MemoryRecallResult": "contract.models",
    "PrepareResult": "contract.models",
    "PurgeResult": "contract.models",
    "RecallItem": "contract.models",
    "RecallResult": "contract.models",
    "RecallWhenResult": "contract.models",
    "Remembered": "contract.models",
    "ScanPage": "contract.models",
    "ScopeCount": "contract.models",
    "SimilarMemory": "contract.models",
    "Stats": "contract.models",
    "TraverseNode": "contract.models",
    "TraverseResult": "contract.models",
    "TriggeredItem": "contract.models",
    "TurnWritten": "contract.models",
    "MigrateReport": "contract.models",
    "RoleBinding": "contract.models",
    "ADVANCED": "contract.params",
    "MAX_BATCH": "contract.params",
    "MAX_INT": "contract.params",
    "MAX_KEY_CHARS": "contract.params",
    "MAX_LIMIT": "contract.params",
    "MAX_OFFSET": "contract.params",
    "MAX_QUERY_CHARS": "contract.params",
    "MAX_TOPIC_PATH_CHARS": "contract.params",
    "Expansion": "contract.params",
    "RecallParams": "contract.params",
    "is_advanced": "contract.params",
    "validate": "contract.params",
    "INSTALL_HINTS": "facade.plugins",
    "Plugin": "facade.plugins",
    "read_secret_file": "primitives.keys",
    "Vault": "facade.vault",
    "ChannelBlob": "state.checkpoints",
    "Checkpoints": "state.checkpoints",
    "StoredCheckpoint": "state.checkpoints",
    "TaskWrite": "state.checkpoints",
    "KeyValues": "state.keyvalue",
    "migrate": "facade.migrate",
    "bind_role": "facade.roles",
    "ALIASES": "contract.verbs",
    "BY_NAME": "contract.verbs",
    "PROFILES": "contract.verbs",
    "VERBS": "contract.verbs",
    "Verb": "contract.verbs",
    "escape_breaks": "contract.text",
    "readable": "contract.readable",
    "date": "contract.readable",
    "iso_time": "contract.readable",
    "no_version": "contract.readable",
    "true_from": "contract.readable",
    "truth": "contract.readable",
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
