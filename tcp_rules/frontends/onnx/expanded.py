"""ONNX ops as their own function bodies: single-node models expanded with the machinery that
generates the ``*_expanded`` backend node tests (``function_testcase_helper``), at any shape.

Nobody here writes these bodies: ONNX's op schemas define them (some depend on the node's
attributes and input types, hence the context-dependent expansion). They are the graphs an
exporter's decomposition or ONNX's inliner hands a compiler, so they serve as benchmarks and
tests at realistic sizes (``REALISTIC``) as well as tiny ones (``SMALL``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# One input: its name and shape, and whether it is a weight (an initializer, as a trained
# model's scale and bias are) rather than a graph input.
InputSpec = tuple[str, tuple[int, ...], bool]


@dataclass(frozen=True)
class Sizes:
    """Shapes of the expanded models: activations [batch, seq, hidden] for the norms and GELU,
    scores [batch, heads, seq, seq] for softmax, and attention's batch, heads and head size
    (``kv_heads`` for grouped-query attention)."""

    batch: int
    seq: int
    hidden: int
    heads: int
    att_batch: int
    head_size: int
    kv_heads: int


# BERT-base: hidden 768 with 12 heads of 64; attention at a batch of 2 (it is quadratic).
REALISTIC = Sizes(batch=8, seq=128, hidden=768, heads=12, att_batch=2, head_size=64, kv_heads=4)
SMALL = Sizes(batch=2, seq=8, hidden=16, heads=4, att_batch=1, head_size=4, kv_heads=2)


def expanded_model(op: str, opset: int, inputs: Sequence[InputSpec], seed: int = 0,
                   **attrs: Any) -> onnx.ModelProto:
    """A model of ``op``'s function body (the newest body the schema at ``opset`` defines),
    float32 inputs of the given shapes, weights drawn from ``seed``; one output ``Y``.

    ValueError when the op has no function body at that opset.
    """
    from onnx.backend.test.case.node import function_testcase_helper

    names = [n for n, _, _ in inputs]
    node = helper.make_node(op, names, ["Y"], **attrs)
    types = [helper.make_tensor_type_proto(TensorProto.FLOAT, s) for _, s, _ in inputs]
    # the helper fills in the schema's default attributes, renames the body's tensors after
    # the node's and returns one body per opset version the schema defines one for
    bodies, _ = function_testcase_helper(node, types, op.lower(),
                                         opset_imports=[helper.make_opsetid("", opset)])
    if not bodies:
        raise ValueError(f"{op} has no function body at opset {opset}")
    nodes, imports = max(bodies, key=lambda b: max(i.version for i in b[1]))
    body_opset = max(i.version for i in imports if i.domain in ("", "ai.onnx"))
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(_weight(rng, name, shape), name)
             for name, shape, weight in inputs if weight]
    graph_inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                    for n, s, weight in inputs if not weight]
    # the output's shape from ONNX's shape inference on the single node
    single = helper.make_model(helper.make_graph([node], "single", graph_inputs, [], inits),
                               opset_imports=[helper.make_opsetid("", opset)])
    inferred = onnx.shape_inference.infer_shapes(single, strict_mode=True)
    out = next(v for v in inferred.graph.value_info if v.name == "Y")
    graph = helper.make_graph(list(nodes), f"{op}_expanded", graph_inputs, [out], inits)
    # the opset's IR version (not the newest): older onnxruntimes refuse newer ones
    model = helper.make_model_gen_version(
        graph, opset_imports=[helper.make_opsetid("", body_opset)],
        producer_name="tcp-rules expanded")
    onnx.checker.check_model(model, full_check=True)
    return model


def _weight(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> np.ndarray:
    # scales near 1 and biases near 0, as trained norms have
    base = 1.0 if name == "scale" else 0.0
    return (base + 0.1 * rng.standard_normal(shape)).astype(np.float32)


@dataclass(frozen=True)
class Expansion:
    """An op to expand: its type, the opset whose schema defines the body, inputs, attributes."""

    op: str
    opset: int
    inputs: tuple[InputSpec, ...]
    attrs: tuple[tuple[str, Any], ...] = ()

    def build(self, seed: int = 0) -> onnx.ModelProto:
        """The model of the expanded body (see :func:`expanded_model`)."""
        return expanded_model(self.op, self.opset, self.inputs, seed, **dict(self.attrs))


def expansions(s: Sizes = REALISTIC) -> dict[str, Expansion]:
    """The suite's expanded ops at sizes ``s``, by name, built one at a time (an onnx release
    without one of these bodies then fails for that one alone): norms, GELU in both forms,
    softmax, and attention (plain, causal, with an additive mask, grouped-query)."""
    act = (s.batch, s.seq, s.hidden)
    q = (s.att_batch, s.heads, s.seq, s.head_size)
    kv = (s.att_batch, s.kv_heads, s.seq, s.head_size)
    x: InputSpec = ("X", act, False)
    qkv: tuple[InputSpec, ...] = (("Q", q, False), ("K", q, False), ("V", q, False))
    norm = (("axis", -1), ("epsilon", 1e-5))
    return {
        "layernorm": Expansion("LayerNormalization", 17, (
            x, ("scale", (s.hidden,), True), ("bias", (s.hidden,), True)), norm),
        "rmsnorm": Expansion("RMSNormalization", 23, (x, ("scale", (s.hidden,), True)), norm),
        "gelu-tanh": Expansion("Gelu", 20, (x,), (("approximate", "tanh"),)),
        "gelu-erf": Expansion("Gelu", 20, (x,)),
        "softmax": Expansion("Softmax", 13, (("X", (s.batch, s.heads, s.seq, s.seq), False),),
                             (("axis", -1),)),
        "attention": Expansion("Attention", 23, qkv),
        "attention-causal": Expansion("Attention", 23, qkv, (("is_causal", 1),)),
        "attention-mask": Expansion("Attention", 23, (
            *qkv, ("attn_mask", (s.seq, s.seq), False))),
        "attention-gqa": Expansion("Attention", 23, (
            ("Q", q, False), ("K", kv, False), ("V", kv, False))),
    }
