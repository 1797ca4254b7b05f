"""The bundled model, for real: offline, verified, faithful on both runtimes; and the remote providers."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import SetupError, StorageError, Vault
from perseus_vault_core import embeddings as E
from perseus_vault_core.embeddings import minilm as M
from perseus_vault_core.embeddings.providers import OllamaEmbedder, OpenAICompatibleEmbedder, from_spec

SENTENCES = [
    "We chose SQLite in WAL mode for the vault.",
    "How do we keep memory off the GPU?",
    "The billing ledger runs on postgres with nightly backups.",
    "Alice prefers short answers with the command first.",
    "Recall latency spiked during the nightly import; fixed by batching writes.",
    "Zürich, naïve café, 東京 — unicode survives tokenization.",
    "x",
    "word " * 400,  # longer than the model's 256 tokens: truncated the same way
]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    """sentence-transformers' own embeddings of SENTENCES: the reference any runtime must reproduce."""
    return M.MiniLMTorch(threads=2).embed(SENTENCES)


def test_default_runtime_reproduces_sentence_transformers(real_embedder: Any, reference: np.ndarray) -> None:
    assert isinstance(real_embedder, M.MiniLMOnnx)
    assert real_embedder.identity == E.BUNDLED_IDENTITY and real_embedder.dimension == 384
    got = real_embedder.embed(SENTENCES)
    assert got.dtype == np.float32 and got.shape == (len(SENTENCES), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosine = (got * reference).sum(axis=1)
    assert cosine.min() >= 0.999, cosine


def test_single_thread_runtime_agrees(reference: np.ndarray) -> None:
    one = M.MiniLMOnnx(threads=1).embed(SENTENCES[:3])
    assert (one * reference[:3]).sum(axis=1).min() >= 0.999


def test_loads_with_the_network_blocked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    reference: np.ndarray) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError("network access attempted during an offline test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))  # nothing cached: the graph verified anew
    model = M.MiniLMOnnx()
    assert (model.embed(SENTENCES[:2]) * reference[:2]).sum(axis=1).min() >= 0.999
    with Vault(tmp_path / "offline.db") as vault:  # the default embedder, end to end
        vault.remember("note", "k", "offline memories stay offline")
        assert vault.recall("memories kept without a network", mode="dense").items


def test_corrupt_weights_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "model"
    shutil.copytree(M.model_dir(), copy)
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(SetupError, match="checksum"):
        M.verify_weights(copy)
    assert M.verify_weights(M.model_dir()).name == "model.safetensors"


def test_lazy_embedder_loads_only_when_used(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str | None] = []
    monkeypatch.setattr(E, "load", lambda spec=None, threads=None: loaded.append(spec) or _Fixed())
    lazy = E.LazyEmbedder()
    assert lazy.identity == E.BUNDLED_IDENTITY and lazy.dimension == 384 and loaded == []
    lazy.embed(["now"])
    assert loaded == [None]


class _Fixed:
    identity = E.BUNDLED_IDENTITY
    dimension = 384

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 384), dtype=np.float32) / np.sqrt(384)


def test_embedding_text_joins_summary_and_content() -> None:
    assert E.embedding_text("body", None) == "body"
    assert E.embedding_text("body", "Title") == "Title: body"  # the colon says which part is which
    assert E.embedding_text("body", "A title.") == "A title. body"
    assert E.embedding_text("body", "  ") == "body"


# --- operator-configured providers, against a real local HTTP server ----------------------------


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


# --- meaning where keywords fail, with the real model --------------------------------------------

PARAPHRASES = [
    ("db", "We chose SQLite in WAL mode for the vault.", "which database engine did we pick"),
    ("style", "Alice prefers short answers with the command first.", "how does she like replies formatted"),
    ("rollout", "The deploy pipeline ships canary releases before production.", "staged rollout process"),
    ("outage", "Lock contention took the service down on Tuesday.", "why did the system crash"),
    ("pets", "My dog Rex needs his vaccination in March.", "when is the puppy's vet appointment"),
]


def test_dense_finds_paraphrases_keyword_recall_misses(tmp_path: Path, real_embedder: Any) -> None:
    with Vault(tmp_path / "para.db", embedder=real_embedder) as vault:
        # Neutral keys: the key is searchable text too, and must not give the answer away.
        keys = {key: vault.remember("note", f"m{i}", text).id for i, (key, text, _) in enumerate(PARAPHRASES)}
        for key, _, query in PARAPHRASES:
            keyword = vault.recall(query, mode="fts5", reinforce=False)
            assert keys[key] not in [i.id for i in keyword.items[:1]], query  # keywords miss it
            dense = vault.recall(query, mode="dense", reinforce=False, min_score=None)  # one sits at cosine 0.21
            assert dense.items[0].id == keys[key], query
            hybrid = vault.recall(query, reinforce=False, min_score=None)
            assert hybrid.search_mode == "hybrid" and hybrid.items[0].id == keys[key], query


def test_the_command_line_does_not_import_urllib() -> None:
    """Only a configured remote provider talks HTTP: urllib.request (with http.client, email and
    ssl, ~17 ms) is not imported by a process that runs the command line, as before every turn."""
    import subprocess
    import sys

    code = "import sys, perseus_vault_core.cli.main; print(sorted(m for m in sys.modules if m.startswith('urllib.req')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
