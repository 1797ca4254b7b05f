"""``perseus-vault ui`` and ``perseus-vault serve --http`` as real processes: the URL printed, the inspector
beside MCP under the same token, the refusals before anything is served, and HTTPS with a certificate made
for the test (the openssl command)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from perseus_vault_core import Vault
from perseus_vault_integrations.mcp import VaultClient

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
    return subprocess.run(
        [sys.executable, "-m", "perseus_vault_core.cli", *args],
        cwd=ROOT,
        env=env(**more),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ui_prints_its_url_and_serves_the_pages(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "ui",
            "--db",
            str(filled(tmp_path)),
            "--http",
            "127.0.0.1:0",
        ],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
    assert (
        remote.returncode == 1
        and "without a bearer token" in remote.stderr
        and remote.stderr.count("\n") == 1
    )
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
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "serve",
            "--db",
            str(db),
            "--http",
            f"127.0.0.1:{port}",
        ],
        cwd=ROOT,
        env=env(PERSEUS_VAULT_HTTP_TOKEN=TOKEN),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(port, proc)  # type: ignore[arg-type]  # a text-mode process
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(base + "/").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert "We chose SQLite for the vault" in httpx.get(base + "/browse", headers=auth).text
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        }
        accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        assert (
            httpx.post(base + "/mcp", content=json.dumps(init), headers={**accept, **auth}).status_code == 200
        )
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
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "serve",
            "--db",
            str(db),
            "--http",
            f"127.0.0.1:{port}",
            "--no-ui",
        ],
        cwd=ROOT,
        env=env(),
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(port, proc)
        assert httpx.get(f"http://127.0.0.1:{port}/").status_code == 404
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# --- HTTPS ------------------------------------------------------------------------------------------


def certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key (readable by its owner only), made
    now with the openssl command."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    made = subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    key.chmod(0o600)
    return cert, key


def test_serve_over_https_with_a_certificate_and_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, port, (cert, key) = filled(tmp_path), _port(), certificate(tmp_path)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "serve",
            "--db",
            str(db),
            "--http",
            f"127.0.0.1:{port}",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        cwd=ROOT,
        env=env(PERSEUS_VAULT_HTTP_TOKEN=TOKEN),
        stderr=subprocess.PIPE,
        text=True,
    )
    trusted = ssl.create_default_context(cafile=str(cert))
    base = f"https://127.0.0.1:{port}"
    try:
        wait_for_port(port, proc)  # type: ignore[arg-type]  # a text-mode process
        with httpx.Client(verify=trusted) as client:
            page = client.get(base + "/browse", headers={"Authorization": f"Bearer {TOKEN}"})
            assert page.status_code == 200 and "We chose SQLite for the vault" in page.text
            # A browser signs in over HTTPS: its Origin is https://..., and its cookie is Secure.
            form = client.get(base + "/login").text
            csrf = form.split('name="csrf" value="')[1].split('"')[0]
            r = client.post(
                base + "/login", data={"token": TOKEN, "next": "/", "csrf": csrf}, headers={"Origin": base}
            )
            assert r.status_code == 303 and "; secure" in r.headers["set-cookie"].lower()
            assert client.get(base + "/browse").status_code == 200
        with pytest.raises(httpx.ConnectError):  # nobody can listen in with a certificate it does not trust
            httpx.get(base + "/")
        with pytest.raises(httpx.TransportError):  # no page in clear text: the connection ends unanswered
            httpx.get(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {TOKEN}"})
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # what an MCP client is told to trust

        async def mcp_client() -> str:
            async with VaultClient.http(f"{base}/mcp", TOKEN) as vault:
                return (await vault.recall("SQLite")).items[0].content

        assert asyncio.run(mcp_client()) == "We chose SQLite for the vault"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.stderr is not None
    said = proc.stderr.read()
    assert f"MCP over streamable HTTP at {base}/mcp" in said and f"the web inspector at {base}/" in said
    assert "clear text" not in said


def test_ui_over_https_prints_its_https_url(tmp_path: Path) -> None:
    cert, key = certificate(tmp_path)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "perseus_vault_core.cli",
            "ui",
            "--db",
            str(filled(tmp_path)),
            "--http",
            "127.0.0.1:0",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("https://127.0.0.1:") and url.endswith("/"), url
        page = httpx.get(url + "browse", verify=ssl.create_default_context(cafile=str(cert)), timeout=30)
        assert page.status_code == 200 and "We chose SQLite for the vault" in page.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_tls_files_are_refused_before_serving_when_unusable(tmp_path: Path) -> None:
    db, (cert, key) = filled(tmp_path), certificate(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    _, other_key = certificate(other)
    open_key = tmp_path / "open.pem"
    open_key.write_bytes(key.read_bytes())
    open_key.chmod(0o644)
    locked = tmp_path / "locked.pem"
    made = subprocess.run(
        ["openssl", "pkey", "-in", str(key), "-aes256", "-passout", "pass:a-passphrase", "-out", str(locked)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    locked.chmod(0o600)
    cases = {
        "--tls-cert and --tls-key go together": ["--tls-cert", str(cert)],
        "accessible to other users": ["--tls-cert", str(cert), "--tls-key", str(open_key)],
        "cannot serve HTTPS": [
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(other_key),
        ],  # not this certificate's key
        "cannot read": ["--tls-cert", str(cert), "--tls-key", str(tmp_path / "missing.pem")],
        "is encrypted; give the key without a passphrase": [
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(locked),
        ],
    }
    for said, flags in cases.items():
        r = cli("ui", "--db", str(db), "--http", "127.0.0.1:0", *flags)
        assert r.returncode == 1 and said in r.stderr and r.stderr.count("\n") == 1, (said, r.stderr)
    r = cli(
        "serve", "--db", str(db), "--http", "127.0.0.1:1", "--tls-cert", str(cert), "--tls-key", str(open_key)
    )
    assert r.returncode == 1 and "accessible to other users" in r.stderr  # serve reads them the same way
    r = cli("serve", "--db", str(db), "--tls-cert", str(cert), "--tls-key", str(key))  # stdio has no TLS
    assert r.returncode == 1 and "--tls-cert: this is for HTTP" in r.stderr


def test_off_loopback_plain_http_says_the_token_travels_in_clear_text(tmp_path: Path) -> None:
    db, (cert, key) = filled(tmp_path), certificate(tmp_path)
    for tls, warned in (([], True), (["--tls-cert", str(cert), "--tls-key", str(key)], False)):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "perseus_vault_core.cli",
                "ui",
                "--db",
                str(db),
                "--http",
                "0.0.0.0:0",
                *tls,
            ],
            cwd=ROOT,
            env=env(PERSEUS_VAULT_HTTP_TOKEN=TOKEN),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None and proc.stderr is not None
            url = proc.stdout.readline().strip()
            wait_for_port(int(url.rsplit(":", 1)[1].strip("/")), proc)  # type: ignore[arg-type]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        said = proc.stderr.read()
        assert (
            "bearer token and the inspector's session cookie cross the network in clear text" in said
        ) == warned
        assert ("--tls-cert" in said) == warned  # and says what to do
