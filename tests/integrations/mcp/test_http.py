"""The MCP server over streamable HTTP (mcp/http.py): the token required off loopback and its rules, where
it comes from, the Host/Origin check for each loopback spelling, the Sec-Fetch-Site refusal, the URL and
socket a server announces and binds, and the clear-text warning. Over real sockets, with hostile clients,
in tests/reliability/test_http.py."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from perseus_vault_core import SetupError, Vault
from perseus_vault_integrations.mcp.http import (
    TOKEN_ENV,
    TOKEN_FILE_ENV,
    Tls,
    base_url,
    bearer,
    carries,
    check_token,
    clear_text_warning,
    foreign_site,
    http_app,
    is_loopback,
    listen,
    resolve_token,
    tls_files,
    transport_security,
)

from ...conftest import FakeEmbedder

TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Vault]:
    with Vault(tmp_path / "mcp.db", embedder=FakeEmbedder()) as v:
        yield v


def test_http_elsewhere_than_loopback_needs_a_token(vault: Vault) -> None:
    with pytest.raises(SetupError, match="token"):
        http_app(vault, "0.0.0.0", 8765, None)
    for short in ("", "t", "x" * 15):  # refused on loopback too: a token set is a token meant to protect
        with pytest.raises(SetupError, match="at least 16"):
            http_app(vault, "127.0.0.1", 8765, short)
    assert http_app(vault, "0.0.0.0", 8765, "t" * 16) is not None
    assert http_app(vault, "127.0.0.1", 8765, None) is not None


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("localhost", True),
        ("", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_which_hosts_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_token_is_long_and_printable_ascii() -> None:
    assert check_token("x" * 16, "here") == "x" * 16
    with pytest.raises(SetupError, match="^here: the bearer token has 15 characters, at least 16"):
        check_token("x" * 15, "here")
    for bad in ("x" * 16 + " ", "x" * 15 + "é", "x" * 15 + "\n", "\t" + "x" * 16):
        with pytest.raises(SetupError, match="printable ASCII"):
            check_token(bad, "here")


def test_the_token_comes_from_the_environment_or_a_private_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.delenv(TOKEN_FILE_ENV, raising=False)
    assert resolve_token() is None
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    assert resolve_token() == TOKEN
    monkeypatch.setenv(TOKEN_ENV, "")  # set but empty: a secret that failed to arrive, not "no token"
    with pytest.raises(SetupError, match=f"^{TOKEN_ENV}: the bearer token has 0 characters"):
        resolve_token()
    file = tmp_path / "token"
    file.write_text("from-the-file-0123456789\n")
    file.chmod(0o600)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(TOKEN_FILE_ENV, str(file))
    with pytest.raises(SetupError, match="set only one"):
        resolve_token()
    monkeypatch.delenv(TOKEN_ENV)
    assert resolve_token() == "from-the-file-0123456789"  # its trailing newline dropped
    assert resolve_token(str(file)) == "from-the-file-0123456789"  # --token-file wins over the environment
    file.chmod(0o644)
    with pytest.raises(SetupError):
        resolve_token(str(file))  # others can read it: no secret


def test_on_loopback_only_this_port_s_loopback_names_are_hosts_and_origins() -> None:
    settings = transport_security("127.0.0.2", 8765)
    assert settings.enable_dns_rebinding_protection
    assert set(settings.allowed_hosts) == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765", "127.0.0.2:8765"}
    assert set(settings.allowed_origins) == {f"http://{h}" for h in settings.allowed_hosts}
    v6 = transport_security("[0:0:0:0:0:0:0:1]", 9000, https=True)
    assert "[0:0:0:0:0:0:0:1]:9000" in v6.allowed_hosts and "[::1]:9000" in v6.allowed_hosts
    assert all(o.startswith("https://") for o in v6.allowed_origins)
    default = transport_security("localhost", 80)  # a browser leaves the default port out
    assert "localhost" in default.allowed_hosts and "localhost:80" in default.allowed_hosts
    assert "localhost" not in transport_security("localhost", 443).allowed_hosts
    assert "localhost" in transport_security("localhost", 443, https=True).allowed_hosts
    assert not transport_security("0.0.0.0", 8765).enable_dns_rebinding_protection


def test_the_bearer_header_and_the_fetch_site_are_read_from_the_request() -> None:
    expected = bearer(TOKEN)
    assert expected == f"Bearer {TOKEN}".encode()
    assert carries({"headers": [(b"authorization", expected)]}, expected)
    assert not carries({"headers": [(b"authorization", expected + b"x")]}, expected)
    assert not carries({"headers": []}, expected) and not carries({}, expected)

    def site(value: bytes) -> str | None:
        return foreign_site({"headers": [(b"sec-fetch-site", value)]})

    assert foreign_site({"headers": []}) is None  # curl and MCP clients send none
    assert site(b"same-origin") is None and site(b"none") is None and site(b"Same-Origin") is None
    assert site(b"cross-site") == "cross-site" and site(b"same-site") == "same-site"
    assert site(b"x" * 100) == "x" * 40  # what a page sent is quoted cut short


def test_the_url_a_server_announces() -> None:
    assert base_url("127.0.0.1", 8765) == "http://127.0.0.1:8765"
    assert base_url("", 8765) == "http://127.0.0.1:8765"
    assert base_url("::1", 8765) == "http://[::1]:8765" == base_url("[::1]", 8765)
    assert base_url("example.com", 443, https=True) == "https://example.com:443"


def test_a_port_in_use_is_one_setup_error() -> None:
    sock = listen("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert sock.family == socket.AF_INET and sock.get_inheritable()
        with pytest.raises(
            SetupError, match=f"^cannot listen on http://127.0.0.1:{port}: the port is in use$"
        ):
            listen("127.0.0.1", port)
    finally:
        sock.close()


def test_off_loopback_without_tls_the_server_warns_of_clear_text(tmp_path: Path) -> None:
    assert clear_text_warning("127.0.0.1", None) == [] and clear_text_warning("::1", None) == []
    assert clear_text_warning("0.0.0.0", Tls("cert.pem", "key.pem")) == []
    (warning,) = clear_text_warning("0.0.0.0", None)
    assert warning.startswith("warning: plain HTTP on 0.0.0.0") and "clear text" in warning
    assert tls_files(None, None) is None
    for cert, key in (("cert.pem", None), (None, "key.pem")):
        with pytest.raises(SetupError, match="go together"):
            tls_files(cert, key)
