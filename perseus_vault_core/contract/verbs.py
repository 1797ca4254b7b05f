"""The registry of verbs: every operation an agent can ask of the vault, described once.

Each :class:`Verb` names its params model (:mod:`params`: fields, types, bounds, defaults and
meanings), says what it is for and what it returns, and how it behaves (read-only, destructive,
idempotent, scoped). The MCP server builds one tool per verb from this table (its input schema
from the params model), and the tool reference (docs/mcp-tools.md) is generated from those tools;
a test checks that every verb is a ``Vault`` method taking exactly its params model's fields.

Tool profiles: a model pays for every tool description in every session, so the server lists a
compact ``core`` set by default, every way to recall that the documentation describes and the writes
an agent needs (within 20,000 characters), and every verb with ``all`` (docs/mcp.md).

:data:`ADMIN_VERBS` are the operator's: moving data in and out of the file and looking after it.
The command line offers them (its flags and docs/cli.md come from their params models, as for
every verb); the MCP server does not, since they name paths on the server's disk or change the
whole file, and they are in no tool profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from . import models as m
from . import params as p


@dataclass(frozen=True)
class Verb:
    """One operation: its wire name, its params model, and what it promises."""

    name: str
    params: type[BaseModel]
    returns: Any  # the result type (a models class, or e.g. ``Entity | None``)
    summary: str  # one line, for lists and CLI help
    description: str  # for an agent: what it is for, when to prefer it or a neighbour, what it returns
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    scoped: bool = True  # False: it reaches past any scope, so a scope-bound server does not offer it
    core: bool = False  # listed in the default ``core`` tool profile
    aliases: tuple[str, ...] = ()  # other names it answers to (hidden)
    exclude: tuple[str, ...] = ()  # params fields this verb does not take


VERBS: tuple[Verb, ...] = (
    Verb(
        "recall",
        p.RecallParams,
        m.RecallResult,
        "find memories by keyword, meaning or both",
        "Find memories for a question or topic, best first; use it before answering from memory. Returns items "
        "and search_mode. outdated_by: a newer memory may update it.",
        core=True,
        idempotent=False,
    ),
    Verb(
        "prepare",
        p.PrepareParams,
        m.PrepareResult,
        "the markdown block to read before acting on a turn",
        "Call it first in each turn with the user's message: triggered, then relevant memories, as dated "
        "markdown. Returns the block.",
        core=True,
        aliases=("context",),
    ),
    Verb(
        "remember",
        p.RememberParams,
        m.Remembered,
        "create or update a memory by (category, key)",
        "Store a fact, decision or preference under (category, key); the same key again stores a new version. "
        "Returns what happened (stored as #N, or already held by #M: nothing written) and candidates it may "
        "repeat, update or contradict (relation, true-from date, text).",
        read_only=False,
        core=True,
    ),
    Verb(
        "get_entity",
        p.EntityParams,
        m.Entity,
        "one memory, whole, by id",
        "Read one memory whole by id. Returns the memory.",
        core=True,
    ),
    Verb(
        "forget",
        p.EntityParams,
        m.Entity,
        "archive a memory (reversible)",
        "Archive a wrong memory (reversible); supersede one a newer memory replaces. Returns the memory.",
        read_only=False,
        core=True,
    ),
    Verb(
        "scan",
        p.ScanParams,
        m.ScanPage,
        "every memory in scope, page by page",
        "Every memory once, by id, a page at a time (pass next_cursor back). Returns items, next_cursor.",
        core=True,
    ),
    Verb(
        "history",
        p.HistoryParams,
        m.HistoryPage,
        "every version of a fact, newest first",
        "Every version of a fact (category, key), newest first. Returns items, total.",
        core=True,
    ),
    Verb(
        "link",
        p.LinkParams,
        m.Link,
        "link two memories (typed, weighted, directed)",
        "Link two memories: typed, weighted, directed (depends_on, duplicates, ...); yours outrank inferred ones. "
        "Returns the link.",
        read_only=False,
        core=True,
    ),
    Verb(
        "traverse",
        p.TraverseParams,
        m.TraverseResult,
        "walk the link graph from a memory",
        "A memory's links, walked up to depth hops. Returns nodes (memory, depth, path), edges.",
        core=True,
    ),
    Verb(
        "memory_recall",
        p.MemoryRecallParams,
        m.MemoryRecallResult,
        "memory-file entries about a topic, oldest first",
        "Memory-file entries (the user's preferences, opinions) on a topic, oldest first. Returns entries.",
        core=True,
    ),
    Verb(
        "add_memory",
        p.AddMemoryParams,
        m.MemoryChange,
        "add a dated entry to a memory file",
        "Add a dated entry to a memory file's section (a preference or opinion of the user). Returns the entry.",
        read_only=False,
        idempotent=False,
        core=True,
    ),
    Verb(
        "remember_many",
        p.RememberManyParams,
        list[m.Entity],
        "store a batch of memories in one transaction",
        "Store several memories in one transaction: all are written, or none. Returns the memories.",
        read_only=False,
        idempotent=False,
    ),
    Verb(
        "purge",
        p.EntityParams,
        m.PurgeResult,
        "delete an archived memory for good",
        "Delete an archived memory, its history and its links for good (forget it first). Use it only when "
        "the data must be gone. Returns what was deleted.",
        read_only=False,
        destructive=True,
    ),
    Verb(
        "supersede",
        p.SupersedeParams,
        m.Entity,
        "mark a memory replaced by a newer one",
        "Mark a memory replaced by a newer one (as an update candidate); recall prefers the newer. Returns the old "
        "memory.",
        read_only=False,
        core=True,
    ),
    Verb(
        "unlink",
        p.UnlinkParams,
        int,
        "close the links from one memory to another",
        "Close the link(s) from one memory to another (one relation, or all); history keeps them. Returns "
        "how many were closed.",
        read_only=False,
        destructive=True,
    ),
    Verb(
        "as_of",
        p.AsOfParams,
        m.Entity | None,
        "the version of a fact believed at an instant",
        "A fact as the vault believed it at an instant. Returns it, or null.",
        core=True,
    ),
    Verb(
        "valid_at",
        p.ValidAtParams,
        m.Entity | None,
        "the version of a fact true at an instant",
        "A fact as it was true in the world at an instant. Returns it, or null.",
    ),
    Verb(
        "bitemporal",
        p.BitemporalParams,
        m.Entity | None,
        "the version believed at one instant to be true at another",
        "A fact as believed at as_of to be true at valid_at (what was known when). Returns it, or null.",
    ),
    Verb(
        "global_recall",
        p.GlobalRecallParams,
        m.GlobalRecallResult,
        "answer a broad question from the best communities",
        "Answer a broad question ('our main risks?') from the best communities' members. Returns communities, "
        "evidence, context.",
        read_only=False,
        idempotent=False,
        core=True,
    ),
    Verb(
        "communities",
        p.CommunitiesParams,
        m.CommunitiesResult,
        "clusters of the link graph (GraphRAG)",
        "The link graph's clusters (themes), largest first, with central members. Returns communities.",
        core=True,
    ),
    Verb(
        "community_summary",
        p.CommunitySummaryParams,
        m.CommunitySummary,
        "a community's extractive summary (written once)",
        "One community's summary, kept as a memory. Returns the summary.",
        read_only=False,
        core=True,
    ),
    Verb(
        "recall_when",
        p.RecallWhenParams,
        m.RecallWhenResult,
        "memories whose triggers match a context",
        "Memories whose recall_when triggers match a context (standing instructions, warnings). Returns items.",
        core=True,
    ),
    Verb(
        "hygiene",
        p.HygieneParams,
        m.HygieneReport,
        "low-signal memories and why (read-only)",
        "Vague, duplicate, expired, unused and conflicting memories, with reasons. Returns items, counts, "
        "conflicts.",
        core=True,
    ),
    Verb(
        "counts",
        p.CountsParams,
        m.Counts,
        "how many memories, by status, scope, type and category",
        "How many memories the store holds, by status, scope, type and category, largest first: its shape at a "
        "glance (recall's filters and time travel apply). Returns total and the breakdowns.",
    ),
    Verb(
        "recent",
        p.RecentParams,
        m.ScanPage,
        "the latest writes, newest first",
        "The latest writes, newest first: each version as written (its change: create, update, archive, restore, "
        "supersede). Use it for 'what changed lately'; pass next_cursor back for older ones. Returns items, "
        "next_cursor, has_more.",
    ),
    Verb(
        "search",
        p.RecallParams,
        m.RecallResult,
        "recall over an imported folder's notes",
        "Recall over the notes of an imported markdown folder (outside the memory files), with recall's "
        "modes. Returns recall's result.",
        exclude=("type",),
        idempotent=False,
    ),
    Verb(
        "get_memory",
        p.GetMemoryParams,
        m.MemoryText,
        "a memory file or one section, verbatim",
        "A memory file, or one of its sections, verbatim. Returns the text.",
    ),
    Verb(
        "list_memory_files",
        p.ListMemoryFilesParams,
        m.MemoryFiles,
        "the memory files and their sections",
        "The memory files with their entry counts and sections. Returns files.",
    ),
    Verb(
        "delete_memory",
        p.DeleteMemoryParams,
        m.MemoryChange,
        "delete one entry of a memory file",
        "Delete exactly one entry of a memory file, chosen by date and/or text (refused when none or several "
        "match; history keeps it). Returns the entry deleted.",
        read_only=False,
        destructive=True,
    ),
    Verb(
        "remember_conversation",
        p.RememberConversationParams,
        m.ConversationWrite,
        "store chat messages as the next turns of a session",
        "Store a chat session's messages as its next turns (a message id makes a resend harmless). Returns the "
        "turns.",
        read_only=False,
        idempotent=False,
        core=True,
    ),
    Verb(
        "conversation",
        p.ConversationParams,
        m.ConversationResult,
        "a session's turns in order, or around one turn",
        "A chat session's turns: around a turn (e.g. a recall hit), or a page from from_turn. Returns turns, "
        "next_turn.",
        core=True,
    ),
    Verb(
        "embed",
        p.EmbedParams,
        m.EmbedReport,
        "give every memory a vector (backfill or re-embed)",
        "Give every memory a vector with the configured model, or re-embed all after a model change. Use it "
        "when stats shows embedding coverage below 1. Returns counts.",
        read_only=False,
        scoped=False,
    ),
    Verb(
        "stats",
        p.NoParams,
        m.Stats,
        "counts, sizes, embedding coverage and model",
        "The vault's counts, sizes, versions, embedding coverage and model. Returns the figures.",
        scoped=False,
    ),
)

ADMIN_VERBS: tuple[Verb, ...] = (
    Verb(
        "import_jsonl",
        p.ImportParams,
        m.ImportReport,
        "import JSONL (an export, or remember-shaped lines)",
        "Import a JSONL file, an export or one memory a line, in one transaction: all of it, or nothing. "
        "Returns counts.",
        read_only=False,
        scoped=False,
    ),
    Verb(
        "export_jsonl",
        p.ExportParams,
        int,
        "export memories, history and links as JSONL",
        "Write every memory in scope with its history, and every link, as JSONL, losslessly. Returns the "
        "number of lines.",
    ),
    Verb(
        "memory_import",
        p.MemoryImportParams,
        m.MemoryImportReport,
        "import a folder (its memory files and notes)",
        "Import an Obsidian-style folder: its memory files entry by entry, and its other notes with their "
        "wikilinks. Importing again reconciles. Returns counts and the lines skipped.",
        read_only=False,
    ),
    Verb(
        "memory_export",
        p.MemoryExportParams,
        m.MemoryExportReport,
        "write every memory file to a folder",
        "Write every memory file in scope to a folder, byte for byte as stored. Returns the files written.",
    ),
    Verb(
        "check",
        p.NoParams,
        m.CheckReport,
        "integrity and index sync (exit 1 on problems)",
        "Check the file's integrity, the keyword indexes against their rows, and the vault's invariants. "
        "Returns ok and the problems.",
        scoped=False,
    ),
    Verb(
        "reindex",
        p.NoParams,
        m.ReindexReport,
        "rebuild the keyword indexes, judge unjudged relations, check",
        "Rebuild both keyword indexes from the rows, judge the relations of memories an earlier version wrote without "
        "judging them, then check. Returns the check and how many memories were judged.",
        read_only=False,
        scoped=False,
    ),
    Verb(
        "backup",
        p.BackupParams,
        str,
        "consistent copy of the vault (safe while writing)",
        "Copy the vault consistently while others keep writing. Returns the copy's path.",
        scoped=False,
    ),
    Verb(
        "rekey",
        p.RekeyParams,
        type(None),
        "re-encrypt an encrypted vault under a new key",
        "Re-encrypt an encrypted vault under a new key, losing nothing; afterwards only the new key opens it. "
        "Refused while another process has the vault open.",
        read_only=False,
        idempotent=False,
        scoped=False,
    ),
)

BY_NAME: dict[str, Verb] = {v.name: v for v in VERBS}
ALIASES: dict[str, str] = {alias: v.name for v in VERBS for alias in v.aliases}
PROFILES: dict[str, frozenset[str]] = {
    "core": frozenset(v.name for v in VERBS if v.core),
    "all": frozenset(BY_NAME),
}


def verb(name: str) -> Verb:
    """A verb by its name or one of its aliases (KeyError when there is none)."""
    return BY_NAME[ALIASES.get(name, name)]


def fields(v: Verb) -> list[str]:
    """The argument names ``v`` takes, in its params model's order."""
    return [name for name in v.params.model_fields if name not in v.exclude]
