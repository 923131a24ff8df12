"""ONNX models built with ``onnx.helper`` the way exporters write them, for tests, docs and
benchmarks: a transformer encoder layer (multi-head attention, LayerNorm, GELU MLP) with a
symbolic batch and sequence length.

The reshapes that split heads compute their target shape from ``Shape`` of the input, as
PyTorch's exporter does for dynamic axes, so the importer's symbolic shape folding is exercised.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper


class _Graph:
    def __init__(self, rng: np.random.Generator, dtype: type[np.floating]):
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = rng
        self.dtype = dtype
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def init(self, name: str, value: np.ndarray) -> str:
        if value.dtype.kind == "f":  # drawn as f32, so every dtype holds the same numbers
            value = value.astype(np.float32).astype(self.dtype)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def weight(self, name: str, shape: tuple[int, ...], scale: float) -> str:
        w = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.init(name, w)

    def linear(self, x: str, prefix: str, d_in: int, d_out: int) -> str:
        w = self.weight(f"{prefix}.weight", (d_in, d_out), 1 / math.sqrt(d_in))
        b = self.weight(f"{prefix}.bias", (d_out,), 0.02)
        return self.node("Add", [self.node("MatMul", [x, w]), b])

    def layer_norm(self, x: str, prefix: str, d: int) -> str:
        g = self.init(f"{prefix}.weight", (1 + 0.1 * self.rng.standard_normal(d))
                      .astype(np.float32))
        b = self.weight(f"{prefix}.bias", (d,), 0.1)
        return self.node("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)

    def gelu(self, x: str) -> str:
        # the erf form PyTorch exports before opset 20: x * 0.5 * (1 + erf(x / sqrt(2)))
        r2 = self.init(self.name("sqrt2"), np.array(math.sqrt(2), np.float32))
        one = self.init(self.name("one"), np.array(1.0, np.float32))
        half = self.init(self.name("half"), np.array(0.5, np.float32))
        e = self.node("Add", [self.node("Erf", [self.node("Div", [x, r2])]), one])
        return self.node("Mul", [self.node("Mul", [x, half]), e])


def _split_heads(g: _Graph, x: str, heads: int, dk: int) -> str:
    """[B, S, D] -> [B, H, S, dk], the target shape taken from Shape(x) as exporters do."""
    shape = g.node("Shape", [x])
    i0, i1 = g.init(g.name("i0"), np.array([0])), g.init(g.name("i1"), np.array([1]))
    b = g.node("Gather", [shape, i0], axis=0)
    s = g.node("Gather", [shape, i1], axis=0)
    hd = g.init(g.name("hd"), np.array([heads, dk], np.int64))
    target = g.node("Concat", [b, s, hd], axis=0)
    return g.node("Transpose", [g.node("Reshape", [x, target])], perm=[0, 2, 1, 3])


def encoder_layer(d_model: int = 64, heads: int = 4, d_ff: int = 256, seed: int = 0,
                  opset: int = 17, layers: int = 1,
                  dtype: type[np.floating] = np.float32) -> onnx.ModelProto:
    """A post-LayerNorm transformer encoder (BERT-style), ``layers`` deep, as an ONNX model
    with input ``x: float[batch, seq, d_model]`` and output ``y`` of the same shape.

    ``dtype=np.float64`` builds the same model (the same f32 weights, widened) in double
    precision, as a near-exact reference for accuracy comparisons."""
    if d_model % heads:
        raise ValueError("d_model must be a multiple of heads")
    g = _Graph(np.random.default_rng(seed), dtype)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    dk = d_model // heads
    x = "x"
    for layer in range(layers):
        p = f"layers.{layer}"
        q, k, v = (_split_heads(g, g.linear(x, f"{p}.attn.{n}", d_model, d_model), heads, dk)
                   for n in ("q_proj", "k_proj", "v_proj"))
        kt = g.node("Transpose", [k], perm=[0, 1, 3, 2])
        scale = g.init(g.name("scale"), np.array(math.sqrt(dk), np.float32))
        scores = g.node("Div", [g.node("MatMul", [q, kt]), scale])
        attn = g.node("MatMul", [g.node("Softmax", [scores], axis=-1), v])
        merged = g.node("Transpose", [attn], perm=[0, 2, 1, 3])
        flat = g.init(g.name("merge"), np.array([0, 0, d_model], np.int64))
        merged = g.node("Reshape", [merged, flat])  # 0 copies batch and seq
        h = g.layer_norm(g.node("Add", [x, g.linear(merged, f"{p}.attn.out_proj", d_model,
                                                    d_model)]), f"{p}.norm1", d_model)
        ff = g.linear(g.gelu(g.linear(h, f"{p}.ff.0", d_model, d_ff)), f"{p}.ff.2", d_ff,
                      d_model)
        x = g.layer_norm(g.node("Add", [h, ff]), f"{p}.norm2", d_model)
    g.nodes.append(helper.make_node("Identity", [x], ["y"], name="output"))
    graph = helper.make_graph(
        g.nodes, "encoder",
        [helper.make_tensor_value_info("x", elem, ["batch", "seq", d_model])],
        [helper.make_tensor_value_info("y", elem, ["batch", "seq", d_model])],
        g.inits)
    # the opset's IR version (not the newest): older onnxruntimes refuse newer ones
    model = helper.make_model_gen_version(graph, opset_imports=[helper.make_opsetid("", opset)],
                                          producer_name="tcp-rules zoo")
    onnx.checker.check_model(model, full_check=True)
    return model
