"""``PerseusVaultSaver``: a LangGraph checkpointer that keeps a graph's threads in the vault (docs/langchain.md).

``graph.compile(checkpointer=saver)`` or ``create_agent(..., checkpointer=saver)``: every step of a run is
saved, so a conversation (``{"configurable": {"thread_id": ...}}``) resumes where it stopped, an
interrupted run continues, and ``get_state_history`` replays earlier states. The same vault file (or
PostgreSQL database) holds the agent's long-term memory (:class:`~.stores.PerseusVaultStore`, recall, the
MCP server): one place to back up, move and scope.

Storage (``perseus_vault_core.state.checkpoints``): tables of their own, not memories. A checkpoint is saved
without its channel values; each channel's value is saved once per version (``new_versions``) and read
back by every later checkpoint that still holds that version, as LangGraph's Postgres saver does.
Payloads are serialized by ``serde`` (LangGraph's ``JsonPlusSerializer`` by default; an
``EncryptedSerializer`` works too); metadata is kept as JSON, which ``list(filter=...)`` matches key by key.

Sync and async: every method has its ``a`` twin, which runs the sync one in a worker thread (SQLite and
the database driver block), so one saver serves ``invoke`` and ``ainvoke``. Beyond LangGraph's required
methods it offers ``delete_for_runs`` and ``copy_thread``; ``prune`` is not offered (pruning must keep
what a ``DeltaChannel`` rebuilds its value from, which a saver cannot see), so the base class's
``NotImplementedError`` stands. Checked by LangGraph's own conformance suite
(``langgraph-checkpoint-conformance``, tests/integrations/langchain/test_checkpoint.py).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from perseus_vault_core import ChannelBlob, Checkpoints, InvalidInput, StoredCheckpoint, TaskWrite

from ..arguments import Opening, OwnsItsVault, VaultLike, strict, vault_from
from ..arguments import conn_string as checked_conn_string

EMPTY = "empty"  # the type of a channel that has a version but no value


def _configurable(config: RunnableConfig | None, name: str = "config") -> dict[str, Any]:
    if not isinstance(config, dict) or not isinstance(config.get("configurable"), dict):
        raise InvalidInput(name, 'must be a RunnableConfig with a "configurable" dict')
    return config["configurable"]


def _thread(configurable: dict[str, Any]) -> str:
    if configurable.get("thread_id") is None:
        raise InvalidInput("thread_id", 'is required: pass config={"configurable": {"thread_id": ...}}')
    return str(configurable["thread_id"])


class PerseusVaultSaver(OwnsItsVault, BaseCheckpointSaver[str]):
    """LangGraph checkpoints kept in a vault (see the module docstring).

    ``vault``: an open :class:`~perseus_vault_core.Vault`, or a path or ``postgresql://`` URL (the saver then
    opens the vault, and closes it in :meth:`close` or on leaving its ``with`` block). ``agent_id`` /
    ``workspace_hash``: the scope the threads belong to (none: the unscoped vault). ``serde``: LangGraph's
    serializer protocol.

    >>> with PerseusVaultSaver.from_conn_string("agent.db") as saver:      # doctest: +SKIP
    ...     graph = builder.compile(checkpointer=saver)
    """

    @strict
    def __init__(
        self,
        vault: VaultLike,
        *,
        serde: SerializerProtocol | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> None:
        super().__init__(serde=serde)
        with vault_from(vault) as (self.vault, self._owned_vault):
            self.checkpoints = Checkpoints(self.vault, agent_id=agent_id, workspace_hash=workspace_hash)

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        serde: SerializerProtocol | None = None,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
    ) -> Opening[PerseusVaultSaver]:
        """A saver over the vault at ``conn_string`` (a file path or a ``postgresql://`` URL), as a context
        manager for ``with`` or ``async with`` (LangGraph's ``SqliteSaver`` / ``AsyncSqliteSaver`` form):
        the vault is opened on entry and closed on exit."""
        where = checked_conn_string(conn_string)
        return Opening(lambda: cls(where, serde=serde, agent_id=agent_id, workspace_hash=workspace_hash))

    def setup(self) -> None:
        """Nothing to do: the vault makes its tables when it opens. Kept so that code written for LangGraph's
        SQLite and Postgres savers, which call it first, runs unchanged."""

    def __enter__(self) -> PerseusVaultSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ------------------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save ``checkpoint`` as the child of the one ``config`` names, with the values of the channels
        in ``new_versions``; returns the config that names the saved checkpoint."""
        configurable = _configurable(config)
        thread, ns = _thread(configurable), str(configurable.get("checkpoint_ns", ""))
        saved: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = saved.pop(
            "channel_values", {}
        )  # each value goes in a blob, once per version
        blobs = [
            ChannelBlob(
                channel,
                str(version),
                *(self.serde.dumps_typed(values[channel]) if channel in values else (EMPTY, None)),
            )
            for channel, version in new_versions.items()
        ]
        kind, payload = self.serde.dumps_typed(saved)
        self.checkpoints.put(
            thread,
            ns,
            checkpoint["id"],
            parent_checkpoint_id=configurable.get("checkpoint_id"),
            type=kind,
            checkpoint=payload,
            metadata=get_serializable_checkpoint_metadata(config, metadata),
            channel_versions={k: str(v) for k, v in checkpoint["channel_versions"].items()},
            blobs=blobs,
        )
        return {"configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Save a task's writes to the checkpoint ``config`` names (a write already saved for the same task
        and index is kept; an error's or interrupt's replaces the one before)."""
        configurable = _configurable(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:
            raise InvalidInput("checkpoint_id", "is required: writes belong to a saved checkpoint")
        rows = [
            TaskWrite(
                str(task_id),
                task_path,
                WRITES_IDX_MAP.get(channel, idx),
                channel,
                *self.serde.dumps_typed(value),
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        self.checkpoints.put_writes(
            _thread(configurable), str(configurable.get("checkpoint_ns", "")), checkpoint_id, rows
        )

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread's checkpoints and writes, in every namespace."""
        self.checkpoints.delete_thread(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) the runs ``run_ids`` made."""
        self.checkpoints.delete_runs([str(r) for r in run_ids])

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's every checkpoint, value and write to another thread."""
        self.checkpoints.copy_thread(str(source_thread_id), str(target_thread_id))

    # --- reading ------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or its thread's latest (in its namespace) without a checkpoint id."""
        configurable = _configurable(config)
        stored = self.checkpoints.get(
            _thread(configurable), str(configurable.get("checkpoint_ns", "")), get_checkpoint_id(config)
        )
        return self._tuple(stored) if stored is not None else None

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (every thread without one), its namespace
        (every namespace when it names none) and checkpoint id; whose metadata holds every value of
        ``filter``; older than ``before``; at most ``limit``."""
        configurable = _configurable(config) if config is not None else {}
        thread = str(configurable["thread_id"]) if configurable.get("thread_id") is not None else None
        ns = configurable.get("checkpoint_ns")
        found = self.checkpoints.list(
            thread,
            str(ns) if ns is not None else None,
            get_checkpoint_id(config) if config else None,
            before=get_checkpoint_id(before) if before else None,
            metadata=filter,
            limit=limit,
        )
        return (self._tuple(stored) for stored in found)

    def _tuple(self, stored: StoredCheckpoint) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed((stored.type, stored.checkpoint))
        values = {
            b.channel: self.serde.loads_typed((b.type, b.data or b""))
            for b in stored.blobs
            if b.type != EMPTY
        }
        here = {"thread_id": stored.thread_id, "checkpoint_ns": stored.checkpoint_ns}
        return CheckpointTuple(
            config={"configurable": {**here, "checkpoint_id": stored.checkpoint_id}},
            checkpoint={**checkpoint, "channel_values": values},
            metadata=stored.metadata,  # type: ignore[arg-type]
            parent_config=(
                {"configurable": {**here, "checkpoint_id": stored.parent_checkpoint_id}}
                if stored.parent_checkpoint_id
                else None
            ),
            pending_writes=[
                (w.task_id, w.channel, self.serde.loads_typed((w.type, w.data))) for w in stored.writes
            ],
        )

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions that sort as text and never repeat across forks (a random fraction after the count),
        so two branches from one checkpoint never save different values under one version."""
        count = 0 if current is None else int(str(current).split(".")[0])
        return f"{count + 1:032}.{random.random():016}"

    # --- async: the same, in a worker thread ----------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(self.list, config, filter=filter, before=before, limit=limit)
        while (item := await asyncio.to_thread(next, found, None)) is not None:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, list(writes), task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, list(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)
