"""Vectorizable pow and atan2 in LLVM IR, f32 and f64.

A libm call in a loop body is made lane by lane, spilling every live vector register around each
call: it kept whole fused kernels (GELU with ``pow(x, 3)``) from running as vector code. These are
branch-free (selects only), so LLVM's loop vectorizer widens them like mathlib's functions.

**pow** computes 2**(y log2|x|) in f64 registers, from f32 operands: log2|x| to a relative error
of about 2**-43, so that y log2|x| (up to ~150 in magnitude where the result is neither 0 nor
inf) is off by at most ~2**-35, and 2**t to 2**-34; the f64 result is then rounded to f32 once.
That is within 0.51 ulp of the true value (0.5007 at most in 4e7 random pairs: correctly rounded
but for near-ties), where libm's powf promises 0.82. The loop vectorizer still picks its width by
the f32 values (8 lanes with AVX2: each f64 operation is two 4-lane ones), so the rest of a fused
body keeps its vectors. Alone, ~3.4 ns an element (1M f32, 1 thread, AVX2; libm's powf lane by
lane: 6 to 9); ~70 cycles per 8 elements by llvm-mca, where the long f64 chain (a division, two
polynomials) leaves the CPU's reorder window little to overlap. Special values follow
C99 (NumPy's np.power): pow(x, +-0) = 1 and pow(1, y) = 1 even for NaN, pow(-1, +-inf) = 1,
a negative finite x with a finite non-integer y gives NaN, an odd integer y keeps x's sign
(-0.0 and -inf included), zeros and infinities give 0 or inf by the signs.

A literal exponent (ONNX's GELU writes ``pow(x, 3)``) takes a short form where one exists, as
compilers turn ``pow(x, 2.0)`` into ``x * x``: 0 and 1; +-1/2 (sqrt, with its -0.0 and -inf
fixed); integers up to +-7, powers by squaring in f64 (exact or rounded once or twice at 2**-53)
rounded to f32: within 0.5 + 2**-27 ulp, so correctly rounded but for near-ties, with the same
specials. That keeps such a pow cheap where no rule rewrote it (``--no-algebra``, ``--allow
exact``).

**atan2** reduces to atan(t) on t = min(|y|, |x|) / max(|y|, |x|) in [0, 1] (mathlib's
polynomial), then adds it to or subtracts it from 0, pi/2 or pi by the quadrant. The quotient's
rounding error is added back (a whole ulp where atan(t) falls a binade below t), and pi/2 or pi
(two f32 parts) meets +-t in an error-free sum, so the result rounds about once: 1.23 ulp at
most in 3e8 random pairs (NumPy's atan2f: 1.46). Both zeros and both infinities are special
values of t (0 and 1), so +-0 and +-inf give C99's angles (atan2(+-0, -0) = +-pi,
atan2(+-inf, -inf) = +-3pi/4).

``ULP_BOUNDS`` states the error measured against a float64 reference, in f32 ulps of the true
value (tests/test_codegen_binmath.py re-measures it).

**f64** (``pow_f64``, ``atan2_f64``): pow computes exp(y ln|x|) with ln|x| and the product in
two f64 parts (mathf64.pow_abs: y ln|x| reaches ~745 where the result is finite, so it must be
right to ~2**-54 absolute) and the same special values; atan2 takes the f32 reduction and
quadrants around mathf64's atan. Measured against mpmath (``ULP_BOUNDS_F64``, in f64 ulps,
re-measured by tests/test_codegen_math_f64.py): pow at most 1.21 ulp and atan2 1.19 in some
3e5 random pairs. Before, each element was a libm call; over 8M pairs on one Zen 4 core, pow now
runs 2.3x faster (still 0.6x NumPy's: some 150 vector operations for 8 elements) and atan2 9.8x
(1.3x NumPy's; benchmarks/README.md, "f64 math").
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from tcp_rules.codegen import mathf64, mathlib, mathtrig
from tcp_rules.codegen.irbase import F32, F64, I32, I64, IR, element, like

ULP_BOUNDS = {"pow": 0.51, "atan2": 1.3}
ULP_BOUNDS_F64 = {"pow": 1.5, "atan2": 1.5}

_SQRT_HALF_BITS = 0x3F3504F3  # f32 bits of sqrt(1/2): |x| = 2**n m, m in [sqrt(1/2), sqrt(2))
_F32_TINY = 1.1754943508222875e-38  # the smallest normal f32
# log(m) = 2 atanh(s) = 2 s (1 + z G(z)), s = (m - 1) / (m + 1), z = s**2 <= 0.0295: G is the
# degree-4 Chebyshev interpolant of (atanh(s) / s - 1) / z on [0, 0.0295] (numpy.polynomial.
# Chebyshev.interpolate), error 2**-43 relative to atanh(s) / s.
_LOG_G = (0.0968143564400032, 0.11095693162259343, 0.14285877425396512, 0.19999999397477675,
          0.33333333333689363)
_TWO_LOG2E = 2.8853900817779268  # 2 / ln 2
# 2**r on |r| <= 1/2: the degree-7 Chebyshev interpolant, relative error 2**-34.
_EXP2_P = (1.5303699001378845e-05, 0.00015469729140704658, 0.0013333478480888061,
           0.009618025613598036, 0.055504109063177154, 0.24022651213495422, 0.6931471805568341,
           0.9999999999595622)
_SHIFT52 = 6755399441055744.0  # 1.5 * 2**52: an f64 plus this rounds to an integer
# 1 / (1 + z) on [0, 1] within 6% (the linear Chebyshev interpolant), for atan2's correction
_RECIP_1PZ = (-0.47058823704719543, 0.9411764740943909)
_T_BOUND = 200.0  # |y log2|x|| beyond this is 0 or inf in f32; the clamp keeps 2**n normal
# |x|**7 is finite in f64 for every f32 x (at most 2**896), and normal wherever x**7 or x**-7
# is neither 0 nor inf in f32
MAX_INT_EXPONENT = 7


def _log2_wide(e: IR, ax: ir.Value) -> ir.Value:
    """log2 of the f32 ``ax`` > 0 (finite, denormals included) as f64; garbage for 0, inf and
    NaN (pow selects their results)."""
    b, ty = e.b, ax.type
    it, dt = like(ty, I32), like(ty, F64)
    ci = lambda v: e.const(it, v)  # noqa: E731
    den = b.fcmp_ordered("<", ax, e.const(ty, _F32_TINY))
    xs = b.select(den, b.fmul(ax, e.const(ty, 8388608.0)), ax)  # denormals: times 2**23, exact
    # Subtracting sqrt(1/2)'s bits splits xs into 2**n m with m in [sqrt(1/2), sqrt(2)).
    u = b.sub(b.bitcast(xs, it), ci(_SQRT_HALF_BITS))
    n = b.sub(b.ashr(u, ci(23)), b.select(den, ci(23), ci(0)))
    m = b.bitcast(b.add(b.and_(u, ci(0x007FFFFF)), ci(_SQRT_HALF_BITS)), ty)
    md = b.fpext(m, dt)
    one = e.const(dt, 1.0)
    s = b.fdiv(b.fsub(md, one), b.fadd(md, one))  # m -/+ 1 are exact in f64
    z = b.fmul(s, s)
    w = e.fma(b.fmul(s, z), e.poly(z, _LOG_G), s)  # atanh(s)
    return e.fma(w, e.const(dt, _TWO_LOG2E), b.sitofp(n, dt))


def _exp2_wide(e: IR, t: ir.Value) -> ir.Value:
    """2**t for f64 ``t`` rounded to f32: 0 below -150, inf above 128; garbage for NaN."""
    b, dt = e.b, t.type
    c = lambda v: e.const(dt, v)  # noqa: E731
    tc = e.fsel(">", t, c(_T_BOUND), c(_T_BOUND), t)  # NaN stays NaN
    tc = e.fsel("<", tc, c(-_T_BOUND), c(-_T_BOUND), tc)
    k = b.fadd(tc, c(_SHIFT52))  # n = round(tc) in k's low mantissa bits
    r = b.fsub(tc, b.fsub(k, c(_SHIFT52)))  # exact, |r| <= 1/2
    it = like(dt, I64)
    # 2**n p: n added to p's exponent field; |n| <= 200 keeps the f64 normal.
    bits = b.add(b.bitcast(e.poly(r, _EXP2_P), it), b.shl(b.bitcast(k, it), e.const(it, 52)))
    return b.fptrunc(b.bitcast(bits, dt), like(dt, F32))


def _is_int(e: IR, v: ir.Value) -> ir.Value:
    """Whether f32 ``v`` is an integer (true for +-inf, false for NaN)."""
    return e.b.fcmp_ordered("==", e.intrinsic("floor", [v]), v)


def _literal(y: ir.Value) -> float | None:
    """The exponent when it is a constant (a literal of the program, maybe splatted)."""
    if not isinstance(y, ir.Constant):
        return None
    c = y.constant
    if isinstance(c, list):
        vals = {v.constant if isinstance(v, ir.Constant) else v for v in c}
        c = vals.pop() if len(vals) == 1 else None
    return float(c) if isinstance(c, float | int) else None


def _pow_literal(e: IR, x: ir.Value, n: float) -> ir.Value | None:
    """x ** n for the literal exponents with a short exact-enough form, else None: 0, 1, 1/2;
    in f32 -1/2 and integers up to +-MAX_INT_EXPONENT (powers by squaring in f64, where they
    neither overflow nor underflow, rounded to f32 once more: within 0.5 + 2**-27 ulp); in f64
    -1, 2 and 3."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    if n in (0.0, 1.0):
        return c(1.0) if n == 0.0 else x
    neg_inf = b.fcmp_ordered("==", x, c(float("-inf")))
    if n == 0.5:  # x + 0 turns -0.0 into +0.0: pow(-0.0, 0.5) = +0.0, pow(-inf, 0.5) = inf
        return b.select(neg_inf, c(float("inf")), e.intrinsic("sqrt", [b.fadd(x, c(0.0))]))
    if element(ty) == F64:  # rounded once (-1, 2) or twice (3: within 1 ulp), C99's specials
        short = {-1.0: lambda: b.fdiv(c(1.0), x), 2.0: lambda: b.fmul(x, x),
                 3.0: lambda: b.fmul(b.fmul(x, x), x)}.get(n)
        return short() if short is not None else None
    dt = like(ty, F64)
    one = e.const(dt, 1.0)
    if n == -0.5:
        root = e.intrinsic("sqrt", [b.fpext(b.fadd(x, c(0.0)), dt)])
        return b.select(neg_inf, c(0.0), b.fptrunc(b.fdiv(one, root), ty))
    if n != int(n) or abs(n) > MAX_INT_EXPONENT:
        return None
    xd, k = b.fpext(x, dt), abs(int(n))
    r: ir.Value | None = None
    while k:  # zeros, infinities and signs come out as C99's: (-0.0)**-3 = -inf, ...
        if k & 1:
            r = xd if r is None else b.fmul(r, xd)
        k >>= 1
        xd = b.fmul(xd, xd) if k else xd
    assert r is not None
    return b.fptrunc(b.fdiv(one, r) if n < 0 else r, ty)


