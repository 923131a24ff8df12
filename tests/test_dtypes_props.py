"""Property tests: every op on every new dtype (f16, bf16, i8, i16, u8..u64) agrees between three
engines: an independent model (NumPy's and ml_dtypes' own f16/bf16 arithmetic; Python integers
modulo 2**n), the reference interpreter, and the compiled code.

Inputs mix edge values (extremes, f16 and bf16 denormals, inf, NaN, -0.0, integer MIN and MAX)
with random bit patterns, so every exponent, NaN payload and integer is reachable. The compiled
engine matches the reference bit for bit where the op is exact (one f32 operation rounded once
to storage, integer arithmetic, selection, casts); math functions, sums and products within the
bound tests/numerics.py derives (an f32 error bound plus one rounding to storage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from codegen.support import tcpr_cache  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st
from numerics import assert_close_to_reference

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func
from tcp_rules.ops import OPS, ShapeError
from tcp_rules.types import DType, TensorType, is_float_array

# Every dtype beyond the first five (a dtype added later is tested here without a change)
NEW = [d for d in DType if d not in (DType.F32, DType.F64, DType.I32, DType.I64, DType.I1)]
PROPS = settings(max_examples=6, deadline=None)
EXACT = {"neg", "abs", "add", "sub", "mul", "div", "sqrt", "rsqrt", "max", "min", "floor",
         "ceil", "round", "round_even", "clamp", "select", "cast", "eq", "ne", "lt", "le", "gt",
         "ge", "reduce_max", "reduce_min"}


def draw(dt: DType, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random bits of ``dt`` with edge values mixed in."""
    n = int(np.prod(shape))
    if dt is DType.I1:
        return (rng.random(shape) < 0.5)
    if dt.is_float:
        width = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
        bits = rng.integers(0, np.iinfo(width).max, n, dtype=width, endpoint=True)
        out = bits.view(dt.np_dtype)
        fi = ml_dtypes.finfo(dt.np_dtype)
        edges = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, -2.5, np.inf, -np.inf, np.nan, float(fi.max),
                 -float(fi.max), float(fi.tiny), float(fi.smallest_subnormal), 3.0, 100.0]
        edge = np.array(edges, np.float64).astype(dt.np_dtype)
    else:
        info = np.iinfo(dt.np_dtype)
        out = rng.integers(int(info.min), int(info.max), n, dtype=dt.np_dtype, endpoint=True)
        picks = [0, 1, 2, 7, int(info.max), int(info.min), int(info.max) - 1]
        if dt.is_signed:
            picks += [-1, -2, int(info.min) + 1]
        edge = np.array(picks, dtype=object).astype(dt.np_dtype)
    mask = rng.random(n) < 0.5
    out = out.copy()
    out[mask] = edge[rng.integers(len(edge), size=int(mask.sum()))]
    return out.reshape(shape)


# The independent model --------------------------------------------------------------------------

def _wrap(v: int, dt: DType) -> int:
    m = 1 << dt.bits
    v %= m
    return v - m if dt.is_signed and v >= m // 2 else v


def _int_div(x: int, y: int, dt: DType) -> int:
    if y == 0:
        return _wrap(-1, dt)  # all bits set: -1, or MAX unsigned
    q = abs(x) // abs(y)
    return _wrap(q if (x < 0) == (y < 0) else -q, dt)


_INT_MODEL: dict[str, Callable[..., int | bool]] = {
    "neg": lambda x: -x, "abs": abs, "add": lambda x, y: x + y, "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y, "max": max, "min": min,
    "eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y,
}


def _c99_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """pow as C99 has it: x**0 and 1**y are 1 for every other operand, a signaling NaN too
    (NumPy's f16 loop gives NaN there: random bits draw signaling NaNs)."""
    return np.where((b == 0) | (a == 1), np.ones_like(a), np.power(a, b))


_FLOAT_MODEL: dict[str, Callable[..., np.ndarray]] = {
    "neg": np.negative, "abs": np.abs, "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "div": np.divide, "max": np.maximum, "min": np.minimum, "sqrt": np.sqrt, "exp": np.exp,
    "log": np.log, "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "atan": np.arctan,
    "floor": np.floor, "ceil": np.ceil, "round_even": np.rint, "pow": _c99_pow,
    "atan2": np.arctan2, "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}


def model(op: str, args: list[np.ndarray], dt: DType) -> np.ndarray | None:
    """The op computed without the op table, or None where no independent model is given."""
    if dt.is_float:
        fn = _FLOAT_MODEL.get(op)
        with np.errstate(all="ignore"):  # NumPy's own f16 loops; ml_dtypes' bf16 ufuncs
            return None if fn is None else np.asarray(fn(*args))
    if op == "div":
        fn2: Callable[..., int | bool] = lambda x, y: _int_div(x, y, dt)  # noqa: E731
    elif op in _INT_MODEL:
        fn2 = _INT_MODEL[op]
    else:
        return None
    cols = [a.ravel().tolist() for a in args]
    vals = [fn2(*(int(c) for c in t)) for t in zip(*cols, strict=True)]
    if vals and isinstance(vals[0], bool):
        return np.array(vals, dtype=bool).reshape(args[0].shape)
    return np.array([_wrap(int(v), dt) for v in vals], dtype=object).astype(
        dt.np_dtype).reshape(args[0].shape)


def ordered(a: np.ndarray) -> np.ndarray:
    """Float bits as integers in the order of the values (so adjacent floats differ by 1)."""
    width = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    b = a.view(width).astype(np.int64)
    return np.where(b < 0, -(b & ((1 << (8 * a.dtype.itemsize - 1)) - 1)), b)


def assert_bits(got: np.ndarray, want: np.ndarray, what: str, ulps: int = 0) -> None:
    """The same values (any NaN matches any NaN; zeros by sign), or within ``ulps`` of storage
    precision (an inf is one ulp above the largest finite value)."""
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if not is_float_array(want):
        bad = got != want
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        dist = np.abs(ordered(got) - ordered(want))
        bad = ~both_nan & ((np.isnan(g) != np.isnan(w)) | (dist > ulps))
    if bad.any():
        i = tuple(int(j) for j in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} differ, first at {list(i)}: got "
                             f"{got[i]!r}, want {want[i]!r}")


