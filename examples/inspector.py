"""Serve a small vault's web inspector on a free port, read three of its pages as a browser would, and stop.

    python examples/inspector.py          (perseus-vault ui --db memory.db serves one until Ctrl-C)

Needs the mcp extra (the HTTP server): pip install "perseus-vault[mcp]".
"""

import re
import tempfile
import threading
from pathlib import Path

import httpx
import uvicorn

from perseus_vault_core import Vault
from perseus_vault_integrations.inspector import Inspector
from perseus_vault_integrations.mcp.http import listen, server_config

with Vault(Path(tempfile.mkdtemp()) / "inspector.db", embedder=False) as vault:
    db = vault.remember("decision", "db-engine", "We chose MySQL for the vault.", topic_path="architecture")
    vault.remember("decision", "db-engine", "We chose SQLite in WAL mode for the vault.")
    backup = vault.remember(
        "note", "backups", "Nightly backups copy the SQLite file.", topic_path="architecture"
    )
    vault.link(backup.id, db.id, relation="depends_on")
    vault.remember("note", "html", "<script>alert('stored text is shown, never run')</script>")

    sock = listen("127.0.0.1", 0)  # a free port on loopback
    port = sock.getsockname()[1]
    server = uvicorn.Server(server_config(Inspector(vault, "127.0.0.1", port, None), "127.0.0.1", port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
    base = f"http://127.0.0.1:{port}"
    print(f"the inspector is at {base}/")

    overview = httpx.get(f"{base}/").text
    print("overview:", re.search(r"<strong>(\d+)</strong> active memories", overview).group(0))
    memory = httpx.get(f"{base}/memory/{db.id}").text
    print("the memory's page:", re.search(r"History \(\d+ versions?\)", memory).group(0))
    assert "We chose MySQL" in memory and "We chose SQLite" in memory  # both versions, on the timeline
    found = httpx.get(f"{base}/browse", params={"q": "script"}).text
    assert "&lt;script&gt;" in found and "<script>alert" not in found  # memory content is always text
    print("a stored <script> is shown as text:", "&lt;script&gt;alert" in found)

    server.should_exit = True
    thread.join(30)
