"""``Vault``: the one object a user meets. Every verb is a method here.

Each verb validates its arguments into its params model (contract/params/) and hands the model to
:meth:`Vault.call`, which gives it, with the :class:`~..engine.engine.Engine`, to the one function of a layer
below that does the verb's work (facade/dispatch.py names each: a feature's, or the engine's ``recall``); that
function owns the transaction, the clock and any SQL. The MCP server, the CLI and the resident helper, which
validate what they are given themselves, call ``Vault.call`` directly: a call is validated once. It is safe
to share between threads: each thread gets its own connection.
"""

from __future__ import annotations

import datetime as dt
import os
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any, Literal, Unpack

import numpy as np
from pydantic import BaseModel

from ..contract.errors import InvalidInput
from ..contract.memory_names import NOTE_TYPE
from ..contract.models import (  # noqa: I001
    CheckReport,
    CommunitiesResult,
    CommunitySummary,
    ConversationResult,
    ConversationWrite,
    Counts,
    EmbedReport,
    Entity,
    GlobalRecallResult,
    HistoryPage,
    HygieneReport,
    ImportReport,
    Link,
    MemoryChange,
    MemoryExportReport,
    MemoryFiles,
    MemoryImportReport,
    MemoryRecallResult,
    MemoryText,
    PrepareResult,
    PurgeResult,
    RecallResult,
    RecallWhenResult,
    ReindexReport,
    Remembered,
    ScanPage,
    Stats,
    TraverseResult,
)
from ..contract.params import (  # noqa: I001
    AddMemoryParams,
    AsOfParams,
    BackupParams,
    BitemporalParams,
    CommunitiesParams,
    CommunitySummaryParams,
    ConversationParams,
    CountsParams,
    DeleteMemoryParams,
    Direction,
    EmbedParams,
    EntityParams,
    ExportParams,
    Fusion,
    GetMemoryParams,
    GlobalRecallParams,
    HistoryParams,
    HygieneParams,
    ImportParams,
    LinkParams,
    ListMemoryFilesParams,
    MemoryExportParams,
    MemoryImportParams,
    MemoryRecallParams,
    MessageInput,
    NoParams,
    OpenParams,
    PrepareParams,
    RecallParams,
    RecallWhenParams,
    RecentParams,
    RekeyParams,
    RememberConversationParams,
    RememberInput,
    RememberManyParams,
    RememberParams,
    ScanParams,
    ScopeParams,
    SupersedeParams,
    Synchronous,
    TraverseParams,
    UnlinkParams,
    ValidAtParams,
    validate,
)
from ..contract.params.options import (  # noqa: I001
    CommunitiesOptions,
    CommunitySummaryOptions,
    CountsOptions,
    GlobalRecallOptions,
    HygieneOptions,
    PrepareOptions,
    RecallByVectorOptions,
    RecallOptions,
    RecallWhenOptions,
    RememberOptions,
    ScanOptions,
    SearchOptions,
    TraverseOptions,
)
from ..embeddings import Embedder
from ..engine.engine import Clock, Engine
from ..primitives.keys import check_key
from . import dispatch
from .edge import edge, given, listed, path_text

DEFAULT_PATH = "perseus_vault.db"
Instant = int | str | dt.datetime  # unix ms, ISO 8601 text, or a datetime (see params.UnixMs)


def default_path() -> str:
    return os.environ.get("PERSEUS_VAULT_DB") or DEFAULT_PATH


