"""Vectorizable f32 exp, log, tanh, sigmoid, erf, atan, sin and cos written in LLVM IR.

Branch-free (selects only), so LLVM's loop vectorizer turns them into AVX code; libm calls would
stay scalar. Where AVX-512 has an instruction for a step (vscalefps, vgetexpps, vgetmantps, the
table permutes of tanh and erf), vectors use it, and the portable code computes the same bits
(tests/test_codegen_math_strategies.py, test_codegen_mathtable.py). The f64 versions are in
mathf64.py (pow and atan2 of both types: binmath.py).
sin and cos take libm only for |x| > TRIG_BOUND, where their f32 reduction stops being exact: a
kernel runs their inline polynomials and reruns precisely when an argument was beyond the bound
(mathtrig.py). Every function returns NaN for NaN and keeps the reference's
infinities, zeros (``tanh(-0.0) == -0.0``, ``sin(-0.0) == -0.0``) and underflow.

Accuracy against a float64 reference, in f32 ulps of the true value: "measured" is the maximum
over every f32 input (``benchmarks/ulp_sweep.py``; sin/cos up to TRIG_BOUND, libm beyond) where
marked *, else over 2**19 random samples per range as in ``tests/test_codegen_math.py``, which
asserts the bounds in ``ULP_BOUNDS`` on ranges covering overflow/underflow edges, denormals and
the seams.

========  ========  =====  ================================================================
function  measured  bound  method
========  ========  =====  ================================================================
exp       0.90*     1.5    Cody-Waite reduction by ln 2, 1 + r (1 + r Q(r)) with Q of degree 4
                           fitted in ulps (degree 6 in all) by Horner; 2**n applied once
                           (``scale``: vscalefps with AVX-512, else in two steps), so denormal
                           results round once; in the loops a kernel can run again, n added
                           to the exponent bits (exp_fast), and the loop run again when an |x|
                           was beyond 86: the same bits
log       0.91*     1.0    x = 2**n (1 + f), f in [-1/3, 1/3) (vgetexpps and vgetmantps with
                           AVX-512, else by subtracting 2/3's bits); log1p(f) = f + f*f*Q(f), Q
                           of degree 8 fitted (Lawson)
tanh      1.00*     1.5    with AVX-512: 23 intervals (four per binade from 1/4 to 8), a
                           degree-6 polynomial each, coefficients looked up per lane (mathtable)
          1.07*            else (mathtanh): t + t*z*P(z) below 0.75, P (degree 5) fitted; above,
                           1 - 2**(1-n) / (p + 2**-n) for exp(2t) = 2**n p: one division
sigmoid   2.48*     3.0    1 / (1 + exp(-x)) as 2**(2-n) / (2**(2-n) + 4 p) for exp(-x) =
                           2**n p: one rounded division, no overflow; 0 for x < -88.72283,
                           where the reference's exp(-x) overflows (swept above that)
erf       1.11*     1.5    16 intervals of width 1/4, a degree-5 polynomial each, coefficients
                           looked up per lane (mathtable); |x| + |x| * P near 0
atan      1.52*     1.6    t = |x|, or -1/|x| beyond 1 (one division); t + t*z*P(z), z = t**2,
                           P (degree 7) fitted (Lawson); pi/2 in two parts
sin, cos  1.56*     1.6    reduction by pi/2 in three f32 parts with FMAs (exact enough up
                           to TRIG_BOUND = 2**19), Cephes polynomials on |r| <= pi/4,
                           quadrant by selects and a sign xor; libm beyond the bound
========  ========  =====  ================================================================
"""

from __future__ import annotations

import struct

import llvmlite.ir as ir

from tcp_rules.codegen import jit, mathf64, mathtable, mathtanh, mathtrig
from tcp_rules.codegen.irbase import (
    F32,
    I8,
    I32,
    IR,
    ROUND_SHIFT,
    element,
    like,
    scale,
    widened,
)

ULP_BOUNDS = {"exp": 1.5, "log": 1.0, "tanh": 1.5, "sigmoid": 3.0, "erf": 1.5, "atan": 1.6,
              "sin": 1.6, "cos": 1.6}

