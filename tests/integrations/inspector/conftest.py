"""A sample store that every view has something to show for, and the inspector served over it.

``fill`` writes what an agent's memory holds after a few weeks: three themes of linked memories (three
communities, one with a summary), a fact that changed and one that was archived and restored, a
superseded decision, an expiring note, memory files, two scopes, and a memory whose every field is an
attack on the page (``HOSTILE``). ``served`` runs the real ASGI app under uvicorn on a loopback socket
in this process, as ``perseus-vault ui`` does, until the block ends. The fixtures ``store`` and ``server``
(one per test module) and the helpers ``get`` and ``text`` serve the views' tests (``views/``) and
``test_app.py``.
"""

from __future__ import annotations

import html
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from perseus_vault_core import Vault
from perseus_vault_integrations.inspector import Beside, Inspector
from perseus_vault_integrations.mcp.http import http_app, listen, server_config

from ...conftest import DAY_MS, Clock, FakeEmbedder

FOLDER = Path(__file__).resolve().parents[2] / "fixtures" / "memory_vault"
TOKEN = "inspector-token-0123456789abcdef"

THEMES = {
    "storage": [
        "SQLite in WAL mode keeps writes durable",
        "We chose SQLite for the storage engine",
        "Nightly backups copy the SQLite file to object storage",
        "The storage layer indexes text with FTS5",
        "Vacuum runs after large purges of storage",
    ],
    "billing": [
        "Stripe sends the invoices every month",
        "Billing retries failed card payments three times",
        "Refunds above 500 EUR need approval from finance",
        "The billing service owns invoice numbering",
        "Tax rates for invoices come from the billing config",
    ],
    "oncall": [
        "The pager rotation changes every Monday",
        "Escalate sev1 incidents to the on-call lead",
        "Runbooks for incidents live in the ops wiki",
        "Incident reviews happen within two days",
        "The on-call lead owns the incident timeline",
    ],
}

# Markup and script in every field a page shows: each must arrive as text and run nothing.
ATTACK = (
    '<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned = \'img\'">'
    "<a href=\"javascript:window.__pwned='a'\">click</a> [md](javascript:window.__pwned='md')"
)
HOSTILE: dict[str, Any] = {
    "category": 'note"><script>window.__pwned="category"</script>',
    "key": "<img src=x onerror=window.__pwned='key'>",
    "content": ATTACK,
    "summary": "<b onmouseover=window.__pwned='summary'>bold</b><style>body{display:none}</style>",
    "topic_path": "<svg onload=window.__pwned='topic'>",
    "source": "javascript:window.__pwned='source'",
    "recall_when": ["</script><script>window.__pwned='trigger'</script>"],
    "body": {"html": "<iframe src=\"javascript:window.__pwned='body'\"></iframe>"},
}


@dataclass
class Sample:
    ids: dict[str, int]  # name -> memory id
    themes: dict[str, list[int]]
    hostile: int


