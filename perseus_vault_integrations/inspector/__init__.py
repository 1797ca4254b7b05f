"""The web inspector: what an agent's memory holds, how it changed, why a recall ranks what it does,
how memories link and cluster (docs/ui.md).

Server-rendered pages over the vault's public verbs, served at ``/`` beside MCP (``perseus-vault serve
--http``) or alone (``perseus-vault ui``), under the MCP endpoint's token and Host/Origin rules. Every
asset ships in this package (``static/``); nothing is loaded from the network. Memory content is
untrusted: it is always escaped as text (:mod:`.markup`) under a Content-Security-Policy that allows
no inline script (:mod:`.guard`). Read-only unless served with ``--allow-edits`` (forget, restore,
verify, as CSRF-checked POSTs: :mod:`.edits`).
"""

from __future__ import annotations

from .app import Inspector
from .serving import Beside, serve_alone

__all__ = ["Beside", "Inspector", "serve_alone"]
