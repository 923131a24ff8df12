"""Scalars as z3 terms: the sort of each dtype, constants, and model values back to NumPy.

Two readings of a float dtype: ``fp`` (z3's IEEE FloatingPoint sorts; f16 and bf16 are stored in
their own sorts and computed in f32, as the op table's references do) and ``real`` (floats read
as reals, for approx obligations). Integers are bit-vectors in both; i1 is a z3 Bool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import z3

from tcp_rules.types import DType, TensorType

FP_SORTS = {DType.F16: (5, 11), DType.BF16: (8, 8), DType.F32: (8, 24), DType.F64: (11, 53)}
RNE = z3.RNE()


class Unsupported(Exception):
    """An op (or an op in this reading) that has no formula: the verdict becomes unknown."""


@dataclass
class Ctx:
    """How floats are read (``fp`` or ``real``), plus the uninterpreted functions in use, the
    facts (axioms instantiated at their uses) that the solver may assume, and the conditions
    under which real-valued terms are defined."""

    mode: str = "fp"
    funcs: dict[str, z3.FuncDeclRef] = field(default_factory=dict)
    facts: list[z3.BoolRef] = field(default_factory=list)
    # Where a real-valued term is defined (divisor nonzero, sqrt's argument >= 0), in the order
    # the terms were built; obligation.symbolic attributes them to the side that needs them.
    domain: list[z3.BoolRef] = field(default_factory=list)
    uninterpreted: set[str] = field(default_factory=set)
    fresh: int = 0

    def func(self, name: str, *sorts: z3.SortRef) -> z3.FuncDeclRef:
        """The uninterpreted function ``name`` over ``sorts`` (one per signature)."""
        key = name + "/" + "/".join(str(s) for s in sorts)
        if key not in self.funcs:
            self.funcs[key] = z3.Function(key, *sorts)
        self.uninterpreted.add(name)
        return self.funcs[key]

    def new(self, stem: str, sort: z3.SortRef) -> z3.ExprRef:
        self.fresh += 1
        return z3.Const(f"{stem}!{self.fresh}", sort)


def sort_of(dtype: DType, mode: str) -> z3.SortRef:
    """The z3 sort of one element of ``dtype``."""
    if dtype is DType.I1:
        return z3.BoolSort()
    if dtype.is_float:
        if mode == "real":
            return z3.RealSort()
        return z3.FPSort(*FP_SORTS[dtype])
    return z3.BitVecSort(8 * dtype.np_dtype.itemsize)


def var(name: str, dtype: DType, mode: str) -> z3.ExprRef:
    return z3.Const(name, sort_of(dtype, mode))


def const(value: Any, dtype: DType, mode: str) -> z3.ExprRef:
    """The element ``value`` (a Python or NumPy scalar) of ``dtype`` as a z3 constant; rounded
    to ``dtype`` first, as NumPy stores it."""
    v = np.asarray(value).astype(dtype.np_dtype)[()]
    if dtype is DType.I1:
        return z3.BoolVal(bool(v))
    if dtype.is_float:
        f = float(v)
        if mode == "real":
            if not math.isfinite(f):
                raise Unsupported(f"{f} has no value as a real")
            return z3.RealVal(Fraction(f))
        sort = z3.FPSort(*FP_SORTS[dtype])
        if math.isnan(f):
            return z3.fpNaN(sort)
        if f == 0:
            return z3.fpMinusZero(sort) if math.copysign(1.0, f) < 0 else z3.fpPlusZero(sort)
        if math.isinf(f):
            return z3.fpPlusInfinity(sort) if f > 0 else z3.fpMinusInfinity(sort)
        return z3.FPVal(f, None, sort)  # exact: f is already a value of the sort
    bits = 8 * dtype.np_dtype.itemsize
    return z3.BitVecVal(int(v) % (1 << bits), bits)


def to_numpy(e: z3.ExprRef, dtype: DType) -> Any:
    """A model's value of an element (already evaluated to a literal) as a NumPy scalar."""
    np_t = dtype.np_dtype
    if dtype is DType.I1:
        return np.bool_(z3.is_true(e))
    if z3.is_fp_value(e):
        if e.isNaN():
            return np_t.type(np.nan)
        if e.isInf():
            return np_t.type(-np.inf if e.isNegative() else np.inf)
        if e.isZero():
            return np_t.type(-0.0 if e.isNegative() else 0.0)
        return np_t.type(_fp_float(e))
    if z3.is_rational_value(e):
        return np_t.type(float(Fraction(e.numerator_as_long(), e.denominator_as_long())))
    if z3.is_algebraic_value(e):
        return np_t.type(float(e.approx(20).as_fraction()))
    if z3.is_bv_value(e):
        bits = e.size()
        u = e.as_long()
        if dtype.is_signed and u >= 1 << (bits - 1):
            u -= 1 << bits
        return np_t.type(u)
    raise Unsupported(f"cannot read {e} as a value of {dtype}")


def _fp_float(e: z3.FPNumRef) -> float:
    """A finite, nonzero FP literal exactly as a Python float (f64 holds every narrower one)."""
    sig = Fraction(int(e.significand_as_long()), 1 << (e.sbits() - 1))
    exp = e.exponent_as_long(biased=False)
    normal = e.exponent_as_long(biased=True) != 0
    value = (1 + sig if normal else sig) * (Fraction(2) ** exp)
    return float(-value if e.isNegative() else value)


def regrouped_matmul[C, T](reshape: Callable[[C, str, Sequence[T], Sequence[TensorType],
                                               TensorType, dict[str, Any]], T],
                           matmul: Callable[[C, str, Sequence[T], Sequence[TensorType],
                                             TensorType, dict[str, Any]], T]
                           ) -> Callable[[C, str, Sequence[T], Sequence[TensorType],
                                          TensorType, dict[str, Any]], T]:
    """load_matmul_rows' formula from reshape's and matmul's: A regrouped to ``shape``, then
    the product (tensors.py's formulas at bounded sizes and indexmaps.py's at symbolic ones)."""
    def fn(c: C, name: str, args: Sequence[T], types: Sequence[TensorType], out: TensorType,
           attrs: dict[str, Any]) -> T:
        t = TensorType(types[0].dtype, tuple(attrs["shape"]))
        a = reshape(c, "reshape", [args[0]], [types[0]], t, {"shape": attrs["shape"]})
        return matmul(c, "matmul", [a, args[1]], [t, types[1]], out, {})
    return fn

