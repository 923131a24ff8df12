"""How reductions accumulate: the accumulator's type and initial value, and the summation blocks.

Shared by the row reductions (emit.py), which keep their accumulators in registers, and the
column reductions (columns.py), which keep one per column in each worker's scratch and size it
from :func:`accumulator` before any code is emitted (program.py).
"""

from __future__ import annotations

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import F32, F64, reg_type
from tcp_rules.codegen.kernel import Reduce
from tcp_rules.ops import identity_value
from tcp_rules.types import DType

F64_SUM_BLOCK = 1024  # f64 sums add blocks of this many terms, then the block sums
# f32 sums add blocks of this many terms in f32 vector lanes (16 to 32 terms a lane), then the
# block sums in f64: about as accurate as NumPy's pairwise sums (blocks of 128 in 8 lanes) and
# free of the f64 conversions that kept the loop vectorizer at half width (an exp and sum loop
# ran 1.4x slower). Blocks of 256 cost softmax 4% in block overheads, of 1024 a prefetch burst.
F32_SUM_BLOCK = 512


def accumulator(n: Reduce) -> tuple[ir.Type, float | int, tuple[ir.Type, int] | None]:
    """A reduction's accumulator type and initial value, and how its innermost loop is
    blocked: (the type of a block's partial result, the block's length), or None."""
    dt = n.dtype
    acc_t = reg_type(DType.F64 if dt.compute is DType.F32 and n.kind == "sum" else dt)
    init = {"sum": 0, "prod": 1,  # NumPy's sums start at +0.0: sum([-0.0]) == 0.0
            "max": identity_value(float("-inf"), dt),
            "min": identity_value(float("inf"), dt)}[n.kind]
    if n.kind == "sum" and n.body.dtype is DType.F64:
        return acc_t, init, (acc_t, F64_SUM_BLOCK)
    if n.kind == "sum" and acc_t != reg_type(dt):
        # f32 terms are summed in f32 within blocks, the block sums in f64 (F32_SUM_BLOCK)
        return acc_t, init, (reg_type(DType.F32), F32_SUM_BLOCK)
    return acc_t, init, None


def type_bytes(ty: ir.Type) -> int:
    """The bytes one value of register type ``ty`` takes in memory (i1: a byte)."""
    if ty == F32:
        return 4
    if ty == F64:
        return 8
    assert isinstance(ty, ir.IntType), ty
    return max(1, ty.width // 8)
