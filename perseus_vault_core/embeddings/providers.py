"""Optional remote embedding providers: Ollama and OpenAI-compatible endpoints.

Configured by the operator only (``PERSEUS_VAULT_EMBEDDER`` or ``Vault(embedder=...)``), never by
a tool argument, and never contacted unless configured: the bundled model is the default and
needs no network at all.

    PERSEUS_VAULT_EMBEDDER=ollama:nomic-embed-text@http://localhost:11434
    PERSEUS_VAULT_EMBEDDER=openai:text-embedding-3-small@https://api.openai.com/v1
    PERSEUS_VAULT_OPENAI_API_KEY=...   (read from the environment, never stored)
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..contract.errors import SetupError, StorageError
from .base import normalize

TIMEOUT_S = 60.0
BATCH = 64


def _post(url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    # Imported here: urllib.request brings http.client, email and ssl (~17 ms), which only a
    # configured remote provider needs; every keyword-only or bundled-model process would pay it.
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, TimeoutError, ValueError, OSError) as exc:
        raise StorageError(f"embedding provider at {url} failed: {exc}") from exc


def _rows(extract: Any, identity: str) -> list[list[float]]:
    """The embeddings of a provider's reply, or a clear error when the reply is not what it should be."""
    try:
        rows = extract()
        if not all(isinstance(r, list) for r in rows):
            raise TypeError("rows are not lists")
        return rows  # type: ignore[no-any-return]
    except (KeyError, TypeError, AttributeError) as exc:
        raise StorageError(
            f"{identity} sent a reply without embeddings in the expected shape ({exc})"
        ) from exc


class _Remote:
    identity = ""
    dimension = 0

    def _call(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def _probe(self) -> None:
        self.dimension = len(self._call(["dimension probe"])[0])
        if not self.dimension:
            raise SetupError(f"{self.identity} returned an empty embedding")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            rows.extend(self._call(list(texts[start : start + BATCH])))
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = np.asarray(rows, dtype=np.float32)
        if vectors.shape[1] != self.dimension:
            raise StorageError(
                f"{self.identity} changed dimension ({vectors.shape[1]}, was {self.dimension})"
            )
        return normalize(vectors)


class OllamaEmbedder(_Remote):
    def __init__(self, model: str, url: str = "http://localhost:11434") -> None:
        self.model, self.url = model, url.rstrip("/")
        self.identity = f"ollama:{model}"
        self._probe()

    def _call(self, texts: list[str]) -> list[list[float]]:
        reply = _post(f"{self.url}/api/embed", {"model": self.model, "input": texts})
        return _rows(lambda: list(reply["embeddings"]), self.identity)


class OpenAICompatibleEmbedder(_Remote):
    def __init__(
        self, model: str, url: str = "https://api.openai.com/v1", api_key: str | None = None
    ) -> None:
        self.model, self.url = model, url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("PERSEUS_VAULT_OPENAI_API_KEY", "")
        self.identity = f"openai:{model}"
        self._probe()

    def _call(self, texts: list[str]) -> list[list[float]]:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        reply = _post(f"{self.url}/embeddings", {"model": self.model, "input": texts}, headers)
        return _rows(
            lambda: [item["embedding"] for item in sorted(reply["data"], key=lambda d: d["index"])],
            self.identity,
        )


def from_spec(spec: str) -> _Remote:
    """``ollama:MODEL[@URL]`` or ``openai:MODEL[@URL]``."""
    kind, _, rest = spec.partition(":")
    model, _, url = rest.partition("@")
    if kind == "ollama" and model:
        return OllamaEmbedder(model, url or "http://localhost:11434")
    if kind == "openai" and model:
        return OpenAICompatibleEmbedder(model, url or "https://api.openai.com/v1")
    raise SetupError(
        f"PERSEUS_VAULT_EMBEDDER={spec!r} is not one of onnx, torch, e5, ollama:MODEL[@URL], openai:MODEL[@URL]"
    )
