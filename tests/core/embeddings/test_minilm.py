"""The bundled model (embeddings/minilm.py), for real: offline, verified, faithful on both runtimes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import SetupError, Vault
from perseus_vault_core import embeddings as E
from perseus_vault_core.embeddings import minilm as M

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


def test_loads_with_the_network_blocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: np.ndarray, no_network: None
) -> None:
    monkeypatch.setenv(
        "PERSEUS_VAULT_CACHE", str(tmp_path / "cache")
    )  # nothing cached: the graph verified anew
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
            dense = vault.recall(
                query, mode="dense", reinforce=False, min_score=None
            )  # one sits at cosine 0.21
            assert dense.items[0].id == keys[key], query
            hybrid = vault.recall(query, reinforce=False, min_score=None)
            assert hybrid.search_mode == "hybrid" and hybrid.items[0].id == keys[key], query
