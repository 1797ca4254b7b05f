"""Copying a whole vault to another backend: a SQLite file to PostgreSQL and back (docs/postgres.md).

:func:`migrate` exports the source (features/import_export.py: every memory with its whole history, every link,
ids and times kept), imports that into an empty target in one transaction, with the source's vectors (the
model is not run again for a text the source has embedded), copies the trigger phrases' vectors, then
exports the target and compares: the copy is accepted only when the two exports are byte for byte the
same. Usage counters are part of the export; in-memory indexes are rebuilt by the target's readers.

The framework state beside the memories (LangGraph checkpoints, LlamaIndex's key-value collections:
state/checkpoints.py, state/keyvalue.py) is no memory and not in the export: its tables are copied row for
row, every scope's, and each is accepted only when its rows on both sides give the same digest.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import IO, Any

import numpy as np

from ..contract.errors import Conflict, InvalidInput, SetupError, StorageError
from ..contract.models import MigrateReport
from ..embeddings import BUNDLED_IDENTITY, embedding_text
from ..features.import_export import export_lines, import_records, parse_records, read_records, texts
from ..storage import Connection
from .vault import Vault

SPOOL_BYTES = 64 << 20  # the export is held in memory up to this size, then in a private temporary file
STATE_PAGE = 500  # framework-state rows copied per transaction
# The framework-state tables (the state package's: schema step 4 on SQLite, 8 on Postgres), each with its
# columns and its key.
STATE_TABLES: dict[str, tuple[str, str]] = {
    "checkpoints": (
        "agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, "
        "type, checkpoint, channel_versions, metadata, scope",
        "agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id",
    ),
    "checkpoint_blobs": (
        "agent_id, workspace_hash, thread_id, checkpoint_ns, channel, version, type, blob, scope",
        "agent_id, workspace_hash, thread_id, checkpoint_ns, channel, version",
    ),
    "checkpoint_writes": (
        "agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, "
        "type, blob, task_path, scope",
        "agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, task_id, idx",
    ),
    "kv_entries": (
        "agent_id, workspace_hash, collection, key, value, updated_at_ms, scope",
        "agent_id, workspace_hash, collection, key",
    ),
}


class CopiedVectors:
    """The source's model as the target sees it: its identity and dimension, and the source's vectors. A
    text the source has no vector for is embedded by the bundled model when that is the source's model;
    with another model the copy is refused, naming what to do."""

    def __init__(self, identity: str, dimension: int) -> None:
        self.identity, self.dimension = identity, dimension
        self._model: Any = None

    def embed(self, batch: Sequence[str]) -> np.ndarray:
        if self.identity != BUNDLED_IDENTITY:
            raise SetupError(
                f"{len(batch)} version(s) of the source have no vector and its model ({self.identity}) "
                "is not this one's to run: run `perseus-vault embed` on the source first"
            )
        if self._model is None:
            from ..embeddings import load

            self._model = load()
        vectors: np.ndarray = self._model.embed(list(batch))
        return vectors


def migrate(source: Vault | str | os.PathLike[str], target: str | os.PathLike[str]) -> MigrateReport:
    """Copy the vault at ``source`` (or an open one) into ``target``, a new SQLite file or an empty
    PostgreSQL database, losslessly: refused when the target holds any memory; raises
    :class:`StorageError` when the target's export differs from the source's (nothing is then claimed)."""
    if not isinstance(source, Vault) and os.fspath(source) == os.fspath(target):
        raise InvalidInput("target", "is the source itself")
    with ExitStack() as stack:
        src = (
            source
            if isinstance(source, Vault)
            else stack.enter_context(
                Vault(source, create=False, embedder=False, keyword_index=False, vector_index=False)
            )
        )
        engine = src.engine
        recorded = engine.read(engine.backend.vectors.model)
        copier = CopiedVectors(*recorded) if recorded is not None else None
        # Indexes only as saved ones: none is built while copying, and closing saves them for the next process.
        dst = stack.enter_context(
            Vault(target, embedder=copier or False, keyword_index="saved", vector_index="saved")
        )
        held = dst.engine.read(lambda c: int(c.execute("SELECT count(*) FROM entities").fetchone()[0]))
        if held:
            raise Conflict(f"the target already holds {held} memories; migrate copies into an empty vault")
        state = dst.engine.read(lambda c: sum(_count(c, table) for table in STATE_TABLES))
        if state:
            raise Conflict(
                f"the target already holds {state} rows of framework state (checkpoints, key-value "
                "entries); migrate copies into an empty vault"
            )
        spool = stack.enter_context(tempfile.SpooledTemporaryFile(SPOOL_BYTES, mode="w+", encoding="utf-8"))
        lines, digest = engine.read(lambda c: _write(export_lines(c), spool))
        spool.seek(0)
        parsed = parse_records(read_records(spool))
        known = _SourceVectors(src) if copier is not None else None
        target_engine = dst.engine
        plan = target_engine.plan(lambda conn: texts(parsed[0], parsed[2]), known=known)
        target_engine.write_planned(
            plan, lambda c: import_records(target_engine.backend, c, parsed, target_engine.now(), None, plan)
        )
        phrases = _copy_phrases(src, dst, recorded)
        state_rows = _copy_state(src, dst)
        copied, copied_digest = target_engine.read(lambda c: _write(export_lines(c), None))
        if (copied, copied_digest) != (lines, digest):
            raise StorageError(
                f"the copy's export differs from the source's ({copied} lines against {lines}); "
                "the target is not a faithful copy"
            )
        counts = target_engine.read(_counts)
        return MigrateReport(
            source=engine.backend.path,
            target=target_engine.backend.path,
            lines=lines,
            sha256=digest,
            phrase_vectors=phrases,
            state_rows=state_rows,
            **counts,
        )


def _write(lines: Iterator[str], handle: IO[str] | None) -> tuple[int, str]:
    """Write the export's lines to ``handle`` (or nowhere); their count and the SHA-256 of the bytes."""
    digest, count = hashlib.sha256(), 0
    for line in lines:
        data = line + "\n"
        digest.update(data.encode("utf-8"))
        if handle is not None:
            handle.write(data)
        count += 1
    return count, digest.hexdigest()


