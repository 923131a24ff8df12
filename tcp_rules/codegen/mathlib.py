"""Vectorizable f32 exp, log, tanh, sigmoid, erf and atan written in LLVM IR (no libm calls).

Branch-free (selects only), so LLVM's loop vectorizer turns them into AVX code; libm calls would
stay scalar. f64 versions call libm (accurate, scalar), as do sin, cos, pow and atan2 in both
widths (a vectorizable sin/cos needs a Payne-Hanek reduction for large arguments: not done).
Every function returns NaN for NaN and keeps the reference's infinities, zeros
(``tanh(-0.0) == -0.0``, ``erf(-0.0) == -0.0``) and underflow to denormals/zero.

Accuracy against a float64 reference, in f32 ulps of the true value (2**21 random samples per
range, ranges covering overflow/underflow edges, denormals and the polynomial seams; numbers from
``tests/test_codegen_math.py``, which asserts the bounds in ``ULP_BOUNDS``):

========  ========  =====  ================================================================
function  measured  bound  method
========  ========  =====  ================================================================
exp       1.00      1.5    Cody-Waite reduction by ln 2, degree-5 Cephes polynomial, 2**n
                           applied in two steps so denormal results round once
log       0.80      1.0    mantissa in [sqrt(1/2), sqrt(2)), degree-8 Cephes polynomial
tanh      1.32      1.5    |x| < 0.625: odd polynomial (Cephes); else 1 - 2 / (exp(2|x|) + 1)
sigmoid   2.47      3.0    1 / (1 + exp(-x)), the reference's formula; for x < -88.7 exp(-x)
                           overflows and the result is 0, exactly as in the reference
erf       1.15      1.5    |x| < 0.9: x + x * Q(x**2), degree 6; else 1 - exp(P(|x|)) with P
                           (degree 8) fitted to log(erfc) by weighted least squares (Lawson)
atan      2.05      2.5    reduction to |t| <= tan(pi/8) (Cephes), t + t*z*P(z) with P
                           (degree 4) fitted like erf's; pi/2 and pi/4 in two parts
========  ========  =====  ================================================================
"""

from __future__ import annotations

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import F32, I32, IR, element, like

ULP_BOUNDS = {"exp": 1.5, "log": 1.0, "tanh": 1.5, "sigmoid": 3.0, "erf": 1.5, "atan": 2.5}

_LOG2E = 1.44269504088896341
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4  # Cody-Waite split: n * hi is exact
_EXP_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
          1.6666665459e-1, 5.0000001201e-1)
_LOG_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
          1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
          3.3333331174e-1)
_TANH_P = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
           -3.33332819422e-1)
# erf(x) = x + x * Q(x**2): 2/sqrt(pi) - 1 is stored instead of 2/sqrt(pi), which f32 rounds
# by half an ulp.
_ERF_SMALL = (8.53883902891539e-05, -0.0008181927260011435, 0.005204435903578997,
              -0.026860753074288368, 0.11283719539642334, -0.37612634897232056,
              0.12837916612625122)
_ERF_LOG_ERFC = (1.6024885e-06, -4.535455e-05, 0.0005907149, -0.0047302805, 0.026335536,
                 -0.10992517, -0.6319953, -1.1301315, 0.00029427366)


def _is_f32(x: ir.Value) -> bool:
    return element(x.type) == F32


def _ints(e: IR, x: ir.Value) -> ir.Type:
    return like(x.type, I32)


def exp(e: IR, x: ir.Value) -> ir.Value:
    """e**x (f32 polynomial; libm ``exp`` for f64)."""
    if not _is_f32(x):
        return e.libm("exp", [x])
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    # Beyond these bounds the result is inf or rounds to 0; clamping keeps n in range.
    xc = e.intrinsic("minnum", [e.intrinsic("maxnum", [x, c(-104.0)]), c(89.0)])
    n = e.intrinsic("roundeven", [b.fmul(xc, c(_LOG2E))])
    r = e.fma(n, c(-_LN2_HI), xc)
    r = e.fma(n, c(-_LN2_LO), r)
    p = e.poly(r, _EXP_P)
    y = b.fadd(e.fma(b.fmul(r, r), p, r), c(1.0))
    # 2**n as two normal powers of two, so denormal results round once, at the last multiply.
    ni = b.fptosi(n, _ints(e, x))
    n1 = b.ashr(ni, e.const(ni.type, 1))
    n2 = b.sub(ni, n1)
    s1 = b.bitcast(b.shl(b.add(n1, e.const(ni.type, 127)), e.const(ni.type, 23)), ty)
    s2 = b.bitcast(b.shl(b.add(n2, e.const(ni.type, 127)), e.const(ni.type, 23)), ty)
    out = b.fmul(b.fmul(y, s1), s2)
    return b.select(e.isnan(x), x, out)


