"""Vectorizable f64 exp, log, tanh, sigmoid, erf, atan, sin and cos written in LLVM IR.

libm's f64 functions are scalar: a call in a loop body is made lane by lane, with every live
vector register spilled around it, and f64 exp over 1M elements ran 4.6-8x slower than NumPy's
AVX-512 code. These are branch-free (selects only), so the loop vectorizer widens them, and the
remainder loop's scalar code computes the same bits as the vector lanes. Each returns NaN for
NaN and keeps the reference's infinities, zeros and underflow. The algorithms are the classic
f64 ones (Cephes, fdlibm) with fused multiply-adds; ``mathlib`` dispatches here for f64.

Accuracy in f64 ulps of the true value (mpmath at 90 bits): "measured" is the maximum over 2**16
random samples per range of ``tests/test_codegen_math_f64.py`` and its edge cases (sin and cos
also over 4096 doubles nearest to multiples of pi/2); the test asserts ``ULP_BOUNDS`` on 2**12
samples per range. f64 pow and atan2 are in binmath.py, built on these.

========  ========  =====  ================================================================
function  measured  bound  method
========  ========  =====  ================================================================
exp       0.83      1.0    Cody-Waite reduction by ln 2 (fdlibm's two parts); Taylor series of
                           degree 13 on |r| <= ln2/2 by Horner; 2**n applied once (``scale``)
log       0.84      1.0    x = 2**n (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)) by subtracting
                           sqrt(2)/2's bits; fdlibm's log1p(f) through s = f / (2 + f) and a
                           degree-7 polynomial in s**2
tanh      1.32      1.5    below 0.625 Cephes' t + t z P(z) / Q(z), z = t**2; above,
                           1 - 2**(1-n) / (p + 2**-n) for exp(2t) = 2**n p; one division
sigmoid   1.95      2.0    2**(2-n) / (2**(2-n) + 4 p) for exp(-x) = 2**n p, as in f32
erf       0.88      1.0    below 0.84375, x + x P(x**2), P of degree 11; beyond, 1 - exp(-x**2)
                           g(x), x**2 exact in two parts, g = erfc(x) exp(x**2) of degree 14 in
                           x - middle on four pieces up to 6 (coefficients chosen by selects;
                           Chebyshev fits, benchmarks/fit_f64.py), 1 beyond
atan      0.87      1.0    Cephes: t = |x|, (|x| - 1) / (|x| + 1) or -1/|x| (one division),
                           t + t z P(z) / Q(z); pi/4 or pi/2 added in two parts
sin, cos  0.75      1.0    reduction by pi/2 in three f64 parts to ~100 bits (FMAs and 2Sum),
                           Cephes polynomials on |r| <= pi/4, the quadrant by selects and a sign
                           xor; libm beyond TRIG_BOUND (mathlib's mechanism, as in f32)
========  ========  =====  ================================================================
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import I64, IR, like, scale

ULP_BOUNDS = {"exp": 1.0, "log": 1.0, "tanh": 1.5, "sigmoid": 2.0, "erf": 1.0, "atan": 1.0,
              "sin": 1.0, "cos": 1.0}

ROUND_SHIFT = 1.5 * 2.0 ** 52  # x + ROUND_SHIFT rounds x to an integer held in the low bits
TRIG_BOUND = 2.0 ** 30  # beyond it sin and cos take libm's lanes (see mathtrig)

_LOG2E = 1.4426950408889634
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # n * hi exact
# e**r = 1 + r (1 + r Q(r)), Q the Taylor series' rest: 1/13! ... 1/2 (error < 0.02 ulp)
_EXP13 = (*(1.0 / math.factorial(k) for k in range(13, 1, -1)), 1.0, 1.0)
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # x = 2**n * m, m in [sqrt(2)/2, sqrt(2)): no compare
_MANT = (1 << 52) - 1
_LG = (1.479819860511658591e-01, 1.531383769920937332e-01, 1.818357216161805012e-01,
       2.222219843214978396e-01, 2.857142874366239149e-01, 3.999999999940941908e-01,
       6.666666666666735130e-01)  # fdlibm's Lg7 ... Lg1
_TANH_SPLIT = 0.625
_TANH_TOP = 22.0  # tanh rounds to 1 from 19.06 on; 2**-n stays normal
_TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TANH_Q = (1.0, 1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)
_ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
           -1.228866684490136173410e2, -6.485021904942025371773e1)
_ATAN_Q = (1.0, 2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
           4.853903996359136964868e2, 1.945506571482613964425e2)
_T3P8 = 2.41421356237309504880  # tan(3 pi / 8)
PIO2 = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33)
_PIO4 = (0.7853981633974483, 3.061616997868383e-17)
_SIN_P = (1.58962301576546568060e-10, -2.50507477628578072866e-8, 2.75573136213857245213e-6,
          -1.98412698295895385996e-4, 8.33333333332211858878e-3, -1.66666666666666307295e-1)
_COS_P = (-1.13585365213876817300e-11, 2.08757008419747316778e-9, -2.75573141792967388112e-7,
          2.48015872888517045348e-5, -1.38888888888730564116e-3, 4.16666666666665929218e-2)
ERF_SPLIT, ERF_TOP = 0.84375, 6.0  # erf rounds to 1 from 5.921 on
# erf(x) = x + x P(x**2) below ERF_SPLIT (benchmarks/fit_f64.py; relative error 1.6e-18)
_ERF_NEAR0 = (-8.879702704985848e-10, 1.4205594850504056e-08, -1.630309508468887e-07,
              1.6457914349746103e-06, -1.4925463570287675e-05, 0.00012055327421282683,
              -0.000854832691425112, 0.005223977624080742, -0.026866170645031, 0.11283791670954745,
              -0.3761263890318375, 0.1283791670955126)
# erf(x) = 1 - exp(-x**2) g(x) from ERF_SPLIT to ERF_TOP, g(x) = erfc(x) exp(x**2) a polynomial in
# u = x - middle on each piece: (middle, coefficients); relative errors 2.3e-18, 6.2e-17, 4.5e-17
# and 3.3e-15, where erfc is below 4e-7 (fit_f64.py)
_ERFC_STARTS = (ERF_SPLIT, 1.5, 2.5, 3.75)
_ERFC_PIECES = (
    (1.171875, (6.95465436989713e-07, -2.3351255759154076e-06, 7.347155988784464e-06,
      -2.3256523265588112e-05, 7.13745246700007e-05, -0.00021162553552914374,
      0.0006048684929037317, -0.0016611402893969554, 0.004366122858230536, -0.010930541404656106,
      0.025907596781092827, -0.05768681848678368, 0.11941693397640396, -0.22647194723379005,
      0.38481374714100164)),
    (2.0, (2.4742339076650453e-08, -9.643712186456406e-08, 3.4432366346395997e-07,
      -1.2773616807125507e-06, 4.62827740445235e-06, -1.629413391296476e-05,
      5.5728304783301664e-05, -0.00018477832463095726, 0.0005924699958821647,
      -0.0018316642779754838, 0.005440738537459517, -0.015460637764239173, 0.04180275260352663,
      -0.10679646185348994, 0.25539567631050575)),
    (3.125, (5.159196725491831e-10, -2.4278075083036225e-09, 1.0475495294139614e-08,
      -4.748194805338619e-08, 2.1163833396671057e-07, -9.230331391558561e-07,
      3.942555340283069e-06, -1.647400951938801e-05, 6.725151855183194e-05, -0.0002678200443179443,
      0.0010386921927933326, -0.003915463212365482, 0.014313206924275122, -0.05060196645692766,
      0.1724443521021736)),
    (4.875, (4.3460403724376434e-12, -2.6551481661087563e-11, 1.39782089732112e-10,
      -8.319841776563652e-10, 4.9316944456778565e-09, -2.865327296799784e-08,
      1.643083328959937e-07, -9.299149375519436e-07, 5.19058617528448e-06, -2.855882110340957e-05,
      0.00015479600688494895, -0.0008260275841984864, 0.004336476487251185, -0.02237936425179614,
      0.1134358772147405)),
)
# exp(x) is inf beyond ln(DBL_MAX); below ln(2**-1075) it rounds to 0
_EXP_HI, _EXP_ZERO = 709.782712893384, -745.2


def _ints(x: ir.Value) -> ir.Type:
    return like(x.type, I64)


def _reduce(e: IR, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(k, r) with y = n ln2 + r, |r| <= ln2/2, n in k's low bits; for |y| < 2**40."""
    b, ty = e.b, y.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    k = e.fma(y, c(_LOG2E), c(ROUND_SHIFT))
    n = b.fsub(k, c(ROUND_SHIFT))
    return k, e.fma(n, c(-_LN2_LO), e.fma(n, c(-_LN2_HI), y))


