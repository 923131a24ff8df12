"""The vectorizable f32 pow and atan2 (tcp_rules/codegen/binmath.py): the ulp bounds it states,
against a float64 reference; C99's special values exactly as NumPy gives them; vector code with no
libm call in a fused loop."""

from __future__ import annotations

import re

import numpy as np
import pytest
from codegen.support import binary, skip_unless_target_has, tcpr_cache  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numerics import assert_close_to_reference
from test_codegen_math import _kernel_ir, ulp_error

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func, jit
from tcp_rules.codegen.binmath import MAX_INT_EXPONENT, ULP_BOUNDS
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import CompiledFunc, module_ir
from tcp_rules.types import DType

NUMPY = {"pow": np.power, "atan2": np.arctan2}
# (x, y) ranges: pow over bases from denormals to 3e38 with exponents that keep results finite,
# near 1 with large exponents, negative bases with integer exponents; atan2 in every quadrant,
# near the diagonals (pi/4 and 3pi/4 after the swap) and with a tiny y
RANGES = {
    "pow": [((0, 10), (-10, 10)), ((0.5, 2), (-100, 100)), ((0, 1e-38), (-1, 1)),
            ((1, 3e38), (-1, 1)), ((0.999, 1.001), (-1e5, 1e5)), ((-3, 0), (-60, 60))],
    "atan2": [((-10, 10), (-10, 10)), ((-1e30, 1e30), (-1e-30, 1e-30)), ((0.9, 1.1), (0.9, 1.1)),
              ((-1.1, -0.9), (0.9, 1.1)), ((-1e-3, 1e-3), (-10, 10))],
}
# Each of these paired with each: zeros, ones, halves, integers odd and even (2**24 + 2 is even,
# beyond f32's odd integers), infinities, NaN, denormals, the extremes.
SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, -2.5, np.inf,
                    -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 3.4e38, -3.4e38, 16777218.0,
                    -16777215.0, 1.0000001, 0.99999994, 7.0, -7.0, 0.3, 128.0, -149.5, 1e30],
                   dtype=np.float32)


@pytest.fixture(scope="module")
def compiled() -> dict[str, CompiledFunc]:
    return {op: compile_func(binary(op, DType.F32)) for op in NUMPY}


def _truth(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return NUMPY[op](x.astype(np.float64), y.astype(np.float64))


def _check(op: str, x: np.ndarray, y: np.ndarray, got: np.ndarray) -> None:
    """NaN, zeros and infinities (signs included) where NumPy's f32 result has them; within
    the stated bound of the f64 result elsewhere."""
    with np.errstate(all="ignore"):
        ref = NUMPY[op](x, y)
    nan = np.isnan(ref)
    assert (np.isnan(got) == nan).all(), (x[np.isnan(got) != nan], y[np.isnan(got) != nan])
    special = ~nan & (~np.isfinite(ref) | (ref == 0))
    same = (got[special] == ref[special]) & (np.signbit(got[special]) == np.signbit(ref[special]))
    assert same.all(), (x[special][~same], y[special][~same], got[special][~same])
    rest = ~nan & ~special
    with np.errstate(over="ignore"):
        err = ulp_error(got[rest], _truth(op, x[rest], y[rest]))
    assert (err <= ULP_BOUNDS[op]).all(), (x[rest][err.argmax()], y[rest][err.argmax()],
                                           float(err.max()))


@pytest.mark.parametrize("op", sorted(NUMPY))
def test_ulp_bound(op: str, compiled: dict[str, CompiledFunc]) -> None:
    rng = np.random.default_rng(42)
    worst = 0.0
    for (xlo, xhi), (ylo, yhi) in RANGES[op]:
        x = rng.uniform(xlo, xhi, 1 << 16).astype(np.float32)
        y = rng.uniform(ylo, yhi, 1 << 16).astype(np.float32)
        if op == "pow" and xhi <= 0:
            y = np.round(y)  # a negative base needs an integer exponent
        (got,) = compiled[op](x, y)
        truth = _truth(op, x, y)
        ok = np.abs(truth) <= np.finfo(np.float32).max
        worst = max(worst, float(ulp_error(got[ok], truth[ok]).max()))
    assert worst <= ULP_BOUNDS[op], f"{op}: {worst:.3f} ulp > stated {ULP_BOUNDS[op]}"


@pytest.mark.parametrize("op", sorted(NUMPY))
def test_special_values(op: str, compiled: dict[str, CompiledFunc]) -> None:
    """Every pair of SPECIAL, alone and mixed into a vector of ordinary values (lanes of one
    vector take different paths)."""
    x, y = np.repeat(SPECIAL, len(SPECIAL)), np.tile(SPECIAL, len(SPECIAL))
    rng = np.random.default_rng(3)
    mx, my = rng.uniform(0.1, 4, 999).astype(np.float32), rng.uniform(-4, 4, 999).astype(np.float32)
    at = rng.choice(999, 300, replace=False)
    mx[at], my[at] = rng.choice(SPECIAL, 300), rng.choice(SPECIAL, 300)
    x, y = np.concatenate([x, mx]), np.concatenate([y, my])
    (got,) = compiled[op](x, y)
    _check(op, x, y, got)


_F32 = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(sorted(NUMPY)),
       xy=hnp.arrays(np.float32, st.tuples(st.just(2), st.integers(1, 37)),
                     elements=st.one_of(_F32, st.sampled_from(SPECIAL.tolist()))))