# The masked AVX-512 intrinsics by vector width: their name's suffix, the mask's type and the
# rounding argument the 512-bit ones take (4: the current mode).
_AVX512_MASKED = {4: ("128", I8, ()), 8: ("256", I8, ()), 16: ("512", ir.IntType(16), (4,))}

_LOG2E = 1.44269504088896341
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4  # Cody-Waite split: n * hi is exact
# exp(r) on |r| <= ln2/2 for exp and sigmoid: 1 + r (1 + r Q(r)), Q of degree 4 fitted in ulps
# (benchmarks/fit_tables.py exp), one fma fewer than Cephes' degree-5 P for the same accuracy
# (0.71 ulp before scaling, Cephes' 0.72; sigmoid's exhaustive sweep: 2.481 ulp with either,
# and an f32 GELU x sigmoid(1.702 x) 7-8% faster with Q, Zen 4)
_EXP_Q = (0.0013789486838504672, 0.00836867094039917, 0.04166888818144798, 0.1666652113199234,
          0.49999991059303284)
_EXP6 = (*_EXP_Q, 1.0, 1.0)
# log(1 + f) = f + f*f*Q(f) on [-1/3, 1/3], relative error 2**-27.7
_LOG_Q = (-0.12948919832706451, 0.1400471180677414, -0.1216716468334198, 0.14001169800758362,
          -0.16682304441928864, 0.20010747015476227, -0.24999716877937317, 0.3333320915699005,
          -0.5)
_LOG_OFF = 0x3F2AAAAB  # bits of 2/3: x = 2**n * (1 + f) with 1 + f in [2/3, 4/3)
_LOG_LN2_HI, _LOG_LN2_LO = 0.693145751953125, 1.4286068203094172e-06  # n * hi exact

def _is_f32(x: ir.Value) -> bool:
    return element(x.type) == F32


def _ints(e: IR, x: ir.Value) -> ir.Type:
    return like(x.type, I32)


def scale_strategy(target: jit.Target | None = None) -> str:
    """How irbase's ``scale`` multiplies by 2**n on the target (default: the current one):
    "ldexp" with AVX-512 (one vscalefps), else "split" (llvm.ldexp would be a libm call per
    lane)."""
    return "ldexp" if (target or jit.target()).has("avx512f") else "split"


def exp(e: IR, x: ir.Value, how: str | None = None) -> ir.Value:
    """e**x (f32 polynomial, 2**n applied as ``how`` says: "ldexp", see _exp_ldexp, or
    "split", irbase's ``scale`` in two steps; f64: mathf64).

    Inside a loop that the kernel emitter can run again (``e.exp_guard`` set) and without
    vscalefps, the fast path instead (:func:`exp_fast`), which records the largest |x| in the
    guard: the emitter reruns the loop with this function when it exceeds EXP_FAST_BOUND."""
    how = how or scale_strategy()
    if not _is_f32(x):
        return mathf64.exp(e, x, how)
    if how == "split" and e.exp_guard is not None:
        b, it = e.b, _ints(e, x)
        bits = b.and_(b.bitcast(x, it), e.const(it, 0x7FFFFFFF))  # NaN above inf above all
        if isinstance(bits.type, ir.VectorType):
            bits = e.intrinsic("vector.reduce.umax", [bits], ret=I32)
        b.store(e.intrinsic("umax", [b.load(e.exp_guard), bits]), e.exp_guard)
        return exp_fast(e, x)
    if how == "ldexp":
        # Vectors take vscalefps on n as a float where the target has it for every width.
        return widened(e, "expf", x, _exp_ldexp) if _masked_avx512() else _exp_ldexp(e, x)
    c = lambda v: e.const(x.type, v)  # noqa: E731
    # Beyond these bounds the result is inf or rounds to 0; clamping keeps n in range. The
    # clamps keep NaN, and every step after them propagates it. Below -104 the result is +0:
    # selected at the end, with 0 computed meanwhile, for the product rounding to 0 would take a
    # denormal assist per lane (a softmax row masked by -inf ran 1.3x slower).
    xc = e.fsel(">", x, c(89.0), c(89.0), x)
    xc = e.fsel("<", xc, c(-104.0), c(0.0), xc)
    k, r = _exp_reduce(e, xc)
    return e.fsel("<", x, c(-104.0), c(0.0), scale(e, e.poly(r, _EXP6), _exp_n(e, k), "split"))


