"""A storage URL's helpers: telling a PostgreSQL connection URL from a file's path, and keeping its
credentials out of what is shown (messages, ``stats``, the inspector). The engine and the PostgreSQL
backend both use them; nothing here loads a driver."""

from __future__ import annotations

import re
from urllib.parse import unquote

_SCHEMES = ("postgresql://", "postgres://")


def is_url(path: str) -> bool:
    """True for a PostgreSQL connection URL (``postgresql://`` or ``postgres://``)."""
    return path.startswith(_SCHEMES)


# Query parameters whose values are credentials: libpq's password, and the passphrase of an SSL client key.
_SECRET_PARAMETERS = frozenset({"password", "sslpassword"})
_HIDDEN = "***"


_PARAMETER = re.compile(r"\?[^?=&@]*=")  # where a query begins: "?name="


def _userinfo_end(rest: str) -> int:
    """Where the user part of a URL's remainder (after ``://``) ends, or -1: its last ``@`` before the query. A
    password may hold an unencoded ``/``, ``?`` or ``@`` (libpq would refuse the URL, but the message that says
    so shows it), so where the URL is ambiguous more is masked, never less."""
    query = _PARAMETER.search(rest)
    return rest.rfind("@", 0, query.start() if query else len(rest))


def _secrets(url: str) -> list[str]:
    """The credentials written in ``url``, as written and percent-decoded (to take out of messages)."""
    _, sep, rest = url.partition("://")
    if not sep:
        return []
    found: list[str] = []
    end = _userinfo_end(rest)
    if end >= 0 and ":" in rest[:end]:
        found.append(rest[:end].split(":", 1)[1])
    for piece in rest[end + 1 :].partition("?")[2].split("&"):
        key, eq, value = piece.partition("=")
        if eq and unquote(key).strip().lower() in _SECRET_PARAMETERS:
            found.append(value)
    return [text for secret in found if secret for text in {secret, unquote(secret)}]


def redact(url: str) -> str:
    """``url`` without its credentials, for messages, ``stats`` and the inspector: the password of its user part
    (``user:***@``) and the value of every ``password`` or ``sslpassword`` query parameter, whatever its case or
    encoding (``?password=***``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = _userinfo_end(rest)
    user, after = (rest[:end], rest[end:]) if end >= 0 else ("", rest)
    if ":" in user:
        user = user.split(":", 1)[0] + ":" + _HIDDEN
    base, mark, query = after.partition("?")
    pieces = []
    for piece in query.split("&") if mark else []:
        key, eq, _ = piece.partition("=")
        pieces.append(
            key + eq + _HIDDEN if eq and unquote(key).strip().lower() in _SECRET_PARAMETERS else piece
        )
    return scheme + sep + user + base + (mark + "&".join(pieces) if mark else "")


def scrub(message: str, url: str) -> str:
    """``message`` (a driver's error) with every credential of ``url`` taken out, wherever it appears."""
    for secret in sorted(_secrets(url), key=len, reverse=True):
        message = message.replace(secret, _HIDDEN)
    return message
