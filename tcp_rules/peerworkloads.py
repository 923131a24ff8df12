"""The peers suite's workloads (``tcpr bench --suite peers``): each one ONNX graph, which
tcp-rules imports and onnxruntime runs as it is, and the same computation written once over a
small math namespace (tcp_rules/peerengines.py), which NumPy, JAX and PyTorch run. NumPy's
namespace in float64 is the reference every engine is checked against.

``FULL`` sizes are those of the earlier side-by-side measurements: BERT-like activations and
a 16M-element stream, so that the large rows stream from memory; ``QUICK`` shrinks every one to
a few hundred elements for tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# compute(m, arrays): the workload's result from its arrays (graph inputs and initializers by
# ONNX name) with the ops of the math namespace ``m`` (and the arrays' own + * / @).
Compute = Callable[[Any, Mapping[str, Any]], Any]
EPS = 1e-5  # the norms' epsilon, as BERT's


@dataclass(frozen=True)
class Sizes:
    """The shapes of the suite: a streaming elementwise op, GELU, the row-wise reductions, an MLP
    layer, single-head attention, a square matmul and a transformer encoder layer."""

    stream: tuple[int, int]  # relu(a*b+c)
    gelu: tuple[int, int]
    rows: tuple[int, int]  # softmax, layernorm, RMSNorm
    mlp: tuple[int, int, int]  # batch, in, out
    attention: tuple[int, int]  # sequence, head size
    matmul: tuple[int, int, int]  # M, K, N
    encoder: tuple[int, int, int, int, int]  # batch, seq, d_model, heads, d_ff


FULL = Sizes(stream=(4096, 4096), gelu=(8192, 768), rows=(4096, 1024), mlp=(1024, 784, 128),
             attention=(512, 64), matmul=(1024, 1024, 1024), encoder=(8, 128, 256, 4, 1024))
QUICK = Sizes(stream=(16, 24), gelu=(8, 24), rows=(8, 32), mlp=(8, 20, 12), attention=(16, 8),
              matmul=(12, 20, 8), encoder=(2, 8, 16, 2, 32))


@dataclass
class Workload:
    """One row of the suite: the ONNX model, its graph inputs (``feeds``) and the computation
    for the namespace engines; ``arrays`` adds the model's initializers to the feeds.

    ``stream`` names the STREAM-like loop (benchmarks/README.md) a memory-bound workload's
    bandwidth is compared with: "triad" for a*b+c's three inputs, "copy" for one input and one
    output; None where the work is not a stream (matmuls). ``flops``: its floating-point
    operations where they measure it (the matmuls), else 0."""

    name: str
    title: str
    shape: str
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    compute: Compute
    stream: str | None = None
    flops: float = 0.0
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        inits = {t.name: numpy_helper.to_array(t) for t in self.model.graph.initializer}
        self.arrays = {**inits, **self.feeds}

    def traffic(self) -> int:
        """Bytes a call must move at least: every input and weight read once, the f32 result
        written once."""
        (out,) = self.model.graph.output
        cells = math.prod(d.dim_value for d in out.type.tensor_type.shape.dim)
        return sum(a.nbytes for a in self.arrays.values()) + 4 * cells


def _model(name: str, nodes: list[onnx.NodeProto], inputs: Mapping[str, tuple[int, ...]],
           inits: Mapping[str, np.ndarray], out: tuple[int, ...], opset: int = 17
           ) -> onnx.ModelProto:
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(n, f32, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info("Y", f32, out)],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    # the IR version of the opset, not the newest this onnx writes: an onnxruntime older than
    # the onnx package refuses IR versions it does not know
    model = helper.make_model_gen_version(graph, opset_imports=[helper.make_opsetid("", opset)],
                                          producer_name="tcp-rules peers")
    onnx.checker.check_model(model, full_check=True)
    return model


def _node(op: str, inputs: list[str], out: str = "Y", **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, inputs, [out], **attrs)


class _Draw:
    """Random f32 arrays from one seeded generator: standard normal activations, weights scaled
    like an initialized layer's, norm scales near 1 and biases near 0."""

    def __init__(self, seed: int, stream: int):
        self.rng = np.random.default_rng([seed, stream])

    def normal(self, *shape: int, scale: float = 1.0, base: float = 0.0) -> np.ndarray:
        return (base + scale * self.rng.standard_normal(shape)).astype(np.float32)


