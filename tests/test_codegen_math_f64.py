"""The vectorizable f64 math (codegen/mathf64.py, binmath's pow and atan2) against mpmath.

The bounds in ``mathf64.ULP_BOUNDS`` are re-measured in f64 ulps of the true value (mpmath at
90 bits) on random samples over each function's ranges and on edge cases; special values must
be the reference's exactly; a value gives the same bits in the vector loop and in the scalar
remainder; and no libm call is left in the loop for x86-64-v3, x86-64-v4 or aarch64.
"""

from __future__ import annotations

import re

import mpmath
import numpy as np
import pytest
import scipy.special
from codegen.support import binary, tcpr_cache, unary  # noqa: F401

from tcp_rules import build as tb
from tcp_rules.codegen import binmath, compile_func, jit, mathf64
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.types import DType

mpmath.mp.prec = 90
TRUTH = {"exp": mpmath.exp, "log": mpmath.log, "tanh": mpmath.tanh, "erf": mpmath.erf,
         "atan": mpmath.atan, "sin": mpmath.sin, "cos": mpmath.cos,
         "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x))}
REFERENCE = {"exp": np.exp, "log": np.log, "tanh": np.tanh, "erf": scipy.special.erf,
             "atan": np.arctan, "sin": np.sin, "cos": np.cos,
             "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x))}
B = mathf64.TRIG_BOUND
TRIG_RANGES = [(-10.0, 10.0), (-1e6, 1e6), (-B, B)]
RANGES = {
    "exp": [(-745.2, 709.78), (-1.0, 1.0), (-745.2, -700.0), (700.0, 709.78)],
    "log": [(0.0, 10.0), (0.5, 2.0), (0.70, 0.72), (1.40, 1.42), (0.0, 1e-300), (1.0, 1e300)],
    "tanh": [(-25.0, 25.0), (-1.0, 1.0), (0.55, 0.7), (-1e-5, 1e-5)],
    "sigmoid": [(-709.0, 50.0), (-20.0, 20.0), (-709.78, -700.0)],
    "erf": [(-7.0, 7.0), (-1.0, 1.0), (0.8, 0.9), (1.4, 1.6), (2.4, 2.6), (3.7, 3.8), (5.8, 6.1)],
    "atan": [(-10.0, 10.0), (0.6, 0.7), (2.3, 2.5), (-1e30, 1e30)],
    "sin": TRIG_RANGES,
    "cos": TRIG_RANGES,
}
SAMPLES = 1 << 12  # per range: mpmath takes ~10 us a value
TINY = 5e-324
# exp(x) overflows just above ln(DBL_MAX); the reference's sigmoid is 0 where exp(-x) does
EXP_TOP = 709.782712893384


def f64_ulps(got: np.ndarray, x: np.ndarray, op: str) -> np.ndarray:
    """|got - truth| in f64 ulps of the truth rounded to f64, for each finite truth."""
    out = np.zeros(len(x))
    for i, (g, xi) in enumerate(zip(got.tolist(), x.tolist(), strict=True)):
        # sigmoid below -EXP_TOP: the reference's exp(-x) overflows, 1 / (1 + inf) = 0
        true = mpmath.mpf(0) if op == "sigmoid" and xi < -EXP_TOP else TRUTH[op](mpmath.mpf(xi))
        t = float(true)
        if np.isinf(t) or np.isinf(g):
            out[i] = 0.0 if g == t else np.inf
            continue
        spacing = float(np.spacing(abs(t))) if abs(t) >= 2.2250738585072014e-308 else TINY
        out[i] = float(abs(mpmath.mpf(g) - true) / spacing)  # float() would round a denormal
    return out


def _edges(op: str) -> np.ndarray:
    """Special values, thresholds and the seams of each method, with their neighbours."""
    near = lambda v: [np.nextafter(v, -np.inf), v, np.nextafter(v, np.inf)]  # noqa: E731
    common = [0.0, -0.0, TINY, -TINY, 1e-310, -1e-310, 1e-300, 1.0, -1.0, 0.5, 3.0, -3.0]
    seams = {
        "exp": [*near(EXP_TOP), *near(-745.1332191019412), -745.2, -746.0, 1e3, -1e3, 1e-17],
        "log": [*near(1.0), *near(0.7071067811865476), *near(1.4142135623730951),
                *near(2.2250738585072014e-308), 1.7976931348623157e308, 2.0, 0.1],
        "tanh": [*near(0.625), *near(19.06), *near(22.0), 1e-8, 700.0, 1e300],
        "sigmoid": [*near(-EXP_TOP), *near(37.5), *near(40.0), -40.0, 1e-17, 800.0],
        "erf": [*near(0.84375), *near(1.5), *near(2.5), *near(3.75), *near(5.921), *near(6.0),
                1e-17, 1e-200, 30.0],
        "atan": [*near(0.66), *near(2.414213562373095), 1e16, 1e300, 1e-17],
        "sin": [*near(B), 1.5707963267948966, 3.141592653589793, 1e7, 6381956970095103.0 * 2**-20,
                1e22, 1e300, 2.0 ** 29 + 0.5],
        "cos": [*near(B), 1.5707963267948966, 3.141592653589793, 1e7, 1e22, 1e300],
    }
    vals = np.array(common + seams[op], dtype=np.float64)
    return np.concatenate([vals, -vals])


def _run(op: str, x: np.ndarray) -> np.ndarray:
    (got,) = compile_func(unary(op, DType.F64), threads=1)(x)
    return got


@pytest.mark.parametrize("op", sorted(mathf64.ULP_BOUNDS))
def test_ulp_bound(op: str) -> None:
    rng = np.random.default_rng(42)
    cases = [rng.uniform(lo, hi, SAMPLES) for lo, hi in RANGES[op]]
    x = np.concatenate([*cases, _edges(op)])
    if op in ("sin", "cos"):  # the doubles nearest to multiples of pi/2: r is tiny there
        k = rng.integers(1, int(B / 1.6), 256)
        x = np.concatenate([x, [float(mpmath.mpf(int(v)) * mpmath.pi / 2) for v in k]])
    x = x[np.abs(x) <= B] if op in ("sin", "cos") else x  # beyond B: libm's lanes, tested below
    x = x[x >= 0] if op == "log" else x  # NaN: the special values' test
    err = f64_ulps(_run(op, x), x, op)
    worst = int(np.argmax(err))
    assert err[worst] <= mathf64.ULP_BOUNDS[op], (
        f"{op}({x[worst]!r}): {err[worst]:.3f} ulp > stated {mathf64.ULP_BOUNDS[op]}")


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300, TINY, -TINY, 800.0, -800.0]


@pytest.mark.parametrize("op", sorted(mathf64.ULP_BOUNDS))
def test_special_values_are_the_references(op: str) -> None:
    """NaN, infinities, signed zeros, overflow and underflow as NumPy's libm gives them (each
    value alone and mixed into vectors of ordinary ones); sin and cos beyond TRIG_BOUND take
    libm's lanes, so equal them exactly."""
    x = np.array(SPECIALS, dtype=np.float64)
    if op in ("sin", "cos"):
        x = np.concatenate([x, [B * 2, -B * 3.5, 1e22, 6381956970095103.0 * 2.0 ** 797]])
    rng = np.random.default_rng(3)
    mixed = rng.uniform(-3, 3, 1000)
    mixed[rng.choice(1000, len(x), replace=False)] = x
    for xs in (x, mixed):
        got = _run(op, xs)
        with np.errstate(all="ignore"):
            ref = REFERENCE[op](xs)
        exact = ~np.isfinite(ref) | (ref == 0) | (np.abs(xs) > B) if op in ("sin", "cos") \
            else ~np.isfinite(ref) | (ref == 0) | ~np.isfinite(xs) | (np.abs(ref) == 1)
        assert np.array_equal(got[exact], ref[exact], equal_nan=True), (
            f"{op}: {xs[exact]} gave {got[exact]}, the reference {ref[exact]}")
        signed = exact & ~np.isnan(ref)  # a NaN's sign means nothing
        assert np.array_equal(np.signbit(got[signed]), np.signbit(ref[signed]))


@pytest.mark.parametrize("op", sorted(mathf64.ULP_BOUNDS))
def test_vector_lanes_and_the_remainder_agree(op: str) -> None:
    """37 values: the last ones run in the loop's remainder; rotated by 5, they go through the
    vector body: every value keeps its bits."""
    rng = np.random.default_rng(11)
    x = np.concatenate([rng.uniform(-30, 30, 32), _edges(op)[:5]])
    x = np.abs(x) if op == "log" else x
    a = _run(op, x)
    b = _run(op, np.roll(x, 5))
    assert np.array_equal(np.roll(a, 5).view(np.int64), b.view(np.int64))


LIBM = {"exp", "log", "tanh", "erf", "atan", "sin", "cos"}


@pytest.mark.parametrize("target", ["x86-64-v3", "x86-64-v4", "aarch64"])
@pytest.mark.parametrize("op", sorted(mathf64.ULP_BOUNDS))
def test_the_loop_calls_no_libm(target: str, op: str) -> None:
    """The optimized loop holds vectors of doubles and no call to a C math function (sin and
    cos call libm only inside their internal function's slow path, for lanes beyond the
    bound); before, each f64 element was a libm call."""
    with jit.targeting(target):
        (st,) = lower_func(unary(op, DType.F64)).steps
        text = jit.optimized_ir(module_ir(st.kernel, "k"))
    kernels = [f for f in text.split("\ndefine ")[1:] if not re.match(r"[^@]*@\"?__tcpr_", f)]
    calls = set(re.findall(r"call[^@\n]*@(\w+)\(", "".join(kernels)))
    assert not calls & LIBM, f"libm calls left on {target}: {calls & LIBM}"
    assert re.search(r"<\d+ x double>", text)


# pow and atan2 (binmath.pow_f64, atan2_f64) ----------------------------------------------------
BINARY_TRUTH = {"pow": mpmath.power, "atan2": mpmath.atan2}
BINARY_NUMPY = {"pow": np.power, "atan2": np.arctan2}
# (first operand, second operand) ranges: pow's exponents keep the results finite (or reach the
# overflow and underflow edges: y ln|x| up to +-745), a base near 1 with huge exponents, negative
# bases with integer exponents; atan2 in every quadrant, near the diagonals, y tiny
BINARY_RANGES = {
    "pow": [((0.0, 10.0), (-10.0, 10.0)), ((0.5, 2.0), (-1000.0, 1000.0)),
            ((0.0, 1e-300), (-1.0, 1.0)), ((1.0, 1e300), (-1.0, 1.0)),
            ((0.999999, 1.000001), (-1e8, 1e8)), ((-5.0, 0.0), (-60.0, 60.0))],
    "atan2": [((-10.0, 10.0), (-10.0, 10.0)), ((-1e300, 1e300), (-1e-300, 1e-300)),
              ((0.9, 1.1), (0.9, 1.1)), ((-1.1, -0.9), (0.9, 1.1)), ((-1e-3, 1e-3), (-10, 10))],
}
BINARY_SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 2.5, np.inf,
                           -np.inf, np.nan, TINY, -TINY, 1e-310, 1.7e308, -1.7e308,
                           2.0 ** 53 + 2, -(2.0 ** 53) + 1, 1.0000000000000002, 0.9999999999999999,
                           709.0, -745.0, 1e300])


