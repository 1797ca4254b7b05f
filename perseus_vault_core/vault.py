"""``Vault``: the one object a user meets. Every verb is a method here.

The facade validates arguments into the typed models, opens the right transaction and
delegates to the module that owns the concept (``store``, ``recall``, ``scan``,
``temporal``, ``graph``, ``import_export``, ``maintenance``). It is safe to share between
threads: each thread gets its own SQLite connection.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

import numpy as np
from pydantic import ValidationError

from . import (
    conversations,
    global_recall,
    graph,
    memory,
    memory_files,
    hygiene,
    import_export,
    maintenance,
    proactive,
    recall,
    scan,
    schema,
    store,
    summaries,
    temporal,
    vectors,
)
from .communities import SUMMARY_TYPE, Communities, Group, Partition
from .connection import SQLITE_ERRORS, ConnectionPool, choose_driver, connect, read_snapshot, resolve_key, write_transaction
from .connection import rekey as _rekey
from .embed import Embedder, LazyEmbedder, checked, embedding_text
from .errors import Conflict, InvalidInput, NotFound, NotSupported, StorageError, VaultError
from .filters import FROM, view
from .fusion import Fusion
from .keyword_index import KeywordIndex
from .mirror import HeadMirror
from .query import tokenize
from .ranking import one_line
from .vector_index import VectorIndex
from .models import (
    CheckReport,
    CommunitiesResult,
    Community,
    CommunityMember,
    CommunitySummary,
    ConversationResult,
    ConversationWrite,
    EmbedReport,
    Entity,
    EvidenceItem,
    GlobalCommunity,
    GlobalRecallResult,
    HistoryPage,
    HygieneReport,
    ImportReport,
    Link,
    MemoryChange,
    MemoryEntry,
    MemoryExportReport,
    MemoryFileInfo,
    MemoryFiles,
    MemoryImportReport,
    MemoryRecallResult,
    MemoryText,
    PrepareResult,
    PurgeResult,
    RecallItem,
    RecallResult,
    RecallWhenResult,
    ScanPage,
    SkippedLine,
    Stats,
    TraverseResult,
    TriggeredItem,
)
from .params import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    AddMemoryParams,
    AsOfParams,
    BitemporalParams,
    CommunitiesParams,
    CommunitySummaryParams,
    ConversationParams,
    DeleteMemoryParams,
    Direction,
    EmbedParams,
    EntityParams,
    FactParams,
    Filters,
    GetMemoryParams,
    GlobalRecallParams,
    HistoryParams,
    HygieneParams,
    LinkParams,
    ListMemoryFilesParams,
    MemoryRecallParams,
    MessageInput,
    PrepareParams,
    RecallParams,
    RecallWhenParams,
    RememberConversationParams,
    RememberInput,
    RememberManyParams,
    ScanParams,
    ScopeParams,
    SupersedeParams,
    TraverseParams,
    UnlinkParams,
    ValidAtParams,
    invalid,
    validate,
)

DEFAULT_PATH = "perseus_vault.db"
EMBED_BATCH = 256  # texts per embedder call when writing
MAX_LAZY_PHRASES = 256  # trigger phrases a read may embed (those written before they were embedded on write)
Clock = Callable[[], int]
F = TypeVar("F", bound=Callable[..., Any])


def _edge(method: F) -> F:
    """The API's edge: whatever SQLite or the runtime raises beneath a verb leaves as a VaultError.

    The modules below raise the vault's own errors on purpose; this catches what slips past them
    (an I/O error, a corrupt page), so callers only ever handle one error tree.
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except VaultError:
            raise
        except SQLITE_ERRORS as exc:
            raise StorageError(f"SQLite failed: {exc}") from exc
        except RecursionError:
            raise InvalidInput("argument", "is nested too deeply") from None
        except OverflowError as exc:
            raise InvalidInput("argument", f"a number is out of range ({exc})") from None
        except ValidationError as exc:  # a model built beneath the verb refused a value
            raise invalid(exc) from None

    return wrapper  # type: ignore[return-value]


def default_path() -> str:
    return os.environ.get("PERSEUS_VAULT_DB") or DEFAULT_PATH


def _wall_clock() -> int:
    return time.time_ns() // 1_000_000


def _given(**values: Any) -> dict[str, Any]:
    """Keyword arguments as a params dict, leaving out the optional ones not given (``None``)."""
    return {k: v for k, v in values.items() if v is not None}


def _summary_model(group: Group, entity: Entity, *, materialized: bool, replaced: list[int]) -> CommunitySummary:
    extractive = entity.body.get("extractive", entity.content)
    return CommunitySummary(community_id=group.id, entity=entity, text=entity.content,
                            extractive=extractive if isinstance(extractive, str) else entity.content,
                            polished="extractive" in entity.body, materialized=materialized,
                            members=list(group.members), replaced=replaced)


