"""Elementwise ops: unary math, binary arithmetic, comparisons, select, clamp and cast.

Operands of an elementwise op must have identical shapes (broadcasting is explicit in TCP) and,
except where noted, identical dtypes. References are NumPy expressions whose IEEE behaviour
defines the op; integer arithmetic wraps (two's complement).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np

from tcp_rules.ops.core import (
    AttrKind,
    Attrs,
    AttrSpec,
    CostFormula,
    OpDef,
    ShapeError,
    Traits,
    in_f32,
)
from tcp_rules.types import (
    ALL_DTYPES,
    FLOATS,
    NUMERIC,
    SIGNED,
    DType,
    TensorType,
    is_float_array,
)

DTypeSet = frozenset[DType]


def _names(dts: DTypeSet) -> str:
    return ", ".join(sorted(str(d) for d in dts))


def check_same_shapes(args: Sequence[TensorType], first: int = 0) -> None:
    """Elementwise operands must have provably identical shapes."""
    ref = args[first]
    for i, a in enumerate(args):
        if a.dims != ref.dims:
            raise ShapeError(
                f"elementwise operands must have identical shapes: operand {first} is {ref} "
                f"but operand {i} is {a} (broadcast explicitly)", operand=i)


def check_dtypes(args: Sequence[TensorType], allowed: DTypeSet, first: int = 0) -> DType:
    """All operands from ``first`` on share one dtype from ``allowed``; returns it."""
    dt = args[first].dtype
    for i, a in enumerate(args[first:], start=first):
        if a.dtype != dt:
            raise ShapeError(f"operand dtypes differ: {args[first]} and {a} (cast explicitly)",
                             operand=i)
    if dt not in allowed:
        raise ShapeError(f"dtype {dt} is not supported here (allowed: {_names(allowed)})",
                         operand=first)
    return dt


def _infer_elementwise(allowed: DTypeSet, result: DType | None,
                       args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_same_shapes(args)
    dt = check_dtypes(args, allowed)
    return TensorType(result or dt, args[0].dims)


EW = Traits(elementwise=True)
IDEMPOTENT = Traits(elementwise=True, idempotent=True)


def _unary(name: str, fn: Callable[[np.ndarray], np.ndarray], doc: str, flops: float,
           allowed: DTypeSet = FLOATS, traits: Traits = EW) -> OpDef:
    return OpDef(
        name=name, doc=doc, operands=("x",), attrs=(),
        infer=partial(_infer_elementwise, allowed, None),
        reference=in_f32(lambda a, attrs, out: np.asarray(fn(a[0]), dtype=out.dtype.np_dtype)),
        cost=CostFormula(flops), traits=traits, category="unary")


def _binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray], doc: str,
            flops: float, allowed: DTypeSet = NUMERIC, traits: Traits = EW,
            result: DType | None = None, category: str = "binary") -> OpDef:
    return OpDef(
        name=name, doc=doc, operands=("x", "y"), attrs=(),
        infer=partial(_infer_elementwise, allowed, result),
        reference=in_f32(
            lambda a, attrs, out: np.asarray(fn(a[0], a[1]), dtype=out.dtype.np_dtype)),
        cost=CostFormula(flops), traits=traits, category=category)


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round to nearest, ties away from zero (C's round), keeping -0.0 and NaN."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(np.ones_like(x), x), t)


def erf(x: np.ndarray) -> np.ndarray:
    """The Gauss error function (SciPy's; imported on first use, as it takes ~0.4 s to load)."""
    import scipy.special

    return np.asarray(scipy.special.erf(x))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in the dtype of x."""
    one = np.ones((), dtype=x.dtype)
    return one / (one + np.exp(-x))


def int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero; x / 0 == -1 and MIN / -1 == MIN (as in XLA).
    Unsigned: x / 0 == MAX (all bits set, as the signed -1 and XLA)."""
    if a.dtype.kind == "u":
        q = a // np.where(b == 0, 1, b).astype(a.dtype)
        return np.where(b == 0, np.iinfo(a.dtype).max, q).astype(a.dtype)
    safe = np.where((b == 0) | (b == -1), 1, b).astype(a.dtype)
    q = (a - np.fmod(a, safe)) // safe
    return np.where(b == 0, -1, np.where(b == -1, -a, q)).astype(a.dtype)


def div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE division for floats, truncating division for integers (see int_div)."""
    if is_float_array(a):
        return np.divide(a, b)
    return int_div(a, b)


def int_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x ** y mod 2**n by squaring in unsigned arithmetic (NumPy raises for y < 0, so the
    negative case is defined here: 0, except 1 for x == 1 and (-1)**y for x == -1)."""
    a, b = np.broadcast_arrays(a, b)
    u = np.dtype(f"u{a.dtype.itemsize}")
    base, e = a.astype(u), b.astype(u)
    r = np.ones(a.shape, dtype=u)
    for k in range(8 * a.dtype.itemsize - 1):  # every bit below the sign bit
        r = np.where((e >> u.type(k)) & u.type(1), r * base, r)
        base = base * base
    r = r.astype(a.dtype)  # two's complement reinterpretation
    neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, neg, r).astype(a.dtype)


