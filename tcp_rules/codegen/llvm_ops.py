"""The LLVM lowering of every scalar op, keyed by op-table name.

Each lowering takes the operand values (scalars or vectors), their dtypes, the op's attributes
and the result dtype, and returns the result value. Semantics follow the reference interpreter
bit for bit where the op is exact: NumPy's max/min (NaN-propagating, ties return the second
operand), truncating integer division with ``x / 0 == -1`` and ``MIN / -1 == MIN`` (no undefined
behaviour), saturating casts with NaN -> 0, wrapping integer arithmetic; unsigned integers
divide, compare and take max/min as unsigned. The dtypes given are register dtypes: f16 and bf16
arrive as f32, and emit.py rounds their results to storage. No fast-math flags here:
reassociation is only allowed in reductions (see emit.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import llvmlite.ir as ir

from tcp_rules.codegen import binmath, mathlib
from tcp_rules.codegen.intpow import int_pow
from tcp_rules.codegen.irbase import I1, IR, like, reg_type
from tcp_rules.types import DType

Lowering = Callable[[IR, Sequence[ir.Value], Sequence[DType], Mapping[str, Any], DType], ir.Value]
LOWERINGS: dict[str, Lowering] = {}


def lowering(*names: str) -> Callable[[Lowering], Lowering]:
    """Register the decorated function as the lowering of ops ``names``."""
    def register(fn: Lowering) -> Lowering:
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return register


def emit_op(e: IR, name: str, args: Sequence[ir.Value], dtypes: Sequence[DType],
            attrs: Mapping[str, Any], out: DType) -> ir.Value:
    """Lower the op ``name``; KeyError if the op has no scalar lowering."""
    return LOWERINGS[name](e, args, dtypes, attrs, out)


# Unary -----------------------------------------------------------------------------------------

@lowering("neg")
def _neg(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
         out: DType) -> ir.Value:
    if dt[0].is_float:
        return e.b.fneg(a[0])
    return e.b.sub(e.const(a[0].type, 0), a[0])


@lowering("abs")
def _abs(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
         out: DType) -> ir.Value:
    if dt[0].is_float:
        return e.fabs(a[0])
    if dt[0].is_unsigned:
        return a[0]
    return e.intrinsic("abs", [a[0], e.const(I1, 0)])  # abs(MIN) == MIN, not poison


_FLOAT_INTRINSIC = {"sqrt": "sqrt", "floor": "floor", "ceil": "ceil", "round": "round",
                    "round_even": "roundeven"}


for _op, _intr in _FLOAT_INTRINSIC.items():
    LOWERINGS[_op] = (lambda intr: lambda e, a, dt, at, out: e.intrinsic(intr, [a[0]]))(_intr)


@lowering("rsqrt")
def _rsqrt(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
           out: DType) -> ir.Value:
    return e.b.fdiv(e.const(a[0].type, 1.0), e.intrinsic("sqrt", [a[0]]))


for _op, _fn in mathlib.MATH.items():
    LOWERINGS[_op] = (lambda fn: lambda e, a, dt, at, out: fn(e, a[0]))(_fn)


@lowering("atan2")
def _atan2(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
           out: DType) -> ir.Value:
    if dt[0] is DType.F32:
        return binmath.atan2_f32(e, a[0], a[1])
    return binmath.atan2_f64(e, a[0], a[1])


@lowering("pow")
def _pow(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
         out: DType) -> ir.Value:
    if dt[0] is DType.F32:
        return binmath.pow_f32(e, a[0], a[1])
    if dt[0].is_float:  # f64
        return binmath.pow_f64(e, a[0], a[1])
    return int_pow(e, a[0], a[1])


# Binary ----------------------------------------------------------------------------------------

_FLOAT_BIN = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
_INT_BIN = {"add": "add", "sub": "sub", "mul": "mul"}


for _op in ("add", "sub", "mul"):
    LOWERINGS[_op] = (lambda op: lambda e, a, dt, at, out: getattr(e.b, (
        _FLOAT_BIN if dt[0].is_float else _INT_BIN)[op])(a[0], a[1]))(_op)


@lowering("div")
def _div(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
         out: DType) -> ir.Value:
    x, y = a
    if dt[0].is_float:
        return e.b.fdiv(x, y)
    b, ty = e.b, x.type
    if dt[0].is_unsigned:  # x / 0 == MAX (all bits set, like the signed -1)
        zero = b.icmp_unsigned("==", y, e.const(ty, 0))
        q = b.udiv(x, b.select(zero, e.const(ty, 1), y))
        return b.select(zero, e.const(ty, -1), q)
    zero, minus1 = b.icmp_signed("==", y, e.const(ty, 0)), b.icmp_signed("==", y, e.const(ty, -1))
    safe = b.select(b.or_(zero, minus1), e.const(ty, 1), y)  # no trap, no overflow
    q = b.sdiv(x, safe)
    q = b.select(minus1, b.sub(e.const(ty, 0), x), q)
    return b.select(zero, e.const(ty, -1), q)


def np_max(e: IR, x: ir.Value, y: ir.Value, dt: DType) -> ir.Value:
    """np.maximum: NaN if either is NaN, otherwise the larger; on ties the second operand."""
    if not dt.is_float:
        return e.intrinsic("smax" if dt.is_signed else "umax", [x, y])
    b = e.b
    return b.select(b.or_(b.fcmp_ordered(">", x, y), e.isnan(x)), x, y)


def np_min(e: IR, x: ir.Value, y: ir.Value, dt: DType) -> ir.Value:
    """np.minimum: NaN if either is NaN, otherwise the smaller; on ties the second operand."""
    if not dt.is_float:
        return e.intrinsic("smin" if dt.is_signed else "umin", [x, y])
    b = e.b
    return b.select(b.or_(b.fcmp_ordered("<", x, y), e.isnan(x)), x, y)


LOWERINGS["max"] = lambda e, a, dt, at, out: np_max(e, a[0], a[1], dt[0])
LOWERINGS["min"] = lambda e, a, dt, at, out: np_min(e, a[0], a[1], dt[0])


@lowering("clamp")
def _clamp(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
           out: DType) -> ir.Value:
    x = a[0]
    if at.get("min") is not None:
        x = np_max(e, x, e.const(x.type, _bound(at["min"], dt[0])), dt[0])
    if at.get("max") is not None:
        x = np_min(e, x, e.const(x.type, _bound(at["max"], dt[0])), dt[0])
    return x


def _bound(v: float | int | bool, dt: DType) -> float | int:
    return float(v) if dt.is_float else int(v)


_FCMP = {"eq": ("==", True), "ne": ("!=", False), "lt": ("<", True), "le": ("<=", True),
         "gt": (">", True), "ge": (">=", True)}


def _compare(name: str) -> Lowering:
    pred, ordered = _FCMP[name]

    def lower(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
              out: DType) -> ir.Value:
        if dt[0].is_float:  # ne is unordered: NaN != anything is true, as in NumPy
            cmp = e.b.fcmp_ordered if ordered else e.b.fcmp_unordered
            return cmp(pred, a[0], a[1])
        if not dt[0].is_signed:  # unsigned integers, and i1: false < true
            return e.b.icmp_unsigned(pred, a[0], a[1])
        return e.b.icmp_signed(pred, a[0], a[1])
    return lower


for _op in _FCMP:
    LOWERINGS[_op] = _compare(_op)

LOWERINGS["select"] = lambda e, a, dt, at, out: e.b.select(a[0], a[1], a[2])


@lowering("cast")
def _cast(e: IR, a: Sequence[ir.Value], dt: Sequence[DType], at: Mapping[str, Any],
          out: DType) -> ir.Value:
    return cast_value(e, a[0], dt[0], out)


def cast_value(e: IR, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    """Convert like the reference: float->int truncates and saturates (0..MAX for unsigned),
    NaN -> 0; int->int wraps; x -> i1 is x != 0. Takes register dtypes (f32 for f16 and bf16:
    the caller rounds a result to storage)."""
    b = e.b
    to = like(x.type, reg_type(dst))
    if src is dst:
        return x
    if dst is DType.I1:
        if src.is_float:
            return b.fcmp_unordered("!=", x, e.const(x.type, 0.0))
        return b.icmp_unsigned("!=", x, e.const(x.type, 0))
    if src is DType.I1:
        return b.uitofp(x, to) if dst.is_float else b.zext(x, to)
    if src.is_float and dst.is_float:
        return b.fpext(x, to) if dst.bits > src.bits else b.fptrunc(x, to)
    if src.is_float:
        sat = "fptosi.sat" if dst.is_signed else "fptoui.sat"
        return e.intrinsic(sat, [x], ret=to, tys=[to, x.type])
    if dst.is_float:
        return b.sitofp(x, to) if src.is_signed else b.uitofp(x, to)
    if dst.bits > src.bits:
        return b.sext(x, to) if src.is_signed else b.zext(x, to)
    return b.trunc(x, to) if dst.bits < src.bits else x
