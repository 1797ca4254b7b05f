"""The sign-in sessions (inspector/sessions.py): what a cookie holds and whom it opens, its expiry on the
server's clock, signing out, and the list of revoked sessions staying small. Over HTTP, in test_guard.py."""

from __future__ import annotations

import re

from perseus_vault_integrations.inspector.sessions import COOKIE, SESSION_S, Sessions

from .conftest import TOKEN


def test_a_session_opens_this_server_only_until_it_expires_or_is_revoked() -> None:
    now = [1_000_000.0]
    sessions = Sessions(TOKEN, 8765, seconds=60, clock=lambda: now[0])
    value = sessions.new()
    assert sessions.valid(value) and TOKEN not in value
    assert not Sessions(TOKEN, 8766, clock=lambda: now[0]).valid(value)  # another port's server
    assert not Sessions(TOKEN[::-1], 8765, clock=lambda: now[0]).valid(value)  # another token
    for forged in ("", "x", "1.2.3", f"{'٩' * 7}.a.b", value + "0", None):
        assert not sessions.valid(forged), forged
    now[0] += 59
    assert sessions.valid(value)
    now[0] += 1
    assert not sessions.valid(value)  # expired
    other = sessions.new()
    sessions.revoke(other)
    assert not sessions.valid(other)
    sessions.revoke("1.2.3")  # a forged one is not remembered
    assert list(sessions._revoked) == [other]
    now[0] += 61
    sessions.revoke(sessions.new())  # the expired one is forgotten when another is revoked
    assert other not in sessions._revoked and len(sessions._revoked) == 1


def test_the_cookie_is_named_for_the_port_and_lasts_a_working_day_by_default() -> None:
    now = 1_700_000_000.0
    a, b = Sessions(TOKEN, 8765, clock=lambda: now), Sessions(TOKEN, 8766, clock=lambda: now)
    assert a.name == f"{COOKIE}_8765" and b.name == f"{COOKIE}_8766"
    value = a.new()
    expires, nonce, mac = value.split(".")
    assert int(expires) == int(now) + SESSION_S == int(now) + 12 * 3600
    assert nonce and re.fullmatch(r"[0-9a-f]{64}", mac)  # an HMAC-SHA256, not the token
    assert a.new() != value  # each sign-in its own nonce
    assert a.valid(value) and a.valid(a.new())


def test_a_cookie_edited_to_last_longer_or_with_another_nonce_is_refused() -> None:
    now = [1_000_000.0]
    sessions = Sessions(TOKEN, 8765, seconds=60, clock=lambda: now[0])
    expires, nonce, mac = sessions.new().split(".")
    assert sessions.valid(f"{expires}.{nonce}.{mac}")
    assert not sessions.valid(f"{int(expires) + 3600}.{nonce}.{mac}")  # pushed later: the MAC no longer fits
    assert not sessions.valid(f"{expires}.{nonce}x.{mac}")
    assert not sessions.valid(f"{expires}.{nonce}.{mac.upper()}")
    assert not sessions.valid(f"{expires}.{nonce}.{mac}.")  # a fourth part
    assert not sessions.valid(f"-{expires}.{nonce}.{mac}")  # not digits
    now[0] += 60
    assert not sessions.valid(f"{expires}.{nonce}.{mac}")  # the instant it expires it opens nothing


def test_signing_out_refuses_that_session_only_and_an_expired_one_is_not_kept() -> None:
    now = [1_000_000.0]
    sessions = Sessions(TOKEN, 8765, seconds=60, clock=lambda: now[0])
    kept, out = sessions.new(), sessions.new()
    sessions.revoke(out)
    sessions.revoke(out)  # twice is once
    assert sessions.valid(kept) and not sessions.valid(out)
    assert len(sessions._revoked) == 1
    sessions.revoke(None)
    now[0] += 60
    sessions.revoke(kept)  # expired already: nothing to remember
    assert not sessions.valid(kept) and list(sessions._revoked) == [out]