class _SourceVectors:
    """``Engine.plan``'s ``known``: the source's vector of each text it has embedded."""

    def __init__(self, src: Vault) -> None:
        self.src = src

    def __call__(self, conn: Connection, wanted: list[str]) -> dict[str, np.ndarray]:
        want = set(wanted)

        def read(c: Connection) -> dict[str, np.ndarray]:
            found: dict[str, np.ndarray] = {}
            for content, summary, vector in c.execute(
                "SELECT v.content, v.summary, x.embedding FROM entity_versions v JOIN version_vectors x "
                "ON x.vid = v.vid AND x.scope = v.scope"
            ):
                text = embedding_text(content, summary)
                if text in want:
                    found[text] = np.frombuffer(bytes(vector), dtype=np.float32)
            return found

        return self.src.engine.read(read)


def _copy_phrases(src: Vault, dst: Vault, recorded: tuple[str, int] | None) -> int:
    """The source's trigger-phrase vectors for its model, each in its scope, into the target (so ``prepare`` embeds
    none again)."""
    if recorded is None:
        return 0
    model = recorded[0]
    phrases: dict[tuple[str, str], np.ndarray] = src.engine.read(
        lambda c: {
            (scope, phrase): np.frombuffer(bytes(vector), dtype=np.float32)
            for scope, phrase, vector in c.execute(
                "SELECT scope, phrase, embedding FROM trigger_vectors WHERE model = ?", (model,)
            )
        }
    )
    if phrases:
        backend = dst.engine.backend
        dst.engine.write(lambda c: backend.vectors.write_phrase_vectors(c, model, phrases))
    return len(phrases)


def _copy_state(src: Vault, dst: Vault) -> int:
    """Every framework-state row of the source into the target, a page per transaction; each table is then
    accepted only when both sides' rows give one digest (raises :class:`StorageError` otherwise)."""
    total = 0
    for table, (columns, key) in STATE_TABLES.items():
        marks = ", ".join("?" for _ in columns.split(", "))
        offset = 0
        while True:
            rows = src.engine.read(
                lambda c: c.execute(
                    f"SELECT {columns} FROM {table} ORDER BY {key} LIMIT ? OFFSET ?", (STATE_PAGE, offset)
                ).fetchall()
            )
            if rows:
                dst.engine.write(
                    lambda c: c.executemany(
                        f"INSERT INTO {table} ({columns}) VALUES ({marks})", [tuple(r) for r in rows]
                    )
                )
            offset += len(rows)
            if len(rows) < STATE_PAGE:
                break
        if _digest(src, table, columns, key) != _digest(dst, table, columns, key):
            raise StorageError(
                f"the copy's {table} differ from the source's; the target is not a faithful copy"
            )
        total += offset
    return total


def _digest(vault: Vault, table: str, columns: str, key: str) -> tuple[int, int]:
    """The count of ``table``'s rows and the sum of their SHA-256s: the same for the same rows in any order
    (the two databases sort text differently)."""
    count, total, offset = 0, 0, 0
    while True:
        rows = vault.engine.read(
            lambda c: c.execute(
                f"SELECT {columns} FROM {table} ORDER BY {key} LIMIT ? OFFSET ?", (STATE_PAGE, offset)
            ).fetchall()
        )
        for row in rows:
            plain = tuple(bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else v for v in row)
            total = (total + int.from_bytes(hashlib.sha256(repr(plain).encode()).digest(), "big")) % (
                1 << 256
            )
        count, offset = count + len(rows), offset + len(rows)
        if len(rows) < STATE_PAGE:
            return count, total


def _count(conn: Connection, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def _counts(conn: Connection) -> dict[str, int]:
    one: Callable[[str], int] = lambda sql: int(conn.execute(sql).fetchone()[0])  # noqa: E731
    return {
        "entities": one("SELECT count(*) FROM entities"),
        "versions": one("SELECT count(*) FROM entity_versions"),
        "links": one("SELECT count(*) FROM links"),
        "vectors": one("SELECT count(*) FROM version_vectors"),
    }
