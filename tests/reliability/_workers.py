"""Processes the reliability tests start, kill and watch: ``python -m tests.reliability._workers ...``.

Each worker prints one line per acknowledged unit of work (flushed), so the parent knows exactly what
the vault promised before it was killed or stopped. Kept out of the test modules so that a child
imports only the vault, not pytest's collection of the tests.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from perseus_vault_core import Vault

from ..conftest import FakeEmbedder

CATEGORY = "batch"


def batch_items(writer: str, n: int, size: int) -> list[dict[str, Any]]:
    """Batch ``n`` of ``writer``: ``size`` new memories, plus a new version of the writer's tally."""
    items: list[dict[str, Any]] = [
        {
            "category": CATEGORY,
            "key": f"{writer}-b{n}-i{j}",
            "content": f"writer {writer} batch {n} item {j} durable memory about storage engines and sqlite",
            "summary": f"{writer} {n} {j}",
            "agent_id": writer,
        }
        for j in range(size)
    ]
    items.append(
        {
            "category": "tally",
            "key": writer,
            "content": f"writer {writer} acknowledged through batch {n}",
            "agent_id": writer,
        }
    )
    return items


def write_batches(db: str, writer: str, first: int, size: int, seconds: float) -> None:
    """Write batches ``first, first+1, ...`` until killed (or for ``seconds``); print ``ack N`` after each commit."""
    with Vault(db, embedder=FakeEmbedder()) as vault:
        print("ready", flush=True)
        deadline = time.monotonic() + seconds
        n = first
        while time.monotonic() < deadline:
            vault.remember_many(batch_items(writer, n, size))
            print(f"ack {n}", flush=True)
            n += 1
    print("done", flush=True)


def serve(db: str, port: int, agent_id: str | None) -> None:
    """One streamable-HTTP MCP server over ``db`` that embeds with the fake embedder, so its writes
    carry vectors like the engine writers' (the CLI's ``serve`` would load the real model). The
    token comes from the environment, as the CLI's does."""
    from perseus_vault_integrations.mcp import resolve_token, serve_http

    with Vault(db, embedder=FakeEmbedder()) as vault:
        serve_http(vault, "127.0.0.1", port, resolve_token(), agent_id=agent_id)


def save_indexes(db: str, rounds: int) -> None:
    """Rebuild and save the keyword index over and over (each round a reindex, so each save is a whole
    new snapshot); print ``saved N`` after each. The parent kills it at a random moment, often mid-save."""
    with Vault(db, embedder=False) as vault:
        print("ready", flush=True)
        for n in range(rounds):
            vault.reindex()
            vault.recall("storage engines")
            assert vault.wait_for_keyword_index()
            print(f"saved {n}", flush=True)


def read_passes(db: str, seconds: float) -> None:
    """Scan every memory, pass after pass, with a recall between passes, for ``seconds``; print ``pass N``
    after each whole pass, and ``error ...`` for a pass that repeated or reordered an id or missed one an
    earlier pass saw (nothing is ever deleted while the test runs)."""
    modes = ["fts5", "dense", "hybrid"]
    with Vault(db, embedder=FakeEmbedder()) as vault:
        print("ready", flush=True)
        deadline = time.monotonic() + seconds
        seen: set[int] = set()
        passes = 0
        while time.monotonic() < deadline:
            ids: list[int] = []
            cursor = None
            while True:
                page = vault.scan(cursor=cursor, limit=50)
                ids.extend(e.id for e in page.items)
                cursor = page.next_cursor
                if cursor is None:
                    break
            if ids != sorted(set(ids)):
                print("error a scan pass repeated or reordered ids", flush=True)
            if seen - set(ids):
                print(f"error a scan pass missed {len(seen - set(ids))} ids seen before", flush=True)
            seen = set(ids)
            vault.recall("durable memory storage", mode=modes[passes % 3], limit=5)
            passes += 1
            print(f"pass {len(ids)}", flush=True)