def _n(e: IR, k: ir.Value) -> ir.Value:
    """The integer n held in ``k``'s low bits (see _reduce), as i64."""
    it = _ints(k)
    return e.b.sub(e.b.bitcast(k, it), e.b.bitcast(e.const(k.type, ROUND_SHIFT), it))


def exp(e: IR, x: ir.Value, how: str, lo: ir.Value | None = None) -> ir.Value:
    """e**(x + lo) for f64 ``x`` and ``lo`` below x's last bit (pow's y ln|x| in two parts;
    none: e**x), 2**n applied by irbase's ``scale`` as ``how`` says."""
    b = e.b
    c = lambda v: e.const(x.type, v)  # noqa: E731
    # Clamps keep n in scale's range (NaN passes them); below _EXP_ZERO 0 is selected at the
    # end, exp(0) computed meanwhile (a product rounding to 0 takes a denormal assist per lane).
    xc = e.fsel(">", x, c(_EXP_HI + 1.0), c(_EXP_HI + 1.0), x)
    xc = e.fsel("<", xc, c(_EXP_ZERO), c(0.0), xc)
    k, r = _reduce(e, xc)
    if lo is None:
        p = e.poly(r, _EXP13)
    else:
        # e**(r + lo) = 1 + (r Q(r) + lo e**r), Q(r) = (e**r - 1) / r: lo joins before the
        # last rounding (as e**r (1 + lo), 1.28 ulp at most in pow); only where x is in range
        # (x = +-inf makes lo NaN)
        lo = b.select(b.fcmp_ordered("<", x, c(_EXP_HI)), lo, c(0.0))
        q = e.poly(r, _EXP13[:-1])
        p = b.fadd(c(1.0), e.fma(r, q, b.fmul(lo, e.fma(r, q, c(1.0)))))
    return e.fsel("<", x, c(_EXP_ZERO), c(0.0), scale(e, p, _n(e, k), how))