def pow_f32(e: IR, x: ir.Value, y: ir.Value) -> ir.Value:
    """x ** y for f32 scalars or vectors, as C99's powf (module docstring)."""
    n = _literal(y)
    short = _pow_literal(e, x, n) if n is not None else None
    if short is not None:
        return short
    t = e.b.fmul(e.b.fpext(y, like(x.type, F64)), _log2_wide(e, e.fabs(x)))
    return _pow_specials(e, x, y, _exp2_wide(e, t))


def _pow_specials(e: IR, x: ir.Value, y: ir.Value, power: ir.Value) -> ir.Value:
    """x ** y from ``power`` = |x| ** y for finite nonzero |x| (garbage elsewhere) with C99's
    special values and signs (module docstring)."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ax, ay = e.fabs(x), e.fabs(y)
    big = b.fcmp_ordered("==", ax, c(float("inf")))
    zero = b.fcmp_ordered("==", ax, c(0.0))
    # |x| = 0 or inf: the magnitude is 0 or inf by the sign of y log2|x|.
    edge = b.select(b.fcmp_ordered("<", y, c(0.0)), b.not_(big), big)
    mag = b.select(b.or_(big, zero), b.select(edge, c(float("inf")), c(0.0)), power)
    mag = b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), mag)  # NaN: garbage above
    y_int = _is_int(e, y)
    odd = b.and_(y_int, b.not_(_is_int(e, b.fmul(y, c(0.5)))))  # |y| >= 2**24 is even
    out = b.select(odd, e.copysign(mag, x), mag)
    finite_neg = b.and_(b.fcmp_ordered("<", x, c(0.0)), b.not_(big))
    bad = b.and_(finite_neg, b.and_(b.fcmp_ordered("<", ay, c(float("inf"))), b.not_(y_int)))
    out = b.select(bad, c(float("nan")), out)
    one = b.or_(b.fcmp_ordered("==", x, c(1.0)),
                b.and_(b.fcmp_ordered("==", x, c(-1.0)), b.fcmp_ordered("==", ay, c(float("inf")))))
    return b.select(b.or_(one, b.fcmp_ordered("==", y, c(0.0))), c(1.0), out)


def atan2_f32(e: IR, y: ir.Value, x: ir.Value) -> ir.Value:
    """The angle of (x, y), as C99's atan2f(y, x), for f32 scalars or vectors."""
    def atan(t: ir.Value, z: ir.Value, dt: ir.Value) -> tuple[ir.Value, ir.Value]:
        # atan(t) = t + t z P(z) (mathlib's polynomial); 1 / (1 + z) within 6% is enough for dt
        c = lambda v: e.const(t.type, v)  # noqa: E731
        return t, e.fma(e.b.fmul(t, z), e.poly(z, mathlib._ATAN_P),
                        e.b.fmul(dt, e.fma(z, c(_RECIP_1PZ[0]), c(_RECIP_1PZ[1]))))
    return _atan2(e, y, x, atan, mathtrig.PIO2[:2])