class Vault:
    """Long-term memory in one SQLite file.

    >>> with Vault("memory.db") as vault:                       # doctest: +SKIP
    ...     vault.remember(category="decision", key="db", content="We chose SQLite.")
    ...     vault.recall("which database").items
    """

    @_edge
    def __init__(self, path: str | os.PathLike[str] | None = None, *, clock: Clock | None = None,
                 synchronous: str = "FULL", keyword_index: bool = True, vector_index: bool = True,
                 embedder: Embedder | Literal[False] | None = None, threads: int | None = None,
                 fusion: Fusion | dict[str, Any] | None = None, cross_encoder: Any = None,
                 key: str | bytes | None = None, create: bool = True) -> None:
        """Open the vault at ``path``, creating it (and its folder) if needed; with ``create=False`` a
        missing vault is :class:`NotFound` and nothing is created (what a read-only caller wants).

        ``embedder``: what embeds memories on write and queries for dense/hybrid recall. By default
        the bundled all-MiniLM-L6-v2 (or what ``PERSEUS_VAULT_EMBEDDER`` names), loaded on first use;
        ``False`` for a keyword-only vault; or any object with ``identity``, ``dimension`` and
        ``embed(texts)``. ``threads``: the embedding runtime's thread count.
        ``keyword_index`` / ``vector_index``: after the first recall, build the in-memory indexes in
        the background (same results, much faster on large stores); SQL answers until they are ready.
        ``fusion``: hybrid recall's default weights (see :class:`Fusion`).
        ``cross_encoder``: an object with ``predict(pairs) -> scores`` that memory_recall uses to cut
        weak matches (by default the operator's ``PERSEUS_VAULT_CROSS_ENCODER`` model, if set).
        ``synchronous``: SQLite's durability setting for writes (``FULL`` survives power loss).
        ``key``: encrypt the file at rest with SQLCipher (a passphrase, or ``x'<64 hex digits>'``);
        by default ``PERSEUS_VAULT_KEY`` or ``PERSEUS_VAULT_KEY_FILE``, else a plaintext vault.
        """
        self.path = str(path) if path is not None else default_path()
        if self.path == ":memory:" or self.path.startswith("file:"):
            # Each thread has its own connection, and each in-memory connection its own database.
            raise InvalidInput("path", "must be a file path (for a throwaway vault use a temporary directory)")
        if not isinstance(create, bool):
            raise InvalidInput("create", "must be true or false")
        if not create and (not Path(self.path).is_file() or Path(self.path).stat().st_size == 0):
            # An empty file is no vault either: SQLite would make one of it, and a read must not write.
            raise NotFound(f"no vault at {self.path} (create one with `perseus-vault init` or by remembering something)")
        if create:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock or _wall_clock
        self._driver = choose_driver(key=resolve_key(key))
        self._pool = ConnectionPool(self.path, self._driver, synchronous=synchronous)
        schema.migrate(self._pool.get(), self._clock())
        for name, flag in (("keyword_index", keyword_index), ("vector_index", vector_index)):
            if not isinstance(flag, bool):
                raise InvalidInput(name, "must be true or false")
        if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
            raise InvalidInput("threads", "must be a positive whole number")
        self._keyword_index = KeywordIndex() if keyword_index else None
        self._vector_index = VectorIndex() if vector_index else None
        self._embedder: Embedder | None
        if embedder is None and os.environ.get("PERSEUS_VAULT_EMBEDDER") == "none":
            embedder = False  # the operator runs this vault keyword-only
        if embedder is False:
            self._embedder = None
        elif embedder is None:
            self._embedder = LazyEmbedder(threads=threads)
        elif isinstance(embedder, Embedder):
            self._embedder = embedder
        else:
            raise InvalidInput("embedder", "must have identity, dimension and embed(texts), or be False")
        self._fusion = validate(Fusion, fusion, prefix="fusion") if fusion is not None else Fusion()
        self._clusters = Communities()
        if cross_encoder is not None and not callable(getattr(cross_encoder, "predict", None)):
            raise InvalidInput("cross_encoder", "must have predict(pairs) returning one score per pair")
        self._cross_encoder = cross_encoder
        self._entries: memory.EntryIndex | None = None
        self._memory_lock = threading.Lock()  # one add/delete at a time rewrites a file in this process
        self._trigger_vectors: dict[str, dict[str, np.ndarray]] = {}  # model -> phrase -> vector
        self._heading_vectors: dict[str, dict[str, np.ndarray]] = {}  # model -> memory-file heading -> vector
        self._last_query: tuple[str, Embedder, np.ndarray] | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

    @property
    def encrypted(self) -> bool:
        """Whether the file is encrypted at rest (opened with a key)."""
        return self._driver.encrypted

    @property
    def embedder(self) -> Embedder | None:
        """The model this vault embeds with (``None`` when keyword-only). Adapters that embed on
        their side (a query vector for ``recall_by_vector``, candidates for MMR) use this one, so
        their vectors and the stored ones come from the same model."""
        return self._embedder

    def _conn(self) -> Any:
        return self._pool.get()

    def _now(self) -> int:
        return self._clock()

    def _write(self, work: Callable[[Any], Any]) -> Any:
        return write_transaction(self._conn(), work)

    def _write_planned(self, plan: store.VectorPlan | None, work: Callable[[Any], Any]) -> Any:
        """A write whose new versions need vectors: when the transaction meets a text its plan did
        not foresee, it rolls back, the text is embedded, and it runs again (a few times at most)."""
        for _ in range(5):
            try:
                return self._write(work)
            except store.MissingVectors as missing:
                assert plan is not None and self._embedder is not None
                plan.by_text.update(zip(missing.texts, checked(self._embedder, missing.texts)))
        raise StorageError("the vault kept changing under this write; try again")

    def _entity(self, entity_id: int) -> Entity:
        row = store.head_row(self._conn(), entity_id)
        assert row is not None
        return store.to_entity(row, self._now())

    # --- writing -----------------------------------------------------------------------------

    @_edge
    def remember(self, category: str | None = None, key: str | None = None, content: str | None = None,
                 **fields: Any) -> Entity:
        """Create or update the memory (category, key) in its scope; identical content is a no-op.

        Other fields go by their wire names (``summary``, ``type``, ``topic_path``, ``body``,
        ``agent_id``, ``workspace_hash``, ``source``, ``verified``, ``certainty``,
        ``provenance_class``, ``recall_when``, ``valid_from_ms``, ``valid_to_ms``,
        ``expires_at_ms``). On an update, fields not passed keep their values.
        """
        required = {"category": category, "key": key, "content": content}
        # Missing required arguments are reported by the model (naming the field), not by Python.
        item = validate(RememberInput, {**{k: v for k, v in required.items() if v is not None}, **fields})
        plan = self._plan(lambda conn: store.texts_to_embed(conn, [item]), [item])
        entity_id, _ = self._write_planned(plan, lambda c: store.remember(c, item, self._now(), plan))
        return self._entity(entity_id)

    @_edge
    def remember_many(self, items: Iterable[dict[str, Any] | RememberInput]) -> list[Entity]:
        """Remember a batch in one transaction: all are written, or (on any error) none."""
        try:
            batch = list(items)
        except TypeError:
            raise InvalidInput("items", "must be a list of memories") from None
        checked = validate(RememberManyParams, {"items": batch}).items

        plan = self._plan(lambda conn: store.texts_to_embed(conn, checked), checked)

        def work(conn: Any) -> list[int]:
            return [entity_id for entity_id, _ in store.remember_batch(conn, checked, self._now(), plan)]

        ids = self._write_planned(plan, work)
        rows = store.head_rows(self._conn(), ids)
        now = self._now()
        return [store.to_entity(rows[i], now) for i in ids]

    @_edge
    def get_entity(self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None) -> Entity:
        """One entity, whole (current version). Scope arguments, when given, must match it."""
        p = validate(EntityParams, _given(id=id, agent_id=agent_id, workspace_hash=workspace_hash))
        return store.to_entity(store.scoped_head(self._conn(), p.id, p.agent_id, p.workspace_hash), self._now())

    @_edge
    def forget(self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None) -> Entity:
        """Archive an entity (reversible: remembering its (category, key) again restores it)."""
        p = validate(EntityParams, _given(id=id, agent_id=agent_id, workspace_hash=workspace_hash))
        self._write(lambda c: store.forget(c, p.id, p.agent_id, p.workspace_hash, self._now()))
        return self._entity(p.id)

    @_edge
    def purge(self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None) -> PurgeResult:
        """Delete an archived entity, its history and its links for good."""
        p = validate(EntityParams, _given(id=id, agent_id=agent_id, workspace_hash=workspace_hash))
        result: PurgeResult = self._write(lambda c: store.purge(c, p.id, p.agent_id, p.workspace_hash))
        return result

    @_edge
    def supersede(self, old_id: int, new_id: int, *, agent_id: str | None = None,
                  workspace_hash: str | None = None) -> Entity:
        """Mark ``old_id`` superseded by ``new_id``; returns the old entity as it now stands."""
        p = validate(SupersedeParams, _given(old_id=old_id, new_id=new_id, agent_id=agent_id,
                                             workspace_hash=workspace_hash))
        self._write(lambda c: store.supersede(c, p.old_id, p.new_id, p.agent_id, p.workspace_hash, self._now()))
        return self._entity(p.old_id)

    # --- links -------------------------------------------------------------------------------

    @_edge
    def link(self, from_id: int, to_id: int, relation: str = "related", weight: float = 1.0, *,
             source: str | None = None, agent_id: str | None = None, workspace_hash: str | None = None) -> Link:
        """Add (or re-weight) a directed, typed edge between two entities of one scope."""
        p = validate(LinkParams, _given(from_id=from_id, to_id=to_id, relation=relation, weight=weight, source=source,
                                        agent_id=agent_id, workspace_hash=workspace_hash))
        result: Link = self._write(lambda c: graph.link(
            c, p.from_id, p.to_id, p.relation, float(p.weight), p.source, p.agent_id, p.workspace_hash, self._now()))
        return result

    @_edge
    def unlink(self, from_id: int, to_id: int, relation: str | None = None, *,
               agent_id: str | None = None, workspace_hash: str | None = None) -> int:
        """Close the link(s) from ``from_id`` to ``to_id`` (one relation or all); returns how many closed."""
        p = validate(UnlinkParams, _given(from_id=from_id, to_id=to_id, relation=relation, agent_id=agent_id,
                                          workspace_hash=workspace_hash))
        closed: int = self._write(
            lambda c: graph.unlink(c, p.from_id, p.to_id, p.relation, p.agent_id, p.workspace_hash, self._now()))
        return closed

    @_edge
    def traverse(self, start: int, depth: int = 2, relations: list[str] | None = None,
                 direction: Direction = "both", **filters: Any) -> TraverseResult:
        """Walk the link graph breadth-first from ``start``; scope and time rules apply on every hop."""
        p = validate(TraverseParams, {**filters, **_given(start=start, depth=depth, relations=relations,
                                                            direction=direction)})
        conn = self._conn()
        with read_snapshot(conn):
            return graph.traverse(conn, p.start, p.depth, p.relations, p.direction, view(p, self._now()))

    # --- communities (GraphRAG) -----------------------------------------------------------------

    @_edge
    def communities(self, **params: Any) -> CommunitiesResult:
        """Clusters of the link graph in the caller's view, largest first (docs/graphrag.md).

        ``method``: ``label_propagation`` (default) or ``modularity`` (Louvain); ``min_size``
        (default 2), ``limit`` (default 100), ``central`` (most central members listed, default 5),
        and the filters of ``recall`` (scope, type, category, topic, archived, points in time).
        """
        p = validate(CommunitiesParams, params)
        conn = self._conn()
        with read_snapshot(conn):
            part = self._clusters.partition(conn, view(p, self._now()), p.method)
            groups = [g for g in part.groups if len(g.members) >= p.min_size]
            shown = self._community_models(conn, groups[: p.limit], p.central)
        return CommunitiesResult(communities=shown, total=len(groups), method=p.method, nodes=part.nodes, edges=part.edges)

    def _community_models(self, conn: Any, groups: list[Group], central: int) -> list[Community]:
        wanted = sorted({m for g in groups for m in g.central(central)})
        rows = store.head_rows(conn, wanted)
        summary_ids = summaries.existing(conn, groups)
        out = []
        for g in groups:
            members = [
                CommunityMember(id=m, category=rows[m]["category"], key=rows[m]["key"],
                                title=one_line(rows[m]["summary"] or rows[m]["content"], 100), centrality=g.centrality[m])
                for m in g.central(central) if m in rows
            ]
            out.append(Community(id=g.id, size=len(g.members), agent_id=g.agent_id or None,
                                 workspace_hash=g.workspace_hash or None, members=list(g.members),
                                 central=members, summary_id=summary_ids.get(g.id)))
        return out

    @_edge
    def community_summary(self, community_id: str, *, polish: Callable[[str], str] | None = None,
                          **params: Any) -> CommunitySummary:
        """The extractive summary of one community, written once as a ``community_summary`` entity
        linked to every member, and rewritten only when the membership changed (a new id) or with
        ``refresh=True``. ``polish``: any function (an LLM) that rewrites the extractive text; the
        extractive text is kept as evidence. Other parameters: ``method``, ``max_chars`` (default
        1,200), ``agent_id``, ``workspace_hash``.
        """
        p = validate(CommunitySummaryParams, {**params, "community_id": community_id})
        if polish is not None and not callable(polish):
            raise InvalidInput("polish", "must be a function that takes the extractive text and returns text")
        conn = self._conn()
        now = self._now()
        with read_snapshot(conn):
            part = self._clusters.partition(conn, view(Filters(agent_id=p.agent_id, workspace_hash=p.workspace_hash), now), p.method)
            group = part.find(p.community_id)
            if group is None:
                raise NotFound(f"no community {p.community_id!r} in this scope now (list the current ones with communities)")
            have = summaries.existing(conn, [group]).get(group.id)
            if have is not None and not p.refresh:
                entity = store.to_entity(store.scoped_head(conn, have, None, None), now)
                # a polish asked of a summary that was never polished is a reason to rewrite it
                if polish is None or "extractive" in entity.body:
                    return _summary_model(group, entity, materialized=False, replaced=[])
        return self._summarize(part, [group], p.max_chars, polish, p.method)[0]

    def _summarize(self, part: Partition, groups: list[Group], max_chars: int,
                   polish: Callable[[str], str] | None, method: str) -> list[CommunitySummary]:
        """Write the summaries of ``groups`` (one transaction), linked to their members."""
        conn = self._conn()
        with read_snapshot(conn):
            drafts = [(g, *summaries.extract(summaries.member_texts(conn, g), len(g.members), max_chars),
                       summaries.topic(conn, g)) for g in groups]
        items = []
        for n, (g, title, text, terms, topic_path) in enumerate(drafts):
            content = text
            if polish is not None:
                try:
                    content = polish(text)
                except Exception as exc:  # the caller's model failed: nothing is written
                    raise InvalidInput("polish", f"raised {type(exc).__name__}: {exc}") from exc
                if not isinstance(content, str) or not content.strip():
                    raise InvalidInput("polish", "must return non-empty text")
            body: dict[str, Any] = {"community_id": g.id, "size": len(g.members), "method": method, "terms": terms}
            if polish is not None:
                body["extractive"] = text
            items.append(validate(RememberInput, {
                "category": summaries.SUMMARY_CATEGORY, "key": g.id, "content": content, "summary": title,
                "type": SUMMARY_TYPE, "topic_path": topic_path, "body": body,
                "agent_id": g.agent_id or None, "workspace_hash": g.workspace_hash or None,
                "source": "perseus-vault community_summary",
                "provenance_class": "ai_draft" if polish is not None else "tool",
            }, prefix="polish" if polish is not None else f"summary.{n}"))
        current = {g.id for g in part.groups}
        plan = self._plan(lambda c: store.texts_to_embed(c, items))

        def work(c: Any) -> list[tuple[int, str, list[int]]]:
            now = self._now()
            written = store.remember_batch(c, items, now, plan)
            return [(eid, change, summaries.attach(c, eid, g, current, now)) for (eid, change), g in zip(written, groups)]

        results = self._write_planned(plan, work)
        rows = store.head_rows(self._conn(), [eid for eid, _, _ in results])
        now = self._now()
        return [
            _summary_model(g, store.to_entity(rows[eid], now), materialized=change != "unchanged", replaced=replaced)
            for g, (eid, change, replaced) in zip(groups, results)
        ]

    @_edge
    def global_recall(self, query: str, **params: Any) -> GlobalRecallResult:
        """Answer a question that spans clusters (docs/graphrag.md): the best communities by their summaries,
        then the best evidence among their members, and an answer context within ``max_chars``.

        Parameters: ``communities`` (how many, default 3), ``per_community`` (evidence items, default
        5), ``max_chars`` (default 4,000), ``mode`` (as recall), ``method``, ``min_size``,
        ``agent_id``, ``workspace_hash``, ``reinforce``. Summaries that do not exist yet are written first.
        """
        p = validate(GlobalRecallParams, {**params, "query": query})
        scope = {k: v for k, v in (("agent_id", p.agent_id), ("workspace_hash", p.workspace_hash)) if v is not None}
        conn = self._conn()
        with read_snapshot(conn):
            part = self._clusters.partition(
                conn, view(Filters(agent_id=p.agent_id, workspace_hash=p.workspace_hash), self._now()), p.method)
            groups = {g.id: g for g in part.groups if len(g.members) >= p.min_size}
            have = summaries.existing(conn, list(groups.values()))
        missing = [g for g in groups.values() if g.id not in have]
        if missing:
            for s in self._summarize(part, missing, summaries.DEFAULT_MAX_CHARS, None, p.method):
                have[s.community_id] = s.entity.id
        if not groups:
            return GlobalRecallResult(query=p.query, communities=[], context=global_recall.context(p.query, [], p.max_chars),
                                      search_mode="none")
        found = self._recall(validate(RecallParams, {
            "query": p.query, "mode": p.mode, "type": SUMMARY_TYPE, "category": summaries.SUMMARY_CATEGORY,
            "limit": min(MAX_LIMIT, max(50, 10 * p.communities)), "reinforce": False, **scope}),
            only=sorted(have[g] for g in groups if g in have))
        chosen = global_recall.choose(found.items, groups, p.communities)
        members = sorted({m for g, _ in chosen for m in g.members})
        drill = self._recall(validate(RecallParams, {
            "query": p.query, "mode": p.mode, "reinforce": False, "min_score": p.min_score, **scope,
            "limit": min(MAX_LIMIT, max(p.per_community * len(chosen) * 4, 10))}), only=members) if members else None
        hits = {item.id: item for item in drill.items} if drill else {}
        conn = self._conn()
        now = self._now()
        with read_snapshot(conn):
            models = {c.id: c for c in self._community_models(conn, [g for g, _ in chosen], 5)}
            out: list[GlobalCommunity] = []
            planned = [(g, item, global_recall.plan_evidence(g, [i for i in hits if i in set(g.members)], p.per_community))
                       for g, item in chosen]
            extra = store.head_rows(conn, sorted({m for _, _, plan in planned for m, via, _ in plan if m not in hits}))
            for g, item, plan in planned:
                evidence = []
                for m, via, hops in plan:
                    if m not in hits and m not in extra:
                        continue  # purged since the partition was read
                    if m in hits:
                        evidence.append(EvidenceItem.model_validate({**hits[m].model_dump(), "via": via, "hops": hops}))
                    else:
                        evidence.append(store.to_hit(EvidenceItem, extra[m], now, 0.0, {}, via=via, hops=hops))
                out.append(GlobalCommunity(community=models[g.id], title=item.summary or g.id, summary=item.content,
                                           summary_id=item.id, score=item.score, evidence=evidence))
        fitted = iter(store.fit([e for gc in out for e in gc.evidence]))  # the response budget, over all evidence
        out = [gc.model_copy(update={"evidence": [next(fitted) for _ in gc.evidence]}) for gc in out]
        if p.reinforce:
            ids = sorted({e.id for gc in out for e in gc.evidence})
            if ids:
                self._reinforce(ids)
        return GlobalRecallResult(query=p.query, communities=out, context=global_recall.context(p.query, out, p.max_chars),
                                  search_mode=found.search_mode)

    # --- proactive recall ----------------------------------------------------------------------

    @_edge
    def recall_when(self, context: str, **params: Any) -> RecallWhenResult:
        """Entities whose ``recall_when`` trigger phrases match ``context`` (docs/proactive.md), best first.

        Matching is by phrase and by stemmed terms, and by meaning when the vault has vectors and
        an embedder (``semantic``: None = when available, True = required, False = off;
        ``min_similarity`` default 0.6). Filters: ``type``, ``category``, ``topic_path``,
        ``agent_id``, ``workspace_hash``, ``query_time_unix_ms``; ``limit`` (default 10);
        ``reinforce`` (default False: being offered is not being used).
        """
        return self._recall_when(validate(RecallWhenParams, {**params, "context": context}))

    def _recall_when(self, p: RecallWhenParams) -> RecallWhenResult:
        f = Filters(type=p.type, category=p.category, topic_path=p.topic_path, agent_id=p.agent_id,
                    workspace_hash=p.workspace_hash, query_time_unix_ms=p.query_time_unix_ms)
        v = view(f, self._now())
        conn = self._conn()
        with read_snapshot(conn):
            rows = proactive.candidates(conn, v)
            stored_model = vectors.model(conn)
        usable = stored_model is not None and self._embedder is not None
        if p.semantic and not usable:
            raise NotSupported(
                "semantic trigger matching needs an embedding model and stored vectors "
                "(run `perseus-vault embed`), or pass semantic=False"
            )
        semantic = usable if p.semantic is None else p.semantic
        similarity = None
        if semantic and rows and tokenize(p.context):
            similarity = self._trigger_similarity(proactive.phrases(rows), p.context)
        matches = proactive.match(rows, proactive.Context.of(p.context), similarity, p.min_similarity)[: p.limit]
        vid_of = {row["id"]: row["vid"] for row in rows}
        with read_snapshot(conn):
            full = store.rows_in_order(conn, [vid_of[m.entity_id] for m in matches])
            items = store.fit(
                store.to_hit(TriggeredItem, row, v.instant, m.score, {"recall_when": n}, trigger=m.trigger, match=m.kind)
                for n, (m, row) in enumerate(zip(matches, full), start=1)
            )
        if p.reinforce and items:
            self._reinforce([item.id for item in items])
        return RecallWhenResult(items=items, total=len(items), semantic=semantic)

    def _trigger_similarity(self, phrases: list[str], context: str) -> dict[str, float]:
        """Cosine of ``context`` to each phrase. Phrase vectors come from this process's cache, then
        the file, then the embedder (and are then kept in the file for the next process)."""
        assert self._embedder is not None
        identity, dimension = self._embedder_model()
        conn = self._conn()
        with read_snapshot(conn):
            vectors.check_model(conn, identity, dimension)
        query = self._embed_query(context).astype(np.float64)
        known = self._trigger_vectors.setdefault(identity, {})
        wanted = [ph for ph in phrases if ph not in known]
        if wanted:
            with read_snapshot(conn):
                known.update(vectors.phrase_vectors(conn, identity, wanted))
            # Phrases are embedded when written; these predate that (or came by import). Embed a
            # bounded number per call, in order: the rest match by words only until a later call.
            fresh = [ph for ph in wanted if ph not in known][:MAX_LAZY_PHRASES]
            made: dict[str, np.ndarray] = {}
            for start in range(0, len(fresh), EMBED_BATCH):
                chunk = fresh[start : start + EMBED_BATCH]
                made.update(zip(chunk, checked(self._embedder, chunk)))
            if made:
                known.update(made)
                try:  # a cache: a read-only file or a busy writer costs only the next process's time
                    self._write(lambda c: vectors.write_phrase_vectors(c, identity, made))
                except VaultError:
                    pass
        return {ph: float(np.dot(known[ph].astype(np.float64), query)) for ph in phrases if ph in known}

    @_edge
    def prepare(self, context: str, **params: Any) -> PrepareResult:
        """The markdown block to inject before an agent turn (docs/proactive.md): entities triggered by
        ``context`` first, then those ``recall`` finds most relevant to it, within ``max_chars``
        (default 1,500). Parameters: ``triggered`` and ``related`` (most of each, default 5),
        ``mode`` (the related recall's), ``semantic``, ``agent_id``, ``workspace_hash``, ``reinforce``.
        """
        p = validate(PrepareParams, {**params, "context": context})
        scope = {k: v for k, v in (("agent_id", p.agent_id), ("workspace_hash", p.workspace_hash)) if v is not None}
        triggered: list[tuple[TriggeredItem, str]] = []
        if p.triggered:
            found = self._recall_when(validate(RecallWhenParams, {
                "context": p.context, "limit": p.triggered, "semantic": p.semantic, **scope}))
            triggered = [(item, item.trigger) for item in found.items]
        related: list[RecallItem] = []
        mode = "none"
        query = p.context[-MAX_QUERY_CHARS:]  # the end of a long context is the most recent part
        if p.related and tokenize(query):
            result = self._recall(validate(RecallParams, {
                "query": query, "mode": p.mode, "limit": 2 * p.related + len(triggered), "reinforce": False,
                "min_score": p.min_score, **scope}))
            mode = result.search_mode
            seen = {item.id for item, _ in triggered}
            # community summaries and stored memory files repeat other memories: a turn's block wants those
            related = [item for item in result.items
                       if item.id not in seen and item.type not in (SUMMARY_TYPE, memory.FILE_TYPE)][: p.related]
        text, shown_triggered, shown_related = proactive.block(triggered, related, p.max_chars)
        if p.reinforce and (shown_triggered or shown_related):
            self._reinforce(sorted(set(shown_triggered + shown_related)))
        return PrepareResult(markdown=text, triggered=shown_triggered, related=shown_related, chars=len(text),
                             search_mode=mode)

    # --- conversations -------------------------------------------------------------------------

    @_edge
    def remember_conversation(self, session: str, messages: Iterable[dict[str, Any] | MessageInput], *,
                              agent_id: str | None = None, workspace_hash: str | None = None) -> ConversationWrite:
        """Store ``messages`` (each ``{speaker and/or role, text, time?, id?}``) as the next turns of
        ``session``, in order, in one transaction: all of them, or none (docs/conversations.md).

        Each turn is an ordinary memory (category ``conversation``, type ``turn``, summary the speaker,
        content the text), embedded on write, so recall finds it. A message with an ``id`` already
        stored in the session keeps its turn: unchanged when it is the same, updated when it changed,
        and left as it is when that turn was forgotten.
        """
        if isinstance(messages, (str, bytes, dict)):
            raise InvalidInput("messages", "must be a list of messages")
        try:
            batch = list(messages)
        except TypeError:
            raise InvalidInput("messages", "must be a list of messages") from None
        p = validate(RememberConversationParams, _given(session=session, messages=batch, agent_id=agent_id,
                                                        workspace_hash=workspace_hash))
        plan = self._plan(lambda conn: store.texts_to_embed(conn, conversations.batch(conn, p).writes))

        def work(conn: Any) -> ConversationWrite:
            b = conversations.batch(conn, p)  # numbered inside the transaction: no other writer shares a number
            return conversations.report(p, b, store.remember_batch(conn, b.writes, self._now(), plan))

        result: ConversationWrite = self._write_planned(plan, work)
        return result

    @_edge
    def conversation(self, session: str, around: int | None = None, before: int | None = None,
                     after: int | None = None, *, from_turn: int | None = None, limit: int | None = None,
                     agent_id: str | None = None, workspace_hash: str | None = None) -> ConversationResult:
        """The turns of ``session`` in order (docs/conversations.md).

        With ``around`` (a turn's id, e.g. a recall hit): that turn with up to ``before`` turns before it
        and ``after`` after it (3 each by default), in the hit's scope. Without it: a page of up to
        ``limit`` turns (default 100) from turn number ``from_turn`` (default 1), in the scope given
        (the default scope when omitted); ``next_turn`` continues it. Read-only.
        """
        p = validate(ConversationParams, _given(session=session, around=around, before=before, after=after,
                                                from_turn=from_turn, limit=limit, agent_id=agent_id,
                                                workspace_hash=workspace_hash))
        conn = self._conn()
        with read_snapshot(conn):
            return conversations.read(conn, p, self._now())

    # --- memory files --------------------------------------------------------------------------

    @_edge
    def memory_import(self, folder: str | os.PathLike[str], *, memory_dir: str = "About Me", bind: bool = False,
                      agent_id: str | None = None, workspace_hash: str | None = None) -> MemoryImportReport:
        """Import an Obsidian-style folder: the memory files in ``folder/memory_dir`` (or in ``folder``
        itself when there is no such subfolder) entry by entry, and the folder's other markdown notes
        with their wikilinks. Re-importing reconciles: unchanged entries are not written or embedded,
        entries gone from a file are archived. ``bind=True`` makes ``add_memory`` / ``delete_memory``
        rewrite the files there."""
        validate(ScopeParams, _given(agent_id=agent_id, workspace_hash=workspace_hash))
        root = Path(folder).expanduser().resolve()
        if not root.is_dir():
            raise InvalidInput("folder", f"{folder} is not a folder")
        if not isinstance(memory_dir, str) or not isinstance(bind, bool):
            raise InvalidInput("memory_dir" if not isinstance(memory_dir, str) else "bind", "has the wrong type")
        directory = memory.memory_dir(root, memory_dir)
        scope = {"agent_id": agent_id, "workspace_hash": workspace_hash}
        found = memory.read_folder(root, directory, scope)  # symlinks out and control characters skipped
        report = self._memory_sync(found.records, scope, prune=True, notes=found.notes, bind_to=directory if bind else None)
        report.skipped = found.skipped + [SkippedLine(file=r.name, line=s.line, text=s.text, reason=s.reason)
                                          for r in found.records for s in r.parsed.skipped]
        return report

    def _memory_sync(self, records: list[memory.FileRecord], scope: dict[str, Any], *, prune: bool,
                     notes: list[tuple[dict[str, Any], list[str]]] | None = None,
                     bind_to: Path | None = None, before_commit: Callable[[], None] | None = None
                     ) -> MemoryImportReport:
        """Make the vault's memory files (and notes) match ``records``, in one transaction: write what
        changed, archive entries that are gone (with ``prune``, also files that are gone)."""
        agent, workspace = scope["agent_id"] or "", scope["workspace_hash"] or ""
        conn = self._conn()
        with read_snapshot(conn):
            select = ("SELECT e.id, e.category, e.key, v.content, v.summary, v.body, v.status FROM entities e "
                      "JOIN entity_versions v ON v.entity_id = e.id AND v.recorded_to_ms IS NULL "
                      "WHERE e.agent_id = ? AND e.workspace_hash = ? AND ")
            if prune:  # the whole folder: every memory file, entry and note of the scope
                rows = conn.execute(
                    select + "(e.category IN (?, ?) OR substr(e.category, 1, 7) = 'memory:')",
                    (agent, workspace, memory.FILE_CATEGORY, memory.NOTE_CATEGORY),
                ).fetchall()
            else:  # an edit of some files: only their entries and file entities
                categories = [memory.entry_category(r.name) for r in records] + [memory.FILE_CATEGORY]
                rows = conn.execute(select + "e.category IN (SELECT value FROM json_each(?))",
                                    (agent, workspace, json.dumps(categories))).fetchall()
        existing = {(r[1], r[2]): r for r in rows}
        names = {r.name for r in records}
        items: list[dict[str, Any]] = []
        for r in records:
            items.append(r.file_item(scope))
            items.extend(r.entry_items(scope))
        note_items = [n for n, _ in (notes or [])]
        wanted = {(it["category"], it["key"]) for it in items + note_items}
        changed, unchanged = [], 0
        for it in items + note_items:
            row = existing.get((it["category"], it["key"]))
            extras = {k: v for k, v in it["body"].items()}
            if row is not None and row[6] == "active" and row[3] == it["content"] and row[4] == it.get("summary") \
                    and json.loads(row[5]) == extras:
                unchanged += it["type"] == memory.ENTRY_TYPE
                continue
            changed.append(it)
        stale = []
        for (category, key), row in existing.items():
            if row[6] != "active" or (category, key) in wanted:
                continue
            in_file = category.startswith("memory:") and category[7:] in names
            if in_file or (prune and (category.startswith("memory:") or category in (memory.FILE_CATEGORY, memory.NOTE_CATEGORY))):
                stale.append((int(row[0]), category.startswith("memory:")))
        checked_items = [validate(RememberInput, it, prefix=f"{it['category']}/{it['key']}") for it in changed]
        links = [(n["key"], targets) for n, targets in (notes or []) if targets]
        report = MemoryImportReport(
            files=len(records), entries_created=sum(it["type"] == memory.ENTRY_TYPE for it in changed),
            entries_archived=sum(is_entry for _, is_entry in stale), entries_unchanged=unchanged,
            notes=len(note_items), links=0, skipped=[], bound_folder=str(bind_to) if bind_to else None)
        if not (checked_items or stale or links or bind_to or before_commit):
            return report
        plan = self._plan(lambda c: store.texts_to_embed(c, checked_items))

        def work(c: Any) -> int:
            now = self._now()
            if checked_items:
                store.remember_batch(c, checked_items, now, plan)
            for entity_id, _ in stale:
                store.forget(c, entity_id, None, None, now)
            made = 0
            if links:
                by_name: dict[str, int] = {}
                for entity_id, key in c.execute(
                    "SELECT e.id, e.key FROM entities e JOIN entity_versions v ON v.entity_id = e.id "
                    "AND v.recorded_to_ms IS NULL WHERE e.agent_id = ? AND e.workspace_hash = ? AND e.category = ? "
                    "AND v.status = 'active' ORDER BY e.key",
                    (agent, workspace, memory.NOTE_CATEGORY),
                ):
                    by_name.setdefault(key.rsplit("/", 1)[-1].casefold(), int(entity_id))
                for key, targets in links:
                    source = store.find_id(c, memory.NOTE_CATEGORY, key, agent, workspace)
                    ids = [by_name[t.casefold()] for t in targets if t.casefold() in by_name]
                    if source is not None and ids:
                        made += graph.link_many(c, source, ids, memory.LINK_RELATION, now)
            if bind_to is not None:
                memory.bind(c, bind_to, scope["agent_id"], scope["workspace_hash"])
            if before_commit is not None:
                before_commit()  # last: if it fails, the transaction rolls back
            return made

        report.links = self._write_planned(plan, work)
        return report

    def _memory_base(self, file: str, agent_id: str | None, workspace_hash: str | None, *,
                     adding: bool = False) -> tuple[bytes, Path | None, bool]:
        """The current bytes of a memory file (from the bound folder when there is one, else as
        stored), the path to rewrite (when bound), and whether the file exists at all."""
        conn = self._conn()
        with read_snapshot(conn):
            folder = memory.binding(conn, agent_id, workspace_hash)
            entity_id = store.find_id(conn, memory.FILE_CATEGORY, file, agent_id, workspace_hash)
            row = store.head_row(conn, entity_id) if entity_id is not None else None
        stored = memory.file_bytes(json.loads(row["body"])) if row is not None and row["status"] == "active" else None
        return memory.current(folder, file, stored, adding=adding)  # only imported files, only inside the folder

    @_edge
    def memory_unbind(self, *, agent_id: str | None = None, workspace_hash: str | None = None) -> bool:
        """Stop rewriting a folder's files for this scope; True when there was a binding."""
        validate(ScopeParams, _given(agent_id=agent_id, workspace_hash=workspace_hash))
        conn = self._conn()
        with read_snapshot(conn):
            had = memory.binding(conn, agent_id, workspace_hash) is not None
        if had:
            self._write(lambda c: memory.bind(c, None, agent_id, workspace_hash))
        return had

    @_edge
    def add_memory(self, file: str, section: str, text: str, date: str | None = None, *,
                   agent_id: str | None = None, workspace_hash: str | None = None) -> MemoryChange:
        """Add a dated entry (``date`` defaults to today, UTC) at the end of ``section`` of memory file
        ``file`` (both created if missing). When the vault is bound to a folder, the markdown file is
        rewritten atomically first, every other byte unchanged."""
        validate(AddMemoryParams, _given(file=file, section=section, text=text, date=date, agent_id=agent_id,
                                         workspace_hash=workspace_hash))
        if date is None:
            date = time.strftime("%Y-%m-%d", time.gmtime(self._now() / 1000))
        base, path, _ = self._memory_base(file, agent_id, workspace_hash, adding=True)
        try:
            data, offset = memory_files.add_entry(base, section.strip(), text.strip(), date)
        except ValueError as exc:  # the file's shape leaves no place where the entry would read back whole
            raise InvalidInput("text", str(exc)) from None
        rec = memory.record(file, data)
        entry = next((e for e in rec.parsed.entries if e.start == offset), None)
        if entry is None:
            raise InvalidInput("text", "would not read back as one dated entry (check its first line)")
        with self._memory_lock:
            self._memory_sync([rec], {"agent_id": agent_id, "workspace_hash": workspace_hash}, prune=False,
                              before_commit=(lambda: memory.write_atomic(path, data)) if path is not None else None)
        return MemoryChange(file=file, entry=MemoryEntry(file=file, section=entry.section, date=entry.date, text=entry.text),
                            written=str(path) if path is not None else None)

    @_edge
    def delete_memory(self, file: str, section: str, *, date: str | None = None, text: str | None = None,
                      agent_id: str | None = None, workspace_hash: str | None = None) -> MemoryChange:
        """Delete the one entry of ``section`` matching ``date`` and/or ``text`` (the whole entry text,
        or a part of it); refuses when none or several match. The entry stays in the vault's history;
        when bound to a folder, the markdown file is rewritten atomically."""
        validate(DeleteMemoryParams, _given(file=file, section=section, date=date, text=text, agent_id=agent_id,
                                            workspace_hash=workspace_hash))
        base, path, exists = self._memory_base(file, agent_id, workspace_hash)
        if not exists:
            raise NotFound(f"no memory file {file!r}")
        parsed = memory_files.parse(file, base)
        found = [e for e in parsed.entries if e.section == section.strip() and (date is None or e.date == date)
                 and (text is None or text == e.text or text in e.text)]
        if not found:
            raise NotFound(f"no entry in {file} / {section} matches")
        if len(found) > 1:
            raise Conflict(f"{len(found)} entries in {file} / {section} match; give the date and more of the text")
        data = memory_files.remove_entry(base, found[0])
        with self._memory_lock:
            self._memory_sync([memory.record(file, data)], {"agent_id": agent_id, "workspace_hash": workspace_hash},
                              prune=False, before_commit=(lambda: memory.write_atomic(path, data)) if path is not None else None)
        e = found[0]
        return MemoryChange(file=file, entry=MemoryEntry(file=file, section=e.section, date=e.date, text=e.text),
                            written=str(path) if path is not None else None)

    @_edge
    def get_memory(self, file: str, section: str | None = None, *, agent_id: str | None = None,
                   workspace_hash: str | None = None) -> MemoryText:
        """A memory file verbatim, or one of its ``##`` sections (heading included)."""
        validate(GetMemoryParams, _given(file=file, section=section, agent_id=agent_id, workspace_hash=workspace_hash))
        base, _, exists = self._memory_base(file, agent_id, workspace_hash)
        if not exists:
            raise NotFound(f"no memory file {file!r} (list them with list_memory_files)")
        text = base.decode("utf-8", errors="replace")
        if section is None:
            return MemoryText(file=file, section=None, text=text)
        parsed = memory_files.parse(file, base)
        match = next((s for s in parsed.sections if s.title == section.strip()), None)
        if match is None:
            raise NotFound(f"no section {section!r} in memory file {file!r}")
        return MemoryText(file=file, section=match.title, text=base[match.start : match.end].decode("utf-8", errors="replace"))

    @_edge
    def list_memory_files(self, *, agent_id: str | None = None, workspace_hash: str | None = None) -> MemoryFiles:
        """The memory files in scope, by name, with their entry counts and sections."""
        validate(ListMemoryFilesParams, _given(agent_id=agent_id, workspace_hash=workspace_hash))
        f = Filters(type=memory.FILE_TYPE, category=memory.FILE_CATEGORY, agent_id=agent_id, workspace_hash=workspace_hash)
        v = view(f, self._now())
        conn = self._conn()
        with read_snapshot(conn):
            rows = conn.execute(f"SELECT e.key, v.body, v.updated_at_ms FROM {FROM} WHERE {v.where} ORDER BY e.key",
                                v.params).fetchall()
            folder = memory.binding(conn, agent_id, workspace_hash)
        files = []
        for name, body, updated in rows:
            parsed = memory_files.parse(name, memory.file_bytes(json.loads(body)))
            files.append(MemoryFileInfo(file=name, entries=len(parsed.entries),
                                        sections=[s.title for s in parsed.sections], updated_at_ms=updated))
        return MemoryFiles(files=files, bound_folder=str(folder) if folder is not None else None)

    @_edge
    def memory_export(self, folder: str | os.PathLike[str], *, agent_id: str | None = None,
                      workspace_hash: str | None = None) -> MemoryExportReport:
        """Write every memory file in scope to ``folder/<file>.md`` (atomically, byte for byte as stored)."""
        validate(ScopeParams, _given(agent_id=agent_id, workspace_hash=workspace_hash))
        target = Path(folder)
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InvalidInput("folder", f"cannot create {folder}: {exc.strerror}") from None
        f = Filters(type=memory.FILE_TYPE, category=memory.FILE_CATEGORY, agent_id=agent_id, workspace_hash=workspace_hash)
        v = view(f, self._now())
        conn = self._conn()
        with read_snapshot(conn):
            rows = conn.execute(f"SELECT e.key, v.body FROM {FROM} WHERE {v.where} ORDER BY e.key", v.params).fetchall()
        names = [name for name, _ in rows]
        if len(set(names)) < len(names):
            raise InvalidInput("agent_id", "memory files of several scopes share a name; export one scope at a time")
        written = memory.export_files(target, [(name, memory.file_bytes(json.loads(body))) for name, body in rows])
        return MemoryExportReport(folder=str(target), files=written)

    @_edge
    def memory_recall(self, query: str, file: str | None = None, limit: int = 50, *, agent_id: str | None = None,
                      workspace_hash: str | None = None) -> MemoryRecallResult:
        """Entries of the memory files about ``query``, oldest first (rules in docs/memory-files.md)."""
        validate(MemoryRecallParams, _given(query=query, file=file, limit=limit, agent_id=agent_id,
                                            workspace_hash=workspace_hash))
        empty = MemoryRecallResult(entries=[], total=0, truncated=False, search_mode="fts", reranked=False)
        if file is not None and memory.check_name(file):
            return empty  # no memory file can have that name
        index = self._entry_index()
        rows = index.rows(agent_id, workspace_hash, file)
        if not len(rows):
            return empty
        topic = memory.topic(query)  # content words: "what do I think about X" is asked about X
        stems = list(topic.stems)
        share = index.coverage(stems, rows)
        meaning = index.vectors is not None and self._embedder is not None
        if meaning:
            conn = self._conn()
            with read_snapshot(conn):
                identity, dimension = self._embedder_model()
                vectors.check_model(conn, identity, dimension)  # another model's query would rank noise
            embedder = self._embedder
            assert embedder is not None
            known = self._heading_vectors.setdefault(identity, {})
            headings = index.heading_vectors(lambda texts: checked(embedder, texts), known)
            scores = index.meaning(self._embed_query(topic.text), headings, rows)
        else:
            scores = np.full(len(rows), np.nan)
        if not stems:
            share = np.zeros(len(rows))  # no content word: nothing can hold "every word"
        matching = index.matching(scores, share)
        cross = self._cross()
        reranked = cross is not None
        if cross is not None:  # the operator's cross-encoder judges each match against the query
            # the most relevant matches only (it judges one pair at a time): POOL, or 4 x limit
            matched = index.candidates(rows, scores, share, matching)[: max(memory.POOL, 4 * limit)]
            judged = [float(s) for s in cross.predict([(query, index.entry(c.entity_id)[3]) for c in matched])] if matched else []
            kept, total = memory.rerank(matched, judged, limit)
            reranked = bool(kept)
        else:
            kept, total = index.top(rows, scores, share, matching, limit)
        mode = "hybrid" if meaning else "fts"
        if not kept and stems:  # below the relevance threshold: relax to any topic word
            kept, total = index.top(rows, scores, share, share > 0, limit)
            mode = "fts"
        entries = []
        for c in kept:
            f, section, date, text = index.entry(c.entity_id)
            entries.append(MemoryEntry(file=f, section=section, date=date, text=text))
        return MemoryRecallResult(entries=entries, total=total, truncated=total > len(entries), search_mode=mode,
                                  reranked=reranked)

    def _entry_index(self) -> memory.EntryIndex:
        """The in-memory index of memory entries, rebuilt when the vault's current versions changed
        (or an expiry or validity boundary passed)."""
        conn = self._conn()
        now = self._now()
        with read_snapshot(conn):
            seq = int(conn.execute("SELECT coalesce(max(seq), 0) FROM head_changes").fetchone()[0])
            kept = self._entries
            if kept is not None and kept.seq == seq and (kept.next_change is None or now < kept.next_change):
                return kept
            v = view(Filters(type=memory.ENTRY_TYPE), now)
            rows = conn.execute(
                f"SELECT e.id, e.agent_id, e.workspace_hash, v.content, v.body, x.embedding, v.expires_at_ms, "
                f"v.valid_to_ms FROM {FROM} LEFT JOIN version_vectors x ON x.vid = v.vid WHERE {v.where} ORDER BY e.id",
                v.params,
            ).fetchall()
            future = conn.execute(
                "SELECT min(valid_from_ms) FROM entity_versions WHERE recorded_to_ms IS NULL AND valid_from_ms > ?", (now,)
            ).fetchone()[0]
            model = vectors.model(conn)
        bounds = [t for r in rows for t in (r[6], r[7]) if t is not None and t > now] + ([future] if future else [])
        index = memory.EntryIndex([r[:6] for r in rows], seq, min(bounds) if bounds else None,
                                  model[1] if model is not None else None)
        self._entries = index
        return index

    def _cross(self) -> Any:
        """The cross-encoder for memory_recall: the one passed to the vault, else the operator's
        ``PERSEUS_VAULT_CROSS_ENCODER`` model folder (loaded once), else None."""
        if self._cross_encoder is None:
            path = os.environ.get(memory.CROSS_ENCODER_ENV)
            if path:
                self._cross_encoder = memory.load_cross_encoder(path)
        return self._cross_encoder

    @_edge
    def search(self, query: str, **params: Any) -> RecallResult:
        """Recall over the notes of an imported folder (outside the memory layer); ``recall``'s parameters."""
        if "type" in params:
            raise InvalidInput("type", "search is over markdown notes; use recall for other types")
        return self._recall(validate(RecallParams, {"query": query, "type": memory.NOTE_TYPE, **params}))

    # --- reading -----------------------------------------------------------------------------

    @_edge
    def recall(self, query: str, **params: Any) -> RecallResult:
        """Find memories for ``query`` (docs/recall.md): keyword, dense or hybrid; every filter and knob by wire name."""
        return self._recall(validate(RecallParams, {"query": query, **params}))

    @_edge
    def recall_by_vector(self, vector: Sequence[float] | np.ndarray, **params: Any) -> RecallResult:
        """Dense recall with a query vector the caller embedded with the vault's model (framework
        adapters that embed on their side); ``recall``'s filters and knobs, except ``query`` and ``mode``."""
        for name in ("query", "mode"):
            if name in params:
                raise InvalidInput(name, "does not apply to recall_by_vector (the vector is the query)")
        try:
            query = np.asarray(vector, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("vector", f"must be a sequence of numbers ({exc})") from None
        if query.ndim != 1 or not np.isfinite(query).all() or not np.any(query):
            raise InvalidInput("vector", "must be one non-zero row of finite numbers")
        query = query / np.linalg.norm(query)
        return self._recall(validate(RecallParams, {"query": "", **params}), vector=query)

    def _recall(self, p: RecallParams, only: list[int] | None = None, vector: np.ndarray | None = None) -> RecallResult:
        arms = recall.Arms(
            keyword_index=self._keyword_index,
            vector_index=self._vector_index,
            embed_query=self._embed_query if self._embedder is not None else None,
            embedder_model=self._embedder_model if self._embedder is not None else None,
            fusion=self._fusion,
        )
        result = recall.recall(self._conn(), p, self._now(), self._reinforce, arms, only=only, vector=vector)
        self._warm(result.search_mode)
        return result

    def _embedder_model(self) -> tuple[str, int]:
        """(identity, dimension) of the embedder, read only when a mode needs it (a remote provider
        answers this with a network call)."""
        assert self._embedder is not None
        return self._embedder.identity, self._embedder.dimension

    def _embed_query(self, text: str) -> np.ndarray:
        assert self._embedder is not None
        last = self._last_query
        if last is not None and last[0] == text and last[1] is self._embedder:
            return last[2]  # prepare embeds its context for triggers, then recall asks again
        vector: np.ndarray = checked(self._embedder, [text])[0]
        self._last_query = (text, self._embedder, vector)
        return vector

    def _warm(self, mode: str) -> None:
        """After a recall, build the in-memory indexes it could use (in the background)."""
        build = lambda: connect(self.path, self._driver)  # noqa: E731
        if self._keyword_index is not None and not self._keyword_index.ready and mode in ("fts5", "hybrid"):
            self._keyword_index.start_background_build(build)
        if self._vector_index is not None and not self._vector_index.ready and mode in ("dense", "hybrid"):
            self._vector_index.start_background_build(build)

    @_edge
    def wait_for_keyword_index(self, timeout: float = 600.0) -> bool:
        """Build the in-memory keyword index now (if not yet built) and wait for it; True when ready."""
        return self._wait(self._keyword_index, timeout)

    @_edge
    def wait_for_vector_index(self, timeout: float = 600.0) -> bool:
        """Build the in-memory vector index now (if not yet built) and wait for it; True when ready."""
        return self._wait(self._vector_index, timeout)

    def _wait(self, index: HeadMirror | None, timeout: float) -> bool:
        if index is None:
            return False
        deadline = time.monotonic() + timeout
        index.start_background_build(lambda: connect(self.path, self._driver))
        while not index.ready and not index.disabled and time.monotonic() < deadline:
            time.sleep(0.01)
        return index.ready

    # --- embeddings ------------------------------------------------------------------------------

    def _plan(self, texts_of: Callable[[Any], list[str]], items: Sequence[RememberInput] = ()) -> store.VectorPlan | None:
        """Embed, before the write transaction, the texts a write will store, and the trigger phrases
        of ``items`` not embedded yet (none without an embedder): embedding a phrase once, when it is
        written, keeps the reads that match triggers (``prepare``, every turn) to embedding their context."""
        if self._embedder is None:
            return None
        conn = self._conn()
        identity = self._embedder.identity
        with read_snapshot(conn):
            vectors.check_model(conn, identity, self._embedder.dimension)
            texts = texts_of(conn)
            phrases = store.phrases_to_embed(conn, items, identity) if items else []
        plan = store.VectorPlan(identity, self._embedder.dimension)
        work = list(dict.fromkeys(texts + phrases))  # one model call for both, where they fit a batch
        made: dict[str, np.ndarray] = {}
        for start in range(0, len(work), EMBED_BATCH):
            chunk = work[start : start + EMBED_BATCH]
            made.update(zip(chunk, checked(self._embedder, chunk)))
        plan.by_text.update((t, made[t]) for t in texts)
        plan.phrases.update((p, made[p]) for p in phrases)
        self._trigger_vectors.setdefault(identity, {}).update(plan.phrases)
        return plan

    @_edge
    def embed(self, reembed: bool = False, progress: Callable[[int, int], None] | None = None) -> EmbedReport:
        """Give every version a vector: backfill the missing ones (current versions first), or, with
        ``reembed=True``, replace all of them with the configured embedder's (after a model change)."""
        reembed = validate(EmbedParams, {"reembed": reembed}).reembed
        if self._embedder is None:
            raise NotSupported("this vault was opened without an embedder (embedder=False)")
        if progress is not None and not callable(progress):
            raise InvalidInput("progress", "must be a function taking (done, total)")
        embedder = self._embedder
        if reembed:
            checked(embedder, ["a probe before any vector is dropped"])  # a broken embedder stops here
            self._write(vectors.forget_model)
            if self._vector_index is not None:
                self._vector_index.reset()
        conn = self._conn()
        with read_snapshot(conn):
            vectors.check_model(conn, embedder.identity, embedder.dimension)
            total = vectors.missing_count(conn)
        done = 0
        while True:
            with read_snapshot(conn):
                batch = vectors.missing(conn, EMBED_BATCH * 8)
            if not batch:
                break
            texts = [embedding_text(content, summary) for _, content, summary, _ in batch]
            unique = list(dict.fromkeys(texts))
            by_text = dict(zip(unique, checked(embedder, unique)))

            def work(c: Any, batch: list[tuple[int, str, str | None, bool]] = batch, texts: list[str] = texts) -> None:
                vectors.claim(c, embedder.identity, embedder.dimension)
                alive = vectors.existing(c, [b[0] for b in batch])
                rows = [(vid, by_text[text]) for (vid, _, _, _), text in zip(batch, texts) if vid in alive]
                vectors.write(c, rows, heads=[vid for vid, _, _, head in batch if head and vid in alive])

            self._write(work)
            done += len(batch)
            if progress is not None:
                progress(min(done, total), total)
        return EmbedReport(embedded=done, model=embedder.identity, dimension=embedder.dimension, reembedded=reembed)

    def _reinforce(self, ids: list[int]) -> None:
        # Usage counters are not user data: skip the fsync that FULL synchronous would cost.
        conn = self._conn()
        conn.execute("PRAGMA synchronous = NORMAL")
        try:
            write_transaction(conn, lambda c: store.reinforce(c, ids, self._now()))
        finally:
            conn.execute(f"PRAGMA synchronous = {self._pool.synchronous}")

    @_edge
    def scan(self, cursor: str | None = None, limit: int = 100, **filters: Any) -> ScanPage:
        """One keyset page of every visible entity by ascending id; feed ``next_cursor`` back for the next."""
        p = validate(ScanParams, {"cursor": cursor, "limit": limit, **filters})
        conn = self._conn()
        with read_snapshot(conn):
            return scan.scan(conn, p, self._now())

    @_edge
    def history(self, category: str, key: str, *, agent_id: str | None = None, workspace_hash: str | None = None,
                limit: int = 20, offset: int = 0) -> HistoryPage:
        """Every version of a fact, newest first, paginated, with ``total``."""
        p = validate(HistoryParams, _given(category=category, key=key, agent_id=agent_id,
                                           workspace_hash=workspace_hash, limit=limit, offset=offset))
        conn = self._conn()
        with read_snapshot(conn):
            return temporal.history(conn, self._resolve(conn, p), p.limit, p.offset, self._now())

    @_edge
    def as_of(self, category: str, key: str, as_of_unix_ms: int, *, agent_id: str | None = None,
              workspace_hash: str | None = None) -> Entity | None:
        """The version of a fact the vault believed at ``as_of_unix_ms`` (``None`` if it had none then)."""
        p = validate(AsOfParams, _given(category=category, key=key, as_of_unix_ms=as_of_unix_ms, agent_id=agent_id,
                                        workspace_hash=workspace_hash))
        conn = self._conn()
        with read_snapshot(conn):
            return temporal.as_of(conn, self._resolve(conn, p), p.as_of_unix_ms)

    @_edge
    def valid_at(self, category: str, key: str, valid_at_unix_ms: int, *, agent_id: str | None = None,
                 workspace_hash: str | None = None) -> Entity | None:
        """The version of a fact true in the world at ``valid_at_unix_ms``, per current knowledge."""
        p = validate(ValidAtParams, _given(category=category, key=key, valid_at_unix_ms=valid_at_unix_ms,
                                           agent_id=agent_id, workspace_hash=workspace_hash))
        conn = self._conn()
        with read_snapshot(conn):
            return temporal.bitemporal(conn, self._resolve(conn, p), self._now(), p.valid_at_unix_ms)

    @_edge
    def bitemporal(self, category: str, key: str, as_of_unix_ms: int, valid_at_unix_ms: int, *,
                   agent_id: str | None = None, workspace_hash: str | None = None) -> Entity | None:
        """The version believed at ``as_of_unix_ms`` to be true at ``valid_at_unix_ms``."""
        p = validate(BitemporalParams, _given(category=category, key=key, as_of_unix_ms=as_of_unix_ms,
                                              valid_at_unix_ms=valid_at_unix_ms, agent_id=agent_id,
                                              workspace_hash=workspace_hash))
        conn = self._conn()
        with read_snapshot(conn):
            return temporal.bitemporal(conn, self._resolve(conn, p), p.as_of_unix_ms, p.valid_at_unix_ms)

    def _resolve(self, conn: Any, p: FactParams) -> int:
        return temporal.resolve(conn, p.category, p.key, p.agent_id, p.workspace_hash)

    # --- moving data in and out --------------------------------------------------------------

    @_edge
    def import_jsonl(self, source: str | os.PathLike[str] | IO[str] | Iterable[str],
                     progress: Callable[[int, int], None] | None = None) -> ImportReport:
        """Import a JSONL file (an export, or lines shaped like ``remember`` arguments) in one transaction."""
        if isinstance(source, (str, os.PathLike)):
            try:
                with open(source, encoding="utf-8") as handle:
                    records = import_export.read_records(handle)
            except (OSError, UnicodeDecodeError) as exc:
                raise InvalidInput("source", f"cannot read {source}: {exc}") from None
        else:
            records = import_export.read_records(source)
        parsed = import_export.parse_records(records)
        plan = self._plan(lambda conn: import_export.texts(parsed[0], parsed[2]))
        report: ImportReport = self._write_planned(
            plan, lambda c: import_export.import_records(c, parsed, self._now(), progress, plan)
        )
        return report

    @_edge
    def export_jsonl(self, target: str | os.PathLike[str] | IO[str], *, agent_id: str | None = None,
                     workspace_hash: str | None = None) -> int:
        """Write every entity (with its history) and link in scope as JSONL; returns the line count."""
        validate(ScopeParams, _given(agent_id=agent_id, workspace_hash=workspace_hash))
        conn = self._conn()
        count = 0
        with read_snapshot(conn):
            lines = import_export.export_lines(conn, agent_id, workspace_hash)
            if isinstance(target, (str, os.PathLike)):
                try:
                    handle = import_export.open_target(target, encrypted=self._driver.encrypted)
                except OSError as exc:
                    raise InvalidInput("target", f"cannot write {target}: {exc.strerror or exc}") from None
                with handle:
                    for line in lines:
                        handle.write(line + "\n")
                        count += 1
            else:
                for line in lines:
                    target.write(line + "\n")
                    count += 1
        return count

    @_edge
    def hygiene(self, *, limit: int = 100, min_age_days: int = 7, **filters: Any) -> HygieneReport:
        """Report the active memories that weaken a startup block, least actionable first, each with
        its reasons (rules in docs/hygiene.md). Read-only: nothing is reinforced.

        ``filters``: ``type``, ``category``, ``topic_path``, ``agent_id``, ``workspace_hash``.
        """
        p = validate(HygieneParams, {**filters, "limit": limit, "min_age_days": min_age_days})
        f = Filters(type=p.type, category=p.category, topic_path=p.topic_path, agent_id=p.agent_id,
                    workspace_hash=p.workspace_hash)
        conn = self._conn()
        with read_snapshot(conn):
            return hygiene.hygiene(conn, f, self._now(), p.min_age_days, p.limit)

    # --- looking after the file --------------------------------------------------------------

    @_edge
    def stats(self) -> Stats:
        conn = self._conn()
        with read_snapshot(conn):
            keyword_index = self._keyword_index.describe() if self._keyword_index is not None else "off"
            vector_index = self._vector_index.describe() if self._vector_index is not None else "off"
            return maintenance.stats(
                conn, self.path, self._driver.name, self._driver.sqlite_version, keyword_index, vector_index
            ).model_copy(update={"encrypted": self._driver.encrypted})

    @_edge
    def check(self) -> CheckReport:
        """Integrity of the file, keyword indexes in sync with their rows, and the vault's invariants."""
        # No snapshot: FTS5's integrity-check is issued as a write statement.
        return maintenance.check(self._conn())

    @_edge
    def reindex(self) -> CheckReport:
        """Rebuild the keyword indexes from the rows, then check."""
        self._write(maintenance.reindex)
        for index in (self._keyword_index, self._vector_index):
            if index is not None:
                index.reset()
        return self.check()

    @_edge
    def rekey(self, new_key: str | bytes) -> None:
        """Re-encrypt the vault under ``new_key`` (no memory is lost); afterwards only ``new_key`` opens it.

        Refused (StorageError, nothing changed) while another process has the file open: it would keep
        the old key.
        """
        if not self._driver.encrypted:
            raise Conflict("the vault is not encrypted; rekey changes the key of an encrypted vault")
        new = resolve_key(new_key)
        assert new is not None
        synchronous = self._pool.synchronous
        # The rekey needs the file to itself, and every open connection holds the old key: close them
        # all, rekey on a connection of its own, then start afresh (under the old key if it failed).
        self._pool.close()
        conn = connect(self.path, self._driver)
        try:
            _rekey(conn, new)
            self._driver = choose_driver(key=new)
        finally:
            conn.close()
            self._pool = ConnectionPool(self.path, self._driver, synchronous=synchronous)

    @_edge
    def backup(self, target: str | os.PathLike[str]) -> str:
        """A consistent copy of the vault at ``target`` while others keep writing."""
        folder = Path(target).resolve().parent
        if not folder.is_dir():
            raise InvalidInput("target", f"folder {folder} does not exist")
        return maintenance.backup(self._conn(), str(target))
