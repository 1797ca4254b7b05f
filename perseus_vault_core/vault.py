"""``Vault``: the one object a user meets. Every verb of SPEC 6.1 is a method here.

The facade validates arguments into the typed models, opens the right transaction and
delegates to the module that owns the concept (``store``, ``recall``, ``scan``,
``temporal``, ``graph``, ``import_export``, ``maintenance``). It is safe to share between
threads: each thread gets its own SQLite connection.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, Literal, TypeVar

import numpy as np

from . import graph, import_export, maintenance, recall, scan, schema, store, temporal, vectors
from .connection import SQLITE_ERRORS, ConnectionPool, choose_driver, connect, read_snapshot, write_transaction
from .embed import Embedder, LazyEmbedder, checked, embedding_text
from .errors import InvalidInput, NotSupported, StorageError, VaultError
from .filters import view
from .fusion import Fusion
from .keyword_index import KeywordIndex
from .mirror import HeadMirror
from .vector_index import VectorIndex
from .models import (
    MAX_BATCH,
    MAX_INT,
    CheckReport,
    Direction,
    EmbedReport,
    Entity,
    Filters,
    HistoryPage,
    ImportReport,
    Link,
    PurgeResult,
    RecallParams,
    RecallResult,
    RememberInput,
    ScanPage,
    ScanParams,
    Stats,
    TraverseResult,
    validate,
)

DEFAULT_PATH = "perseus_vault.db"
EMBED_BATCH = 256  # texts per embedder call when writing
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

    return wrapper  # type: ignore[return-value]


def default_path() -> str:
    return os.environ.get("PERSEUS_VAULT_DB") or DEFAULT_PATH


def _wall_clock() -> int:
    return time.time_ns() // 1_000_000


def _int(name: str, value: Any, *, low: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput(name, "must be an integer")
    if low is not None and value < low:
        raise InvalidInput(name, f"must be at least {low}")
    if value > MAX_INT:
        raise InvalidInput(name, f"must be at most {MAX_INT}")
    return value


def _text(name: str, value: Any, *, optional: bool = True, max_chars: int = 1024) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or len(value) > max_chars:
        raise InvalidInput(name, f"must be a string of at most {max_chars} characters")


def _scope(agent_id: str | None, workspace_hash: str | None) -> None:
    for name, value in (("agent_id", agent_id), ("workspace_hash", workspace_hash)):
        if value is not None and not isinstance(value, str):
            raise InvalidInput(name, "must be a string")


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
                 fusion: Fusion | dict[str, Any] | None = None) -> None:
        """Open (creating if needed) the vault at ``path``.

        ``embedder``: what embeds memories on write and queries for dense/hybrid recall. By default
        the bundled all-MiniLM-L6-v2 (or what ``PERSEUS_VAULT_EMBEDDER`` names), loaded on first use;
        ``False`` for a keyword-only vault; or any object with ``identity``, ``dimension`` and
        ``embed(texts)``. ``threads``: the embedding runtime's thread count.
        ``keyword_index`` / ``vector_index``: after the first recall, build the in-memory indexes in
        the background (same results, much faster on large stores); SQL answers until they are ready.
        ``fusion``: hybrid recall's default weights (see :class:`Fusion`).
        ``synchronous``: SQLite's durability setting for writes (``FULL`` survives power loss).
        """
        self.path = str(path) if path is not None else default_path()
        if self.path == ":memory:" or self.path.startswith("file:"):
            # Each thread has its own connection, and each in-memory connection its own database.
            raise InvalidInput("path", "must be a file path (for a throwaway vault use a temporary directory)")
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock or _wall_clock
        self._driver = choose_driver()
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

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._pool.close()

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
        plan = self._plan(lambda conn: store.texts_to_embed(conn, [item]))
        entity_id, _ = self._write_planned(plan, lambda c: store.remember(c, item, self._now(), plan))
        return self._entity(entity_id)

    @_edge
    def remember_many(self, items: Iterable[dict[str, Any] | RememberInput]) -> list[Entity]:
        """Remember a batch in one transaction: all are written, or (on any error) none."""
        try:
            batch = list(items)
        except TypeError:
            raise InvalidInput("items", "must be a list of memories") from None
        if len(batch) > MAX_BATCH:
            raise InvalidInput("items", f"has {len(batch)} entries; the limit is {MAX_BATCH} per call")
        checked = [validate(RememberInput, item, prefix=f"items.{i}") for i, item in enumerate(batch)]

        plan = self._plan(lambda conn: store.texts_to_embed(conn, checked))

        def work(conn: Any) -> list[int]:
            return [entity_id for entity_id, _ in store.remember_batch(conn, checked, self._now(), plan)]

        ids = self._write_planned(plan, work)
        rows = store.head_rows(self._conn(), ids)
        now = self._now()
        return [store.to_entity(rows[i], now) for i in ids]

    @_edge
    def get_entity(self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None) -> Entity:
        """One entity, whole (current version). Scope arguments, when given, must match it."""
        _int("id", id)
        _scope(agent_id, workspace_hash)
        return store.to_entity(store.scoped_head(self._conn(), id, agent_id, workspace_hash), self._now())

    @_edge
    def forget(self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None) -> Entity:
        """Archive an entity (reversible: remembering its (category, key) again restores it)."""
        _int("id", id)
        _scope(agent_id, workspace_hash)
        self._write(lambda c: store.forget(c, id, agent_id, workspace_hash, self._now()))
        return self._entity(id)

    @_edge
    def purge(self, id: int, *, agent_id: str | None = None, workspace_hash: str | None = None) -> PurgeResult:
        """Delete an archived entity, its history and its links for good."""
        _int("id", id)
        _scope(agent_id, workspace_hash)
        result: PurgeResult = self._write(lambda c: store.purge(c, id, agent_id, workspace_hash))
        return result

    @_edge
    def supersede(self, old_id: int, new_id: int, *, agent_id: str | None = None,
                  workspace_hash: str | None = None) -> Entity:
        """Mark ``old_id`` superseded by ``new_id``; returns the old entity as it now stands."""
        _int("old_id", old_id)
        _int("new_id", new_id)
        _scope(agent_id, workspace_hash)
        self._write(lambda c: store.supersede(c, old_id, new_id, agent_id, workspace_hash, self._now()))
        return self._entity(old_id)

    # --- links -------------------------------------------------------------------------------

    @_edge
    def link(self, from_id: int, to_id: int, relation: str = "related", weight: float = 1.0, *,
             source: str | None = None, agent_id: str | None = None, workspace_hash: str | None = None) -> Link:
        """Add (or re-weight) a directed, typed edge between two entities of one scope."""
        _int("from_id", from_id)
        _int("to_id", to_id)
        _scope(agent_id, workspace_hash)
        if not isinstance(relation, str) or not relation.strip() or len(relation) > 128:
            raise InvalidInput("relation", "must be a non-empty string of at most 128 characters")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight != weight or abs(weight) == float("inf"):
            raise InvalidInput("weight", "must be a finite number")
        _text("source", source)
        result: Link = self._write(
            lambda c: graph.link(c, from_id, to_id, relation, float(weight), source, agent_id, workspace_hash, self._now())
        )
        return result

    @_edge
    def unlink(self, from_id: int, to_id: int, relation: str | None = None, *,
               agent_id: str | None = None, workspace_hash: str | None = None) -> int:
        """Close the link(s) from ``from_id`` to ``to_id`` (one relation or all); returns how many closed."""
        _int("from_id", from_id)
        _int("to_id", to_id)
        _scope(agent_id, workspace_hash)
        _text("relation", relation, max_chars=128)
        closed: int = self._write(
            lambda c: graph.unlink(c, from_id, to_id, relation, agent_id, workspace_hash, self._now())
        )
        return closed

    @_edge
    def traverse(self, start: int, depth: int = 2, relations: list[str] | None = None,
                 direction: Direction = "both", **filters: Any) -> TraverseResult:
        """Walk the link graph breadth-first from ``start``; scope and time rules apply on every hop."""
        _int("start", start)
        _int("depth", depth, low=0)
        if direction not in ("out", "in", "both"):
            raise InvalidInput("direction", "must be 'out', 'in' or 'both'")
        if relations is not None and (not isinstance(relations, list) or not all(isinstance(r, str) for r in relations)):
            raise InvalidInput("relations", "must be a list of strings")
        f = validate(Filters, filters)
        conn = self._conn()
        with read_snapshot(conn):
            return graph.traverse(conn, start, depth, relations, direction, view(f, self._now()))

    # --- reading -----------------------------------------------------------------------------

    @_edge
    def recall(self, query: str, **params: Any) -> RecallResult:
        """Find memories for ``query`` (SPEC 5.1): keyword, dense or hybrid; every filter and knob by wire name."""
        p = validate(RecallParams, {"query": query, **params})
        arms = recall.Arms(
            keyword_index=self._keyword_index,
            vector_index=self._vector_index,
            embed_query=self._embed_query if self._embedder is not None else None,
            embedder_model=self._embedder_model if self._embedder is not None else None,
            fusion=self._fusion,
        )
        result = recall.recall(self._conn(), p, self._now(), self._reinforce, arms)
        self._warm(result.search_mode)
        return result

    def _embedder_model(self) -> tuple[str, int]:
        """(identity, dimension) of the embedder, read only when a mode needs it (a remote provider
        answers this with a network call)."""
        assert self._embedder is not None
        return self._embedder.identity, self._embedder.dimension

    def _embed_query(self, text: str) -> np.ndarray:
        assert self._embedder is not None
        vector: np.ndarray = checked(self._embedder, [text])[0]
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

    def _plan(self, texts_of: Callable[[Any], list[str]]) -> store.VectorPlan | None:
        """Embed, before the write transaction, the texts a write will store (none without an embedder)."""
        if self._embedder is None:
            return None
        conn = self._conn()
        with read_snapshot(conn):
            vectors.check_model(conn, self._embedder.identity, self._embedder.dimension)
            texts = texts_of(conn)
        plan = store.VectorPlan(self._embedder.identity, self._embedder.dimension)
        for start in range(0, len(texts), EMBED_BATCH):
            chunk = texts[start : start + EMBED_BATCH]
            plan.by_text.update(zip(chunk, checked(self._embedder, chunk)))
        return plan

    @_edge
    def embed(self, reembed: bool = False, progress: Callable[[int, int], None] | None = None) -> EmbedReport:
        """Give every version a vector: backfill the missing ones (current versions first), or, with
        ``reembed=True``, replace all of them with the configured embedder's (after a model change)."""
        if self._embedder is None:
            raise NotSupported("this vault was opened without an embedder (embedder=False)")
        if not isinstance(reembed, bool):
            raise InvalidInput("reembed", "must be true or false")
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
        _int("limit", limit, low=1)
        _int("offset", offset, low=0)
        conn = self._conn()
        with read_snapshot(conn):
            entity_id = self._resolve(conn, category, key, agent_id, workspace_hash)
            return temporal.history(conn, entity_id, min(limit, 1000), offset, self._now())

    @_edge
    def as_of(self, category: str, key: str, as_of_unix_ms: int, *, agent_id: str | None = None,
              workspace_hash: str | None = None) -> Entity | None:
        """The version of a fact the vault believed at ``as_of_unix_ms`` (``None`` if it had none then)."""
        _int("as_of_unix_ms", as_of_unix_ms, low=0)
        conn = self._conn()
        with read_snapshot(conn):
            return temporal.as_of(conn, self._resolve(conn, category, key, agent_id, workspace_hash), as_of_unix_ms)

    @_edge
    def valid_at(self, category: str, key: str, valid_at_unix_ms: int, *, agent_id: str | None = None,
                 workspace_hash: str | None = None) -> Entity | None:
        """The version of a fact true in the world at ``valid_at_unix_ms``, per current knowledge."""
        _int("valid_at_unix_ms", valid_at_unix_ms, low=0)
        conn = self._conn()
        with read_snapshot(conn):
            entity_id = self._resolve(conn, category, key, agent_id, workspace_hash)
            return temporal.bitemporal(conn, entity_id, self._now(), valid_at_unix_ms)

    @_edge
    def bitemporal(self, category: str, key: str, as_of_unix_ms: int, valid_at_unix_ms: int, *,
                   agent_id: str | None = None, workspace_hash: str | None = None) -> Entity | None:
        """The version believed at ``as_of_unix_ms`` to be true at ``valid_at_unix_ms``."""
        _int("as_of_unix_ms", as_of_unix_ms, low=0)
        _int("valid_at_unix_ms", valid_at_unix_ms, low=0)
        conn = self._conn()
        with read_snapshot(conn):
            entity_id = self._resolve(conn, category, key, agent_id, workspace_hash)
            return temporal.bitemporal(conn, entity_id, as_of_unix_ms, valid_at_unix_ms)

    def _resolve(self, conn: Any, category: str, key: str, agent_id: str | None, workspace_hash: str | None) -> int:
        for name, value in (("category", category), ("key", key)):
            if not isinstance(value, str) or not value:
                raise InvalidInput(name, "must be a non-empty string")
        _scope(agent_id, workspace_hash)
        return temporal.resolve(conn, category, key, agent_id, workspace_hash)

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
        _scope(agent_id, workspace_hash)
        conn = self._conn()
        count = 0
        with read_snapshot(conn):
            lines = import_export.export_lines(conn, agent_id, workspace_hash)
            if isinstance(target, (str, os.PathLike)):
                try:
                    handle = open(target, "w", encoding="utf-8", newline="\n")
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

    # --- looking after the file --------------------------------------------------------------

    @_edge
    def stats(self) -> Stats:
        conn = self._conn()
        with read_snapshot(conn):
            keyword_index = self._keyword_index.describe() if self._keyword_index is not None else "off"
            vector_index = self._vector_index.describe() if self._vector_index is not None else "off"
            return maintenance.stats(
                conn, self.path, self._driver.name, self._driver.sqlite_version, keyword_index, vector_index
            )

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
    def backup(self, target: str | os.PathLike[str]) -> str:
        """A consistent copy of the vault at ``target`` while others keep writing."""
        folder = Path(target).resolve().parent
        if not folder.is_dir():
            raise InvalidInput("target", f"folder {folder} does not exist")
        return maintenance.backup(self._conn(), str(target))