def atan2_f64(e: IR, y: ir.Value, x: ir.Value) -> ir.Value:
    """The angle of (x, y), as C99's atan2(y, x), for f64 scalars or vectors: atan2_f32's
    reduction and quadrants around mathf64's atan."""
    def atan(t: ir.Value, z: ir.Value, dt: ir.Value) -> tuple[ir.Value, ir.Value]:
        c = lambda v: e.const(t.type, v)  # noqa: E731
        hi, small = mathf64.atan_parts(e, t)
        return hi, e.fma(dt, e.fma(z, c(_RECIP_1PZ[0]), c(_RECIP_1PZ[1])), small)
    return _atan2(e, y, x, atan, mathf64.PIO2[:2])


AtanParts = Callable[[ir.Value, ir.Value, ir.Value], tuple[ir.Value, ir.Value]]


def _atan2(e: IR, y: ir.Value, x: ir.Value, atan: AtanParts,
           pio2: tuple[float, ...]) -> ir.Value:
    """atan2(y, x) from ``atan``(t, t**2, dt) = (hi, small), atan(t + dt) = hi + small with hi
    t or a constant, for t in [0, 1]; ``pio2``: pi/2 in two parts of x's type."""
    b, ty = e.b, y.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ay, ax = e.fabs(y), e.fabs(x)
    swap = b.fcmp_ordered(">", ay, ax)  # then atan(|y| / |x|) = pi/2 - atan(|x| / |y|)
    num, den = b.select(swap, ax, ay), b.select(swap, ay, ax)
    q = b.fdiv(num, den)
    # den = 0 only with num = 0 (or NaN): t = num; both infinite: t = 1.
    t = b.select(b.fcmp_ordered("==", den, c(0.0)), num, q)
    inf = c(float("inf"))
    both_inf = b.and_(b.fcmp_ordered("==", ay, inf), b.fcmp_ordered("==", ax, inf))
    t = b.select(both_inf, c(1.0), t)
    # The quotient's rounding error, (num - q den) / den: it moves atan by dt / (1 + t**2), up to
    # a whole ulp where atan(t) is in the binade below t's. NaN (0 * inf, 0 / 0) where t is
    # special: no correction there.
    dt = b.fdiv(e.fma(b.fneg(q), den, num), den)
    dt = b.select(e.isnan(dt), c(0.0), dt)
    a_hi, a_small = atan(t, b.fmul(t, t), dt)
    # x's sign bit: atan2(+-0, -0) = +-pi
    it = like(ty, I32 if element(ty) == F32 else I64)
    left = b.icmp_signed("<", b.bitcast(x, it), e.const(it, 0))
    neg = b.xor(swap, left)  # pi/2 - atan, pi - atan
    st, ss = (b.select(neg, b.fneg(v), v) for v in (a_hi, a_small))
    hi, lo = (b.select(swap, c(part), b.select(left, c(2 * part), c(0.0))) for part in pio2)
    # hi + st with its rounding error (Fast2Sum: |hi| >= |st| unless hi = 0, then exact), so
    # that the result rounds once more, at the end.
    u = b.fadd(hi, st)
    err = b.fadd(b.fsub(hi, u), st)
    return e.copysign(b.fadd(u, b.fadd(b.fadd(lo, ss), err)), y)


def pow_f64(e: IR, x: ir.Value, y: ir.Value) -> ir.Value:
    """x ** y for f64 scalars or vectors, as C99's pow: mathf64's |x| ** y with pow_f32's
    special values; a literal 0, 1, 1/2, -1, 2 or 3 takes its short form."""
    n = _literal(y)
    short = _pow_literal(e, x, n) if n is not None else None
    if short is not None:
        return short
    return _pow_specials(e, x, y, mathf64.pow_abs(e, e.fabs(x), y, mathlib.scale_strategy()))
