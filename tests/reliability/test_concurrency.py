"""Concurrency (docs/operations.md, docs/postgres.md): writers and readers on one file or one PostgreSQL
database, through the engine (processes and threads) and through two HTTP MCP servers, for a bounded time. No caller sees an error (busy waits stay in the
engine), every acknowledged write is there afterwards, every scan pass sees each entity exactly once
while writes land, and the keyword and vector indexes match the rows at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import anyio
import pytest

from perseus_vault_core import Vault
from perseus_vault_integrations.mcp import VaultClient

from ..conftest import FakeEmbedder
from ._checks import index_problems
from ._workers import CATEGORY
from .conftest import ROOT, TOKEN, StartServer

SECONDS = 6.0
WRITERS = 4  # engine writer processes; as many HTTP writers, engine reader threads and HTTP readers
BATCH = 3
READERS = 4  # engine reader processes, besides the reader threads in this one
SERVERS = 2  # HTTP MCP servers, each its own process on the same vault; HTTP writers and readers alternate


def _scan_all(read: Any) -> list[int]:
    """One full keyset pass; ``read(cursor)`` returns (ids, next_cursor)."""
    ids: list[int] = []
    cursor = None
    while True:
        page, cursor = read(cursor)
        ids.extend(page)
        if cursor is None:
            return ids


def _exactly_once(ids: list[int], before: set[int], errors: list[str], who: str) -> None:
    """A pass lists ids ascending, none twice, and every id a completed earlier pass saw (nothing is deleted)."""
    if ids != sorted(set(ids)):
        errors.append(f"{who}: a scan pass repeated or reordered ids")
    lost = before - set(ids)
    if lost:
        errors.append(f"{who}: a scan pass missed {len(lost)} ids seen before, e.g. {sorted(lost)[:3]}")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_writers_and_readers_through_the_engine_and_http(
    vault_path: Path | str, start_server: StartServer
) -> None:
    db_path = vault_path  # one file, or one database that every process opens by its URL
    with Vault(db_path, embedder=FakeEmbedder()) as vault:
        vault.remember(
            "seed", "s", "durable seed memory about sqlite"
        )  # the file exists, migrated, with a model
    started = time.monotonic()
    urls = [start_server(db_path) for _ in range(SERVERS)]
    print(f"servers up {time.monotonic() - started:.1f}s")
    errors: list[str] = []
    http_acked: list[str] = []
    stop = threading.Event()
    counts = {"engine scans": 0, "http scans": 0, "engine recalls": 0, "http recalls": 0}

    env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.reliability._workers",
                "batches",
                str(db_path),
                f"p{n}",
                "0",
                str(BATCH),
                str(SECONDS),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(WRITERS)
    ]
    reader_procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._workers", "reads", str(db_path), str(SECONDS)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(READERS)
    ]

    def engine_reader(vault: Vault, n: int) -> None:
        seen: set[int] = set()
        modes = ["fts5", "dense", "hybrid"]
        try:
            while not stop.is_set():

                def read(cursor: str | None) -> tuple[list[int], str | None]:
                    page = vault.scan(cursor=cursor, limit=50)
                    return [e.id for e in page.items], page.next_cursor

                ids = _scan_all(read)
                _exactly_once(ids, seen, errors, f"engine reader {n}")
                seen = set(ids)
                counts["engine scans"] += 1
                vault.recall("durable memory storage", mode=modes[counts["engine recalls"] % 3], limit=5)
                counts["engine recalls"] += 1
        except Exception as exc:  # with where it came from: a rare failure here must say which statement
            errors.append(f"engine reader {n}: {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=-8)}")

    async def http_writer(n: int) -> None:
        async with VaultClient.http(urls[n % SERVERS], TOKEN) as c:
            i = 0
            while not stop.is_set():
                key = f"h{n}-{i}"
                await c.remember(CATEGORY, key, f"http writer {n} memory {i} durable note", agent_id=f"h{n}")
                http_acked.append(key)
                i += 1

    async def http_reader(n: int) -> None:
        seen: set[int] = set()
        async with VaultClient.http(urls[(n + 1) % SERVERS], TOKEN) as c:
            while not stop.is_set():

                async def page(cursor: str | None) -> tuple[list[int], str | None]:
                    p = await c.call("scan", cursor=cursor, limit=50)
                    return [e["id"] for e in p["items"]], p["next_cursor"]

                ids: list[int] = []
                cursor = None
                while True:
                    got, cursor = await page(cursor)
                    ids.extend(got)
                    if cursor is None:
                        break
                _exactly_once(ids, seen, errors, f"http reader {n}")
                seen = set(ids)
                counts["http scans"] += 1
                await c.recall("memory note", mode=["fts5", "dense", "hybrid"][n % 3], limit=5)
                counts["http recalls"] += 1

    async def http_side() -> None:
        async def guarded(fn: Any, n: int) -> None:
            try:
                await fn(n)
            except Exception as exc:
                errors.append(f"{fn.__name__} {n}: {type(exc).__name__}: {exc}")

        async with anyio.create_task_group() as group:
            for n in range(WRITERS):
                group.start_soon(guarded, http_writer, n)
                group.start_soon(guarded, http_reader, n)

    with Vault(db_path, embedder=FakeEmbedder()) as shared:
        readers = [threading.Thread(target=engine_reader, args=(shared, n)) for n in range(WRITERS)]
        http_thread = threading.Thread(target=anyio.run, args=(http_side,))
        for t in [*readers, http_thread]:
            t.start()
        outputs = [p.communicate(timeout=SECONDS + 120) for p in procs]
        read_outputs = [p.communicate(timeout=SECONDS + 120) for p in reader_procs]
        print(f"writers done {time.monotonic() - started:.1f}s")
        stop.set()
        for t in [*readers, http_thread]:
            t.join(120)
        print(f"readers done {time.monotonic() - started:.1f}s")
        assert not any(t.is_alive() for t in [*readers, http_thread])

        assert errors == []
        for n, (out, err) in enumerate(read_outputs):  # reader processes: whole passes, each exactly once
            assert reader_procs[n].returncode == 0 and "error" not in out, (out[-500:], err[-2000:])
            assert any(line.startswith("pass ") for line in out.splitlines()), out[-500:]
        acked_batches: dict[str, list[int]] = {}
        for n, (out, err) in enumerate(outputs):
            assert procs[n].returncode == 0, (out[-500:], err[-2000:])
            acked_batches[f"p{n}"] = [
                int(line.split()[1]) for line in out.splitlines() if line.startswith("ack ")
            ]
        # Every acknowledged write is there, through a fresh scan.
        keys: set[str] = set()
        cursor = None
        while True:
            page = shared.scan(cursor=cursor, limit=1000, category=CATEGORY)
            keys.update(e.key for e in page.items)
            cursor = page.next_cursor
            if cursor is None:
                break
        expected = {
            f"{w}-b{b}-i{j}" for w, batches in acked_batches.items() for b in batches for j in range(BATCH)
        }
        assert expected - keys == set()
        assert set(http_acked) - keys == set()
        assert all(len(b) >= 3 for b in acked_batches.values()), acked_batches
        assert http_acked and counts["http scans"] and counts["engine scans"] >= WRITERS  # real work was done
    assert index_problems(db_path) == []
    print(
        f"{sum(len(b) for b in acked_batches.values())} engine batches, {len(http_acked)} HTTP writes, {counts}"
    )