def _exp_n(e: IR, k: ir.Value) -> ir.Value:
    """n as an integer from _exp_reduce's k."""
    it = _ints(e, k)
    return e.b.sub(e.b.bitcast(k, it), e.b.bitcast(e.const(k.type, ROUND_SHIFT), it))


def _exp_ldexp(e: IR, x: ir.Value) -> ir.Value:
    """exp with 2**n applied by ldexp, which rounds p * 2**n to 0 below the denormals itself:
    one clamp each side (vminps, vmaxps) and no select of 0 at the end, the same bits as the
    split scaling's. A vector of 4, 8 or 16 takes vscalefps on n as a float (k - ROUND_SHIFT,
    which the reduction computes anyway): llvm.ldexp would convert n to an integer and back.
    Each saved instruction counts: a softmax row is compute-bound on one core, and these four
    (a clamp's compare and select, the conversions, the final select) made it 9% faster (Zen 4,
    rows in L2)."""
    c = lambda v: e.const(x.type, v)  # noqa: E731
    # exp(-150) is far below half the least denormal; n then stays within scale's range.
    xc = e.fsel(">", x, c(89.0), c(89.0), x)
    xc = e.fsel("<", xc, c(-150.0), c(-150.0), xc)
    k, r = _exp_reduce(e, xc)
    p = e.poly(r, _EXP6)
    width = _AVX512_MASKED.get(getattr(x.type, "count", 0))
    if width is None or not _masked_avx512():
        return scale(e, p, _exp_n(e, k), "ldexp")
    name, mask_ty, rounding = width
    return e.intrinsic(f"x86.avx512.mask.scalef.ps.{name}",
                       [p, e.b.fsub(k, c(ROUND_SHIFT)), c(0.0), ir.Constant(mask_ty, -1),
                        *[ir.Constant(I32, v) for v in rounding]], tys=[])


# Up to this |x|, n = round(x / ln2) is within [-125, 125] and p in [0.7, 1.42], so p * 2**n
# is a normal number: adding n to p's exponent bits multiplies exactly, and nothing needs a clamp.
EXP_FAST_BOUND = 86.0


def exp_fast(e: IR, x: ir.Value) -> ir.Value:
    """f32 exp for |x| <= EXP_FAST_BOUND: the bits of :func:`exp` there, in 9 fewer operations
    (no clamps; 2**n by an integer add instead of two products). Beyond the bound (NaN, inf
    included) the result is meaningless."""
    b, it = e.b, _ints(e, x)
    k, r = _exp_reduce(e, x)
    # k's bits are those of 1.5 * 2**23 + n: shifted left by 23, only n's exponent bits remain.
    n_exp = b.shl(b.bitcast(k, it), e.const(it, 23))
    return b.bitcast(b.add(b.bitcast(e.poly(r, _EXP6), it), n_exp), x.type)


def exp_beyond_fast(e: IR, guard: ir.Value) -> ir.Value:
    """i1: whether an exp that recorded into ``guard`` took its fast path beyond its bound."""
    bound = struct.unpack("<I", struct.pack("<f", EXP_FAST_BOUND))[0]
    return e.b.icmp_unsigned(">", e.b.load(guard), ir.Constant(I32, bound))


def _masked_avx512(target: jit.Target | None = None) -> bool:
    """Whether the target (default: the current one) has the masked AVX-512 intrinsics of
    _AVX512_MASKED at every vector width (AVX-512F with VL)."""
    t = target or jit.target()
    return t.has("avx512f") and t.has("avx512vl")


def log_strategy(target: jit.Target | None = None) -> str:
    """How vectors split x into 2**n (1 + f) for log on the target (default: the current one):
    "avx512" (vgetexpps and vgetmantps, which also give the special values), else "bits"
    (integer arithmetic on the bits)."""
    return "avx512" if _masked_avx512(target) else "bits"


