"""The two ops that delimit fused kernels: ``load`` and ``kernel``.

A *body* is a tensor expression that is never materialized: the code generator evaluates it
point by point inside one loop nest. ``load(x)`` reads a materialized tensor into a body (a
boundary where bytes are read); ``kernel(b)`` materializes a body (one loop nest, its result
written to memory). Ops applied to bodies are computed inside the kernel that materializes
them. Both ops mean the identity on values, so a fusion rule such as
``load(kernel(b)) => b`` is exact and the verifier checks it like any other rule; what they
change is where memory traffic happens, which the cost model and the code generator read.
Which values are bodies and which are tensors is the *sort* of a value (tcp_rules.sorts).

``load_matmul(a, b)`` is the product of two materialized tensors read into a body without being
materialized (a matmul kernel whose body ops run as its epilogue): matmul reads its operands as
packed panels from memory, so they are tensors, never bodies computed in the loop nest.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tcp_rules.ops.core import Attrs, CostFormula, OpDef
from tcp_rules.ops.linalg import LINALG_OPS
from tcp_rules.types import Dim, TensorType


def _same_type(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    return args[0]


def _identity(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    return a[0]


def broadcast_hoists(operand: Sequence[Dim], shape: Sequence[Dim], dims: Sequence[int]) -> bool:
    """Whether a broadcast inside a body is free: every axis it adds (or expands from size 1)
    comes after all the axes it keeps, so in a row-major loop nest its operand is computed in
    an outer loop, once per outer point, and reused across the inner ones (a row softmax's
    sum). Otherwise the operand would be recomputed per element, or materialized."""
    kept = [d for i, d in enumerate(dims) if operand[i] == shape[d]]
    return all(a > max(kept, default=-1) for a in range(len(shape)) if a not in kept)


# The ops that mean the identity on values (they only place memory traffic): the reference
# returns their operand, and analyses of values see through them.
IDENTITY_OPS = frozenset({"load", "kernel"})

_MATMUL = next(op for op in LINALG_OPS if op.name == "matmul")

FUSION_OPS: tuple[OpDef, ...] = (
    OpDef(name="load", doc="read a materialized tensor into a kernel body (the identity)",
          operands=("x",), attrs=(), infer=_same_type, reference=_identity,
          cost=CostFormula(0), category="fusion"),
    OpDef(name="kernel", doc="materialize a body: one fused loop nest (the identity)",
          operands=("body",), attrs=(), infer=_same_type, reference=_identity,
          cost=CostFormula(0), category="fusion"),
    OpDef(name="load_matmul", doc="matmul of two tensors, read into a body unmaterialized",
          operands=_MATMUL.operands, attrs=(), infer=_MATMUL.infer,
          reference=_MATMUL.reference, cost=_MATMUL.cost, category="fusion"),
)
