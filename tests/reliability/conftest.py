"""A real streamable-HTTP MCP server process over a vault file, for the reliability tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ..conftest import wait_for_port

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "reliability-token-0123456789"

StartServer = Callable[..., str]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def start_server() -> Iterator[StartServer]:
    """``start_server(db, agent_id=None) -> url``: serve ``db`` on loopback (bearer ``TOKEN``) until the test ends."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(db: Path | str, agent_id: str | None = None) -> str:
        port = _free_port()
        args = [sys.executable, "-m", "tests.reliability._workers", "serve", str(db), str(port)]
        env = dict(os.environ, PERSEUS_VAULT_EMBEDDER="none", PERSEUS_VAULT_HTTP_TOKEN=TOKEN)
        proc = subprocess.Popen(
            args + ([agent_id] if agent_id else []), cwd=ROOT, env=env, stderr=subprocess.PIPE
        )
        procs.append(proc)
        wait_for_port(port, proc)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