def _run2(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    (got,) = compile_func(binary(op, DType.F64), threads=1)(a, b)
    return got


def _ulps2(op: str, got: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.zeros(len(a))
    for i, (g, ai, bi) in enumerate(zip(got.tolist(), a.tolist(), b.tolist(), strict=True)):
        true = BINARY_TRUTH[op](mpmath.mpf(ai), mpmath.mpf(bi))
        t = float(true)
        if np.isinf(t) or t == 0.0 or np.isinf(g) or g == 0.0:
            out[i] = 0.0 if g == t else np.inf
            continue
        spacing = float(np.spacing(abs(t))) if abs(t) >= 2.2250738585072014e-308 else TINY
        out[i] = float(abs(mpmath.mpf(g) - true) / spacing)
    return out


@pytest.mark.parametrize("op", sorted(BINARY_TRUTH))
def test_binary_ulp_bound(op: str) -> None:
    rng = np.random.default_rng(42)
    worst, where = 0.0, (0.0, 0.0)
    for (alo, ahi), (blo, bhi) in BINARY_RANGES[op]:
        a, b = rng.uniform(alo, ahi, SAMPLES // 2), rng.uniform(blo, bhi, SAMPLES // 2)
        if op == "pow" and ahi <= 0:
            b = np.round(b)  # a negative base needs an integer exponent
        err = _ulps2(op, _run2(op, a, b), a, b)
        if err.max() > worst:
            worst, where = float(err.max()), (a[err.argmax()], b[err.argmax()])
    assert worst <= binmath.ULP_BOUNDS_F64[op], f"{op}{where}: {worst:.3f} ulp"


@pytest.mark.parametrize("op", sorted(BINARY_TRUTH))
def test_binary_special_values(op: str) -> None:
    """Every pair of BINARY_SPECIAL, alone and mixed into vectors of ordinary pairs: NaN, zeros,
    infinities and +-1, and every result of a zero or infinite operand (atan2's angles) exactly
    as NumPy's libm gives them (C99), the rest within the bound."""
    s = BINARY_SPECIAL
    a, b = np.repeat(s, len(s)), np.tile(s, len(s))
    rng = np.random.default_rng(3)
    ma, mb = rng.uniform(0.1, 4, 999), rng.uniform(-4, 4, 999)
    at = rng.choice(999, 300, replace=False)
    ma[at], mb[at] = rng.choice(s, 300), rng.choice(s, 300)
    a, b = np.concatenate([a, ma]), np.concatenate([b, mb])
    got = _run2(op, a, b)
    with np.errstate(all="ignore"):
        ref = BINARY_NUMPY[op](a, b)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(got), nan), (a[np.isnan(got) != nan], b[np.isnan(got) != nan])
    edge = (a == 0) | (b == 0) | np.isinf(a) | np.isinf(b)
    exact = ~nan & (~np.isfinite(ref) | (ref == 0) | (np.abs(ref) == 1) | edge)
    same = (got[exact] == ref[exact]) & (np.signbit(got[exact]) == np.signbit(ref[exact]))
    assert same.all(), (a[exact][~same], b[exact][~same], got[exact][~same])
    rest = ~nan & ~exact
    err = _ulps2(op, got[rest], a[rest], b[rest])
    assert err.max() <= binmath.ULP_BOUNDS_F64[op], (a[rest][err.argmax()], b[rest][err.argmax()])


@pytest.mark.parametrize("op", sorted(BINARY_TRUTH))
def test_binary_lanes_and_the_remainder_agree(op: str) -> None:
    rng = np.random.default_rng(12)
    a, b = rng.uniform(0.1, 30, 37), rng.uniform(-30, 30, 37)
    one = _run2(op, a, b)
    rolled = _run2(op, np.roll(a, 5), np.roll(b, 5))
    assert np.array_equal(np.roll(one, 5).view(np.int64), rolled.view(np.int64))


@pytest.mark.parametrize("target", ["x86-64-v3", "x86-64-v4", "aarch64"])
@pytest.mark.parametrize("op", sorted(BINARY_TRUTH))
def test_binary_loop_calls_no_libm(target: str, op: str) -> None:
    with jit.targeting(target):
        (st,) = lower_func(binary(op, DType.F64)).steps
        text = jit.optimized_ir(module_ir(st.kernel, "k"))
    calls = set(re.findall(r"call[^@\n]*@(\w+)\(", text))
    assert not calls & {"pow", "atan2", "exp", "log", "atan"}, calls
    assert re.search(r"<\d+ x double>", text)


@pytest.mark.parametrize("n", [0.0, 1.0, 0.5, -1.0, 2.0, 3.0, 2.5, -3.0])
def test_pow_literal_exponents(n: float) -> None:
    """A literal exponent (short forms for 0, 1, 1/2, -1, 2 and 3, the general code for the
    others) against NumPy's pow: its special values exactly, the rest within the bound."""
    f = tb.FuncBuilder("p")
    f.ret(tb.apply_op("pow", f.param("x", "f64[N]"), n))
    x = np.concatenate([BINARY_SPECIAL, np.random.default_rng(4).uniform(-5, 5, 500)])
    (got,) = compile_func(f.finish(), threads=1)(x)
    with np.errstate(all="ignore"):
        ref = np.power(x, np.full_like(x, n))  # a scalar 0.5 would be NumPy's sqrt, not C99's
    special = np.isnan(ref) | ~np.isfinite(ref) | (ref == 0)
    assert np.array_equal(got[special], ref[special], equal_nan=True)
    assert np.array_equal(np.signbit(got[special & ~np.isnan(ref)]),
                          np.signbit(ref[special & ~np.isnan(ref)]))
    err = _ulps2("pow", got[~special], x[~special], np.full((~special).sum(), n))
    assert err.max() <= binmath.ULP_BOUNDS_F64["pow"], x[~special][err.argmax()]