def log(e: IR, x: ir.Value) -> ir.Value:
    """Natural logarithm (f32 polynomial; libm ``log`` for f64)."""
    if not _is_f32(x):
        return e.libm("log", [x])
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    it = _ints(e, x)
    ci = lambda v: e.const(it, v)  # noqa: E731
    # Denormals: scale into the normal range first.
    den = b.fcmp_ordered("<", x, c(1.1754943508222875e-38))
    xs = b.select(den, b.fmul(x, c(8388608.0)), x)
    bits = b.bitcast(xs, it)
    ex = b.sub(b.lshr(bits, ci(23)), ci(127))
    ex = b.select(den, b.sub(ex, ci(23)), ex)
    m = b.bitcast(b.or_(b.and_(bits, ci(0x007FFFFF)), ci(0x3F800000)), ty)  # [1, 2)
    big = b.fcmp_ordered(">", m, c(1.4142135623730951))
    m = b.select(big, b.fmul(m, c(0.5)), m)
    ex = b.select(big, b.add(ex, ci(1)), ex)
    fe = b.sitofp(ex, ty)
    f = b.fsub(m, c(1.0))
    z = b.fmul(f, f)
    y = b.fmul(b.fmul(f, z), e.poly(f, _LOG_P))
    y = e.fma(fe, c(_LN2_LO), y)
    y = e.fma(z, c(-0.5), y)
    out = e.fma(fe, c(_LN2_HI), b.fadd(f, y))
    # Special values: log(0) = -inf, log(x<0) = NaN, log(inf) = inf, NaN stays NaN.
    out = e.fsel("==", x, c(float("inf")), x, out)
    out = e.fsel("==", x, c(0.0), c(float("-inf")), out)
    out = e.fsel("<", x, c(0.0), c(float("nan")), out)
    return b.select(e.isnan(x), x, out)


def tanh(e: IR, x: ir.Value) -> ir.Value:
    """Hyperbolic tangent (f32 polynomial and exp; libm ``tanh`` for f64)."""
    if not _is_f32(x):
        return e.libm("tanh", [x])
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    z = b.fmul(x, x)
    small = e.copysign(e.fma(b.fmul(e.poly(z, _TANH_P), z), x, x), x)  # keeps -0.0
    ax = e.fabs(x)
    ex = exp(e, b.fmul(ax, c(2.0)))
    large = e.copysign(b.fsub(c(1.0), b.fdiv(c(2.0), b.fadd(ex, c(1.0)))), x)
    return b.select(b.fcmp_ordered("<", ax, c(0.625)), small, large)


def sigmoid(e: IR, x: ir.Value) -> ir.Value:
    """1 / (1 + exp(-x)), as the reference computes it."""
    b, ty = e.b, x.type
    return b.fdiv(e.const(ty, 1.0), b.fadd(e.const(ty, 1.0), exp(e, b.fneg(x))))


def erf(e: IR, x: ir.Value) -> ir.Value:
    """The error function (f32 polynomials; libm ``erf`` for f64)."""
    if not _is_f32(x):
        return e.libm("erf", [x])
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    small = e.fma(x, e.poly(b.fmul(x, x), _ERF_SMALL), x)
    # erf saturates to 1 in f32 beyond 3.92; clamping also maps inf (and keeps NaN).
    t = e.intrinsic("minnum", [e.fabs(x), c(4.0)])
    t = b.select(e.isnan(x), x, t)
    large = e.copysign(b.fsub(c(1.0), exp(e, e.poly(t, _ERF_LOG_ERFC))), x)
    return b.select(b.fcmp_ordered("<", e.fabs(x), c(0.9)), small, large)


# atan(t) = t + t * z * P(z), z = t**2 <= tan(pi/8)**2; P fitted like erf's (Lawson).
_ATAN_P = (-0.060782093554735184, 0.10593808442354202, -0.14243532717227936,
           0.19998471438884735, -0.33333316445350647)


def atan(e: IR, x: ir.Value) -> ir.Value:
    """Arc tangent (f32 polynomial after reduction to |x| <= tan(pi/8); libm for f64)."""
    if not _is_f32(x):
        return e.libm("atan", [x])
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ax = e.fabs(x)
    big = b.fcmp_ordered(">", ax, c(2.414213562373095))  # tan(3pi/8): atan = pi/2 - atan(1/x)
    mid = b.fcmp_ordered(">", ax, c(0.4142135623730950))  # tan(pi/8): pi/4 + atan((x-1)/(x+1))
    num = b.select(big, c(-1.0), b.select(mid, b.fsub(ax, c(1.0)), ax))
    den = b.select(big, ax, b.select(mid, b.fadd(ax, c(1.0)), c(1.0)))
    t = b.fdiv(num, den)
    # pi/2 and pi/4 as f32 plus the part f32 rounds away, added to the small term first.
    base = b.select(big, c(1.5707963267948966), b.select(mid, c(0.7853981633974483), c(0.0)))
    lo = b.select(big, c(-4.371139006309477e-08), b.select(mid, c(-2.1855695031547384e-08), c(0.0)))
    z = b.fmul(t, t)
    r = e.fma(b.fmul(e.poly(z, _ATAN_P), z), t, t)
    return e.copysign(b.fadd(base, b.fadd(r, lo)), x)


MATH = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "erf": erf, "atan": atan}