def _split(e: IR, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(n, m) with x = 2**n m, m in [sqrt(2)/2, sqrt(2)), n as f64, for positive finite f64
    ``x`` (denormals scaled by 2**54 first); garbage elsewhere."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    it = _ints(x)
    ci = lambda v: e.const(it, v)  # noqa: E731
    den = b.fcmp_ordered("<", x, c(2.2250738585072014e-308))
    xs = b.select(den, b.fmul(x, c(2.0 ** 54)), x)
    u = b.sub(b.bitcast(xs, it), ci(_SQRT_HALF_BITS))
    n = b.sitofp(b.sub(b.ashr(u, ci(52)), b.select(den, ci(54), ci(0))), ty)
    return n, b.bitcast(b.add(b.and_(u, ci(_MANT)), ci(_SQRT_HALF_BITS)), ty)


def log(e: IR, x: ir.Value) -> ir.Value:
    """Natural logarithm of f64 ``x`` (fdlibm's e_log.c, its branches turned into selects)."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    it = _ints(x)
    ci = lambda v: e.const(it, v)  # noqa: E731
    n, m = _split(e, x)
    f = b.fsub(m, c(1.0))
    s = b.fdiv(f, b.fadd(c(2.0), f))
    z = b.fmul(s, s)
    r = b.fmul(z, e.poly(z, _LG))
    hfsq = b.fmul(b.fmul(c(0.5), f), f)
    # n ln2_hi - ((hfsq - (s (hfsq + R) + n ln2_lo)) - f), as fdlibm orders it
    inner = e.fma(s, b.fadd(hfsq, r), b.fmul(n, c(_LN2_LO)))
    out = e.fma(n, c(_LN2_HI), b.fneg(b.fsub(b.fsub(hfsq, inner), f)))
    # Special values: log(+-0) = -inf, log(x<0) = NaN, log(inf) = inf, NaN stays NaN.
    ok = b.icmp_unsigned("<", b.sub(b.bitcast(x, it), ci(1)), ci(0x7FEFFFFFFFFFFFFF))
    special = e.fsel("<", x, c(0.0), c(float("nan")), x)
    special = e.fsel("==", x, c(0.0), c(float("-inf")), special)
    return b.select(ok, out, special)


def _with_sign_of(e: IR, mag: ir.Value, x: ir.Value, ax: ir.Value) -> ir.Value:
    """``mag`` (sign bit clear, or NaN) with ``x``'s sign: or-ing x ^ |x| keeps -0.0."""
    b, it = e.b, _ints(x)
    sign = b.xor(b.bitcast(x, it), b.bitcast(ax, it))
    return b.bitcast(b.or_(b.bitcast(mag, it), sign), x.type)


def _two_pow_minus(e: IR, k: ir.Value, plus: int) -> ir.Value:
    """2**(plus - n) for the n in ``k``'s low bits (exact while the exponent stays normal)."""
    it = _ints(k)
    bits = e.b.sub(e.const(it, (1023 + plus) << 52), e.b.shl(e.b.bitcast(k, it), e.const(it, 52)))
    return e.b.bitcast(bits, k.type)


def tanh(e: IR, x: ir.Value) -> ir.Value:
    """Hyperbolic tangent of f64 ``x``: Cephes' rational function near 0, through exp beyond."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ax = e.fabs(x)
    t = e.fsel(">", ax, c(_TANH_TOP), c(_TANH_TOP), ax)
    z = b.fmul(t, t)
    k, r = _reduce(e, b.fadd(t, t))  # exp(2t) = 2**n p, n >= 1 beyond the split
    p, s = e.poly(r, _EXP13), _two_pow_minus(e, k, 0)
    near = b.fcmp_ordered("<", t, c(_TANH_SPLIT))
    # One division: t z P(z) / Q(z) near 0, else 2**(1-n) / (p + 2**-n) = 2 / (exp(2t) + 1)
    num = b.select(near, b.fmul(b.fmul(t, z), e.poly(z, _TANH_P)), b.fadd(s, s))
    q = b.fdiv(num, b.select(near, e.poly(z, _TANH_Q), b.fadd(p, s)))
    return _with_sign_of(e, b.select(near, b.fadd(t, q), b.fsub(c(1.0), q)), x, ax)


def sigmoid(e: IR, x: ir.Value) -> ir.Value:
    """1 / (1 + exp(-x)) for f64 ``x``, as 2**(2-n) / (2**(2-n) + 4 p) for exp(-x) = 2**n p:
    one rounded division, no overflow; 0 where the reference's exp(-x) overflows."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    t = e.fsel(">", x, c(40.0), c(40.0), x)  # sigmoid rounds to 1 from 37.5 on; keeps NaN
    k, r = _reduce(e, b.fneg(t))
    p4 = e.poly(r, [4.0 * v for v in _EXP13])  # 4 p exactly: each step scales by 4
    s = _two_pow_minus(e, k, 2)
    return e.fsel("<", x, c(-_EXP_HI), c(0.0), b.fdiv(s, b.fadd(s, p4)))


def atan_parts(e: IR, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(hi, small) with atan(ax) = hi + small for f64 ``ax`` >= 0 (or NaN): hi is 0, pi/4's or
    pi/2's high part (Cephes' atan.c, its three ranges chosen by selects)."""
    b, ty = e.b, ax.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    big = b.fcmp_ordered(">", ax, c(_T3P8))
    mid = b.fcmp_ordered(">", ax, c(0.66))
    # t = -1/|x| (big), (|x| - 1) / (|x| + 1) (mid) or |x|: one division. inf gives -0.0.
    num = b.select(big, c(-1.0), b.select(mid, b.fsub(ax, c(1.0)), ax))
    t = b.fdiv(num, b.select(big, ax, b.select(mid, b.fadd(ax, c(1.0)), c(1.0))))
    z = b.fmul(t, t)
    w = b.fdiv(b.fmul(z, e.poly(z, _ATAN_P)), e.poly(z, _ATAN_Q))
    r = e.fma(t, w, t)
    hi = b.select(big, c(PIO2[0]), b.select(mid, c(_PIO4[0]), c(0.0)))
    lo = b.select(big, c(PIO2[1]), b.select(mid, c(_PIO4[1]), c(0.0)))
    return hi, b.fadd(r, lo)


def atan(e: IR, x: ir.Value) -> ir.Value:
    """Arc tangent of f64 ``x``."""
    ax = e.fabs(x)
    hi, small = atan_parts(e, ax)
    return _with_sign_of(e, e.b.fadd(hi, small), x, ax)


def sincos_parts(e: IR, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(k, sin r, cos r) for f64 ``x`` = n pi/2 + r, n in k's low bits (mathtrig.quadrant puts
    them together), for |x| <= TRIG_BOUND; NaN for NaN and inf, garbage beyond."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    a = e.fabs(x)  # sin(-x) = -sin(x): the sign goes back on at the end, so sin(-0.0) = -0.0
    k = e.fma(a, c(2.0 / math.pi), c(ROUND_SHIFT))  # n = round(a * 2/pi) in k's low bits
    n = b.fsub(k, c(ROUND_SHIFT))
    # r + r_lo = a - n pi/2 to ~100 bits. a - n P1 is exact (a multiple of 2**-52 below 2 in
    # magnitude); n P2 = p + p_lo exactly; t - p = r + err exactly (2Sum: t and p may cancel
    # to a few bits, near multiples of pi/2); n P3 is below r's last bit. Rounding r alone cost
    # up to 1 ulp of a result just below a power of 2, and 60 near multiples of pi/2.
    t = e.fma(n, c(-PIO2[0]), a)
    p = b.fmul(n, c(PIO2[1]))
    p_lo = e.fma(n, c(PIO2[1]), b.fneg(p))
    r = b.fsub(t, p)
    bb = b.fsub(r, t)
    err = b.fadd(b.fsub(t, b.fsub(r, bb)), b.fsub(b.fneg(p), bb))
    r_lo = e.fma(n, c(-PIO2[2]), b.fsub(err, p_lo))
    z = b.fmul(r, r)
    # sin(r + r_lo) = r + r z P(z) + r_lo (1 - z/2); cos(r + r_lo) = w + (((1 - w) - z/2) +
    # z**2 Q(z) - r r_lo), w = 1 - z/2: fdlibm's kernels, which add back w's rounding error
    hz = b.fmul(z, c(0.5))
    w = b.fsub(c(1.0), hz)
    sin_r = b.fadd(r, e.fma(b.fmul(r, z), e.poly(z, _SIN_P), b.fmul(r_lo, w)))
    corr = e.fma(b.fneg(r), r_lo, b.fsub(b.fsub(c(1.0), w), hz))
    cos_r = b.fadd(w, e.fma(b.fmul(z, z), e.poly(z, _COS_P), corr))
    return k, sin_r, cos_r


def erf(e: IR, x: ir.Value, how: str) -> ir.Value:
    """The error function of f64 ``x``: x + x P(x**2) below ERF_SPLIT, else 1 - exp(-x**2) g(x)
    with g from the piece that holds |x| (selects; exp's 2**n applied as ``how`` says)."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ax = e.fabs(x)
    near0 = e.fma(x, e.poly(b.fmul(x, x), _ERF_NEAR0), x)  # keeps -0.0 and denormals
    t = e.fsel(">", ax, c(ERF_TOP), c(ERF_TOP), ax)  # NaN stays
    # g's coefficients for t's piece: the first piece's, replaced by each later one t is in
    mid, coeffs = c(_ERFC_PIECES[0][0]), [c(v) for v in _ERFC_PIECES[0][1]]
    for start, (middle, later) in zip(_ERFC_STARTS[1:], _ERFC_PIECES[1:], strict=True):
        inside = b.fcmp_ordered(">=", t, c(start))
        mid = b.select(inside, c(middle), mid)
        coeffs = [b.select(inside, c(v), old) for v, old in zip(later, coeffs, strict=True)]
    u = b.fsub(t, mid)
    g = coeffs[0]
    for k in coeffs[1:]:
        g = e.fma(g, u, k)
    # exp(-t**2) = exp(-hi) (1 - lo) for t**2 = hi + lo exactly; then 1 - that * g, rounded once
    hi = b.fmul(t, t)
    lo = e.fma(t, t, b.fneg(hi))
    scaled = b.fmul(exp(e, b.fneg(hi), how), b.fsub(c(1.0), lo))
    far = e.fma(b.fneg(scaled), g, c(1.0))
    return b.select(b.fcmp_ordered("<", ax, c(ERF_SPLIT)), near0, _with_sign_of(e, far, x, ax))


# pow ---------------------------------------------------------------------------------------
# |x|**y = exp(y ln|x|) needs y ln|x| to ~2**-54 absolute where the result is finite and nonzero
# (|y ln|x|| up to 745): ln|x| to ~2**-64 relative, more than f64 holds, so it is carried in two
# parts, as is the product with y; exp then applies the low part as p (1 + lo).
_TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)  # 2/3 in two parts
# atanh(s) / s = 1 + z/3 + z**2 G2(z), z = s**2 <= 0.0295: the series to 2**-66 of the whole
_ATANH_G2 = tuple(1.0 / (2 * k + 5) for k in range(10, -1, -1))


def _two_sum(e: IR, a: ir.Value, b_: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(s, err) with s = fl(a + b_) and a + b_ = s + err exactly (Knuth's 2Sum)."""
    b = e.b
    s = b.fadd(a, b_)
    bb = b.fsub(s, a)
    return s, b.fadd(b.fsub(a, b.fsub(s, bb)), b.fsub(b_, bb))


def _log_parts(e: IR, ax: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(hi, lo) with ln(ax) = hi + lo to ~2**-66 relative, for finite f64 ``ax`` > 0: x =
    2**n m as in log; ln m = 2 atanh(s), s = (m - 1) / (m + 1), with s, s**2 and (2/3) s**3 in
    two parts and the rest of the series in one."""
    b, ty = e.b, ax.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    n, m = _split(e, ax)
    f = b.fsub(m, c(1.0))  # exact
    d, d_lo = _two_sum(e, m, c(1.0))
    s = b.fdiv(f, d)
    s_lo = b.fdiv(b.fsub(e.fma(b.fneg(s), d, f), b.fmul(s, d_lo)), d)
    z = b.fmul(s, s)
    z_lo = e.fma(s, s, b.fneg(z))
    # s**3 = p + p_lo: s z, its rounding error, and s's and z's low parts to first order
    p = b.fmul(s, z)
    p_lo = b.fadd(e.fma(s, z, b.fneg(p)), e.fma(s, z_lo, b.fmul(c(3.0), b.fmul(z, s_lo))))
    q = b.fmul(c(_TWO_THIRDS[0]), p)
    q_lo = b.fadd(e.fma(c(_TWO_THIRDS[0]), p, b.fneg(q)),
                  e.fma(c(_TWO_THIRDS[0]), p_lo, b.fmul(c(_TWO_THIRDS[1]), p)))
    tail = b.fmul(b.fmul(b.fadd(s, s), b.fmul(z, z)), e.poly(z, _ATANH_G2))
    two_s = b.fadd(s, s)
    hi = b.fadd(two_s, q)  # |2s| > |q|: Fast2Sum
    err = b.fadd(b.fsub(two_s, hi), q)
    lo = b.fadd(err, b.fadd(b.fadd(b.fadd(s_lo, s_lo), q_lo), tail))
    big, err2 = _two_sum(e, b.fmul(n, c(_LN2_HI)), hi)  # n ln2_hi is exact
    lo = b.fadd(err2, e.fma(n, c(_LN2_LO), lo))
    top = b.fadd(big, lo)
    return top, b.fsub(lo, b.fsub(top, big))


def pow_abs(e: IR, ax: ir.Value, y: ir.Value, how: str) -> ir.Value:
    """|x| ** y for finite f64 ``ax`` = |x| > 0 (garbage for 0, inf and NaN: the caller
    selects C99's values there), 2**n applied as ``how`` says."""
    b = e.b
    hi, lo = _log_parts(e, ax)
    t = b.fmul(y, hi)
    return exp(e, t, how, b.fadd(e.fma(y, hi, b.fneg(t)), b.fmul(y, lo)))
