"""Checkpoints: the saved states of a graph's runs, kept in the vault's database beside its memories.

A graph framework (LangGraph's checkpointer, ``perseus_vault_integrations.langchain.checkpoint``) saves
a checkpoint after every step of a run, so that a conversation (a *thread*) resumes where it stopped, an
interrupted run continues, and earlier states can be replayed. This module stores them; the framework
serializes them (every payload here is opaque bytes with the serializer's type tag).

Layout (schema step 4 on SQLite, 8 on PostgreSQL), every row keyed by its scope first:

- ``checkpoints``: one row per (thread, namespace, checkpoint id): the serialized checkpoint without its
  channel values, its parent, its metadata (JSON, which :meth:`Checkpoints.list` filters on), the version
  of each channel it holds (JSON) and the run that made it.
- ``checkpoint_blobs``: one channel's value at one version, per thread and namespace. A value is written
  once, when its version is new, and read by every later checkpoint that still holds that version: a
  long message list is stored once per change, not once per step.
- ``checkpoint_writes``: what a step's tasks wrote before the next checkpoint (pending writes), by
  (checkpoint, task, index).

Why tables of their own rather than memories: a checkpoint is opaque binary state written at every step,
read back by its key and never searched by meaning; as entities, every one would be tokenized, embedded,
versioned and logged for readers that never come, and a thread's latest state would be a scan.

A :class:`Checkpoints` reads and writes one scope (``agent_id`` / ``workspace_hash``, ``''`` for the
unscoped vault), as everything else in the vault does. Checkpoint ids sort as text (LangGraph's are
time-ordered UUIDs), so the newest is the greatest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..contract.errors import InvalidInput
from ..facade.edge import edge
from ..primitives.dbapi import Connection
from ..primitives.dialect import dialect
from .scoped import Scoped, json_object, optional_text, text

PAGE = 100  # checkpoints read per snapshot while listing


@dataclass(frozen=True)
class ChannelBlob:
    """One channel's serialized value at one version (``data`` is ``None`` for a channel with no value)."""

    channel: str
    version: str
    type: str
    data: bytes | None


@dataclass(frozen=True)
class TaskWrite:
    """One pending write of a task: its ``idx``-th write (negative for the special channels) to ``channel``."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    type: str
    data: bytes


@dataclass(frozen=True)
class StoredCheckpoint:
    """A checkpoint as stored: ``blobs`` are the values of the channels at the versions it holds, ``writes``
    its pending writes, ordered by task path, task id and index (the order a step applies them)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    type: str
    checkpoint: bytes
    metadata: dict[str, Any]
    channel_versions: dict[str, str]
    blobs: list[ChannelBlob] = field(default_factory=list)
    writes: list[TaskWrite] = field(default_factory=list)


_COLUMNS = (
    "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata, "
    "channel_versions"
)


