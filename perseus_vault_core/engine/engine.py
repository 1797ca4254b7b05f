"""The engine: what every verb shares, held once per open vault.

A :class:`Vault` is a thin facade: each verb validates its arguments into a params model and hands
them to the module that owns the concept. Those modules are given this object, which holds the
parts they share and the few operations built on them:

- the storage backend (:mod:`storage`): connections (one per thread), read snapshots and write
  transactions, the driver (plaintext or encrypted);
- the clock, the embedder and hybrid recall's default fusion weights;
- the in-memory indexes (:mod:`indexes`) and the caches (trigger-phrase and memory-file heading
  vectors, the last query's vector), and what a feature keeps for the open vault without the engine
  knowing it (:meth:`Engine.kept`: the link graph's partitions, the memory-entry index);
- writes that need vectors (:meth:`plan` embeds before the transaction, :meth:`write_planned`
  retries when the transaction meets a text its plan did not foresee), reinforcement, and the
  wiring of recall to its arms.

Nothing here is a verb; nothing here knows about MCP, the CLI or a framework.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..contract.errors import InvalidInput, NotFound
from ..contract.models import Entity, RecallResult
from ..contract.params import Fusion, OpenParams, RecallParams, RememberInput
from ..embeddings import Embedder, LazyEmbedder, checked
from ..indexes import settle, snapshot
from ..indexes.keyword import KeywordIndex
from ..indexes.mirror import HeadMirror
from ..indexes.vector import VectorIndex
from ..primitives.background import Background
from ..primitives.forking import GATE
from ..recall import pipeline as recall
from ..recall.arms import Arms
from ..recall.curated import KEPT, current
from ..recall.kept_relations import KeptRelations
from ..records import store
from ..storage import Connection, open_backend
from ..storage.urls import is_url, redact

T = TypeVar("T")
K = TypeVar("K")
EMBED_BATCH = 256  # texts per embedder call when writing
Clock = Callable[[], int]


# Recalls a process answers before it keeps every head's columns in memory (indexes/heads.py): that memory
# is the process's own (about 60 MB at most), worth it to a server, not to a one-shot reader or a CLI call.
HEADS_AFTER = 100


def wall_clock() -> int:
    return time.time_ns() // 1_000_000


class Engine:
    """The shared state of one open vault (see the module docstring)."""

    def __init__(
        self,
        options: OpenParams,
        *,
        clock: Clock | None,
        embedder: Embedder | None,
        fusion: Fusion,
        cross_encoder: Any,
        judge: Any = None,
    ) -> None:
        self.path = options.path
        database = is_url(self.path)
        missing = f"no vault at {redact(self.path)} (create one with `perseus-vault init` or by remembering something)"
        if (
            not database
            and not options.create
            and (not Path(self.path).is_file() or Path(self.path).stat().st_size == 0)
        ):
            # An empty file is no vault either: SQLite would make one of it, and a read must not write.
            raise NotFound(missing)
        if not database and options.create:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.backend = open_backend(self.path, key=options.key, synchronous=options.synchronous)
        if database and not options.create and not self.backend.exists():
            self.backend.close()
            raise NotFound(missing)
        # Versions are stamped by one clock: the test's, the database server's (every host then agrees), or this host's.
        self.clock = clock or self.backend.clock or wall_clock
        self.backend.migrate(self.clock())
        self.keyword_index = KeywordIndex(self.backend) if options.keyword_index else None
        self.vector_index = VectorIndex(self.backend) if options.vector_index else None
        self.recalls = 0  # answered by this process: past HEADS_AFTER it is a long-running one
        self.wrote_from: int | None = (
            None  # the log's end before this process's first write (close() settles)
        )
        self.settled: list[settle.Settled] = []  # what close() did for each index
        if self.keyword_index is not None and self.vector_index is not None:
            self.vector_index.heads = self.keyword_index.heads  # one memory of the heads for both arms
        self.background = Background()  # the indexes' threads, ended by close()
        for index in (self.keyword_index, self.vector_index):
            if index is not None:
                index.background = self.background
                if index.heads is not None:
                    index.heads.background = self.background
        for index, wanted in (
            (self.keyword_index, options.keyword_index),
            (self.vector_index, options.vector_index),
        ):
            if index is not None:  # saved beside the file, opened by the next process (indexes/snapshot.py)
                index.snapshot_path = self.backend.mirror_file(index.NAME)
                index.saved_only = wanted == "saved"
        self.embedder: Embedder | None = embedder
        self.fusion = fusion
        # What curation acts on, held warm (recall/kept_relations.py) beside an embedded file, where its three
        # numbers a recall are three look-ups; a PostgreSQL server answers the window's links in one round trip.
        self.relations = (
            None
            if database
            else KeptRelations(
                KEPT, lambda c: self.backend.next_id(c, "links") - 1, self.backend.changes, current=current
            )
        )
        # Whether a version names a time (recall/asked.py), by version: versions never change and their ids are never
        # reused, so what was read once holds while the vault is open.
        self.named_times: dict[int, bool] = {}
        self.cross_encoder = cross_encoder
        self.judge = (
            judge  # decides on each new memory's candidates (features/relations.py), when the app has one
        )
        self.memory_lock = threading.Lock()  # one add/delete at a time rewrites a memory file in this process
        # model -> (scope key, phrase) -> vector: each scope's own, as stored (storage/base.py)
        self.trigger_vectors: dict[str, dict[tuple[str, str], np.ndarray]] = {}
        self.heading_vectors: dict[str, dict[str, np.ndarray]] = {}  # model -> memory-file heading -> vector
        self._last_query: tuple[str, Embedder, np.ndarray] | None = None
        self._kept: dict[type, object] = {}  # what the features keep for this open vault (kept())
        self._kept_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        options: OpenParams,
        *,
        clock: Clock | None,
        embedder: Embedder | bool | None,
        fusion: Fusion | None,
        cross_encoder: Any,
        judge: Any = None,
    ) -> Engine:
        """Resolve the embedder choice (None: the configured default, False: keyword-only) and open."""
        if embedder is None and os.environ.get("PERSEUS_VAULT_EMBEDDER") == "none":
            embedder = False  # the operator runs this vault keyword-only
        chosen: Embedder | None
        if embedder is False:
            chosen = None
        elif embedder is None:
            chosen = LazyEmbedder(threads=options.threads)
        elif isinstance(embedder, Embedder):
            chosen = embedder
        else:
            raise InvalidInput("embedder", "must have identity, dimension and embed(texts), or be False")
        if cross_encoder is not None and not callable(getattr(cross_encoder, "predict", None)):
            raise InvalidInput("cross_encoder", "must have predict(pairs) returning one score per pair")
        if judge is not None and not callable(judge):
            raise InvalidInput(
                "judge", "must be callable: judge(memory, candidates) -> {candidate id: verdict}"
            )
        return cls(
            options,
            clock=clock,
            embedder=chosen,
            fusion=fusion or Fusion(),
            cross_encoder=cross_encoder,
            judge=judge,
        )

    def close(self) -> None:
        """End the background work (its threads hold connections and may be writing a snapshot); after
        writes, bring the saved indexes current for the next process (indexes/settle.py); then close
        every connection; the SQLite backend checkpoints the WAL into the file as it does."""
        self.background.close()
        if self.wrote_from is not None:
            mirrors = [i for i in (self.keyword_index, self.vector_index) if i is not None]
            self.settled = settle.settle(self.backend, mirrors, since=self.wrote_from)
        self.backend.close()

    # --- connections and transactions -----------------------------------------------------------

    def conn(self) -> Connection:
        """This thread's connection."""
        return self.backend.conn()

    def now(self) -> int:
        return self.clock()

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """This thread's connection inside one read snapshot."""
        conn = self.conn()
        with self.backend.read_snapshot(conn):
            yield conn

    def read(self, work: Callable[[Connection], T]) -> T:
        with self.reading() as conn:
            return work(conn)

    def write(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one write transaction (retried on a busy file), committed before returning."""
        if self.wrote_from is None:  # close() then brings the saved indexes current
            self.wrote_from = self.backend.changes.position(self.conn())
        return self.backend.write(self.conn(), work)

    def write_planned(self, plan: store.VectorPlan | None, work: Callable[[Connection], T]) -> T:
        """A write whose new versions need vectors (``plan``: :meth:`plan`), with this vault's transaction and
        embedder: a text the plan did not foresee is embedded and the write run again (:func:`store.write_planned`
        states the protocol)."""

        def embed(texts: list[str]) -> np.ndarray:
            assert self.embedder is not None
            return checked(self.embedder, texts)

        return store.write_planned(self.write, embed, plan, work)

    def entity(self, entity_id: int) -> Entity:
        """The current version of an entity that exists (just written or checked)."""
        row = store.head_row(self.conn(), entity_id)
        assert row is not None
        return store.to_entity(row, self.now())

    def entities(self, ids: Sequence[int]) -> list[Entity]:
        rows = store.head_rows(self.conn(), list(ids))
        now = self.now()
        return [store.to_entity(rows[i], now) for i in ids]

    def reinforce(self, ids: list[int]) -> None:
        """Count a retrieval of ``ids``. Usage counters are not user data: no fsync for them. A read-only
        database (a replica) cannot count them: its readers leave that to the primary's (docs/postgres.md)."""
        if self.backend.read_only:
            return
        self.backend.write_unsynced(self.conn(), lambda c: store.reinforce(c, ids, self.now()))

    # --- embedding -------------------------------------------------------------------------------

    def plan(
        self,
        texts_of: Callable[[Connection], list[str]],
        items: Sequence[RememberInput] = (),
        known: Callable[[Connection, list[str]], dict[str, np.ndarray]] | None = None,
    ) -> store.VectorPlan | None:
        """Embed, before the write transaction, the texts a write will store, and the trigger phrases
        of ``items`` not embedded yet (none without an embedder): embedding a phrase once, when it is
        written, keeps the reads that match triggers (``prepare``, every turn) to embedding their context.
        ``known`` may supply vectors for some of the texts from the same snapshot (the model embeds the rest)."""
        if self.embedder is None:
            return None
        identity = self.embedder.identity
        with self.reading() as conn:
            self.backend.vectors.check_model(conn, identity, self.embedder.dimension)
            texts = texts_of(conn)
            given = known(conn, texts) if known is not None and texts else {}
            phrases = store.phrases_to_embed(self.backend, conn, items, identity) if items else []
        plan = store.VectorPlan(identity, self.embedder.dimension)
        made = self.embed_texts(
            list(dict.fromkeys([t for t in texts if t not in given] + [p for _, p in phrases]))
        )
        made.update(given)
        plan.by_text.update((t, made[t]) for t in texts)
        plan.phrases.update((w, made[w[1]]) for w in phrases)
        self.trigger_vectors.setdefault(identity, {}).update(plan.phrases)
        return plan

    def embed_texts(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """``texts`` embedded in batches of EMBED_BATCH, by text."""
        assert self.embedder is not None
        made: dict[str, np.ndarray] = {}
        for start in range(0, len(texts), EMBED_BATCH):
            chunk = list(texts[start : start + EMBED_BATCH])
            made.update(zip(chunk, checked(self.embedder, chunk)))
        return made

    def embedder_model(self) -> tuple[str, int]:
        """(identity, dimension) of the embedder, read only when a mode needs it (a remote provider
        answers this with a network call)."""
        assert self.embedder is not None
        return self.embedder.identity, self.embedder.dimension

    def embed_query(self, text: str) -> np.ndarray:
        assert self.embedder is not None
        last = self._last_query
        if last is not None and last[0] == text and last[1] is self.embedder:
            return last[2]  # prepare embeds its context for triggers, then recall asks again
        vector: np.ndarray = checked(self.embedder, [text], query=True)[0]  # its query side, if it has one
        self._last_query = (text, self.embedder, vector)
        return vector

    def kept(self, kind: type[K], make: Callable[[], K]) -> K:
        """The one ``kind`` of thing a feature keeps for this open vault (its cache: the link graph's
        partitions, the memory-entry index), made by ``make`` on first use. The engine holds it for the
        feature and knows nothing of it, so that it imports no feature."""
        with self._kept_lock:
            found = self._kept.get(kind)
            if found is None:
                found = self._kept[kind] = make()
        assert isinstance(found, kind)
        return found

    # --- recall and the indexes ------------------------------------------------------------------

    def arms(self) -> Arms:
        """What recall is lent: the backend, the in-memory indexes, the query embedder and the fusion."""
        return Arms(
            backend=self.backend,
            keyword_index=self.keyword_index,
            vector_index=self.vector_index,
            embed_query=self.embed_query if self.embedder is not None else None,
            embedder_model=self.embedder_model if self.embedder is not None else None,
            fusion=self.fusion,
            relations=self.relations,
            named_times=self.named_times,
        )

    def recall(
        self, p: RecallParams, only: list[int] | None = None, vector: np.ndarray | None = None
    ) -> RecallResult:
        """Recall (:mod:`recall`) with this vault's arms, count what it retrieved (after its read: reinforcement
        never changes the order it follows), then warm the indexes the mode could use."""
        result, retrieved = recall.recall(self.conn(), p, self.now(), self.arms(), only=only, vector=vector)
        if retrieved:
            self.reinforce(retrieved)
        self.recalls += 1
        self.warm(result.search_mode)
        if p.curate:
            self.warm_relations()
        return result

    def warm_relations(self) -> None:
        """Hold every relation curation acts on (recall/kept_relations.py), read in the background once."""
        held = self.relations
        if held is None or held.complete or held.loading:
            return
        held.loading = True

        def between_batches() -> None:  # no SQLite call in progress, no lock held
            GATE.checkpoint()  # a fork waiting for the load happens here (forking.py)
            self.background.check()  # the vault is closing: end here

        def load() -> None:
            with GATE.inside():  # a fork never copies this thread inside SQLite (primitives/forking.py)
                try:
                    conn = self.backend.connect()
                    try:
                        with self.backend.read_snapshot(conn):
                            held.load(conn, between_batches)
                    finally:
                        conn.close()
                except Exception:  # noqa: BLE001 - recall reads them as it meets them, as before the load
                    held.loading = False

        if not self.background.start("kept-relations", load):
            held.loading = False

    def nearest(
        self, p: RecallParams, vector: np.ndarray | None = None, warm: bool = True
    ) -> list[tuple[int, float]]:
        """The memories nearest a vector (else a text's words) by one arm (:func:`recall.nearest`); unless
        ``warm`` is false, it warms that arm's index, as a recall does, so the next look-up answers from memory."""
        found = recall.nearest(self.conn(), p, self.now(), self.arms(), vector)
        if warm:
            self.warm("dense" if vector is not None else "fts5")
        return found

    def warm(self, mode: str) -> None:
        """After a recall, build the in-memory indexes it could use (in the background), or save a
        snapshot of one that moved far past its last (also in the background)."""
        build = self.backend.connect
        for index, modes in (
            (self.keyword_index, ("fts5", "hybrid")),
            (self.vector_index, ("dense", "hybrid")),
        ):
            if index is None or mode not in modes or index.saved_only:
                continue
            if index.ready:
                index.save_if_behind(build)
                if index.heads is not None and self.recalls >= HEADS_AFTER:
                    index.heads.fill_in_background(build)  # the walk's columns in memory (indexes/heads.py)
            else:
                index.start_background_build(build)

    def forget_snapshots(self) -> None:
        """After a purge: saved snapshots may hold the purged memory's words and vector; delete them
        (the next build saves new ones, without it)."""
        position = self.backend.changes.position(self.conn())
        for index, kind in ((self.keyword_index, KeywordIndex), (self.vector_index, VectorIndex)):
            if index is not None:
                index.forget_snapshot(position)
            elif (path := self.backend.mirror_file(kind.NAME)) is not None:
                snapshot.remove(path)  # saved by another process: this one keeps no index, but the file goes

    def wait(self, index: HeadMirror | None, timeout: float) -> bool:
        """Build ``index`` now (if not yet built) and wait for it; True when ready."""
        if index is None:
            return False
        if index.saved_only:  # never built here: ready when a saved one was opened
            return index.ready
        deadline = time.monotonic() + timeout
        index.start_background_build(self.backend.connect)
        while not index.ready and not index.disabled and time.monotonic() < deadline:
            time.sleep(0.01)
        return index.ready

    def reset_indexes(self) -> None:
        for index in (self.keyword_index, self.vector_index):
            if index is not None:
                index.reset()
