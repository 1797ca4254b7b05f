"""Perseus Vault: long-term memory for AI agents in one SQLite file.

The one object to use is :class:`Vault`; everything it returns is a typed value from
:mod:`perseus_vault_core.models`, and everything it raises is a :class:`VaultError`.
"""

from .errors import Conflict, InvalidInput, NotFound, NotSupported, SetupError, StorageError, VaultError
from .models import (
    CheckReport,
    CommunitiesResult,
    Community,
    CommunityMember,
    CommunitySummary,
    ConversationResult,
    ConversationTurn,
    ConversationWrite,
    Entity,
    EvidenceItem,
    GlobalCommunity,
    GlobalRecallResult,
    HistoryPage,
    HygieneItem,
    HygieneReport,
    ImportReport,
    Link,
    PrepareResult,
    PurgeResult,
    RecallItem,
    RecallResult,
    RecallWhenResult,
    ScanPage,
    Stats,
    TraverseNode,
    TraverseResult,
    TriggeredItem,
    TurnWritten,
)
from .vault import Vault

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "CommunitiesResult",
    "Community",
    "CommunityMember",
    "CommunitySummary",
    "Conflict",
    "ConversationResult",
    "ConversationTurn",
    "ConversationWrite",
    "Entity",
    "EvidenceItem",
    "GlobalCommunity",
    "GlobalRecallResult",
    "HistoryPage",
    "HygieneItem",
    "HygieneReport",
    "ImportReport",
    "InvalidInput",
    "Link",
    "NotFound",
    "NotSupported",
    "PrepareResult",
    "PurgeResult",
    "RecallItem",
    "RecallResult",
    "RecallWhenResult",
    "ScanPage",
    "SetupError",
    "Stats",
    "StorageError",
    "TraverseNode",
    "TraverseResult",
    "TriggeredItem",
    "TurnWritten",
    "Vault",
    "VaultError",
]
