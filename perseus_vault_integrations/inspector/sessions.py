"""The inspector's sign-in sessions: what the cookie a browser gets for the token holds, how long it opens
the pages, and signing out (docs/ui.md).

A session is ``EXPIRES.NONCE.MAC``: the unix second it stops opening pages (``SESSION_S`` after sign-in),
a random nonce, and an HMAC of both under a key drawn from the token and this server's port. So the
cookie never holds the token; a copy of it stops working when it expires, whatever a browser does with
its ``Max-Age``; a server on another port of the same host (browsers keep cookies apart by host, not by
port) neither reads it, since its name carries the port, nor would accept it; and signing out revokes it
here until it would have expired. Changing the token ends every session.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable

SESSION_S = 12 * 3600  # a working day: sign in again the next morning
COOKIE = "perseus_vault_inspector"


class Sessions:
    """The sessions of one inspector served with ``token`` on ``port``."""

    def __init__(
        self, token: str, port: int, *, seconds: int = SESSION_S, clock: Callable[[], float] = time.time
    ) -> None:
        self.name = f"{COOKIE}_{port}"  # the cookie's name: one per port of a host
        self.seconds, self._clock = seconds, clock
        self._key = hmac.new(
            token.encode(), f"perseus-vault inspector session, port {port}".encode(), hashlib.sha256
        ).digest()
        self._lock = threading.Lock()
        self._revoked: dict[str, int] = {}  # signed out -> when it would have expired

    def new(self) -> str:
        """A session for a browser that just typed the token."""
        body = f"{int(self._clock()) + self.seconds}.{secrets.token_urlsafe(12)}"
        return f"{body}.{self._mac(body)}"

    def valid(self, value: str | None) -> bool:
        """Whether ``value`` is a session of this server that has neither expired nor been signed out."""
        expires = self._expires(value)
        if expires is None or expires <= self._clock():
            return False
        with self._lock:
            return value not in self._revoked

    def revoke(self, value: str | None) -> None:
        """Sign ``value`` out: refused from now on, as a copy of it would be. A forged one is not kept."""
        if not self.valid(value) or value is None:
            return
        now = self._clock()
        with self._lock:
            for old in [v for v, expires in self._revoked.items() if expires <= now]:
                del self._revoked[old]  # expired anyway: no longer worth remembering
            self._revoked[value] = self._expires(value) or 0

    def _expires(self, value: str | None) -> int | None:
        """When a genuine session expires; ``None`` for anything this server did not sign."""
        parts = (value or "").split(".")
        if len(parts) != 3 or not (parts[0].isascii() and parts[0].isdigit()):
            return None
        if not hmac.compare_digest(parts[2].encode(), self._mac(f"{parts[0]}.{parts[1]}").encode()):
            return None
        return int(parts[0])

    def _mac(self, body: str) -> str:
        return hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()