def fill(vault: Vault, clock: Clock) -> Sample:
    ids: dict[str, int] = {}
    themes: dict[str, list[int]] = {}
    for theme, texts in THEMES.items():
        themes[theme] = [
            vault.remember(
                "decision" if i % 2 else "fact",
                f"{theme}-{i}",
                text,
                topic_path=theme,
                type="decision" if i % 2 else "fact",
                agent_id="ops",
            ).id
            for i, text in enumerate(texts)
        ]
        clock.advance(DAY_MS)
    for members in themes.values():
        for a, b in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2)):
            vault.link(members[a], members[b], relation="supports" if a < b else "mentions", agent_id="ops")
    vault.link(themes["storage"][4], themes["billing"][4], relation="mentions", weight=0.5, agent_id="ops")
    ids["city"] = vault.remember(
        "fact", "alice-city", "Alice lives in Paris", agent_id="ops", source="chat 2026-01-02", certainty=0.8
    ).id
    clock.advance(3 * DAY_MS)
    vault.remember(
        "fact",
        "alice-city",
        "Alice lives in Berlin",
        agent_id="ops",
        valid_from_ms=clock.now - DAY_MS,
        verified=True,
    )  # she had moved the day before it was told
    ids["queue"] = vault.remember(
        "decision", "queue", "We use a Redis list as the job queue", agent_id="ops"
    ).id
    ids["queue2"] = vault.remember(
        "decision", "queue-v2", "Jobs move to Postgres SKIP LOCKED queues", agent_id="ops"
    ).id
    clock.advance(DAY_MS)
    vault.supersede(ids["queue"], ids["queue2"], agent_id="ops")
    ids["gone"] = vault.remember("note", "scratch", "A scratch note nobody needs", agent_id="ops").id
    vault.forget(ids["gone"], agent_id="ops")
    ids["soon"] = vault.remember(
        "note",
        "freeze",
        "Code freeze until the release ships",
        agent_id="ops",
        expires_at_ms=clock.now + 2 * DAY_MS,
    ).id
    ids["other"] = vault.remember(
        "fact", "bob-tea", "Bob drinks green tea", agent_id="sales", workspace_hash="crm"
    ).id
    hostile = vault.remember(**HOSTILE, agent_id="ops").id
    vault.link(
        hostile, themes["oncall"][0], relation="<script>window.__pwned='relation'</script>", agent_id="ops"
    )
    storage = next(
        c for c in vault.communities(agent_id="ops").communities if themes["storage"][0] in c.members
    )
    vault.community_summary(storage.id, agent_id="ops")
    clock.advance(DAY_MS)
    return Sample(ids, themes, hostile)


def import_files(vault: Vault, tmp: Path) -> None:
    """The memory files of the fixture folder, and one entry that is an attack."""
    folder = tmp / "notes"
    shutil.copytree(FOLDER, folder)
    vault.memory_import(folder, agent_id="ops")
    vault.add_memory("Opinions", "Testing", ATTACK, date="2026-01-05", agent_id="ops")


@contextmanager
def sample_store(folder: Path, embedder: Any) -> Iterator[tuple[Vault, Sample]]:
    """A vault in ``folder`` holding :func:`fill`'s memories and :func:`import_files`' files, on a test clock."""
    clock = Clock()
    with Vault(folder / "sample.db", clock=clock, embedder=embedder) as vault:
        sample = fill(vault, clock)
        import_files(vault, folder)
        yield vault, sample


class Server:
    """The inspector (and, with ``mcp``, MCP beside it) on a loopback socket in this process."""

    def __init__(self, app: Any, sock: Any) -> None:
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(server_config(app, "127.0.0.1", port))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the inspector's server did not start")
            self.thread.join(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)


@contextmanager
def served(
    vault: Vault, *, host: str = "127.0.0.1", token: str | None = None, mcp: bool = False, **options: Any
) -> Iterator[Server]:
    """Serve ``vault``'s inspector as if bound to ``host`` (its rules: loopback or not), on 127.0.0.1."""
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app: Any = Inspector(vault, host, port, token, **options)
    if mcp:
        scope = {k: v for k, v in options.items() if k in ("agent_id", "workspace_hash")}
        app = Beside(http_app(vault, host, port, token, **scope), app)
    with Server(app, sock) as server:
        yield server


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Vault, Sample]]:
    """The sample store, filled once for a test module (a module may define its own)."""
    with sample_store(tmp_path_factory.mktemp("inspector-app"), FakeEmbedder()) as store:
        yield store


@pytest.fixture(scope="module")
def server(store: tuple[Vault, Sample]) -> Iterator[Server]:
    """The inspector over ``store``, unbound and read-only."""
    with served(store[0]) as s:
        yield s


def get(server: Server, path: str, status: int = 200) -> str:
    """The HTML page at ``path``, answered with ``status``."""
    r = httpx.get(server.url + path, timeout=30)
    assert r.status_code == status, (path, r.status_code, r.text[-2000:])
    assert r.headers["content-type"].startswith("text/html")
    return r.text


def text(page: str) -> str:
    """What a reader sees: the page without its tags, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))