def _unary(name: str, title: str, shape: tuple[int, int], d: _Draw, op: str, opset: int,
           compute: Compute, **attrs: Any) -> Workload:
    model = _model(name, [_node(op, ["X"], **attrs)], {"X": shape}, {}, shape, opset)
    return Workload(name, title, "x".join(map(str, shape)), model, {"X": d.normal(*shape)},
                    compute, stream="copy")


def _relu(s: Sizes, d: _Draw) -> Workload:
    shape = s.stream
    nodes = [_node("Mul", ["a", "b"], "t"), _node("Add", ["t", "c"], "u"), _node("Relu", ["u"])]
    model = _model("relu", nodes, dict.fromkeys("abc", shape), {}, shape)
    feeds = {n: d.normal(*shape) for n in "abc"}
    return Workload("relu", "relu(a*b+c)", "x".join(map(str, shape)), model, feeds,
                    lambda m, a: m.relu(a["a"] * a["b"] + a["c"]), stream="triad")


def _norm(name: str, title: str, s: Sizes, d: _Draw, bias: bool) -> Workload:
    n, width = s.rows
    inits = {"scale": d.normal(width, scale=0.1, base=1.0)}
    if bias:
        inits["bias"] = d.normal(width, scale=0.1)
    op, opset = ("LayerNormalization", 17) if bias else ("RMSNormalization", 23)
    model = _model(name, [_node(op, ["X", *inits], axis=-1, epsilon=EPS)], {"X": (n, width)},
                   inits, (n, width), opset)
    compute: Compute = ((lambda m, a: m.layernorm(a["X"], a["scale"], a["bias"], EPS)) if bias
                        else (lambda m, a: m.rmsnorm(a["X"], a["scale"], EPS)))
    return Workload(name, title, f"{n}x{width}", model, {"X": d.normal(n, width)}, compute,
                    stream="copy")


def _mlp(s: Sizes, d: _Draw) -> Workload:
    n, k, out = s.mlp
    inits = {"W": d.normal(k, out, scale=1 / math.sqrt(k)), "B": d.normal(out, scale=0.1)}
    nodes = [_node("MatMul", ["X", "W"], "h"), _node("Add", ["h", "B"], "z"),
             _node("Relu", ["z"])]
    model = _model("mlp", nodes, {"X": (n, k)}, inits, (n, out))
    return Workload("mlp", "mlp: relu(x@W+b)", f"{n}x{k}->{out}", model,
                    {"X": d.normal(n, k)},
                    lambda m, a: m.relu(m.matmul(a["X"], a["W"]) + a["B"]),
                    flops=2 * n * k * out)


def _attention(s: Sizes, d: _Draw) -> Workload:
    seq, dk = s.attention
    nodes = [_node("Transpose", ["K"], "kt", perm=[1, 0]), _node("MatMul", ["Q", "kt"], "s"),
             _node("Div", ["s", "root"], "z"), _node("Softmax", ["z"], "p", axis=-1),
             _node("MatMul", ["p", "V"])]
    inits = {"root": np.array(math.sqrt(dk), np.float32)}
    model = _model("attention", nodes, dict.fromkeys("QKV", (seq, dk)), inits, (seq, dk))
    return Workload("attention", "attention, 1 head", f"seq {seq}, d {dk}", model,
                    {n: d.normal(seq, dk) for n in "QKV"},
                    lambda m, a: m.attention(a["Q"], a["K"], a["V"]))


