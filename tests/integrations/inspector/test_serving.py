"""``perseus-vault ui`` and ``perseus-vault serve --http`` as real processes: the URL printed, the inspector
beside MCP under the same token, the refusals before anything is served."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from perseus_vault_core import Vault

from ...conftest import FakeEmbedder, wait_for_port
from .conftest import TOKEN

ROOT = Path(__file__).resolve().parents[3]


def env(**more: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PERSEUS_VAULT_HTTP_TOKEN")}
    return {**base, "PERSEUS_VAULT_EMBEDDER": "none", **more}


def filled(tmp_path: Path) -> Path:
    db = tmp_path / "ui.db"
    with Vault(db, embedder=FakeEmbedder()) as vault:
        vault.remember("decision", "db", "We chose SQLite for the vault")
    return db


def cli(*args: str, **more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "perseus_vault_core.cli", *args], cwd=ROOT, env=env(**more),
                          capture_output=True, text=True, timeout=120)


def test_ui_prints_its_url_and_serves_the_pages(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "perseus_vault_core.cli", "ui", "--db", str(filled(tmp_path)),
                             "--http", "127.0.0.1:0"], cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/"), url
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and "Overview" in page.text
        assert "We chose SQLite for the vault" in httpx.get(url + "browse", timeout=30).text
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_ui_refuses_before_serving(tmp_path: Path) -> None:
    db = filled(tmp_path)
    remote = cli("ui", "--db", str(db), "--http", "0.0.0.0:0")
    assert remote.returncode == 1 and "without a bearer token" in remote.stderr and remote.stderr.count("\n") == 1
    missing = cli("ui", "--db", str(tmp_path / "nope.db"), "--http", "127.0.0.1:0")
    assert missing.returncode == 1 and "no vault at" in missing.stderr and not (tmp_path / "nope.db").exists()
    bad = cli("ui", "--db", str(db), "--http", "127.0.0.1:99999")
    assert bad.returncode == 1 and "port from 0 to 65535" in bad.stderr


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_puts_the_inspector_beside_mcp_under_one_token(tmp_path: Path) -> None:
    db, port = filled(tmp_path), _port()
    proc = subprocess.Popen([sys.executable, "-m", "perseus_vault_core.cli", "serve", "--db", str(db), "--http",
                             f"127.0.0.1:{port}"], cwd=ROOT, env=env(PERSEUS_VAULT_HTTP_TOKEN=TOKEN),
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc)  # type: ignore[arg-type]  # a text-mode process
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(base + "/").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert "We chose SQLite for the vault" in httpx.get(base + "/browse", headers=auth).text
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        assert httpx.post(base + "/mcp", content=json.dumps(init), headers={**accept, **auth}).status_code == 200
        assert httpx.post(base + "/mcp", content=json.dumps(init), headers=accept).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.stderr is not None
    said = proc.stderr.read()
    assert f"MCP over streamable HTTP at http://127.0.0.1:{port}/mcp" in said
    assert f"the web inspector at http://127.0.0.1:{port}/" in said


def test_serve_no_ui_serves_mcp_alone(tmp_path: Path) -> None:
    db, port = filled(tmp_path), _port()
    proc = subprocess.Popen([sys.executable, "-m", "perseus_vault_core.cli", "serve", "--db", str(db), "--http",
                             f"127.0.0.1:{port}", "--no-ui"], cwd=ROOT, env=env(), stderr=subprocess.PIPE)
    try:
        wait_for_port(port, proc)
        assert httpx.get(f"http://127.0.0.1:{port}/").status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=30)