def _log_split_bits(e: IR, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(n, f) with x = 2**n (1 + f), 1 + f in [2/3, 4/3), for positive finite x."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    it = _ints(e, x)
    ci = lambda v: e.const(it, v)  # noqa: E731
    # Denormals: scale into the normal range first.
    den = b.fcmp_ordered("<", x, c(1.1754943508222875e-38))
    xs = b.select(den, b.fmul(x, c(8388608.0)), x)
    # Subtracting 2/3's bits splits x into 2**n * (1 + f), f in [-1/3, 1/3): no compare needed.
    u = b.sub(b.bitcast(xs, it), ci(_LOG_OFF))
    n = b.sitofp(b.sub(b.ashr(u, ci(23)), b.select(den, ci(23), ci(0))), ty)
    return n, b.fsub(b.bitcast(b.add(b.and_(u, ci(0x007FFFFF)), ci(_LOG_OFF)), ty), c(1.0))


def _log_split_avx512(e: IR, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """_log_split_bits's (n, f) from vgetexpps and vgetmantps (denormals included); also
    n = -inf for +-0 (f = 0 for +0, f = -2 for -0), n = inf and f = 0 for inf, f = NaN for
    negative x and NaN."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    width, mask_ty, rounding = _AVX512_MASKED[ty.count]
    ones, cur = ir.Constant(mask_ty, -1), [ir.Constant(I32, r) for r in rounding]
    # Mantissa in [1, 2), NaN for a negative sign (imm 8); halved from 4/3 on, as the bits split.
    m = e.intrinsic(f"x86.avx512.mask.getmant.ps.{width}",
                    [x, ir.Constant(I32, 8), c(0.0), ones, *cur], tys=[])
    n = e.intrinsic(f"x86.avx512.mask.getexp.ps.{width}", [x, c(0.0), ones, *cur], tys=[])
    top = b.fcmp_ordered(">=", m, b.bitcast(e.const(_ints(e, x), _LOG_OFF + (1 << 23)), ty))
    m = b.select(top, b.fmul(m, c(0.5)), m)
    return b.select(top, b.fadd(n, c(1.0)), n), b.fsub(m, c(1.0))


def _log(e: IR, x: ir.Value, how: str) -> ir.Value:
    """log of f32 ``x`` with x split as ``how`` says ("avx512" for vectors of 4, 8 or 16)."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    n, f = (_log_split_avx512 if how == "avx512" else _log_split_bits)(e, x)
    # ln2's parts are both positive, so n = +-inf gives +-inf (never inf - inf).
    y = e.fma(b.fmul(f, f), e.poly(f, _LOG_Q), b.fmul(n, c(_LOG_LN2_LO)))
    out = e.fma(n, c(_LOG_LN2_HI), b.fadd(f, y))
    if how == "avx512":  # the split's special values carry through: log(+-0) = -inf, ...
        return out
    # Special values: log(+-0) = -inf, log(x<0) = NaN, log(inf) = inf, NaN stays NaN.
    it = _ints(e, x)
    ok = b.icmp_unsigned("<", b.sub(b.bitcast(x, it), e.const(it, 1)), e.const(it, 0x7F7FFFFF))
    special = e.fsel("<", x, c(0.0), c(float("nan")), x)
    special = e.fsel("==", x, c(0.0), c(float("-inf")), special)
    return b.select(ok, out, special)


def log(e: IR, x: ir.Value) -> ir.Value:
    """Natural logarithm (f32 polynomial; f64: mathf64). With AVX-512 through an
    internal function whose vector variants split x with vgetexpps/vgetmantps; the scalar one
    (remainder loops) splits the bits, to the same values."""
    if not _is_f32(x):
        return mathf64.log(e, x)
    if log_strategy() != "avx512":
        return _log(e, x, "bits")
    vector = lambda v: getattr(v.type, "count", 0) in _AVX512_MASKED  # noqa: E731
    return widened(e, "logf", x, lambda fe, v: _log(fe, v, "avx512" if vector(v) else "bits"))


def _exp_reduce(e: IR, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(k, r) with y = n ln2 + r, |r| <= ln2/2, and n held in k's low bits (shifted left by 23,
    they are n's exponent bits). Valid for |y| < 2**22; ln2 in two parts (Cody-Waite)."""
    b, ty = e.b, y.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    k = e.fma(y, c(_LOG2E), c(ROUND_SHIFT))
    n = b.fsub(k, c(ROUND_SHIFT))
    return k, e.fma(n, c(-_LN2_LO), e.fma(n, c(-_LN2_HI), y))


def tanh(e: IR, x: ir.Value, how: str | None = None) -> ir.Value:
    """Hyperbolic tangent (f32: ``how`` "table", piecewise polynomials, see mathtable, or "exp",
    see mathtanh; by default the table where a lookup is one permute (AVX-512); f64: mathf64)."""
    if not _is_f32(x):
        return mathf64.tanh(e, x)
    if (how or ("table" if mathtable.strategy() == "avx512" else "exp")) == "exp":
        return mathtanh.tanh(e, x)
    return mathtable.call(e, mathtable.TANH, x)


def sigmoid(e: IR, x: ir.Value) -> ir.Value:
    """1 / (1 + exp(-x)) (f32: one rounded division, see below; f64: mathf64, the same way)."""
    if not _is_f32(x):
        return mathf64.sigmoid(e, x)
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    # With exp(-x) = 2**n * p: 1 / (1 + 2**n p) = 2**(2-n) / (2**(2-n) + 4p), exactly. 2**(2-n)
    # stays normal for n in [-26, 128], so denormal results round once, at the division, and
    # exp's overflow never happens. sigmoid rounds to 1 beyond 18 (clamp, which keeps NaN); below
    # -88.72283 the reference's exp(-x) overflows and it returns 0.
    t = e.fsel(">", x, c(18.0), c(18.0), x)
    k, r = _exp_reduce(e, b.fneg(t))
    p4 = e.poly(r, [4.0 * v for v in _EXP6])  # 4 p exactly: each step scales by 4
    it = _ints(e, x)
    s = b.bitcast(b.sub(e.const(it, 129 << 23), b.shl(b.bitcast(k, it), e.const(it, 23))), ty)
    out = b.fdiv(s, b.fadd(s, p4))
    return e.fsel("<", x, c(-88.72283172607422), c(0.0), out)


def erf(e: IR, x: ir.Value) -> ir.Value:
    """The error function (f32: piecewise polynomials from tables, see mathtable; f64: mathf64)."""
    if not _is_f32(x):
        return mathf64.erf(e, x, scale_strategy())
    return mathtable.call(e, mathtable.ERF, x)


# atan(t) = t + t * z * P(z), z = t**2, t in [-1, 1]; P (degree 7) fitted for relative error
# (Lawson, coefficients rounded to f32 one at a time; benchmarks/fit_tables.py atan).
_ATAN_P = (0.002947751199826598, -0.01649257354438305, 0.043445177376270294,
           -0.07574962079524994, 0.10678290575742722, -0.14214658737182617, 0.199942946434021,
           -0.333331823348999)


def atan(e: IR, x: ir.Value) -> ir.Value:
    """Arc tangent (f32: a polynomial on |t| <= 1, t = |x| or -1/|x|; f64: mathf64)."""
    if not _is_f32(x):
        return mathf64.atan(e, x)
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ax = e.fabs(x)
    # Beyond 1, atan(|x|) = pi/2 + atan(-1/|x|): one division, the only rounding before the
    # polynomial. NaN stays in t; inf gives -0.0, so pi/2.
    big = b.fcmp_ordered(">", ax, c(1.0))
    t = b.select(big, b.fdiv(c(-1.0), ax), ax)
    z = b.fmul(t, t)
    r = e.fma(b.fmul(e.poly(z, _ATAN_P), z), t, t)
    # pi/2 in two f32 parts (mathtrig's), the low one added to the small term first.
    r = b.select(big, b.fadd(c(mathtrig.PIO2[0]), b.fadd(r, c(mathtrig.PIO2[1]))), r)
    return e.copysign(r, x)


MATH = {"exp": exp, "log": log, "tanh": tanh, "sigmoid": sigmoid, "erf": erf, "atan": atan,
        "sin": mathtrig.sin, "cos": mathtrig.cos}