def test_matches_numpy(op: str, xy: np.ndarray, compiled: dict[str, CompiledFunc]) -> None:
    """Any f32 operands, odd lengths (vector body and scalar remainder)."""
    x, y = np.ascontiguousarray(xy[0]), np.ascontiguousarray(xy[1])
    (got,) = compiled[op](x, y)
    _check(op, x, y, got)


LITERALS = [0.0, 1.0, 2.0, 3.0, 4.0, 7.0, -1.0, -2.0, -7.0, 0.5, -0.5, 8.0, 2.5, -3.5]


@pytest.mark.parametrize("n", LITERALS)
def test_literal_exponents(n: float) -> None:
    """A literal exponent of the short forms (0, 1, +-1/2, integers up to +-7) is correctly
    rounded but for near-ties, the others take the general path; all keep C99's specials."""
    f = tb.FuncBuilder("p")
    x = f.param("x", "f32[N]")
    f.ret(tb.apply_op("pow", x, n))
    rng = np.random.default_rng(5)
    wide = np.exp(rng.uniform(-87, 88, 4000)) * rng.choice([-1, 1], 4000)
    xs = np.concatenate([SPECIAL, rng.uniform(-3, 3, 4000).astype(np.float32),
                         wide.astype(np.float32)])
    (got,) = compile_func(f.finish())(xs)
    _check("pow", xs, np.full_like(xs, n), got)
    if (n == int(n) and abs(n) <= MAX_INT_EXPONENT) or abs(n) == 0.5:
        fin = np.isfinite(got) & (got != 0)
        err = ulp_error(got[fin], _truth("pow", xs[fin], np.full_like(xs[fin], n)))
        assert err.max() <= 0.5 + 2.0**-20, (n, float(err.max()))


def test_in_a_matmul_epilogue() -> None:
    """The epilogue applies them to vectors directly (no loop vectorizer), and a splatted
    literal exponent is still a literal there."""
    f = tb.FuncBuilder("epi")
    a, b, y = f.param("a", "f32[M, K]"), f.param("b", "f32[K, N]"), f.param("y", "f32[M, N]")
    ly, mm = tb.apply_op("load", y), tb.apply_op("load_matmul", a, b)
    f.ret(tb.apply_op("kernel", tb.add(tb.apply_op("atan2", tb.apply_op("pow", mm, ly), ly),
                                        tb.apply_op("pow", mm, 3.0))))
    rng = np.random.default_rng(0)
    xs = [rng.uniform(0, 1, s).astype(np.float32) for s in ((37, 20), (20, 45))]
    xs.append(rng.uniform(-3, 3, (37, 45)).astype(np.float32))
    func = f.finish()
    assert_close_to_reference(compile_func(func)(*xs), func, xs, "pow and atan2 in an epilogue")


def test_fused_loop_has_no_libm_call() -> None:
    """A fused GELU-like body with a general pow and atan2 runs as one vector loop: no powf or
    atan2f call is left in the optimized kernel (only with FMA, as test_polynomials_vectorize)."""
    if jit.target().is_x86:
        skip_unless_target_has("fma")
    f = tb.FuncBuilder("f")
    x, y = (tb.apply_op("load", f.param(n, "f32[N]")) for n in ("x", "y"))
    inner = tb.add(x, tb.mul(tb.apply_op("pow", x, y), tb.apply_op("atan2", y, x)))
    f.ret(tb.apply_op("kernel", tb.mul(x, tb.apply_op("tanh", inner))))
    kernel = lower_func(f.finish()).steps[0].kernel
    opt = _kernel_ir(jit.optimized_ir(module_ir(kernel, "f")))
    assert "<8 x float>" in opt or "<16 x float>" in opt
    calls = set(re.findall(r"call [^@]*@([\w.]+)\(", opt))
    assert not {"powf", "atan2f", "pow", "atan2"} & calls, calls

