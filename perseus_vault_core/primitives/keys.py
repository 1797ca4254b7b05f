"""Secrets the vault reads: the encryption key (given, or from the environment or a file) and
secret files, which must not be readable by other users. Pure but for reading the environment and files."""

from __future__ import annotations

import os
import stat

from ..contract.errors import InvalidInput, SetupError
from . import file_locks

KEY_ENV = "PERSEUS_VAULT_KEY"
KEY_FILE_ENV = "PERSEUS_VAULT_KEY_FILE"


def read_secret_file(path: str, source: str, what: str = "key") -> str:
    """The secret held in the file at ``path`` (one trailing newline dropped).

    A secret file others can read is no secret: it is refused, like ssh refuses such a private key.
    """
    try:
        file_locks.refuse_held(
            path, source
        )  # a vault's own file given by mistake: never opened beside SQLite
    except InvalidInput as exc:
        raise SetupError(str(exc)) from None
    try:
        info = os.stat(path)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"{source}: cannot read the {what} file {path!r} ({exc})") from None
    if os.name == "posix" and info.st_mode & (stat.S_IRWXO):
        raise SetupError(
            f"{source}: the {what} file {path!r} is accessible to other users; "
            f"restrict it with `chmod 600 {path}` (or 640)"
        )
    if text.endswith("\n"):
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text


def read_key_file(path: str, source: str = KEY_FILE_ENV) -> str:
    """The encryption key held in the file at ``path`` (see :func:`read_secret_file`)."""
    return check_key(read_secret_file(path, source), source)


def check_key(key: object, source: str) -> str:
    """A usable key: a non-empty passphrase, or a raw key written ``x'<64 hex digits>'``."""
    if isinstance(key, bytes):
        try:
            key = key.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(
                source, "must be UTF-8 text (for a binary key use x'<64 hex digits>')"
            ) from None
    if not isinstance(key, str) or not key:
        raise InvalidInput(source, "must be a non-empty passphrase or x'<64 hex digits>'")
    if "\x00" in key:
        raise InvalidInput(source, "must not contain a NUL character")
    if key[:2].lower() == "x'":
        digits = key[2:-1] if key.endswith("'") else ""
        if len(digits) not in (64, 96) or any(c not in "0123456789abcdefABCDEF" for c in digits):
            raise InvalidInput(source, "a raw key is x' followed by 64 hex digits (96 with a salt) and '")
    return key


def resolve_key(key: str | bytes | None = None) -> str | None:
    """The encryption key: ``key`` when given, else ``PERSEUS_VAULT_KEY`` or the file
    ``PERSEUS_VAULT_KEY_FILE`` names; ``None`` when none is configured (a plaintext vault)."""
    if key is not None:
        return check_key(key, "key")
    value, file = os.environ.get(KEY_ENV), os.environ.get(KEY_FILE_ENV)
    if value and file:
        raise SetupError(f"both {KEY_ENV} and {KEY_FILE_ENV} are set; set only one")
    if file:
        return read_key_file(file)
    if value:
        return check_key(value, KEY_ENV)
    return None
