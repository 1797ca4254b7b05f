"""A resident helper: one process per vault and scope that keeps the model and the indexes loaded, so that
the command line called before every agent turn (``perseus-vault prepare`` in a hook) answers at hook speed.

A new process that answers ``prepare`` alone pays for its interpreter, its imports, loading the model and
opening the indexes: most of a second with the bundled model. The helper (``perseus-vault resident``,
:mod:`.server`) pays that once and then answers the CLI's read commands over a Unix socket; the CLI
(:mod:`.client`, run before anything else is imported) finds it by the vault's path and scope, sends its
command line, and prints what comes back. What comes back is what the same command prints alone (the
helper runs the CLI's own ``main`` on its open vault); whenever the helper is absent, dies mid-call, is
stale or serves something else, the CLI answers alone.

This module is what both sides share, and imports nothing but the standard library's lightest parts:
the client runs in every CLI process before it decides whether it needs the rest.

- ``PERSEUS_VAULT_RESIDENT``: ``1`` lets the CLI start a helper when none runs (it then exits when idle);
  ``0`` never uses one; unset, the CLI uses one that runs (started by hand or by an earlier call) and
  starts none.
- Where: one private folder (``$PERSEUS_VAULT_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/perseus-vault``, else
  ``/tmp/perseus-vault-<uid>``), mode 0700 and owned by the user, or nothing is used; in it one socket per
  vault, scope and embedder setting, mode 0600, named by a hash of the three.
- Only plaintext SQLite files: a PostgreSQL URL, an in-memory or URI path and an encrypted vault (a key in
  the environment) are answered alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

PROTOCOL = 2  # the request and reply shapes; a helper of another protocol or version is not used
ENV = "PERSEUS_VAULT_RESIDENT"
IDLE_ENV = "PERSEUS_VAULT_RESIDENT_IDLE"
RUNTIME_ENV = "PERSEUS_VAULT_RUNTIME_DIR"
DEFAULT_IDLE_S = 900.0  # a helper exits after this long without a call
DEFAULT_PATH = "perseus_vault.db"  # vault.DEFAULT_PATH, without importing the vault (a test holds them equal)
# The commands a helper answers: reads whose output depends only on the vault and the arguments (each
# command's words as the parser accepts them; tests/core/resident/test_server.py holds this to the table).
SERVED = frozenset({"prepare", "context", "recall", "recall-when", "recall_when", "search"})
# Settings that change what a command answers: a helper serves only calls made with its own.
IDENTITY_ENV = ("PERSEUS_VAULT_EMBEDDER",)
# Settings under which the CLI works alone: an encrypted vault's key, and a traceback wanted.
ALONE_ENV = ("PERSEUS_VAULT_KEY", "PERSEUS_VAULT_KEY_FILE", "PERSEUS_VAULT_DEBUG")


class Refused(BaseException):
    """A helper will not answer a call (another vault, scope or setting): the CLI answers alone. Not an
    ``Exception``, so that the CLI's own error handling (every failure is one line) passes it through."""


def private_dir(create: bool) -> str | None:
    """The folder of the helpers' sockets, created (0700) when ``create``; ``None`` when there is none this
    user alone can reach (not a folder, a link, another owner, open to others), or no Unix sockets."""
    if os.name != "posix":
        return None
    folder = os.environ.get(RUNTIME_ENV)
    if not folder:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = runtime if runtime and os.path.isabs(runtime) else os.environ.get("TMPDIR") or "/tmp"
        folder = os.path.join(base, "perseus-vault" if base == runtime else f"perseus-vault-{os.geteuid()}")
    if create:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        found = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o077:
        return None
    return folder


def identity(db: str, agent_id: str | None, workspace_hash: str | None) -> dict[str, Any]:
    """What a helper serves and a call asks for: the vault's real path, the scope and the settings."""
    return {
        "db": db,
        "scope": [agent_id, workspace_hash],
        "env": {name: os.environ.get(name) or "" for name in IDENTITY_ENV},
    }


def socket_path(folder: str, ident: dict[str, Any]) -> str:
    """The socket of the helper for ``ident`` in ``folder``: a hash of it, short enough for any folder a
    socket path fits in (108 bytes at most)."""
    digest = hashlib.sha256(json.dumps([PROTOCOL, ident], sort_keys=True).encode("utf-8", "surrogatepass"))
    return os.path.join(folder, digest.hexdigest()[:24] + ".sock")
