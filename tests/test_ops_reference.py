"""Each op's NumPy reference on hand-checked cases, run through the builder and the interpreter.

Expected values are literals worked out by hand (IEEE corner cases, integer wrap-around, the
README's semantics table), never the same NumPy call the reference makes. Results are compared
bit for bit: dtype, shape, NaN positions, the sign of zeros and every other value exactly, except
where a case gives ``rtol`` for a transcendental function whose last bit NumPy does not promise.

``CASES`` is the table that tests/test_op_table.py checks every op appears in.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from tcp_rules import build as tb
from tcp_rules.build import Literal
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Value
from tcp_rules.ops import OPS, OpDef, ShapeError, identity_value
from tcp_rules.sorts import Sort
from tcp_rules.types import Dim, DType, TensorType, is_float_array

INF, NAN = math.inf, math.nan
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
PI = 3.141592653589793


def f32(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.float32)


def f64(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.float64)


def i32(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.int32)


def i64(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.int64)


def i1(*v: Any) -> np.ndarray:
    return np.array(v, dtype=np.bool_)


def type_of(a: np.ndarray) -> str:
    dtype = DType.from_numpy(a.dtype)
    assert dtype is not None, a.dtype
    return f"{dtype}[{', '.join(map(str, a.shape))}]"


def assert_same(actual: np.ndarray, expected: np.ndarray, rtol: float = 0.0) -> None:
    """Equal dtype and shape; floats bit for bit (any NaN matches any NaN, zeros by sign)."""
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape}, expected {expected.shape}"
    if not is_float_array(expected):
        assert np.array_equal(actual, expected), f"{actual!r} != {expected!r}"
        return
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(actual), nan), f"NaNs differ: {actual!r} vs {expected!r}"
    got, want = actual[~nan], expected[~nan]
    assert np.array_equal(np.signbit(got), np.signbit(want)), \
        f"signs differ: {actual!r} vs {expected!r}"
    if rtol:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0)
    else:
        assert np.array_equal(got, want), f"{actual!r} != {expected!r}"


def build_apply(op: str, operands: Sequence[Value | Literal | float | int | bool],
                attrs: dict[str, Any]) -> Value:
    # build.splat is the module's own (value, type) helper, so the splat op goes by name.
    fn = (lambda *a, **k: tb.apply_op("splat", *a, **k)) if op == "splat" else getattr(tb, op)
    return fn(*operands, **attrs)  # type: ignore[no-any-return]


def run(op: str, args: Sequence[np.ndarray | float | int | bool],
        attrs: dict[str, Any] | None = None) -> np.ndarray:
    """Build ``op(args...)`` (arrays become parameters, scalars literals) and evaluate it."""
    f = tb.FuncBuilder(f"t_{op}")
    inputs: list[np.ndarray] = []
    operands: list[Value | float | int | bool] = []
    for a in args:
        if isinstance(a, np.ndarray):
            operands.append(f.param(f"p{len(inputs)}", type_of(a)))
            inputs.append(a)
        else:
            operands.append(a)
    if op in ("kernel", "load_matmul_rows"):  # they take a body: read the first into one
        operands[0] = tb.load(operands[0]) if isinstance(operands[0], Value) else operands[0]
    result = build_apply(op, operands, attrs or {})
    f.ret(tb.kernel(result) if result.sort is Sort.BODY else result)
    (out,) = evaluate(f.finish(), inputs)
    return out


@dataclass(frozen=True)
class Case:
    op: str
    label: str
    args: tuple[np.ndarray | float | int | bool, ...]
    expected: np.ndarray
    attrs: dict[str, Any] = field(default_factory=dict)
    rtol: float = 0.0


def C(op: str, label: str, *args: np.ndarray | float | int | bool, expect: np.ndarray,
      rtol: float = 0.0, **attrs: Any) -> Case:
    return Case(op, label, tuple(args), expect, attrs, rtol)


CASES: list[Case] = [
    # unary arithmetic ----------------------------------------------------------------------
    C("neg", "f32", f32(1.5, -0.0, 0.0, INF, NAN), expect=f32(-1.5, 0.0, -0.0, -INF, NAN)),
    C("neg", "i32 wraps", i32(I32_MIN, I32_MAX, 5, 0), expect=i32(I32_MIN, -I32_MAX, -5, 0)),
    C("neg", "i64 wraps", i64(I64_MIN, 7), expect=i64(I64_MIN, -7)),
    C("abs", "f32", f32(-0.0, -2.5, -INF, NAN, 3.0), expect=f32(0.0, 2.5, INF, NAN, 3.0)),
    C("abs", "i32 MIN", i32(I32_MIN, -7, 7, 0), expect=i32(I32_MIN, 7, 7, 0)),
    C("abs", "i64 MIN", i64(I64_MIN, -1), expect=i64(I64_MIN, 1)),
    # transcendental --------------------------------------------------------------------------
    C("exp", "specials", f32(0.0, -0.0, -INF, INF, 100.0, -200.0, NAN),
      expect=f32(1.0, 1.0, 0.0, INF, INF, 0.0, NAN)),
    C("exp", "values", f64(1.0, -1.0, 2.0), expect=f64(2.718281828459045, 0.36787944117144233,
                                                       7.38905609893065), rtol=1e-15),
    C("log", "specials", f32(0.0, -0.0, -1.0, 1.0, INF, -INF, NAN),
      expect=f32(-INF, -INF, NAN, 0.0, INF, NAN, NAN)),
    C("log", "values", f64(2.718281828459045, 10.0), expect=f64(1.0, 2.302585092994046),
      rtol=1e-15),
    C("sqrt", "specials", f32(-0.0, 0.0, -1.0, 4.0, INF, -INF, NAN, 2.0),
      expect=f32(-0.0, 0.0, NAN, 2.0, INF, NAN, NAN, 1.4142135)),
    C("sqrt", "f64", f64(2.0, 0.25), expect=f64(1.4142135623730951, 0.5)),
    C("rsqrt", "specials", f32(0.0, -0.0, 4.0, INF, -1.0, 0.25, NAN),
      expect=f32(INF, -INF, 0.5, 0.0, NAN, 2.0, NAN)),
    C("tanh", "specials", f32(0.0, -0.0, INF, -INF, 20.0, -20.0, NAN),
      expect=f32(0.0, -0.0, 1.0, -1.0, 1.0, -1.0, NAN)),
    C("tanh", "values", f64(0.5, -1.0), expect=f64(0.46211715726000974, -0.7615941559557649),
      rtol=1e-15),
    C("sigmoid", "f32 large", f32(1000.0, -1000.0, 0.0, INF, -INF, NAN),
      expect=f32(1.0, 0.0, 0.5, 1.0, 0.0, NAN)),
    C("sigmoid", "f64 large", f64(800.0, -800.0, -0.0), expect=f64(1.0, 0.0, 0.5)),
    C("sigmoid", "values", f32(2.0, -2.0), expect=f32(0.8807971, 0.11920292), rtol=1e-6),
    C("sin", "specials", f64(0.0, -0.0, PI / 2, INF, -INF, NAN),
      expect=f64(0.0, -0.0, 1.0, NAN, NAN, NAN)),
    C("sin", "values", f32(1.0, -0.5), expect=f32(0.84147096, -0.47942555), rtol=1e-6),
    C("cos", "specials", f64(0.0, -0.0, PI, INF, NAN), expect=f64(1.0, 1.0, -1.0, NAN, NAN)),
    C("cos", "values", f32(1.0), expect=f32(0.5403023), rtol=1e-6),
    C("atan", "specials", f64(0.0, -0.0, INF, -INF, 1.0, NAN),
      expect=f64(0.0, -0.0, PI / 2, -PI / 2, PI / 4, NAN), rtol=1e-15),
    C("erf", "values", f64(0.0, -0.0, 1.0, -1.0, 0.5, INF, -INF, NAN, 6.0),
      expect=f64(0.0, -0.0, 0.8427007929497149, -0.8427007929497149, 0.5204998778130465,
                 1.0, -1.0, NAN, 1.0), rtol=1e-14),
    C("erf", "f32", f32(1.0, -0.0), expect=f32(0.84270079, -0.0), rtol=1e-6),
    # rounding --------------------------------------------------------------------------------
    C("floor", "f32", f32(-0.0, 0.0, -0.5, 0.5, 2.7, -2.7, INF, -INF, NAN),
      expect=f32(-0.0, 0.0, -1.0, 0.0, 2.0, -3.0, INF, -INF, NAN)),
    C("ceil", "f32", f32(-0.0, 0.0, -0.5, 0.5, 2.1, -2.7, INF, -INF, NAN),
      expect=f32(-0.0, 0.0, -0.0, 1.0, 3.0, -2.0, INF, -INF, NAN)),
    C("round", "ties away", f32(0.5, -0.5, 1.5, 2.5, -2.5, -0.3, 0.3, -0.0, 2.4, -2.6),
      expect=f32(1.0, -1.0, 2.0, 3.0, -3.0, -0.0, 0.0, -0.0, 2.0, -3.0)),
    C("round", "specials", f32(INF, -INF, NAN, 0.49999997, 8388609.0),
      expect=f32(INF, -INF, NAN, 0.0, 8388609.0)),
    # 0.49999999999999994 + 0.5 rounds up to 1.0, so floor(x + 0.5) would get this one wrong.
    C("round", "f64 near half", f64(0.49999999999999994, -0.49999999999999994,
                                    4503599627370495.5, 4503599627370497.0),
      expect=f64(0.0, -0.0, 4503599627370496.0, 4503599627370497.0)),
    C("round_even", "ties to even", f32(0.5, 1.5, 2.5, 3.5, -0.5, -2.5, 3.7, -0.0, NAN, INF),
      expect=f32(0.0, 2.0, 2.0, 4.0, -0.0, -2.0, 4.0, -0.0, NAN, INF)),
    C("round_even", "f64", f64(-1.5, 1e300), expect=f64(-2.0, 1e300)),
    # clamp ------------------------------------------------------------------------------------
    C("clamp", "f32 both", f32(-1.0, 0.5, 7.0, NAN, INF, -INF),
      expect=f32(0.0, 0.5, 5.0, NAN, 5.0, 0.0), min=0.0, max=5.0),
    # max(-0.0, 0.0) returns its second operand, the bound.
    C("clamp", "f32 -0.0 at a 0.0 bound", f32(-0.0, 0.0), expect=f32(0.0, 0.0), min=0.0),
    C("clamp", "min only", f32(-3.0, 2.0), expect=f32(-1.5, 2.0), min=-1.5),
    C("clamp", "max only", f64(-3.0, 2.0), expect=f64(-3.0, 1.0), max=1),
    C("clamp", "NaN bound", f32(1.0, -2.0), expect=f32(NAN, NAN), min=NAN),
    C("clamp", "i32 bounds", i32(-5, 3, 10, I32_MIN, I32_MAX),
      expect=i32(-2, 3, 4, -2, 4), min=-2, max=4),
    C("clamp", "i64 float-written bounds", i64(I64_MIN, 0, I64_MAX), expect=i64(-1, 0, 2),
      min=-1.0, max=2.0),
    C("clamp", "i32 extreme bounds", i32(I32_MIN, 0, I32_MAX), expect=i32(I32_MIN, 0, I32_MAX),
      min=I32_MIN, max=I32_MAX),
    # binary arithmetic ----------------------------------------------------------------------
    C("add", "f32", f32(1.0, -0.0, -0.0, 0.0, INF, INF, NAN, 3e38),
      f32(2.0, 0.0, -0.0, -0.0, -INF, 1.0, 1.0, 3e38),
      expect=f32(3.0, 0.0, -0.0, 0.0, NAN, INF, NAN, INF)),
    C("add", "i32 wraps", i32(I32_MAX, I32_MIN, 5), i32(1, -1, -7),
      expect=i32(I32_MIN, I32_MAX, -2)),
    C("add", "i64 wraps", i64(I64_MAX), i64(2), expect=i64(I64_MIN + 1)),
    C("add", "literal", i32(1, -1), 2, expect=i32(3, 1)),
    C("sub", "f32", f32(0.0, -0.0, 0.0, INF, 1.0), f32(0.0, 0.0, -0.0, INF, 3.0),
      expect=f32(0.0, -0.0, 0.0, NAN, -2.0)),
    C("sub", "i32 wraps", i32(I32_MIN, I32_MAX, 0), i32(1, -1, I32_MIN),
      expect=i32(I32_MAX, I32_MIN, I32_MIN)),
    C("sub", "literal first", 1.0, f64(0.25, INF), expect=f64(0.75, -INF)),
    C("mul", "f32", f32(-0.0, 0.0, INF, -2.0, 1e30, NAN), f32(5.0, -3.0, 0.0, 3.0, 1e30, 0.0),
      expect=f32(-0.0, -0.0, NAN, -6.0, INF, NAN)),
    C("mul", "i32 wraps", i32(65536, I32_MIN, 3, I32_MAX), i32(65536, -1, -4, 2),
      expect=i32(0, I32_MIN, -12, -2)),
    C("mul", "i64 wraps", i64(2**62, 3), i64(4, -5), expect=i64(0, -15)),
    C("div", "i32 truncates", i32(7, -7, 7, -7, 1, -1, 6), i32(2, 2, -2, -2, 3, 3, 3),
      expect=i32(3, -3, -3, 3, 0, 0, 2)),
    C("div", "i32 by zero and MIN/-1", i32(5, -5, 0, I32_MIN, I32_MIN, I32_MAX, 1),
      i32(0, 0, 0, -1, 2, -1, I32_MIN), expect=i32(-1, -1, -1, I32_MIN, -(2**30), -I32_MAX, 0)),
    C("div", "i64", i64(I64_MIN, 9, -9), i64(-1, -1, 0), expect=i64(I64_MIN, -9, -1)),
    C("div", "f32 zeros", f32(1.0, 1.0, -1.0, -1.0, 0.0, -0.0, INF, 1.0, -0.0, 3.0),
      f32(0.0, -0.0, 0.0, -0.0, 0.0, 5.0, INF, 4.0, -2.0, INF),
      expect=f32(INF, -INF, -INF, INF, NAN, -0.0, NAN, 0.25, 0.0, 0.0)),
    C("max", "f32 NaN and zeros", f32(1.0, NAN, 2.0, -0.0, 0.0, -INF, NAN),
      f32(2.0, 3.0, NAN, 0.0, -0.0, -INF, NAN),
      expect=f32(2.0, NAN, NAN, 0.0, -0.0, -INF, NAN)),
    C("max", "i32", i32(I32_MIN, 3, -4), i32(I32_MAX, -3, -5), expect=i32(I32_MAX, 3, -4)),
    C("max", "relu literal", f32(-1.0, 2.0, -0.0), 0.0, expect=f32(0.0, 2.0, 0.0)),
    C("min", "f32 NaN and zeros", f32(1.0, NAN, 2.0, -0.0, 0.0, INF),
      f32(2.0, 3.0, NAN, 0.0, -0.0, INF), expect=f32(1.0, NAN, NAN, 0.0, -0.0, INF)),
    C("min", "i64", i64(I64_MIN, 3), i64(I64_MAX, -3), expect=i64(I64_MIN, -3)),
    C("pow", "f64", f64(2.0, NAN, 0.0, INF, -8.0, 0.0, 1.0, -2.0, -0.0, 4.0),
      f64(10.0, 0.0, 0.0, 0.0, 1 / 3, -1.0, NAN, 3.0, -1.0, 0.5),
      expect=f64(1024.0, 1.0, 1.0, 1.0, NAN, INF, 1.0, -8.0, -INF, 2.0)),
    C("pow", "i32 wraps, negative exponents", i32(3, 2, -2, 1, -1, -1, 0, 5, 7, I32_MIN),
      i32(4, 31, 31, -5, -3, -4, -1, 0, 100, 2),
      expect=i32(81, I32_MIN, I32_MIN, 1, -1, 1, 0, 1, 1027218017, 0)),
    C("pow", "i64", i64(-3, 2, 0, 10), i64(3, 63, 0, 19),
      expect=i64(-27, I64_MIN, 1, 10**19 - 2**64)),
    C("pow", "literal exponent 0", f32(NAN, -INF, 0.0, -0.0), 0.0, expect=f32(1.0, 1.0, 1.0, 1.0)),
    C("atan2", "signs", f64(0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0, 0.0, NAN),
      f64(0.0, 0.0, -0.0, -0.0, 0.0, 0.0, -1.0, -1.0, 1.0, 1.0),
      expect=f64(0.0, -0.0, PI, -PI, PI / 2, -PI / 2, 3 * PI / 4, -3 * PI / 4, 0.0, NAN),
      rtol=1e-15),
    # comparisons -----------------------------------------------------------------------------
    C("eq", "f32", f32(1.0, NAN, 0.0, INF, 1.0), f32(1.0, NAN, -0.0, INF, 2.0),
      expect=i1(True, False, True, True, False)),
    C("eq", "i1", i1(True, False, True), i1(True, False, False), expect=i1(True, True, False)),
    C("eq", "i64", i64(I64_MIN, 1), i64(I64_MIN, -1), expect=i1(True, False)),
    C("ne", "f32", f32(1.0, NAN, 0.0, NAN, 1.0), f32(1.0, NAN, -0.0, 1.0, 2.0),
      expect=i1(False, True, False, True, True)),
    C("ne", "i32", i32(3, 4), i32(3, 5), expect=i1(False, True)),
    C("lt", "f32", f32(1.0, NAN, -0.0, -INF, 2.0, 1.0), f32(2.0, 1.0, 0.0, INF, 1.0, NAN),
      expect=i1(True, False, False, True, False, False)),
    C("lt", "i1", i1(False, True, False), i1(True, False, False), expect=i1(True, False, False)),
    C("le", "f32", f32(1.0, NAN, -0.0, 2.0, NAN), f32(1.0, NAN, 0.0, 1.0, 1.0),
      expect=i1(True, False, True, False, False)),
    C("le", "literal", i32(-1, 0, 1), 0, expect=i1(True, True, False)),
    C("gt", "f64", f64(2.0, NAN, 0.0, INF), f64(1.0, 1.0, -0.0, INF),
      expect=i1(True, False, False, False)),
    C("gt", "i32", i32(I32_MIN, 0), i32(I32_MAX, -1), expect=i1(False, True)),
    C("ge", "f32", f32(1.0, NAN, -0.0, 0.0), f32(1.0, 1.0, 0.0, NAN),
      expect=i1(True, False, True, False)),
    # select and cast -------------------------------------------------------------------------
    C("select", "f32", i1(True, False, True, False), f32(1.0, 2.0, NAN, -0.0),
      f32(-1.0, NAN, 3.0, 0.0), expect=f32(1.0, NAN, NAN, 0.0)),
    C("select", "i32 literal", i1(True, False), i32(5, 6), 0, expect=i32(5, 0)),
    C("select", "i1", i1(True, False), i1(False, False), i1(True, True),
      expect=i1(False, True)),
    C("cast", "f32 to i32 truncates", f32(2.7, -2.7, 0.5, -0.5, -0.0), to="i32",
      expect=i32(2, -2, 0, 0, 0)),
    C("cast", "f32 to i32 saturates", f32(1e10, -1e10, INF, -INF, NAN, 2147483648.0,
                                           -2147483648.0),
      to="i32", expect=i32(I32_MAX, I32_MIN, I32_MAX, I32_MIN, 0, I32_MAX, I32_MIN)),
    C("cast", "f64 to i32 edges", f64(2147483647.9, -2147483648.9, 2147483648.0, -2147483649.0),
      to="i32", expect=i32(I32_MAX, I32_MIN, I32_MAX, I32_MIN)),
    C("cast", "f64 to i64 saturates", f64(9.3e18, -9.3e18, 2.0**63, -(2.0**63), NAN),
      to="i64", expect=i64(I64_MAX, I64_MIN, I64_MAX, I64_MIN, 0)),
    C("cast", "to i1 is x != 0", f32(0.0, -0.0, 2.5, NAN, -INF), to="i1",
      expect=i1(False, False, True, True, True)),
    C("cast", "i32 to i1", i32(0, 2, -1, I32_MIN), to="i1", expect=i1(False, True, True, True)),
    C("cast", "f64 to f32 rounds", f64(0.1, 1e300, -1e300, 1e-50, -1e-50, 16777217.0, NAN),
      to="f32", expect=f32(0.1, INF, -INF, 0.0, -0.0, 16777216.0, NAN)),
    C("cast", "i64 to i32 wraps", i64(2**32 + 5, 2**31, -(2**31) - 1), to="i32",
      expect=i32(5, I32_MIN, I32_MAX)),
    C("cast", "i32 to i64 sign-extends", i32(I32_MIN, -1), to="i64", expect=i64(I32_MIN, -1)),
    C("cast", "i1 to f32", i1(True, False), to="f32", expect=f32(1.0, 0.0)),
    C("cast", "i64 to f32 rounds", i64(16777217, -(2**40) - 1), to="f32",
      expect=f32(16777216.0, -1099511627776.0)),
    # constants -------------------------------------------------------------------------------
    C("splat", "f32 -0.0", value=-0.0, shape=[2, 2], dtype="f32",
      expect=np.array([[-0.0, -0.0], [-0.0, -0.0]], np.float32)),
    C("splat", "f64 nan", value=NAN, shape=[3], dtype="f64", expect=f64(NAN, NAN, NAN)),
    C("splat", "i1 true", value=True, shape=[2], dtype="i1", expect=i1(True, True)),
    C("splat", "i32 MIN", value=I32_MIN, shape=[1, 2], dtype="i32",
      expect=np.array([[I32_MIN, I32_MIN]], np.int32)),
    C("splat", "empty", value=1.5, shape=[0, 3], dtype="f32",
      expect=np.zeros((0, 3), np.float32)),
    C("splat", "rank 0", value=-7, shape=[], dtype="i64", expect=np.array(-7, np.int64)),
    C("iota", "i64 along 1", shape=[2, 3], axis=1, dtype="i64",
      expect=np.array([[0, 1, 2], [0, 1, 2]], np.int64)),
    C("iota", "f32 along 0", shape=[3, 2], axis=0, dtype="f32",
      expect=np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]], np.float32)),
    C("iota", "f16 rounds past 2048", shape=[2051], axis=0, dtype="f16",
      expect=np.arange(2051).astype(np.float16)),
    C("iota", "u8 up to 255", shape=[256], axis=0, dtype="u8",
      expect=np.arange(256, dtype=np.uint8)),
    C("iota", "empty", shape=[0, 4], axis=1, dtype="i32", expect=np.zeros((0, 4), np.int32)),
    C("dense", "i32 2x2", value=[[1, 2], [3, 4]], dtype="i32",
      expect=np.array([[1, 2], [3, 4]], np.int32)),
    C("dense", "f32 rounds", value=[0.1, -0.0, 1e-50], dtype="f32",
      expect=f32(0.1, -0.0, 0.0)),
    C("dense", "i1", value=[1, 0, 1], dtype="i1", expect=i1(True, False, True)),
    C("dense", "i64 extremes", value=[I64_MIN, I64_MAX], dtype="i64",
      expect=i64(I64_MIN, I64_MAX)),
    # data movement ---------------------------------------------------------------------------
    C("broadcast", "row", f32(1.0, 2.0, 3.0), shape=[2, 3], dims=[1],
      expect=np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], np.float32)),
    C("broadcast", "column", i32(1, 2), shape=[2, 3], dims=[0],
      expect=np.array([[1, 1, 1], [2, 2, 2]], np.int32)),
    C("broadcast", "size-1 expansion", np.array([[-0.0], [5.0]], np.float32), shape=[2, 3],
      dims=[0, 1], expect=np.array([[-0.0, -0.0, -0.0], [5.0, 5.0, 5.0]], np.float32)),
    C("broadcast", "middle axis, size-1 source", np.array([[7], [8]], np.int64), shape=[2, 2, 3],
      dims=[0, 2], expect=np.array([[[7, 7, 7], [7, 7, 7]], [[8, 8, 8], [8, 8, 8]]], np.int64)),
    C("broadcast", "scalar", np.array(NAN, np.float32), shape=[2], dims=[],
      expect=f32(NAN, NAN)),
    C("transpose", "rank 3 rotate", np.array([[[0, 1, 2], [3, 4, 5]]], np.int32), perm=[2, 0, 1],
      expect=np.array([[[0, 3]], [[1, 4]], [[2, 5]]], np.int32)),
    C("transpose", "rank 3 swap", np.arange(8, dtype=np.float32).reshape(2, 2, 2),
      perm=[1, 0, 2],
      expect=np.array([[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]], np.float32)),
    C("transpose", "rank 2", np.array([[1, 2, 3], [4, 5, 6]], np.int64), perm=[1, 0],
      expect=np.array([[1, 4], [2, 5], [3, 6]], np.int64)),
    C("reshape", "2x3 to 3x2", np.array([[1, 2, 3], [4, 5, 6]], np.int32), shape=[3, 2],
      expect=np.array([[1, 2], [3, 4], [5, 6]], np.int32)),
    C("reshape", "flatten", np.array([[1.0, -0.0], [NAN, 4.0]], np.float32), shape=[4],
      expect=f32(1.0, -0.0, NAN, 4.0)),
    C("reshape", "to rank 0", f64(2.5), shape=[], expect=np.array(2.5, np.float64)),
    C("slice", "stride 3", np.arange(10, dtype=np.int32), start=[1], size=[3], stride=[3],
      expect=i32(1, 4, 7)),
    C("slice", "last element exactly", np.arange(10, dtype=np.int32), start=[0], size=[4],
      stride=[3], expect=i32(0, 3, 6, 9)),
    C("slice", "2d", np.arange(12, dtype=np.int64).reshape(3, 4), start=[0, 1], size=[2, 2],
      stride=[2, 2], expect=np.array([[1, 3], [9, 11]], np.int64)),
    C("slice", "size 0", f32(1.0, 2.0), start=[2], size=[0], stride=[1],
      expect=np.zeros(0, np.float32)),
    C("slice", "size 0 on one axis", np.ones((2, 3), np.float32), start=[0, 1], size=[2, 0],
      stride=[1, 5], expect=np.zeros((2, 0), np.float32)),
    C("concat", "3 operands axis 0", i32(1), i32(2, 3), i32(4, 5, 6), axis=0,
      expect=i32(1, 2, 3, 4, 5, 6)),
    C("concat", "3 operands axis 1", np.array([[1.0], [2.0]], np.float32),
      np.array([[3.0, 4.0], [5.0, 6.0]], np.float32), np.array([[-0.0], [NAN]], np.float32),
      axis=1, expect=np.array([[1.0, 3.0, 4.0, -0.0], [2.0, 5.0, 6.0, NAN]], np.float32)),
    C("concat", "one operand", i1(True), axis=0, expect=i1(True)),
    C("concat", "empty operand", f64(1.0), np.zeros(0, np.float64), f64(2.0), axis=0,
      expect=f64(1.0, 2.0)),
    C("gather", "clamped indices", f32(10.0, 20.0, 30.0, 40.0), i32(0, 3, 4, -1, -100, 2, 99),
      axis=0, expect=f32(10.0, 40.0, 40.0, 10.0, 10.0, 30.0, 40.0)),
    C("gather", "axis 1, 2-d indices", np.array([[1, 2, 3], [4, 5, 6]], np.int32),
      np.array([[2, 0], [1, 1]], np.int64), axis=1,
      expect=np.array([[[3, 1], [2, 2]], [[6, 4], [5, 5]]], np.int32)),
    C("gather", "rows", np.array([[1.0, 2.0], [3.0, 4.0]], np.float64), i64(1, 1, -5), axis=0,
      expect=np.array([[3.0, 4.0], [3.0, 4.0], [1.0, 2.0]], np.float64)),
    C("pad", "constant", f32(1.0, 2.0), low=[2], high=[1], value=-0.0,
      expect=f32(-0.0, -0.0, 1.0, 2.0, -0.0)),
    C("pad", "edge, 2-d", np.array([[1, 2], [3, 4]], np.int32), low=[1, 0], high=[0, 2],
      mode="edge", expect=np.array([[1, 2, 2, 2], [1, 2, 2, 2], [3, 4, 4, 4]], np.int32)),
    C("pad", "reflect", i64(1, 2, 3), low=[2], high=[1], mode="reflect",
      expect=i64(3, 2, 1, 2, 3, 2)),
    C("pad", "i1 true", i1(False), low=[1], high=[1], value=True, expect=i1(True, False, True)),
    C("pad", "zero widths", f64(1.0, NAN), low=[0], high=[0], expect=f64(1.0, NAN)),
    # reductions ------------------------------------------------------------------------------
    C("reduce_sum", "axis 1", np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32),
      axes=[1], expect=f32(6.0, 15.0)),
    C("reduce_sum", "axis 0 keepdims", np.array([[1, 2, 3], [4, 5, 6]], np.int32), axes=[0],
      keepdims=True, expect=np.array([[5, 7, 9]], np.int32)),
    C("reduce_sum", "all axes", np.array([[1, 2, 3], [4, 5, 6]], np.int64), axes=[0, 1],
      expect=np.array(21, np.int64)),
    C("reduce_sum", "no axes", f32(1.5, NAN), axes=[], expect=f32(1.5, NAN)),
    C("reduce_sum", "i32 wraps", i32(I32_MAX, 1, 1), axes=[0], expect=np.array(I32_MIN + 1,
                                                                               np.int32)),
    C("reduce_sum", "empty axis", np.zeros((0, 3), np.float32), axes=[0],
      expect=f32(0.0, 0.0, 0.0)),
    C("reduce_sum", "NaN and inf", np.array([[1.0, NAN], [INF, -INF]], np.float64), axes=[1],
      expect=f64(NAN, NAN)),
    C("reduce_prod", "axis 1", np.array([[1, 2, 3], [4, 5, 6]], np.int32), axes=[1],
      expect=i32(6, 120)),
    C("reduce_prod", "multiple axes keepdims", np.arange(1, 13, dtype=np.float64)
      .reshape(2, 3, 2), axes=[0, 2], keepdims=True,
      expect=np.array([[[1.0 * 2 * 7 * 8], [3.0 * 4 * 9 * 10], [5.0 * 6 * 11 * 12]]])),
    C("reduce_prod", "i32 wraps", i32(65536, 65536, 3), axes=[0], expect=np.array(0, np.int32)),
    C("reduce_prod", "empty axis", np.zeros((2, 0), np.int64), axes=[1], expect=i64(1, 1)),
    C("reduce_max", "axis 0", np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], np.float32),
      axes=[0], expect=f32(4.0, 5.0, 6.0)),
    C("reduce_max", "keepdims", np.array([[1, 5, 3], [4, 2, 6]], np.int32), axes=[1],
      keepdims=True, expect=np.array([[5], [6]], np.int32)),
    C("reduce_max", "NaN", np.array([[1.0, NAN, 3.0], [NAN, -INF, 0.0]], np.float32), axes=[1],
      expect=f32(NAN, NAN)),
    C("reduce_max", "NaN last", f64(1.0, 2.0, NAN), axes=[0], expect=np.array(NAN)),
    C("reduce_max", "empty axis f32", np.zeros((0, 3), np.float32), axes=[0],
      expect=f32(-INF, -INF, -INF)),
    C("reduce_max", "empty axis i32", np.zeros((0, 2), np.int32), axes=[0],
      expect=i32(I32_MIN, I32_MIN)),
    C("reduce_max", "empty axis i64 keepdims", np.zeros((2, 0), np.int64), axes=[1],
      keepdims=True, expect=np.array([[I64_MIN], [I64_MIN]], np.int64)),
    C("reduce_max", "no axes", f32(-0.0, 1.0), axes=[], expect=f32(-0.0, 1.0)),
    C("reduce_max", "all axes", np.array([[-3, -1], [-2, -5]], np.int64), axes=[1, 0],
      expect=np.array(-1, np.int64)),
    C("reduce_min", "axis 1", np.array([[1.0, 5.0, -3.0], [4.0, 2.0, 6.0]], np.float64),
      axes=[1], expect=f64(-3.0, 2.0)),
    C("reduce_min", "NaN", f32(NAN, -INF), axes=[0], expect=np.array(NAN, np.float32)),
    C("reduce_min", "empty axis f64", np.zeros((0,), np.float64), axes=[0],
      expect=np.array(INF)),
    C("reduce_min", "empty axis i32", np.zeros((0, 2), np.int32), axes=[0],
      expect=i32(I32_MAX, I32_MAX)),
    C("reduce_min", "empty axis i64", np.zeros((0,), np.int64), axes=[0],
      expect=np.array(I64_MAX, np.int64)),
    # matmul ----------------------------------------------------------------------------------
    C("matmul", "2x2", np.array([[1.0, 2.0], [3.0, 4.0]], np.float32),
      np.array([[5.0, 6.0], [7.0, 8.0]], np.float32),
      expect=np.array([[19.0, 22.0], [43.0, 50.0]], np.float32)),
    C("matmul", "2x3 @ 3x1", np.array([[1, 2, 3], [4, 5, 6]], np.int64),
      np.array([[1], [0], [-1]], np.int64), expect=np.array([[-2], [-2]], np.int64)),
    C("matmul", "batched", np.array([[[1, 0], [0, 1]], [[2, 3], [4, 5]]], np.int32),
      np.array([[[7], [8]], [[1], [-1]]], np.int32),
      expect=np.array([[[7], [8]], [[-1], [-1]]], np.int32)),
    C("matmul", "i32 wraps", np.array([[2**30, 2**30]], np.int32), np.array([[2], [1]], np.int32),
      expect=np.array([[-(2**30)]], np.int32)),
    C("matmul", "inf times 0", np.array([[INF, 0.0]], np.float64),
      np.array([[0.0], [1.0]], np.float64), expect=np.array([[NAN]])),
    C("matmul", "inner dim 0", np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32),
      expect=np.zeros((2, 3), np.float32)),
    # kernel boundaries: the identity, bit for bit ------------------------------------------
    C("load", "f32 specials", f32(-0.0, NAN, INF, 1e-45), expect=f32(-0.0, NAN, INF, 1e-45)),
    C("load", "i32 extremes", i32(I32_MIN, I32_MAX), expect=i32(I32_MIN, I32_MAX)),
    C("kernel", "f32 specials", f32(-0.0, NAN, -INF), expect=f32(-0.0, NAN, -INF)),
    C("kernel", "i1", np.array([True, False]), expect=np.array([True, False])),
    C("load_matmul", "as matmul", np.array([[1.0, 2.0]], np.float32),
      np.array([[3.0], [-0.5]], np.float32), expect=np.array([[2.0]], np.float32)),
    C("load_matmul_rows", "as matmul", np.array([[1.0, 2.0], [0.0, -1.0]], np.float32),
      np.array([[3.0], [-0.5]], np.float32), shape=[2, 2],
      expect=np.array([[2.0], [0.5]], np.float32)),
    C("load_matmul_rows", "batch axes merged",
      np.array([[[[1.0, 2.0]]], [[[0.0, -1.0]]]], np.float32),
      np.array([[[3.0], [-0.5]], [[1.0], [4.0]]], np.float32), shape=[2, 1, 2],
      expect=np.array([[[2.0]], [[-4.0]]], np.float32)),
]

COVERED_OPS = frozenset(c.op for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.op}-{c.label}" for c in CASES])
def test_reference(case: Case) -> None:
    assert_same(run(case.op, case.args, case.attrs), case.expected, case.rtol)


def test_splat_with_a_symbolic_shape() -> None:
    f = tb.FuncBuilder("sym")
    x = f.param("x", "i32[N, 2]")
    fill = tb.apply_op("splat", value=-1, shape=["N", 2], dtype="i32")
    f.ret(tb.add(x, fill))
    (out,) = evaluate(f.finish(), [np.array([[1, 2], [3, I32_MIN]], np.int32)])
    assert_same(out, np.array([[0, 1], [2, I32_MAX]], np.int32))


def test_iota_with_a_symbolic_shape() -> None:
    f = tb.FuncBuilder("sym")
    x = f.param("x", "i32[N, 2]")
    f.ret(tb.add(x, tb.iota(shape=["N", 2], axis=0, dtype="i32")))
    (out,) = evaluate(f.finish(), [np.array([[1, 2], [3, I32_MAX]], np.int32)])
    assert_same(out, np.array([[1, 2], [4, I32_MIN]], np.int32))


def test_reshape_of_symbolic_dims() -> None:
    f = tb.FuncBuilder("flat")
    x = f.param("x", "f32[N, 2]")
    f.ret(tb.reshape(x, shape=[Dim.of("N") * 2]))
    (out,) = evaluate(f.finish(), [np.array([[1.0, 2.0], [3.0, -0.0]], np.float32)])
    assert_same(out, f32(1.0, 2.0, 3.0, -0.0))


def test_max_min_return_the_second_operand_on_signed_zeros() -> None:
    zeros = (f32(-0.0, 0.0), f32(0.0, -0.0))
    assert_same(run("max", zeros), f32(0.0, -0.0))
    assert_same(run("min", zeros), f32(0.0, -0.0))
    assert_same(run("max", zeros[::-1]), f32(-0.0, 0.0))
    assert_same(run("min", zeros[::-1]), f32(-0.0, 0.0))


# Traits: checked on special values and on random ones -----------------------------------------

RNG = np.random.default_rng(20240611)
SPECIAL: dict[DType, list[Any]] = {
    DType.F32: [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1.5, INF, -INF, NAN, 1e-45, 3.4e38, -3.4e38,
                7.0],
    DType.F64: [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1.5, INF, -INF, NAN, 5e-324, 1.7e308,
                -1.7e308, 7.0],
    DType.I32: [0, 1, -1, 2, -7, 65536, I32_MIN, I32_MAX, I32_MIN + 1],
    DType.I64: [0, 1, -1, 2, -7, 2**32, I64_MIN, I64_MAX, I64_MIN + 1],
    DType.I1: [False, True],
    # f16: largest finite, smallest normal and denormal, a value that rounds; bf16 likewise.
    DType.F16: [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1.5, INF, -INF, NAN, 2.0**-24, 6.1035e-05,
                65504.0, -65504.0, 7.0, 0.1],
    DType.BF16: [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1.5, INF, -INF, NAN, 9.2e-41, 1.18e-38,
                 3.3895e38, -3.3895e38, 7.0, 0.1],
    DType.I8: [0, 1, -1, 2, -7, 100, -128, 127, -127],
    DType.I16: [0, 1, -1, 2, -7, 256, -(2**15), 2**15 - 1, -(2**15) + 1],
    DType.U8: [0, 1, 2, 7, 128, 255, 254],
    DType.U16: [0, 1, 2, 7, 2**15, 2**16 - 1, 2**16 - 2],
    DType.U32: [0, 1, 2, 7, 2**31, 2**32 - 1, 2**32 - 2],
    DType.U64: [0, 1, 2, 7, 2**63, 2**64 - 1, 2**64 - 2],
}


def sample(dtype: DType, n_random: int = 12) -> np.ndarray:
    """Special values of ``dtype`` followed by random ones."""
    special = np.array(SPECIAL[dtype], dtype=object).astype(dtype.np_dtype)
    if dtype.is_float:
        extra = (RNG.standard_normal(n_random) * 10.0 ** RNG.integers(-3, 4, n_random))
        extra = np.round(extra, RNG.integers(0, 3)).astype(np.float32).astype(dtype.np_dtype)
    elif dtype.is_int:
        info = np.iinfo(dtype.np_dtype)
        extra = RNG.integers(info.min, info.max, n_random, dtype=dtype.np_dtype, endpoint=True)
    else:
        extra = RNG.integers(0, 2, n_random).astype(bool)
    return np.concatenate([special, extra])


def dtypes_for(op: OpDef, arity: int, attrs: dict[str, Any] | None = None) -> list[DType]:
    ok = []
    for dt in DType:
        try:
            op.infer([TensorType.of(dt, [3])] * arity, attrs or {})
        except ShapeError:
            continue
        ok.append(dt)
    assert ok, f"{op.name} accepts no dtype"
    return ok


def pairs(dtype: DType) -> tuple[np.ndarray, np.ndarray]:
    v = sample(dtype)
    x, y = zip(*itertools.product(v.tolist(), repeat=2), strict=True)
    return np.array(x, dtype.np_dtype), np.array(y, dtype.np_dtype)


def with_trait(pred: Any) -> list[str]:
    return sorted(n for n, op in OPS.items() if pred(op))


COMMUTATIVE = with_trait(lambda op: op.traits.commutative)
IDENTITY = with_trait(lambda op: op.traits.identity is not None)
IDEMPOTENT = with_trait(lambda op: op.traits.idempotent)
ASSOCIATIVE = with_trait(lambda op: op.traits.associative)


def test_claimed_traits_are_the_expected_ones() -> None:
    assert COMMUTATIVE == ["add", "eq", "mul", "ne"]
    assert IDENTITY == ["add", "max", "min", "mul"]
    assert ASSOCIATIVE == ["add", "max", "min", "mul"]
    assert IDEMPOTENT == ["abs", "ceil", "clamp", "floor", "max", "min", "round", "round_even"]


def two_results(op: str, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """op(x, y) and op(y, x) from one func."""
    f = tb.FuncBuilder("both")
    a, b = f.param("a", type_of(x)), f.param("b", type_of(y))
    f.ret(getattr(tb, op)(a, b), getattr(tb, op)(b, a))
    xy, yx = evaluate(f.finish(), [x, y])
    return xy, yx


@pytest.mark.parametrize("name", COMMUTATIVE)
def test_commutative_bitwise(name: str) -> None:
    for dt in dtypes_for(OPS[name], 2):
        x, y = pairs(dt)
        xy, yx = two_results(name, x, y)
        assert_same(xy, yx)


def test_max_min_are_not_bitwise_commutative() -> None:
    for name in ("max", "min"):
        xy, yx = two_results(name, f32(-0.0), f32(0.0))
        assert np.signbit(xy[0]) != np.signbit(yx[0]), name


@pytest.mark.parametrize("name", IDENTITY)
def test_identity_element(name: str) -> None:
    op = OPS[name]
    assert op.traits.identity is not None
    for dt in dtypes_for(op, 2):
        x = sample(dt)
        e = identity_value(op.traits.identity, dt)
        assert_same(run(name, [x, e]), x)
        if op.traits.commutative:
            assert_same(run(name, [e, x]), x)


def test_identity_values_for_integers() -> None:
    assert identity_value(-0.0, DType.I32) == 0
    assert identity_value(1.0, DType.I64) == 1
    assert identity_value(-INF, DType.I32) == I32_MIN
    assert identity_value(INF, DType.I64) == I64_MAX
    assert math.copysign(1.0, identity_value(-0.0, DType.F32)) == -1.0


CLAMP_BOUNDS: list[dict[str, Any]] = [
    {"min": 0, "max": 5}, {"min": -1}, {"max": 2}, {"min": 3, "max": -3}, {"min": 0.0},
    {"min": -1.5, "max": 1.5}, {"min": NAN}, {"max": -INF},
]


def unary_attr_sets(op: OpDef, dt: DType) -> list[dict[str, Any]]:
    if op.name != "clamp":
        return [{}]
    out = []
    for attrs in CLAMP_BOUNDS:
        try:
            op.infer([TensorType.of(dt, [3])], attrs)
        except ShapeError:
            continue
        out.append(attrs)
    return out


@pytest.mark.parametrize("name", IDEMPOTENT)
def test_idempotent(name: str) -> None:
    op = OPS[name]
    arity = len(op.operands)
    for dt in dtypes_for(op, arity, {"min": 0} if name == "clamp" else None):
        x = sample(dt, 40)
        if arity == 2:
            assert_same(run(name, [x, x]), x)
            continue
        for attrs in unary_attr_sets(op, dt):
            f = tb.FuncBuilder("twice")
            p = f.param("x", type_of(x))
            once = getattr(tb, name)(p, **attrs)
            f.ret(once, getattr(tb, name)(once, **attrs))
            r1, r2 = evaluate(f.finish(), [x])
            assert_same(r2, r1)


@pytest.mark.parametrize("name", ASSOCIATIVE)
def test_associative_on_integers(name: str) -> None:
    for dt in dtypes_for(OPS[name], 2):
        if not dt.is_int:
            continue  # float add and mul are only approximately associative
        v = sample(dt, 6).tolist()
        x, y, z = (np.array(t, dt.np_dtype) for t in zip(*itertools.product(v, repeat=3),
                                                         strict=True))
        f = tb.FuncBuilder("assoc")
        a, b, c = (f.param(n, type_of(x)) for n in "abc")
        op = getattr(tb, name)
        f.ret(op(op(a, b), c), op(a, op(b, c)))
        left, right = evaluate(f.finish(), [x, y, z])
        assert_same(left, right)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_associative_on_floats(name: str) -> None:
    # No rounding is involved, so max and min are associative bit for bit, zeros included.
    v = [x for x in sample(DType.F32, 4).tolist() if not math.isnan(x)]
    x, y, z = (np.array(t, np.float32) for t in zip(*itertools.product(v, repeat=3),
                                                    strict=True))
    f = tb.FuncBuilder("assoc")
    a, b, c = (f.param(n, type_of(x)) for n in "abc")
    op = getattr(tb, name)
    f.ret(op(op(a, b), c), op(a, op(b, c)))
    left, right = evaluate(f.finish(), [x, y, z])
    assert_same(left, right)


def test_data_movement_keeps_rank_zero() -> None:
    """np.ascontiguousarray makes 0-d arrays 1-d; the references must not (found by verify)."""
    from tcp_rules.ops import OPS
    from tcp_rules.types import TensorType

    x = np.array(5, np.int32)
    scalar = TensorType.of("i32", [])
    for name, attrs in (("broadcast", {"shape": (), "dims": ()}), ("transpose", {"perm": ()}),
                        ("slice", {"start": (), "size": (), "stride": ()})):
        out = OPS[name].reference([x], attrs, scalar)
        assert out.shape == () and out.dtype == np.int32 and int(out) == 5, name
