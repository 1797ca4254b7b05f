"""The operator-configured providers (embeddings/providers.py), against a real local HTTP server; and the
command line, which never imports HTTP unless one is configured."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import SetupError, StorageError, Vault
from perseus_vault_core.embeddings.providers import OllamaEmbedder, OpenAICompatibleEmbedder, from_spec


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = body["input"]
        vectors = [[float(len(t)), 1.0, 2.0] for t in texts]
        if self.path == "/api/embed":
            reply: dict[str, Any] = {"embeddings": vectors}
        elif self.path == "/v1/embeddings":
            assert self.headers.get("Authorization") == "Bearer sk-test"
            reply = {"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vectors)))]}
        else:
            self.send_response(404)
            self.end_headers()
            return
        payload = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def provider_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_ollama_and_openai_compatible_providers(provider_url: str, tmp_path: Path) -> None:
    ollama = OllamaEmbedder("tiny", provider_url)
    assert (ollama.identity, ollama.dimension) == ("ollama:tiny", 3)
    out = ollama.embed(["ab", "abcd"])
    assert out.shape == (2, 3) and np.allclose(np.linalg.norm(out, axis=1), 1.0)
    openai = OpenAICompatibleEmbedder("tiny", f"{provider_url}/v1", api_key="sk-test")
    assert np.allclose(openai.embed(["ab", "abcd"]), out)  # order restored from "index"
    spec = from_spec(f"ollama:tiny@{provider_url}")
    assert spec.identity == "ollama:tiny"
    with Vault(tmp_path / "remote.db", embedder=ollama) as vault:
        vault.remember("note", "k", "remote vectors")
        assert vault.stats().embedding_model == "ollama:tiny"
        assert vault.recall("remote", mode="dense").items  # 3 dimensions: sign bits pad to a byte


def test_provider_failures_are_clear() -> None:
    with pytest.raises(StorageError, match="embedding provider"):
        OllamaEmbedder("tiny", "http://127.0.0.1:9")
    with pytest.raises(SetupError, match="PERSEUS_VAULT_EMBEDDER"):
        from_spec("cohere:whatever")


def test_the_command_line_does_not_import_urllib() -> None:
    """Only a configured remote provider talks HTTP: urllib.request (with http.client, email and
    ssl, ~17 ms) is not imported by a process that runs the command line, as before every turn."""
    import subprocess
    import sys

    code = "import sys, perseus_vault_core.cli.main; print(sorted(m for m in sys.modules if m.startswith('urllib.req')))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"
