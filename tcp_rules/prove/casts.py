"""cast(x, to=...) as a formula, following ops.elementwise.cast_array case by case."""

from __future__ import annotations

from typing import Any

import numpy as np
import z3

from tcp_rules.prove.domain import FP_SORTS, RNE, Ctx, Unsupported
from tcp_rules.types import DType

type E = Any  # a z3 term (z3-solver has no type annotations mypy can use)


def _fp_sort(dt: DType) -> z3.FPSortRef:
    return z3.FPSort(*FP_SORTS[dt])


def cast(ctx: Ctx, x: E, src: DType, to: DType) -> E:
    """The element ``x`` of ``src`` converted to ``to``."""
    if src is to:
        return x
    if ctx.mode == "real" and (src.is_float or to.is_float):
        if src.is_float and to.is_float:
            return x  # over the reals a float conversion is the identity (rounding aside)
        if src.is_int and to.is_float:
            return z3.ToReal(z3.BV2Int(x, is_signed=src.is_signed))
        if src is DType.I1 and to.is_float:
            return z3.If(x, z3.RealVal(1), z3.RealVal(0))
        raise Unsupported("float to integer casts have no reading over the reals")
    if to is DType.I1:
        if src.is_float:
            return z3.Not(z3.fpIsZero(x))  # NaN != 0
        return x != 0
    if src is DType.I1:
        one = 1.0 if to.is_float else 1
        return z3.If(x, _lit(one, to), _lit(0, to))
    if src.is_storage_float:  # f16/bf16 convert through f32, exactly
        return cast(ctx, z3.fpFPToFP(RNE, x, _fp_sort(DType.F32)), DType.F32, to)
    if to.is_storage_float:  # to f32 first (nearest even), then to storage (nearest even)
        return z3.fpFPToFP(RNE, cast(ctx, x, src, DType.F32), _fp_sort(to))
    if src.is_float and to.is_float:
        return z3.fpFPToFP(RNE, x, _fp_sort(to))
    if src.is_float:
        return _float_to_int(x, to)
    if to.is_float:
        conv = z3.fpSignedToFP if src.is_signed else z3.fpUnsignedToFP
        return conv(RNE, x, _fp_sort(to))
    return _int_to_int(x, src, to)


def _lit(v: float | int, dt: DType) -> E:
    if dt.is_float:
        return z3.FPVal(float(v), None, _fp_sort(dt))
    return z3.BitVecVal(int(v), 8 * dt.np_dtype.itemsize)


def _float_to_int(x: E, to: DType) -> E:
    """Truncate toward zero, saturate to the target's range, NaN to 0."""
    info = np.iinfo(to.np_dtype)
    bits = 8 * to.np_dtype.itemsize
    t = z3.fpRoundToIntegral(z3.RTZ(), x)
    sort = x.sort()
    # The bounds compared in f64 in the reference; info.max + 1 and info.min are powers of two,
    # exact in every float sort wide enough to reach them (f32 and f64 here).
    hi = z3.fpGEQ(t, z3.FPVal(float(info.max) + 1.0, None, sort))
    lo = z3.fpLT(t, z3.FPVal(float(info.min), None, sort))
    conv = (z3.fpToSBV if to.is_signed else z3.fpToUBV)(z3.RTZ(), t, z3.BitVecSort(bits))
    mx, mn = z3.BitVecVal(int(info.max) % (1 << bits), bits), z3.BitVecVal(
        int(info.min) % (1 << bits), bits)
    return z3.If(z3.fpIsNaN(t), z3.BitVecVal(0, bits), z3.If(hi, mx, z3.If(lo, mn, conv)))


def _int_to_int(x: E, src: DType, to: DType) -> E:
    """Wrap modulo 2**n: truncate, or extend by the source's signedness."""
    n, m = x.size(), 8 * to.np_dtype.itemsize
    if m < n:
        return z3.Extract(m - 1, 0, x)
    if m == n:
        return x
    return (z3.SignExt if src.is_signed else z3.ZeroExt)(m - n, x)