def power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IEEE pow (C99) for floats, wrapping integer powers (see int_power) for integers."""
    if a.dtype.kind == "f":
        # C99 gives 1 for x**0 and 1**y whatever the other operand, NaN included; NumPy's f16
        # loop gives NaN for a signaling NaN there (glibc's powf), its f32 loop 1. NaNs of any
        # kind are one value here, so the C99 rule holds for all of them.
        with np.errstate(invalid="ignore"):
            return np.where((b == 0) | (a == 1), np.ones_like(a), np.power(a, b))
    return int_power(a, b)


def _infer_select(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_same_shapes(args)
    if args[0].dtype is not DType.I1:
        raise ShapeError(f"select's condition must be i1, got {args[0]}", operand=0)
    dt = check_dtypes(args, ALL_DTYPES, first=1)
    return TensorType(dt, args[1].dims)


def _infer_clamp(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dt = check_dtypes(args, NUMERIC)
    lo, hi = attrs.get("min"), attrs.get("max")
    if lo is None and hi is None:
        raise ShapeError("clamp needs at least one of min= and max=")
    for key in ("min", "max"):
        v = attrs.get(key)
        if v is not None and dt.is_int and not float(v).is_integer():
            raise ShapeError(f"clamp {key}={v} is not an integer but x is {args[0]}", attr=key)
        if v is not None and dt.is_int and not (
                np.iinfo(dt.np_dtype).min <= v <= np.iinfo(dt.np_dtype).max):
            raise ShapeError(f"clamp {key}={v} does not fit in {dt}", attr=key)
    return args[0]


def _clamp(a: Sequence[np.ndarray], attrs: Attrs, out: TensorType) -> np.ndarray:
    x = a[0]
    if attrs.get("min") is not None:
        x = np.maximum(x, np.asarray(attrs["min"]).astype(x.dtype))
    if attrs.get("max") is not None:
        x = np.minimum(x, np.asarray(attrs["max"]).astype(x.dtype))
    return np.asarray(x, dtype=out.dtype.np_dtype)


def cast_array(x: np.ndarray, to: DType) -> np.ndarray:
    """Convert like LLVM's saturating casts: float->int truncates, saturates to the target's
    range (0..MAX for unsigned), NaN -> 0; int->int wraps (modulo 2**n); anything->i1 is x != 0.
    f16 and bf16 convert through f32: widening from them is exact, and a conversion to them
    rounds to f32 first, then to storage (both nearest even), like every op on them."""
    src = DType.from_numpy(x.dtype)
    if src is not None and src.is_storage_float:
        x = x.astype(np.float32)
    if to is DType.I1:
        return x != 0
    if to.is_storage_float:
        return cast_array(x, DType.F32).astype(to.np_dtype)
    if is_float_array(x) and to.is_int:
        info = np.iinfo(to.np_dtype)
        t = np.trunc(x.astype(np.float64))
        hi, lo = t >= float(info.max) + 1.0, t < float(info.min)
        safe = np.where(np.isnan(t) | hi | lo, 0.0, t).astype(to.np_dtype)
        return np.where(hi, info.max, np.where(lo, info.min, safe)).astype(to.np_dtype)
    return x.astype(to.np_dtype)


def _infer_cast(args: Sequence[TensorType], attrs: Attrs) -> TensorType:
    return args[0].with_dtype(attrs["to"])


ELEMENTWISE_OPS: tuple[OpDef, ...] = (
    _unary("neg", np.negative, "negation (wraps for integers)", 1, NUMERIC),
    _unary("abs", np.abs, "absolute value (abs(MIN) == MIN; unsigned: x)", 1, NUMERIC,
           IDEMPOTENT),
    _unary("exp", np.exp, "e to the power x", 10),
    _unary("log", np.log, "natural logarithm (-inf at 0, NaN below)", 12),
    _unary("sqrt", np.sqrt, "square root (sqrt(-0.0) == -0.0)", 4),
    _unary("rsqrt", lambda x: np.ones((), x.dtype) / np.sqrt(x), "1 / sqrt(x)", 5),
    _unary("tanh", np.tanh, "hyperbolic tangent", 12),
    _unary("sigmoid", sigmoid, "logistic function 1 / (1 + exp(-x))", 12),
    _unary("sin", np.sin, "sine", 15),
    _unary("cos", np.cos, "cosine", 15),
    _unary("atan", np.arctan, "arc tangent", 15),
    _unary("erf", erf, "Gauss error function", 15),
    _unary("floor", np.floor, "round toward -inf", 1, traits=IDEMPOTENT),
    _unary("ceil", np.ceil, "round toward +inf", 1, traits=IDEMPOTENT),
    _unary("round", round_half_away, "round to nearest, ties away from zero", 2,
           traits=IDEMPOTENT),
    _unary("round_even", np.rint, "round to nearest, ties to even", 1, traits=IDEMPOTENT),
    OpDef(name="clamp", doc="min(max(x, min), max) with either bound optional",
          attr_space=lambda args, fresh: ({"min": 0}, {"max": 0}, {"min": -1, "max": 1}),
          operands=("x",),
          attrs=(AttrSpec("min", AttrKind.SCALAR, optional=True),
                 AttrSpec("max", AttrKind.SCALAR, optional=True)),
          infer=_infer_clamp, reference=in_f32(_clamp), cost=CostFormula(2), traits=IDEMPOTENT,
          category="unary"),
    _binary("add", np.add, "sum (wraps for integers)", 1,
            traits=Traits(elementwise=True, commutative=True, associative=True, identity=-0.0)),
    _binary("sub", np.subtract, "difference (wraps for integers)", 1),
    _binary("mul", np.multiply, "product (wraps for integers)", 1,
            traits=Traits(elementwise=True, commutative=True, associative=True, identity=1.0)),
    _binary("div", div, "IEEE quotient; integers truncate toward zero, x/0 == -1 (unsigned: MAX)",
            4),
    # np.maximum returns its second operand when both are zeros of different sign, so max and
    # min are associative and idempotent but not bitwise commutative.
    _binary("max", np.maximum, "larger operand, NaN if either is NaN", 1,
            traits=Traits(elementwise=True, associative=True, identity=float("-inf"),
                          idempotent=True)),
    _binary("min", np.minimum, "smaller operand, NaN if either is NaN", 1,
            traits=Traits(elementwise=True, associative=True, identity=float("inf"),
                          idempotent=True)),
    # pow and atan2 are vector code (codegen/binmath.py): f32 measured at ~3.4 and ~1.1 ns an
    # element in kernels of their own (1M elements, 1 thread), i.e. ~100 and ~30 of the vector
    # flops the other ops count
    _binary("pow", power, "x to the power y; integers wrap, and y < 0 gives 0 except for x = 1 "
            "(1) and x = -1 (1 or -1); not on unsigned integers", 100, FLOATS | SIGNED),
    _binary("atan2", np.arctan2, "arc tangent of x / y using both signs", 30, FLOATS),
    *(_binary(name, fn, doc, 1, ALL_DTYPES, result=DType.I1, category="compare",
              traits=Traits(elementwise=True, commutative=name in ("eq", "ne")))
      for name, fn, doc in (
          ("eq", np.equal, "x == y (false for NaN)"),
          ("ne", np.not_equal, "x != y (true for NaN)"),
          ("lt", np.less, "x < y"),
          ("le", np.less_equal, "x <= y"),
          ("gt", np.greater, "x > y"),
          ("ge", np.greater_equal, "x >= y"))),
    OpDef(name="select", doc="where(cond, x, y): x where cond is true, else y",
          operands=("cond", "x", "y"), attrs=(), infer=_infer_select,
          reference=lambda a, attrs, out: np.where(a[0], a[1], a[2]).astype(out.dtype.np_dtype),
          cost=CostFormula(1), traits=EW, category="select", fixed_dtypes=((0, DType.I1),)),
    OpDef(name="cast", doc="element type conversion (float->int truncates and saturates)",
          operands=("x",), attrs=(AttrSpec("to", AttrKind.DTYPE),), infer=_infer_cast,
          reference=lambda a, attrs, out: cast_array(a[0], attrs["to"]),
          attr_space=lambda args, fresh: ({"to": d} for d in DType),
          cost=CostFormula(1), traits=EW, category="cast"),
)