class Vault:
    """Long-term memory in one SQLite file.

    >>> with Vault("memory.db") as vault:                       # doctest: +SKIP
    ...     vault.remember(category="decision", key="db", content="We chose SQLite.")
    ...     vault.recall("which database").items
    """

    @edge
    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        synchronous: Synchronous = "FULL",
        keyword_index: bool | Literal["saved"] = True,
        vector_index: bool | Literal["saved"] = True,
        embedder: Embedder | Literal[False] | None = None,
        threads: int | None = None,
        fusion: Fusion | dict[str, Any] | None = None,
        cross_encoder: Any = None,
        judge: Any = None,
        key: str | bytes | None = None,
        create: bool = True,
    ) -> None:
        """Open the vault at ``path``, creating it (and its folder) if needed; with ``create=False`` a
        missing vault is :class:`NotFound` and nothing is created (what a read-only caller wants).

        ``embedder``: what embeds memories on write and queries for dense/hybrid recall. By default
        the bundled all-MiniLM-L6-v2 (or what ``PERSEUS_VAULT_EMBEDDER`` names), loaded on first use;
        ``False`` for a keyword-only vault; or any object with ``identity``, ``dimension`` and
        ``embed(texts)``. ``threads``: the embedding runtime's thread count.
        ``keyword_index`` / ``vector_index``: after the first recall, build the in-memory indexes in
        the background (same results, much faster on large stores); SQL answers until they are ready.
        ``"saved"``: open the indexes saved beside the vault when current, never build or save one (a
        one-shot process, such as the CLI; ``wait_for_*_index()`` then says whether a saved one was opened).
        ``fusion``: hybrid recall's default weights (see :class:`Fusion`).
        ``judge``: ``judge(memory, candidates) -> {id: "duplicate" | "update" | "distinct" | "related"}`` decides
        on each new memory's candidates (updates supersede, duplicates collapse in recall; docs/curation.md). By
        default none: the agent decides, from what remember returns.
        ``cross_encoder``: an object with ``predict(pairs) -> scores`` that memory_recall uses to cut
        weak matches (by default the operator's ``PERSEUS_VAULT_CROSS_ENCODER`` model, if set).
        ``synchronous``: SQLite's durability setting for writes (``FULL`` survives power loss).
        ``key``: encrypt the file at rest with SQLCipher (a passphrase, or ``x'<64 hex digits>'``);
        by default ``PERSEUS_VAULT_KEY`` or ``PERSEUS_VAULT_KEY_FILE``, else a plaintext vault.
        """
        options = validate(
            OpenParams,
            {
                "path": str(path) if path is not None else default_path(),
                "create": create,
                "synchronous": synchronous,
                "keyword_index": keyword_index,
                "vector_index": vector_index,
                **given(threads=threads, key=key),
            },
        )
        self.path = options.path
        weights = validate(Fusion, fusion, prefix="fusion") if fusion is not None else None
        self._engine = Engine.open(
            options, clock=clock, embedder=embedder, fusion=weights, cross_encoder=cross_encoder, judge=judge
        )
        # Closed once: by close(), or dropped unclosed, or at exit (a script's file is then complete too).
        self._closing = weakref.finalize(self, self._engine.close)

    # --- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closing()

    @property
    def encrypted(self) -> bool:
        """Whether the file is encrypted at rest (opened with a key)."""
        return self._engine.backend.encrypted

    @property
    def embedder(self) -> Embedder | None:
        """The model this vault embeds with (``None`` when keyword-only). Adapters that embed on
        their side (a query vector for ``recall_by_vector``, candidates for MMR) use this one, so
        their vectors and the stored ones come from the same model."""
        return self._engine.embedder

    @property
    def engine(self) -> Engine:
        """The open vault's :class:`~..engine.engine.Engine` (backend, clock, embedder, indexes): what the
        modules beside the facade (state/, migrate.py), the resident helper, benchmarks and tests reach the
        storage through, instead of a private attribute. Not needed to use the vault (docs/architecture.md)."""
        return self._engine

    @edge
    def call(self, verb: str, params: BaseModel, **extras: Any) -> Any:
        """Run ``verb`` (a name of contract/verbs.py, or ``memory_unbind``) on its params model, already
        validated: the one way down, which every verb method takes after validating its arguments, and which
        the MCP server, the CLI and the resident helper take with the model they validated. ``extras``: what
        only Python callers give: ``polish`` (``community_summary``), ``progress`` (``embed``,
        ``import_jsonl``, ``reindex``), ``lines`` / ``stream`` (an open file for ``import_jsonl`` /
        ``export_jsonl``), ``vector`` (``recall``), each checked there. The model is trusted as validated: one
        built without validation (pydantic's ``model_construct``) is its builder's to answer for."""
        return dispatch.run(self._engine, verb, params, extras)

    # --- writing -----------------------------------------------------------------------------
    @edge
    def remember(
        self,
        category: str | None = None,
        key: str | None = None,
        content: str | None = None,
        **fields: Unpack[RememberOptions],
    ) -> Remembered:
        """Create or update the memory (category, key) in its scope; identical content is a no-op, and so
        is a new key whose text the scope holds (``repeated``). On an update, fields not passed keep their
        values. ``similar``: the memories it likely repeats or updates (docs/curation.md)."""
        required = {"category": category, "key": key, "content": content}
        # Missing required arguments are reported by the model (naming the field), not by Python.
        p = validate(RememberParams, {**{k: v for k, v in required.items() if v is not None}, **fields})
        return self.call("remember", p)

    @edge
    def remember_many(
        self, items: Iterable[dict[str, Any] | RememberInput], *, similar: bool = False
    ) -> list[Entity]:
        """Remember a batch in one transaction: all are written, or (on any error) none. Each memory's relations to
        the ones it may repeat or update are kept; ``similar``: each comes back with them (as ``remember``'s)."""
        p = validate(RememberManyParams, {"items": listed("items", items, "memories"), "similar": similar})
        return self.call("remember_many", p)

    @edge
    def get_entity(
        self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> Entity:
        """One entity, whole (current version). Scope arguments, when given, must match it."""
        return self.call(
            "get_entity",
            validate(EntityParams, given(id=id, agent_id=agent_id, workspace_hash=workspace_hash)),
        )

    @edge
    def forget(self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None) -> Entity:
        """Archive an entity (reversible: remembering its (category, key) again restores it)."""
        return self.call(
            "forget", validate(EntityParams, given(id=id, agent_id=agent_id, workspace_hash=workspace_hash))
        )

    @edge
    def purge(
        self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> PurgeResult:
        """Delete an archived entity, its history and its links for good."""
        return self.call(
            "purge", validate(EntityParams, given(id=id, agent_id=agent_id, workspace_hash=workspace_hash))
        )

    @edge
    def supersede(
        self, old_id: int, new_id: int, *, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> Entity:
        """Mark ``old_id`` superseded by ``new_id``; returns the old entity as it now stands."""
        return self.call(
            "supersede",
            validate(
                SupersedeParams,
                given(old_id=old_id, new_id=new_id, agent_id=agent_id, workspace_hash=workspace_hash),
            ),
        )

    # --- links -------------------------------------------------------------------------------

    @edge
    def link(
        self,
        from_id: int,
        to_id: int,
        relation: str = "related",
        weight: float = 1.0,
        *,
        source: str | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> Link:
        """Add (or re-weight) a directed, typed edge between two entities of one scope."""
        return self.call(
            "link",
            validate(
                LinkParams,
                given(
                    from_id=from_id,
                    to_id=to_id,
                    relation=relation,
                    weight=weight,
                    source=source,
                    agent_id=agent_id,
                    workspace_hash=workspace_hash,
                ),
            ),
        )

    @edge
    def unlink(
        self,
        from_id: int,
        to_id: int,
        relation: str | None = None,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> int:
        """Close the link(s) from ``from_id`` to ``to_id`` (one relation or all); returns how many closed."""
        return self.call(
            "unlink",
            validate(
                UnlinkParams,
                given(
                    from_id=from_id,
                    to_id=to_id,
                    relation=relation,
                    agent_id=agent_id,
                    workspace_hash=workspace_hash,
                ),
            ),
        )

    @edge
    def traverse(
        self,
        start: int,
        depth: int = 2,
        relations: list[str] | None = None,
        direction: Direction = "both",
        **filters: Unpack[TraverseOptions],
    ) -> TraverseResult:
        """Walk the link graph breadth-first from ``start`` (scope and time rules on every hop); see TraverseParams."""
        p = validate(
            TraverseParams,
            {**filters, **given(start=start, depth=depth, relations=relations, direction=direction)},
        )
        return self.call("traverse", p)

    # --- communities (GraphRAG, docs/graphrag.md) ------------------------------------------------

    @edge
    def communities(self, **options: Unpack[CommunitiesOptions]) -> CommunitiesResult:
        """Clusters of the link graph in the caller's view, largest first, with their central members."""
        return self.call("communities", validate(CommunitiesParams, options))

    @edge
    def community_summary(
        self,
        community_id: str,
        *,
        polish: Callable[[str], str] | None = None,
        **options: Unpack[CommunitySummaryOptions],
    ) -> CommunitySummary:
        """The extractive summary of one community, written once as a ``community_summary`` entity
        linked to every member, and rewritten only when the membership changed (a new id) or with
        ``refresh=True``. ``polish``: any function (an LLM) that rewrites the extractive text; the
        extractive text is kept as evidence."""
        p = validate(CommunitySummaryParams, {**options, "community_id": community_id})
        return self.call("community_summary", p, polish=polish)

    @edge
    def global_recall(self, query: str, **options: Unpack[GlobalRecallOptions]) -> GlobalRecallResult:
        """Answer a question that spans clusters: the best communities by their summaries, then the best
        evidence among their members, and an answer context within ``max_chars``. Summaries that do
        not exist yet are written first."""
        return self.call("global_recall", validate(GlobalRecallParams, {**options, "query": query}))

    # --- proactive recall (docs/proactive.md) --------------------------------------------------

    @edge
    def recall_when(self, context: str, **options: Unpack[RecallWhenOptions]) -> RecallWhenResult:
        """Entities whose ``recall_when`` trigger phrases match ``context``, best first: by phrase, by
        stemmed terms, and by meaning when the vault has vectors and an embedder."""
        return self.call("recall_when", validate(RecallWhenParams, {**options, "context": context}))

    @edge
    def prepare(self, context: str, **options: Unpack[PrepareOptions]) -> PrepareResult:
        """The markdown block to inject before an agent turn: entities triggered by ``context`` first,
        then those ``recall`` finds most relevant to it, within ``max_chars``."""
        return self.call("prepare", validate(PrepareParams, {**options, "context": context}))

    # --- conversations (docs/conversations.md) ---------------------------------------------------

    @edge
    def remember_conversation(
        self,
        session: str,
        messages: Iterable[dict[str, Any] | MessageInput],
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> ConversationWrite:
        """Store ``messages`` (each ``{speaker and/or role, text, time?, id?}``) as the next turns of
        ``session``, in order, in one transaction: all of them, or none. A message with an ``id``
        already stored in the session keeps its turn."""
        p = validate(
            RememberConversationParams,
            given(
                session=session,
                messages=listed("messages", messages, "messages"),
                agent_id=agent_id,
                workspace_hash=workspace_hash,
            ),
        )
        return self.call("remember_conversation", p)

    @edge
    def conversation(
        self,
        session: str,
        around: int | None = None,
        before: int | None = None,
        after: int | None = None,
        *,
        from_turn: int | None = None,
        limit: int | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> ConversationResult:
        """The turns of ``session`` in order: around one turn (``before``/``after`` it), or a page of
        ``limit`` turns from ``from_turn``. Read-only."""
        p = validate(
            ConversationParams,
            given(
                session=session,
                around=around,
                before=before,
                after=after,
                from_turn=from_turn,
                limit=limit,
                agent_id=agent_id,
                workspace_hash=workspace_hash,
            ),
        )
        return self.call("conversation", p)

    # --- memory files (docs/memory-files.md) -----------------------------------------------------

    @edge
    def memory_import(
        self,
        folder: str | os.PathLike[str],
        *,
        memory_dir: str = "About Me",
        bind: bool = False,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> MemoryImportReport:
        """Import an Obsidian-style folder: the memory files in ``folder/memory_dir`` (or in ``folder``
        itself when there is no such subfolder) entry by entry, and the folder's other markdown notes
        with their wikilinks. Re-importing reconciles. ``bind=True`` makes ``add_memory`` /
        ``delete_memory`` rewrite the files there."""
        p = validate(
            MemoryImportParams,
            given(
                folder=path_text("folder", folder),
                memory_dir=memory_dir,
                bind=bind,
                agent_id=agent_id,
                workspace_hash=workspace_hash,
            ),
        )
        return self.call("memory_import", p)

    @edge
    def memory_unbind(self, *, agent_id: str | None = None, workspace_hash: str | None = None) -> bool:
        """Stop rewriting a folder's files for this scope; True when there was a binding."""
        return self.call(
            "memory_unbind", validate(ScopeParams, given(agent_id=agent_id, workspace_hash=workspace_hash))
        )

    @edge
    def add_memory(
        self,
        file: str,
        section: str,
        text: str,
        date: str | None = None,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> MemoryChange:
        """Add a dated entry (``date`` defaults to today, UTC) at the end of ``section`` of memory file
        ``file`` (both created if missing); a bound folder's file is rewritten atomically first."""
        return self.call(
            "add_memory",
            validate(
                AddMemoryParams,
                given(
                    file=file,
                    section=section,
                    text=text,
                    date=date,
                    agent_id=agent_id,
                    workspace_hash=workspace_hash,
                ),
            ),
        )

    @edge
    def delete_memory(
        self,
        file: str,
        section: str,
        *,
        date: str | None = None,
        text: str | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> MemoryChange:
        """Delete the one entry of ``section`` matching ``date`` and/or ``text``; refuses when none or
        several match. History keeps it."""
        return self.call(
            "delete_memory",
            validate(
                DeleteMemoryParams,
                given(
                    file=file,
                    section=section,
                    date=date,
                    text=text,
                    agent_id=agent_id,
                    workspace_hash=workspace_hash,
                ),
            ),
        )

    @edge
    def get_memory(
        self,
        file: str,
        section: str | None = None,
        *,
        entries: bool = False,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> MemoryText:
        """A memory file verbatim, or one of its ``##`` sections (heading included); ``entries``: also its entries."""
        return self.call(
            "get_memory",
            validate(
                GetMemoryParams,
                given(
                    file=file,
                    section=section,
                    entries=entries,
                    agent_id=agent_id,
                    workspace_hash=workspace_hash,
                ),
            ),
        )

    @edge
    def list_memory_files(
        self, *, agent_id: str | None = None, workspace_hash: str | None = None
    ) -> MemoryFiles:
        """The memory files in scope, by name, with their entry counts and sections."""
        return self.call(
            "list_memory_files",
            validate(ListMemoryFilesParams, given(agent_id=agent_id, workspace_hash=workspace_hash)),
        )

    @edge
    def memory_export(
        self,
        folder: str | os.PathLike[str],
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> MemoryExportReport:
        """Write every memory file in scope to ``folder/<file>.md`` (atomically, byte for byte as stored)."""
        p = validate(
            MemoryExportParams,
            given(folder=path_text("folder", folder), agent_id=agent_id, workspace_hash=workspace_hash),
        )
        return self.call("memory_export", p)

    @edge
    def memory_recall(
        self,
        query: str,
        file: str | None = None,
        limit: int = 50,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> MemoryRecallResult:
        """Entries of the memory files about ``query``, oldest first."""
        return self.call(
            "memory_recall",
            validate(
                MemoryRecallParams,
                given(query=query, file=file, limit=limit, agent_id=agent_id, workspace_hash=workspace_hash),
            ),
        )

    # --- reading (docs/recall.md) ----------------------------------------------------------------

    @edge
    def recall(self, query: str, **options: Unpack[RecallOptions]) -> RecallResult:
        """Find memories for ``query``: keyword, dense or hybrid, with every filter and knob by wire name."""
        return self.call("recall", validate(RecallParams, {"query": query, **options}))

    @edge
    def search(self, query: str, **options: Unpack[SearchOptions]) -> RecallResult:
        """Recall over the notes of an imported folder (outside the memory layer); ``recall``'s options."""
        if "type" in options:
            raise InvalidInput("type", "search is over markdown notes; use recall for other types")
        return self.call("search", validate(RecallParams, {"query": query, "type": NOTE_TYPE, **options}))

    @edge
    def recall_by_vector(
        self, vector: Sequence[float] | np.ndarray, **options: Unpack[RecallByVectorOptions]
    ) -> RecallResult:
        """Dense recall with a query vector the caller embedded with the vault's model (framework
        adapters that embed on their side); ``recall``'s filters and knobs, except ``query`` and ``mode``."""
        for name in ("query", "mode"):
            if name in options:
                raise InvalidInput(name, "does not apply to recall_by_vector (the vector is the query)")
        return self.call("recall", validate(RecallParams, {"query": "", **options}), vector=vector)

    @edge
    def wait_for_keyword_index(self, timeout: float = 600.0) -> bool:
        """Build the in-memory keyword index now (if not yet built) and wait for it; True when ready."""
        return self._engine.wait(self._engine.keyword_index, timeout)

    @edge
    def wait_for_vector_index(self, timeout: float = 600.0) -> bool:
        """Build the in-memory vector index now (if not yet built) and wait for it; True when ready."""
        return self._engine.wait(self._engine.vector_index, timeout)

    @edge
    def scan(self, cursor: str | None = None, limit: int = 100, **filters: Unpack[ScanOptions]) -> ScanPage:
        """One keyset page of every visible entity by ascending id; feed ``next_cursor`` back for the next."""
        p = validate(ScanParams, {"cursor": cursor, "limit": limit, **filters})
        return self.call("scan", p)

    @edge
    def counts(self, **filters: Unpack[CountsOptions]) -> Counts:
        """How many memories the view holds, by status, scope, type and category (largest first)."""
        return self.call("counts", validate(CountsParams, filters))

    @edge
    def hygiene(
        self, *, limit: int = 100, min_age_days: int = 7, **filters: Unpack[HygieneOptions]
    ) -> HygieneReport:
        """Report the active memories that weaken a startup block, least actionable first, each with
        its reasons (rules in docs/hygiene.md). Read-only: nothing is reinforced."""
        return self.call(
            "hygiene", validate(HygieneParams, {**filters, "limit": limit, "min_age_days": min_age_days})
        )

    # --- time (docs/time.md) ---------------------------------------------------------------------

    @edge
    def history(
        self,
        category: str,
        key: str,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> HistoryPage:
        """Every version of a fact, newest first, paginated, with ``total``."""
        p = validate(
            HistoryParams,
            given(
                category=category,
                key=key,
                agent_id=agent_id,
                workspace_hash=workspace_hash,
                limit=limit,
                offset=offset,
            ),
        )
        return self.call("history", p)

    @edge
    def as_of(
        self,
        category: str,
        key: str,
        as_of_unix_ms: Instant,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> Entity | None:
        """The version of a fact the vault believed at ``as_of_unix_ms`` (``None`` if it had none then)."""
        p = validate(
            AsOfParams,
            given(
                category=category,
                key=key,
                as_of_unix_ms=as_of_unix_ms,
                agent_id=agent_id,
                workspace_hash=workspace_hash,
            ),
        )
        return self.call("as_of", p)

    @edge
    def valid_at(
        self,
        category: str,
        key: str,
        valid_at_unix_ms: Instant,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> Entity | None:
        """The version of a fact true in the world at ``valid_at_unix_ms``, per current knowledge."""
        p = validate(
            ValidAtParams,
            given(
                category=category,
                key=key,
                valid_at_unix_ms=valid_at_unix_ms,
                agent_id=agent_id,
                workspace_hash=workspace_hash,
            ),
        )
        return self.call("valid_at", p)

    @edge
    def bitemporal(
        self,
        category: str,
        key: str,
        as_of_unix_ms: Instant,
        valid_at_unix_ms: Instant,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> Entity | None:
        """The version believed at ``as_of_unix_ms`` to be true at ``valid_at_unix_ms``."""
        p = validate(
            BitemporalParams,
            given(
                category=category,
                key=key,
                as_of_unix_ms=as_of_unix_ms,
                agent_id=agent_id,
                valid_at_unix_ms=valid_at_unix_ms,
                workspace_hash=workspace_hash,
            ),
        )
        return self.call("bitemporal", p)

    @edge
    def recent(
        self,
        cursor: str | None = None,
        limit: int = 20,
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> ScanPage:
        """The latest writes, newest first: each version as written; feed ``next_cursor`` back for older ones."""
        p = validate(
            RecentParams, given(cursor=cursor, limit=limit, agent_id=agent_id, workspace_hash=workspace_hash)
        )
        return self.call("recent", p)

    # --- embeddings, moving data in and out --------------------------------------------------

    @edge
    def embed(self, reembed: bool = False, progress: Callable[[int, int], None] | None = None) -> EmbedReport:
        """Give every version a vector: backfill the missing ones (current versions first), or, with
        ``reembed=True``, replace all of them with the configured embedder's (after a model change)."""
        p = validate(EmbedParams, {"reembed": reembed})
        return self.call("embed", p, progress=progress)

    @edge
    def import_jsonl(
        self,
        source: str | os.PathLike[str] | IO[str] | Iterable[str],
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Import a JSONL file (an export, or lines shaped like ``remember`` arguments) in one transaction."""
        lines = (
            None if isinstance(source, (str, os.PathLike)) else source
        )  # an open file: "-" names it, as on the CLI
        p = validate(ImportParams, {"source": "-" if lines is not None else path_text("source", source)})
        return self.call("import_jsonl", p, progress=progress, lines=lines)

    @edge
    def export_jsonl(
        self,
        target: str | os.PathLike[str] | IO[str],
        *,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> int:
        """Write every entity (with its history) and link in scope as JSONL; returns the line count."""
        stream = target if hasattr(target, "write") else None  # an open file: "-" names it, as on the CLI
        p = validate(
            ExportParams,
            given(
                target="-" if stream is not None else path_text("target", target),
                agent_id=agent_id,
                workspace_hash=workspace_hash,
            ),
        )
        return self.call("export_jsonl", p, stream=stream)

    # --- looking after the file ----------------------------------------------------------------

    @edge
    def stats(self) -> Stats:
        """Counts, sizes, versions, embedding coverage and model, and the indexes' state."""
        return self.call("stats", validate(NoParams, {}))

    @edge
    def check(self) -> CheckReport:
        """Integrity of the file, keyword indexes in sync with their rows, and the vault's invariants."""
        return self.call("check", validate(NoParams, {}))

    @edge
    def reindex(self, progress: Callable[[int, int], None] | None = None) -> ReindexReport:
        """Rebuild the keyword indexes, judge the relations of memories written before writes did, then check."""
        return self.call("reindex", validate(NoParams, {}), progress=progress)

    @edge
    def rekey(self, new_key: str | bytes) -> None:
        """Re-encrypt the vault under ``new_key`` (no memory is lost); afterwards only ``new_key`` opens it.
        Refused (StorageError, nothing changed) while another process has the file open: it would keep the old key."""
        text = (
            new_key if isinstance(new_key, str) else check_key(new_key, "key")
        )  # bytes: Python callers only
        return self.call("rekey", validate(RekeyParams, {"new_key": text}))

    @edge
    def backup(self, target: str | os.PathLike[str]) -> str:
        """A consistent copy of the vault at ``target`` while others keep writing."""
        return self.call("backup", validate(BackupParams, {"target": path_text("target", target)}))