class Checkpoints(Scoped):
    """The checkpoints of one scope of a vault: ``Checkpoints(vault, agent_id=..., workspace_hash=...)`` (see
    the module docstring). Safe to share between threads."""

    # --- writing ------------------------------------------------------------------------------

    @edge
    def put(
        self,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        *,
        parent_checkpoint_id: str | None,
        type: str,
        checkpoint: bytes,
        metadata: Mapping[str, Any],
        channel_versions: Mapping[str, str],
        blobs: Sequence[ChannelBlob] = (),
    ) -> None:
        """Save a checkpoint (replacing one with the same id) and the channel values new in it, in one
        transaction. A blob whose (channel, version) is already stored is kept as it was."""
        key = {
            **self.scope,
            "t": text("thread_id", thread_id),
            "ns": text("checkpoint_ns", checkpoint_ns),
            "id": text("checkpoint_id", checkpoint_id),
        }
        run_id = metadata.get("run_id")
        row = {
            **key,
            "parent": optional_text("parent_checkpoint_id", parent_checkpoint_id),
            "run": text("metadata.run_id", run_id) if isinstance(run_id, str) else None,
            "type": text("type", type),
            "data": bytes(checkpoint),
            "meta": json_object("metadata", metadata),
            "versions": json_object("channel_versions", {k: str(v) for k, v in channel_versions.items()}),
        }
        blob_rows = [
            {
                **key,
                "c": text(f"blobs[{i}].channel", b.channel),
                "v": text(f"blobs[{i}].version", str(b.version)),
                "type": text(f"blobs[{i}].type", b.type),
                "data": b.data,
            }
            for i, b in enumerate(blobs)
        ]

        def work(conn: Connection) -> None:
            if blob_rows:
                conn.executemany(
                    "INSERT INTO checkpoint_blobs (agent_id, workspace_hash, thread_id, checkpoint_ns, channel, "
                    "version, type, blob, scope) VALUES (:a, :w, :t, :ns, :c, :v, :type, :data, :s) ON CONFLICT "
                    "(agent_id, workspace_hash, thread_id, checkpoint_ns, channel, version, scope) DO NOTHING",
                    blob_rows,
                )
            conn.execute(
                "INSERT INTO checkpoints (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, run_id, type, checkpoint, channel_versions, metadata, scope) VALUES "
                "(:a, :w, :t, :ns, :id, :parent, :run, :type, :data, :versions, :meta, :s) ON CONFLICT "
                "(agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, scope) DO UPDATE SET "
                "parent_checkpoint_id = excluded.parent_checkpoint_id, run_id = excluded.run_id, "
                "type = excluded.type, checkpoint = excluded.checkpoint, "
                "channel_versions = excluded.channel_versions, metadata = excluded.metadata",
                row,
            )

        self._engine.write(work)

    @edge
    def put_writes(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, writes: Sequence[TaskWrite]
    ) -> None:
        """Save a task's pending writes to a checkpoint in one transaction. A write already stored under
        the same (task, index) is kept (a task that runs again writes what it wrote), except on a special
        channel (a negative index: an error, an interrupt), whose latest word replaces the stored one."""
        key = {
            **self.scope,
            "t": text("thread_id", thread_id),
            "ns": text("checkpoint_ns", checkpoint_ns),
            "id": text("checkpoint_id", checkpoint_id),
        }
        rows = [
            {
                **key,
                "task": text("task_id", w.task_id),
                "path": text("task_path", w.task_path),
                "idx": w.idx,
                "c": text("channel", w.channel),
                "type": text("type", w.type),
                "data": bytes(w.data),
            }
            for w in writes
        ]
        if not rows:
            return
        self._engine.write(
            lambda conn: conn.executemany(
                "INSERT INTO checkpoint_writes (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, "
                "task_id, idx, channel, type, blob, task_path, scope) VALUES (:a, :w, :t, :ns, :id, :task, :idx, :c, "
                ":type, :data, :path, :s) ON CONFLICT (agent_id, workspace_hash, thread_id, checkpoint_ns, checkpoint_id, "
                "task_id, idx, scope) DO UPDATE SET channel = excluded.channel, type = excluded.type, blob = excluded.blob, "
                "task_path = excluded.task_path WHERE excluded.idx < 0",
                rows,
            )
        )

    # --- reading ------------------------------------------------------------------------------

    @edge
    def get(
        self, thread_id: str, checkpoint_ns: str = "", checkpoint_id: str | None = None
    ) -> StoredCheckpoint | None:
        """The checkpoint ``checkpoint_id`` of a thread's namespace, or its latest when ``None``; ``None``
        when there is no such checkpoint."""
        params = {**self.scope, "t": text("thread_id", thread_id), "ns": text("checkpoint_ns", checkpoint_ns)}
        if checkpoint_id is None:
            sql = "ORDER BY checkpoint_id DESC LIMIT 1"
        else:
            params["id"] = text("checkpoint_id", checkpoint_id)
            sql = "AND checkpoint_id = :id"

        def read(conn: Connection) -> StoredCheckpoint | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE agent_id = :a AND workspace_hash = :w AND scope = :s "
                f"AND thread_id = :t AND checkpoint_ns = :ns {sql}",
                params,
            ).fetchone()
            return self._whole(conn, row) if row is not None else None

        return self._engine.read(read)

    def list(
        self,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        *,
        before: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StoredCheckpoint]:
        """Checkpoints newest first: of one thread (every thread when ``None``), one namespace (every one
        when ``None``), one id; older than ``before`` (a checkpoint id); whose metadata has each of
        ``metadata``'s top-level values; at most ``limit``. Read in pages, each in one snapshot."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInput("limit", "must be a whole number, 0 or more")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidInput("filter", "must be a dict of metadata values")
        where = ["agent_id = :a", "workspace_hash = :w", "scope = :s"]
        params: dict[str, Any] = dict(self.scope)
        for column, value in (
            ("thread_id", thread_id),
            ("checkpoint_ns", checkpoint_ns),
            ("checkpoint_id", checkpoint_id),
        ):
            if value is not None:
                where.append(f"{column} = :{column}")
                params[column] = text(column, value)
        if before is not None:
            where.append("checkpoint_id < :before")
            params["before"] = text("before", before)
        return self._pages(" AND ".join(where), params, dict(metadata or {}), limit)

    def _pages(
        self, where: str, params: dict[str, Any], wanted: dict[str, Any], limit: int | None
    ) -> Iterator[StoredCheckpoint]:
        left = limit
        after: tuple[str, str, str] | None = None
        while left is None or left > 0:
            found, read_rows, after = self._page(where, params, wanted, left, after)
            yield from found
            if left is not None:
                left -= len(found)
            if read_rows < PAGE:
                return

    @edge
    def _page(
        self,
        where: str,
        params: dict[str, Any],
        wanted: dict[str, Any],
        left: int | None,
        after: tuple[str, str, str] | None,
    ) -> tuple[Sequence[StoredCheckpoint], int, tuple[str, str, str] | None]:
        """One page of :meth:`list` after the keyset ``after``: the matches (at most ``left``), how many rows
        were read, and the new keyset."""
        keyset = "" if after is None else " AND (checkpoint_id, thread_id, checkpoint_ns) < (:k1, :k2, :k3)"
        page = {**params, "n": PAGE, **({} if after is None else dict(zip(("k1", "k2", "k3"), after)))}

        def read(conn: Connection) -> tuple[Sequence[StoredCheckpoint], int, tuple[str, str, str] | None]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM checkpoints WHERE {where}{keyset} ORDER BY "
                "checkpoint_id DESC, thread_id DESC, checkpoint_ns DESC LIMIT :n",
                page,
            ).fetchall()
            last = (str(rows[-1][2]), str(rows[-1][0]), str(rows[-1][1])) if rows else None
            chosen = [r for r in rows if _matches(json.loads(r[6]), wanted)][:left]
            return [self._whole(conn, r) for r in chosen], len(rows), last

        return self._engine.read(read)

    def _whole(self, conn: Connection, row: Any) -> StoredCheckpoint:
        """A checkpoint row with the blobs of the channel versions it holds and its pending writes."""
        thread, ns, cid = str(row[0]), str(row[1]), str(row[2])
        versions: dict[str, str] = json.loads(row[7])
        d = dialect(conn)
        key = {**self.scope, "t": thread, "ns": ns}
        blobs = (
            [
                ChannelBlob(str(c), str(v), str(t), bytes(b) if b is not None else None)
                for c, v, t, b in conn.execute(
                    f"SELECT b.channel, b.version, b.type, b.blob FROM {d.items(':pairs')} p JOIN checkpoint_blobs b "
                    "ON b.agent_id = :a AND b.workspace_hash = :w AND b.scope = :s AND b.thread_id = :t AND b.checkpoint_ns = :ns "
                    f"AND b.channel = {d.field('p.value', 'c')} AND b.version = {d.field('p.value', 'v')}",
                    {**key, "pairs": json.dumps([{"c": c, "v": v} for c, v in versions.items()])},
                )
            ]
            if versions
            else []
        )
        writes = sorted(
            (
                TaskWrite(str(t), str(p), int(i), str(c), str(ty), bytes(b))
                for t, p, i, c, ty, b in conn.execute(
                    "SELECT task_id, task_path, idx, channel, type, blob FROM checkpoint_writes WHERE agent_id = :a "
                    "AND workspace_hash = :w AND scope = :s AND thread_id = :t AND checkpoint_ns = :ns AND checkpoint_id = :id",
                    {**key, "id": cid},
                )
            ),
            key=lambda w: (w.task_path, w.task_id, w.idx),
        )
        return StoredCheckpoint(
            thread, ns, cid, row[3], str(row[4]), bytes(row[5]), json.loads(row[6]), versions, blobs, writes
        )

    # --- deleting and copying -----------------------------------------------------------------

    @edge
    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, value and pending write of a thread, in every namespace."""
        params = {**self.scope, "t": text("thread_id", thread_id)}

        def work(conn: Connection) -> None:
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                conn.execute(
                    f"DELETE FROM {table} WHERE agent_id = :a AND workspace_hash = :w AND scope = :s AND thread_id = :t",
                    params,
                )

        self._engine.write(work)

    @edge
    def delete_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs ``run_ids`` made, their pending writes, and the channel values
        no checkpoint left holds, in one transaction."""
        if isinstance(run_ids, str):
            raise InvalidInput("run_ids", "must be a list of run ids")
        ids = [text("run_ids", r) for r in run_ids]
        if not ids:
            return

        def work(conn: Connection) -> None:
            d = dialect(conn)
            params = {**self.scope, "ids": json.dumps(ids)}
            scope = "agent_id = :a AND workspace_hash = :w AND scope = :s"
            doomed = conn.execute(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints WHERE {scope} "
                f"AND run_id IN (SELECT value FROM {d.texts(':ids')} j)",
                params,
            ).fetchall()
            for thread, ns, cid in doomed:
                for table in ("checkpoints", "checkpoint_writes"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE {scope} AND thread_id = :t AND checkpoint_ns = :ns "
                        "AND checkpoint_id = :id",
                        {**self.scope, "t": thread, "ns": ns, "id": cid},
                    )
            for thread, ns in {(t, n) for t, n, _ in doomed}:
                self._collect_blobs(conn, str(thread), str(ns))

        self._engine.write(work)

    def _collect_blobs(self, conn: Connection, thread: str, ns: str) -> None:
        """Delete the values of a thread's namespace that no checkpoint there holds any more."""
        key = {**self.scope, "t": thread, "ns": ns}
        where = (
            "agent_id = :a AND workspace_hash = :w AND scope = :s AND thread_id = :t AND checkpoint_ns = :ns"
        )
        held = {
            (c, v)
            for (versions,) in conn.execute(f"SELECT channel_versions FROM checkpoints WHERE {where}", key)
            for c, v in json.loads(versions).items()
        }
        stored = conn.execute(f"SELECT channel, version FROM checkpoint_blobs WHERE {where}", key).fetchall()
        garbage = [{**key, "c": c, "v": v} for c, v in stored if (c, v) not in held]
        if garbage:
            conn.executemany(
                f"DELETE FROM checkpoint_blobs WHERE {where} AND channel = :c AND version = :v", garbage
            )

    @edge
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint, value and pending write of one thread to another, in one transaction
        (what the target already holds under the same keys is kept)."""
        params = {
            **self.scope,
            "src": text("source_thread_id", source_thread_id),
            "dst": text("target_thread_id", target_thread_id),
        }
        tables = {
            "checkpoints": "checkpoint_ns, checkpoint_id, parent_checkpoint_id, run_id, type, checkpoint, "
            "channel_versions, metadata",
            "checkpoint_blobs": "checkpoint_ns, channel, version, type, blob",
            "checkpoint_writes": "checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path",
        }

        def work(conn: Connection) -> None:
            for table, columns in tables.items():
                # The WHERE before ON CONFLICT also keeps SQLite from reading ON as a join's.
                conn.execute(
                    f"INSERT INTO {table} (agent_id, workspace_hash, thread_id, {columns}, scope) "
                    f"SELECT agent_id, workspace_hash, :dst, {columns}, scope FROM {table} "
                    "WHERE agent_id = :a AND workspace_hash = :w AND scope = :s AND thread_id = :src ON CONFLICT DO NOTHING",
                    params,
                )

        self._engine.write(work)


def _matches(metadata: Any, wanted: dict[str, Any]) -> bool:
    return isinstance(metadata, dict) and all(k in metadata and metadata[k] == v for k, v in wanted.items())