def write_then_build(db: str, writer: str, batches: int, ending: str) -> None:
    """Write ``batches`` batches (``ack N`` after each), then recall, which starts the background index
    builds over the whole vault, and end at once: ``close`` (close, then exit), ``exit`` (exit without
    closing), or ``wait`` (print ``building`` and sleep until the parent kills it)."""
    vault = Vault(db, embedder=FakeEmbedder())
    for n in range(batches):
        vault.remember_many(batch_items(writer, n, 4))
        print(f"ack {n}", flush=True)
    vault.recall("durable memory storage engines", limit=5)
    building = vault.engine.keyword_index is not None and vault.engine.keyword_index._building
    print(f"building {building}", flush=True)
    if ending == "close":
        vault.close()
    elif ending == "wait":
        time.sleep(600)


def hold(db: str, embedder: str) -> None:
    """A long-lived holder with its in-memory indexes (as an app holds a ``Vault``), driven line by line on
    stdin: ``write KEY TEXT`` remembers TEXT under KEY and prints ``ack KEY``; ``find MODE KEY QUERY`` recalls
    QUERY in MODE and prints ``found KEY`` or ``missing KEY (what came back)``. ``embedder``: ``fake`` (the
    vector index too) or ``none``."""
    with Vault(db, embedder=FakeEmbedder() if embedder == "fake" else False) as vault:
        vault.recall("warm up")  # starts the index builds
        ready = vault.wait_for_keyword_index(60) and (embedder != "fake" or vault.wait_for_vector_index(60))
        print("ready" if ready else "indexes not ready", flush=True)
        for line in sys.stdin:
            word, _, rest = line.rstrip("\n").partition(" ")
            if word == "write":
                key, _, text = rest.partition(" ")
                vault.remember("fact", key, text)
                print(f"ack {key}", flush=True)
            elif word == "find":
                mode, key, query = rest.split(" ", 2)
                keys = [e.key for e in vault.recall(query, mode=mode, limit=10, min_score=0.0).items]
                print(f"found {key}" if key in keys else f"missing {key} {keys}", flush=True)


def drive_mcp(db: str) -> None:
    """``perseus-vault serve`` over stdio through the MCP client, driven as :func:`hold` is (its first line:
    ``pid N``, the server's process, which the parent may kill)."""
    import anyio

    from perseus_vault_integrations.mcp import VaultClient

    async def run() -> None:
        async with VaultClient.stdio(db, env=dict(os.environ)) as client:
            await client.recall("warm up", mode="fts5")
            children = open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split()
            print(f"pid {children[0]}", flush=True)
            while line := await anyio.to_thread.run_sync(sys.stdin.readline):
                word, _, rest = line.rstrip("\n").partition(" ")
                if word == "write":
                    key, _, text = rest.partition(" ")
                    await client.remember("fact", key, text)
                    print(f"ack {key}", flush=True)
                elif word == "find":
                    mode, key, query = rest.split(" ", 2)
                    found = await client.recall(query, mode=mode, limit=10, min_score=0.0)
                    keys = [e.key for e in found.items]
                    print(f"found {key}" if key in keys else f"missing {key} {keys}", flush=True)

    anyio.run(run)


def main(argv: list[str]) -> None:
    if argv[0] == "build":
        write_then_build(argv[1], argv[2], int(argv[3]), argv[4])
        return
    if argv[0] == "reads":
        try:
            read_passes(argv[1], float(argv[2]))
        except Exception as exc:
            print(f"error {type(exc).__name__}: {exc}", flush=True)
            raise SystemExit(1) from None
        return
    if argv[0] == "hold":
        hold(argv[1], argv[2])
        return
    if argv[0] == "mcp":
        drive_mcp(argv[1])
        return
    if argv[0] == "saves":
        save_indexes(argv[1], int(argv[2]))
        return
    if argv[0] == "serve":
        _, db, port, *agent = argv
        serve(db, int(port), agent[0] if agent else None)
        return
    command, db, writer, first, size, seconds = argv
    if command != "batches":
        raise SystemExit(f"unknown command {command!r}")
    try:
        write_batches(db, writer, int(first), int(size), float(seconds))
    except Exception as exc:  # the parent asserts on this line: any error surfaced to a caller fails the test
        print(f"error {type(exc).__name__}: {exc}", flush=True)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main(sys.argv[1:])
