"""Who may use the inspector, probed as an attacker would: the MCP endpoint's token (a header, or the session
cookie a browser gets by signing in once), its Host/Origin check on loopback, and the headers every response
carries so that nothing but this server's own files can run in its pages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from perseus_vault_core import SetupError, Vault
from perseus_vault_integrations.inspector import Inspector
from perseus_vault_integrations.inspector.guard import COOKIE, POLICY

from ...conftest import FakeEmbedder
from .conftest import TOKEN, Server, served

SECRET = "Bob earns 120k a year"


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Vault]:
    with Vault(tmp_path / "guard.db", embedder=FakeEmbedder()) as v:
        v.remember("note", "salary", SECRET)
        yield v


@pytest.fixture
def remote(vault: Vault) -> Iterator[Server]:
    """The inspector with the rules of a server bound off loopback (0.0.0.0), listening on 127.0.0.1."""
    with served(vault, host="0.0.0.0", token=TOKEN) as server:
        yield server


def sign_in(client: httpx.Client, server: Server, token: str, origin: str | None = None) -> httpx.Response:
    form = client.get(f"{server.url}/login?next=/browse").text
    csrf = form.split('name="csrf" value="')[1].split('"')[0]
    return client.post(f"{server.url}/login", data={"token": token, "next": "/browse", "csrf": csrf},
                       headers={"Origin": origin or server.url})


def test_off_loopback_a_request_without_the_token_is_refused(remote: Server) -> None:
    for path in ("/", "/browse", "/memory/1", "/recall?q=salary", "/graph", "/time", "/hygiene", "/files", "/other"):
        r = httpx.get(remote.url + path)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", path
        assert SECRET not in r.text and "Sign in" in r.text
    r = httpx.post(f"{remote.url}/memory/1/forget", data={"csrf": "x"}, headers={"Origin": remote.url})
    assert r.status_code == 401
    for wrong in ("", f"Bearer {TOKEN[:-1]}", f"Bearer {TOKEN}x", f"bearer {TOKEN}", TOKEN):
        assert httpx.get(remote.url + "/", headers={"Authorization": wrong}).status_code == 401, wrong
    r = httpx.get(remote.url + "/browse", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and SECRET in r.text  # as MCP clients send it


def test_a_browser_signs_in_once_and_its_cookie_is_not_the_token(remote: Server) -> None:
    with httpx.Client() as client:
        assert sign_in(client, remote, "not-the-token-at-all").status_code == 401
        assert COOKIE not in client.cookies
        r = sign_in(client, remote, TOKEN)
        assert r.status_code == 303 and r.headers["location"] == "/browse"
        cookie = r.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict") and TOKEN not in cookie
        assert SECRET in client.get(f"{remote.url}/browse").text
    forged = httpx.get(f"{remote.url}/browse", cookies={COOKIE: "0" * 64})
    assert forged.status_code == 401


def test_signing_in_from_another_site_is_refused(remote: Server) -> None:
    with httpx.Client() as client:
        assert sign_in(client, remote, TOKEN, origin="http://evil.example").status_code == 403
        assert COOKIE not in client.cookies
        r = client.post(f"{remote.url}/login", data={"token": TOKEN, "csrf": "forged"}, headers={"Origin": remote.url})
        assert r.status_code == 403 and COOKIE not in client.cookies
        r = sign_in(client, remote, TOKEN)
        assert r.status_code == 303
    for target in ("https://evil.example/", "//evil.example", "/\\evil.example"):  # elsewhere: the front page
        with httpx.Client() as client:
            form = client.get(f"{remote.url}/login").text
            csrf = form.split('name="csrf" value="')[1].split('"')[0]
            r = client.post(f"{remote.url}/login", data={"token": TOKEN, "next": target, "csrf": csrf},
                            headers={"Origin": remote.url})
            assert r.headers["location"] == "/", target


def test_the_static_files_and_the_sign_in_page_need_no_token(remote: Server) -> None:
    assert httpx.get(f"{remote.url}/static/app.css").status_code == 200
    assert httpx.get(f"{remote.url}/login").status_code == 200


def test_on_loopback_a_forged_host_or_origin_is_refused(vault: Vault) -> None:
    with served(vault) as server:  # loopback, no token: as the MCP endpoint beside it
        port = server.url.rsplit(":", 1)[1]
        assert httpx.get(server.url + "/").status_code == 200
        assert httpx.get(server.url + "/", headers={"Origin": server.url}).status_code == 200
        for origin in ("http://evil.example", f"http://evil.example:{port}", f"http://localhost:{int(port) + 1}", "null"):
            r = httpx.get(server.url + "/browse", headers={"Origin": origin})
            assert r.status_code == 403 and SECRET not in r.text, origin
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{int(port) + 1}"):
            r = httpx.get(server.url + "/browse", headers={"Host": host})
            assert r.status_code == 421 and SECRET not in r.text, host


def test_every_response_carries_the_content_security_policy(remote: Server) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path, headers in (("/", auth), ("/no-such", auth), ("/static/app.js", {}), ("/", {}), ("/memory/9", auth)):
        r = httpx.get(remote.url + path, headers=headers)
        assert r.headers["content-security-policy"] == POLICY, path
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["x-frame-options"] == "DENY"
        assert r.headers["cache-control"] == "no-store"
        assert float(r.headers["server-timing"].removeprefix("app;dur=")) >= 0
    assert "script-src 'self'" in POLICY and "unsafe" not in POLICY and "frame-ancestors 'none'" in POLICY


def test_off_loopback_without_a_token_the_inspector_refuses_to_exist(vault: Vault) -> None:
    with pytest.raises(SetupError, match="without a bearer token"):
        Inspector(vault, "0.0.0.0", 8765, None)
    with pytest.raises(SetupError, match="characters"):
        Inspector(vault, "127.0.0.1", 8765, "short")


def test_beside_mcp_the_cookie_opens_the_pages_but_never_mcp(vault: Vault) -> None:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with served(vault, host="0.0.0.0", token=TOKEN, mcp=True) as server, httpx.Client() as client:
        assert sign_in(client, server, TOKEN).status_code == 303
        assert SECRET in client.get(f"{server.url}/browse").text
        assert client.post(f"{server.url}/mcp", json=init, headers=accept).status_code == 401
        r = client.post(f"{server.url}/mcp", json=init, headers={**accept, "Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200
