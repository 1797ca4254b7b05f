"""Perseus Vault: long-term memory for AI agents in one SQLite file.

The one object to use is :class:`Vault`; everything it returns is a typed value from
:mod:`perseus_vault_core.models`, and everything it raises is a :class:`VaultError`. The other
names here (limits, params models, the verb registry, the embedder protocol) are what the adapters
in ``perseus_vault_integrations`` build on: they import nothing else from the core.
"""

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
    ScanPage,
    ScopeCount,
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
    "ScanPage",
    "ScopeCount",
    "SetupError",
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
