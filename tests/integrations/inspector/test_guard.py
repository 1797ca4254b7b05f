"""Who may use the inspector, probed as an attacker would: the MCP endpoint's token (a header, or the session
cookie a browser gets by signing in once: signed, expiring, named for its port, ended by signing out), its
Host/Origin check on loopback, Fetch Metadata on every route, and the headers every response carries so that
nothing but this server's own files can run in its pages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from perseus_vault_core import SetupError, Vault
from perseus_vault_integrations.inspector import Inspector
from perseus_vault_integrations.inspector.guard import POLICY
from perseus_vault_integrations.inspector.sessions import COOKIE, SESSION_S, Sessions

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


def cookie(server: Server) -> str:
    """The name of the session cookie of the inspector at ``server`` (it carries the port)."""
    return f"{COOKIE}_{server.url.rsplit(':', 1)[1]}"


def sign_in(client: httpx.Client, server: Server, token: str, origin: str | None = None) -> httpx.Response:
    form = client.get(f"{server.url}/login?next=/browse").text
    csrf = form.split('name="csrf" value="')[1].split('"')[0]
    return client.post(
        f"{server.url}/login",
        data={"token": token, "next": "/browse", "csrf": csrf},
        headers={"Origin": origin or server.url},
    )


def test_off_loopback_a_request_without_the_token_is_refused(remote: Server) -> None:
    for path in (
        "/",
        "/browse",
        "/memory/1",
        "/recall?q=salary",
        "/graph",
        "/time",
        "/hygiene",
        "/files",
        "/other",
    ):
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
        assert cookie(remote) not in client.cookies
        r = sign_in(client, remote, TOKEN)
        assert r.status_code == 303 and r.headers["location"] == "/browse"
        header = r.headers["set-cookie"]
        assert (
            "HttpOnly" in header
            and "SameSite=strict" in header.replace("Strict", "strict")
            and TOKEN not in header
        )
        assert header.startswith(f"{cookie(remote)}=")  # named for this server's port
        assert f"Max-Age={SESSION_S}" in header and "Secure" not in header  # plain HTTP: no Secure
        assert SECRET in client.get(f"{remote.url}/browse").text
    forged = httpx.get(f"{remote.url}/browse", cookies={cookie(remote): "0" * 64})
    assert forged.status_code == 401


def test_signing_in_from_another_site_is_refused(remote: Server) -> None:
    with httpx.Client() as client:
        assert sign_in(client, remote, TOKEN, origin="http://evil.example").status_code == 403
        assert cookie(remote) not in client.cookies
        r = client.post(
            f"{remote.url}/login", data={"token": TOKEN, "csrf": "forged"}, headers={"Origin": remote.url}
        )
        assert r.status_code == 403 and cookie(remote) not in client.cookies
        r = sign_in(client, remote, TOKEN)
        assert r.status_code == 303
    for target in ("https://evil.example/", "//evil.example", "/\\evil.example"):  # elsewhere: the front page
        with httpx.Client() as client:
            form = client.get(f"{remote.url}/login").text
            csrf = form.split('name="csrf" value="')[1].split('"')[0]
            r = client.post(
                f"{remote.url}/login",
                data={"token": TOKEN, "next": target, "csrf": csrf},
                headers={"Origin": remote.url},
            )
            assert r.headers["location"] == "/", target


def test_the_static_files_and_the_sign_in_page_need_no_token(remote: Server) -> None:
    assert httpx.get(f"{remote.url}/static/app.css").status_code == 200
    assert httpx.get(f"{remote.url}/login").status_code == 200


def test_on_loopback_a_forged_host_or_origin_is_refused(vault: Vault) -> None:
    with served(vault) as server:  # loopback, no token: as the MCP endpoint beside it
        port = server.url.rsplit(":", 1)[1]
        assert httpx.get(server.url + "/").status_code == 200
        assert httpx.get(server.url + "/", headers={"Origin": server.url}).status_code == 200
        for origin in (
            "http://evil.example",
            f"http://evil.example:{port}",
            f"http://localhost:{int(port) + 1}",
            "null",
        ):
            r = httpx.get(server.url + "/browse", headers={"Origin": origin})
            assert r.status_code == 403 and SECRET not in r.text, origin
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{int(port) + 1}"):
            r = httpx.get(server.url + "/browse", headers={"Host": host})
            assert r.status_code == 421 and SECRET not in r.text, host


def test_every_response_carries_the_content_security_policy(remote: Server) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path, headers in (
        ("/", auth),
        ("/no-such", auth),
        ("/static/app.js", {}),
        ("/", {}),
        ("/memory/9", auth),
    ):
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
    with served(vault, host="0.0.0.0", token=TOKEN, mcp=True) as server, httpx.Client() as client:
        assert sign_in(client, server, TOKEN).status_code == 303
        assert SECRET in client.get(f"{server.url}/browse").text
        assert client.post(f"{server.url}/mcp", json=init, headers=accept).status_code == 401
        r = client.post(
            f"{server.url}/mcp", json=init, headers={**accept, "Authorization": f"Bearer {TOKEN}"}
        )
        assert r.status_code == 200


def test_a_request_from_another_site_s_page_is_refused_on_every_route(vault: Vault) -> None:
    """A page elsewhere (or on another port of this host) may not even read: an <img> GET carries no Origin,
    and one hygiene query starts seconds of work. The user's own navigation and this server's pages pass."""
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
    with served(
        vault, mcp=True
    ) as server:  # loopback, no token: the Host/Origin check alone let these through
        for site in ("cross-site", "same-site", "Cross-Site"):
            for path in ("/", "/browse", "/hygiene?min_age_days=3", "/static/app.css", "/login", "/memory/1"):
                r = httpx.get(
                    server.url + path, headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "no-cors"}
                )
                assert r.status_code == 403 and SECRET not in r.text, (site, path)
                assert (
                    r.headers["content-security-policy"] == POLICY
                )  # the guard's own page is locked down too
            r = httpx.post(
                server.url + "/memory/1/forget", data={"csrf": "x"}, headers={"Sec-Fetch-Site": site}
            )
            assert r.status_code == 403
            r = httpx.post(server.url + "/mcp", json=init, headers={**accept, "Sec-Fetch-Site": site})
            assert r.status_code == 403 and b"Sec-Fetch-Site" in r.content
        for site in ("same-origin", "none"):  # this server's own pages; an address typed or bookmarked
            r = httpx.get(server.url + "/browse", headers={"Sec-Fetch-Site": site})
            assert r.status_code == 200 and SECRET in r.text, site
        assert (
            httpx.post(
                server.url + "/mcp", json=init, headers={**accept, "Sec-Fetch-Site": "none"}
            ).status_code
            == 200
        )
        assert (
            httpx.get(server.url + "/browse").status_code == 200
        )  # no header: curl, MCP clients, old browsers


def csrf_of(page: str) -> str:
    return page.split('name="csrf" value="')[1].split('"')[0]


def test_signing_out_ends_the_session_and_a_copy_of_its_cookie(remote: Server) -> None:
    with httpx.Client() as client:
        assert sign_in(client, remote, TOKEN).status_code == 303
        copied = client.cookies[cookie(remote)]
        page = client.get(f"{remote.url}/browse").text
        assert (
            'action="/logout"' in page and "Sign out" in page
        )  # every page offers it to a signed-in browser
        r = client.post(
            f"{remote.url}/logout", data={"csrf": csrf_of(page)}, headers={"Origin": "http://evil.example"}
        )
        assert (
            r.status_code == 403 and SECRET in client.get(f"{remote.url}/browse").text
        )  # not from another site
        r = client.post(f"{remote.url}/logout", data={"csrf": csrf_of(page)}, headers={"Origin": remote.url})
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert cookie(remote) not in client.cookies  # the browser forgets it (Max-Age=0)
        assert client.get(f"{remote.url}/browse").status_code == 401
    stolen = httpx.get(f"{remote.url}/browse", cookies={cookie(remote): copied})
    assert stolen.status_code == 401 and SECRET not in stolen.text  # and this server refuses a copy of it
    page = httpx.get(f"{remote.url}/browse", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert 'action="/logout"' not in page  # a client with the header has no session to end


def test_a_session_expires_on_the_server_whatever_the_browser_keeps(remote: Server) -> None:
    port = int(remote.url.rsplit(":", 1)[1])
    lapsed = Sessions(TOKEN, port, clock=lambda: time.time() - SESSION_S - 1).new()  # signed here, 12 h ago
    assert httpx.get(f"{remote.url}/browse", cookies={cookie(remote): lapsed}).status_code == 401
    current = Sessions(TOKEN, port).new()
    assert httpx.get(f"{remote.url}/browse", cookies={cookie(remote): current}).status_code == 200
    tampered = current.replace(
        current.split(".")[0], str(int(current.split(".")[0]) + 10**6)
    )  # a later expiry
    assert httpx.get(f"{remote.url}/browse", cookies={cookie(remote): tampered}).status_code == 401


def test_two_servers_on_one_host_keep_their_sessions_apart(vault: Vault) -> None:
    """Browsers do not keep cookies apart by port: each server's cookie has a name of its own, and neither
    accepts the other's, even under the same token."""
    with (
        served(vault, host="0.0.0.0", token=TOKEN) as a,
        served(vault, host="0.0.0.0", token=TOKEN) as b,
        httpx.Client() as client,
    ):  # one cookie jar for both, as one browser
        assert sign_in(client, a, TOKEN).status_code == 303
        assert client.get(f"{a.url}/browse").status_code == 200
        assert client.get(f"{b.url}/browse").status_code == 401  # a's cookie reaches b, and opens nothing
        borrowed = httpx.get(f"{b.url}/browse", cookies={cookie(b): client.cookies[cookie(a)]})
        assert borrowed.status_code == 401
        assert sign_in(client, b, TOKEN).status_code == 303
        page = client.get(f"{b.url}/browse").text
        assert (
            client.post(
                f"{b.url}/logout", data={"csrf": csrf_of(page)}, headers={"Origin": b.url}
            ).status_code
            == 303
        )
        assert client.get(f"{b.url}/browse").status_code == 401
        assert client.get(f"{a.url}/browse").status_code == 200  # signing out of b leaves a signed in


def test_behind_a_tls_proxy_on_this_host_the_cookie_is_secure(remote: Server) -> None:
    """A proxy on this host that ends TLS says so (X-Forwarded-Proto, which uvicorn takes from 127.0.0.1 only):
    the browser then talks HTTPS, so its cookie must never go out over plain HTTP."""
    public = remote.url.replace("http://", "https://")
    with httpx.Client() as client:
        csrf = csrf_of(client.get(f"{remote.url}/login").text)
        r = client.post(
            f"{remote.url}/login",
            data={"token": TOKEN, "next": "/", "csrf": csrf},
            headers={"Origin": public, "X-Forwarded-Proto": "https"},
        )
        assert r.status_code == 303 and "; secure" in r.headers["set-cookie"].lower()