def _matmul(s: Sizes, d: _Draw) -> Workload:
    mm, k, n = s.matmul
    model = _model("matmul", [_node("MatMul", ["A", "B"])], {"A": (mm, k), "B": (k, n)}, {},
                   (mm, n))
    return Workload("matmul", "matmul", f"{mm}x{k}x{n}", model,
                    {"A": d.normal(mm, k), "B": d.normal(k, n)},
                    lambda m, a: m.matmul(a["A"], a["B"]), flops=2 * mm * k * n)


def encoder_compute(m: Any, a: Mapping[str, Any], heads: int, layers: int = 1) -> Any:
    """frontends/onnx/zoo.py's post-LayerNorm encoder written over a math namespace, reading
    the zoo model's weights by their initializer names."""
    x = a["x"]
    for i in range(layers):
        p = f"layers.{i}."

        def linear(h: Any, n: str, p: str = p) -> Any:
            return m.matmul(h, a[f"{p}{n}.weight"]) + a[f"{p}{n}.bias"]

        q, k, v = (m.split_heads(linear(x, f"attn.{n}_proj"), heads) for n in "qkv")
        att = linear(m.merge_heads(m.attention(q, k, v)), "attn.out_proj")
        h = m.layernorm(x + att, a[f"{p}norm1.weight"], a[f"{p}norm1.bias"], EPS)
        ff = linear(m.gelu_erf(linear(h, "ff.0")), "ff.2")
        x = m.layernorm(h + ff, a[f"{p}norm2.weight"], a[f"{p}norm2.bias"], EPS)
    return x


def _encoder(s: Sizes, d: _Draw) -> Workload:
    from tcp_rules.frontends.onnx.zoo import encoder_layer

    batch, seq, width, heads, ff = s.encoder
    model = encoder_layer(d_model=width, heads=heads, d_ff=ff, layers=1)
    # fixed batch and sequence: every engine then sees the shapes the others see
    for v in (*model.graph.input, *model.graph.output):
        dims = v.type.tensor_type.shape.dim
        dims[0].dim_value, dims[1].dim_value = batch, seq
    return Workload("encoder", "encoder layer", f"{batch}x{seq}x{width}, {heads} heads, ff {ff}",
                    model, {"x": d.normal(batch, seq, width)},
                    lambda m, a: encoder_compute(m, a, heads))


BUILDERS: dict[str, Callable[[Sizes, _Draw], Workload]] = {
    "relu": _relu,
    "gelu-tanh": lambda s, d: _unary("gelu-tanh", "GELU, tanh", s.gelu, d, "Gelu", 20,
                                     lambda m, a: m.gelu_tanh(a["X"]), approximate="tanh"),
    "gelu-erf": lambda s, d: _unary("gelu-erf", "GELU, erf", s.gelu, d, "Gelu", 20,
                                    lambda m, a: m.gelu_erf(a["X"])),
    "softmax": lambda s, d: _unary("softmax", "softmax", s.rows, d, "Softmax", 17,
                                   lambda m, a: m.softmax(a["X"]), axis=-1),
    "layernorm": lambda s, d: _norm("layernorm", "layernorm", s, d, bias=True),
    "rmsnorm": lambda s, d: _norm("rmsnorm", "RMSNorm", s, d, bias=False),
    "mlp": _mlp,
    "attention": _attention,
    "matmul": _matmul,
    "encoder": _encoder,
}
NAMES = tuple(BUILDERS)


def workloads(quick: bool = False, seed: int = 0, names: Sequence[str] | None = None
              ) -> list[Workload]:
    """The suite's workloads (all, or those ``names``) in NAMES order, at FULL sizes or QUICK
    ones. Each draws its arrays from (``seed``, its place in NAMES): a measuring subprocess
    rebuilds the same ones, whichever others it builds."""
    s = QUICK if quick else FULL
    return [build(s, _Draw(seed, i)) for i, (name, build) in enumerate(BUILDERS.items())
            if names is None or name in names]