# The cases --------------------------------------------------------------------------------------

def _func(op: str, dt: DType, attrs: dict[str, Any]) -> tuple[Func, list[TensorType]] | None:
    """``op`` on ``dt`` operands of one shape, or None if the op refuses the dtype."""
    spec = OPS[op]
    shape: list[int | str] = ["M", "K"]
    types = [TensorType.of(dt, shape)] * len(spec.operands)
    if op == "select":
        types = [TensorType.of(DType.I1, shape), *types[1:]]
    if op == "matmul":
        types = [TensorType.of(dt, ["M", "K"]), TensorType.of(dt, ["K", "N"])]
    try:
        spec.infer(types, attrs)
    except ShapeError:
        return None
    f = tb.FuncBuilder(f"{op}_{dt}")
    params = [f.param(f"p{i}", str(t)) for i, t in enumerate(types)]
    f.ret(tb.apply_op(op, *params, **attrs))
    return f.finish(), types


REDUCE = {"axes": (1,), "keepdims": False}
ELEMENTWISE = sorted(n for n, op in OPS.items()
                     if op.category in ("unary", "binary", "compare", "select"))
CASES = [(op, dt, {"min": 1} if op == "clamp" else {}) for op in ELEMENTWISE for dt in NEW]
CASES += [(op, dt, REDUCE) for op in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min")
          for dt in NEW]
CASES += [("matmul", dt, {}) for dt in NEW]
CASES += [("cast", src, {"to": dst}) for src in DType for dst in DType
          if (src in NEW or dst in NEW) and src is not dst]
CASES = [c for c in CASES if _func(*c) is not None]


@pytest.mark.parametrize(("op", "dt", "attrs"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2].get('to', '')}" for c in CASES])
@PROPS
@given(seed=st.integers(0, 2**32 - 1), m=st.integers(0, 5), k=st.integers(0, 40),
       n=st.integers(1, 4))
def test_engines_agree(op: str, dt: DType, attrs: dict[str, Any], seed: int, m: int, k: int,
                       n: int) -> None:
    built = _func(op, dt, attrs)
    assert built is not None
    func, types = built
    rng = np.random.default_rng(seed)
    sizes = {"M": m, "K": k, "N": n}
    args = [draw(t.dtype, rng, tuple(sizes[str(d)] for d in t.dims)) for t in types]
    if op in ("reduce_sum", "reduce_prod", "matmul") and dt.is_float:
        # Sums and products run in an unspecified order (README), so specials, or an overflow
        # meeting a zero, may meet differently: finite, moderate inputs, as for f32.
        args = [np.where(np.isfinite(a.astype(np.float64)), a, 1).astype(a.dtype) for a in args]
        args = [(a.astype(np.float32) % 8).astype(a.dtype) for a in args]
    ref = evaluate(func, args)[0]
    expected = model(op, args, dt) if op in ELEMENTWISE else None
    if expected is not None:  # the model's math functions may round the last f32 bit apart
        assert_bits(ref, expected.astype(ref.dtype), f"reference vs model: {op} {dt}",
                    ulps=0 if op in EXACT else 1)
    got = compile_func(func)(*args)[0]
    if op in EXACT or not dt.is_float:
        assert_bits(got, ref, f"compiled vs reference: {op} {dt} {attrs}")
    else:
        assert_close_to_reference([got], func, args, f"{op} {dt}")


def test_matmul_epilogue_reads_and_writes_narrow_types() -> None:
    """An f32 matmul kernel whose epilogue loads bf16 and stores f16 (vector conversions)."""
    from codegen.support import fuse_everything

    from tcp_rules.codegen.lower import lower_func
    from tcp_rules.codegen.matmul import MatmulKernel

    f = tb.FuncBuilder("epi")
    a, b = f.param("a", "f32[M, K]"), f.param("b", "f32[K, N]")
    c = f.param("c", "bf16[M, N]")
    f.ret(tb.cast(tb.add(tb.matmul(a, b), tb.cast(c, to=DType.F32)), to=DType.F16))
    func = fuse_everything(f.finish())
    assert [type(s.kernel) for s in lower_func(func).steps] == [MatmulKernel]
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((33, 20)).astype(np.float32),
          rng.standard_normal((20, 45)).astype(np.float32),
          rng.standard_normal((33, 45)).astype(DType.BF16.np_dtype)]
    xs[2][0, :3] = [np.inf, np.nan, -0.0]
    assert_close_to_reference(compile_func(func)(*xs), func, xs, "epilogue")
