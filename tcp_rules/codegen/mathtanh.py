"""f32 tanh through exp: the formula for targets where a table lookup is not one instruction.

mathtable's tanh looks up 7 coefficients per lane; with AVX-512 that is one ``vpermps`` each, but
AVX2 needs several permutes and blends per coefficient (a 23-entry table in 8-entry halves) and
other targets one load per lane, which made tanh three times the cost of exp there. So without
AVX-512, for t = |x|:

- t < SPLIT: tanh(t) = t + t * z * P(z), z = t**2, P of degree 5 (exact at zeros and
  denormals: the correction underflows and t remains);
- t >= SPLIT: with exp(2t) = 2**n p, tanh(t) = 1 - 2 / (exp(2t) + 1) = 1 - 2**(1-n) / (p + 2**-n).
  n >= 2 there, so q = 2**(1-n) / (p + 2**-n) <= 0.37 and the errors of p, of the sum and of the
  division reach the result scaled by q; 2**-n is exact and the subtraction rounds once.

p = exp(2r) on |r| <= ln2/4, where r = t - n ln2/2 with ln2/2 rounded to f32: its error, at
most n * 9.6e-10 absolute, is scaled by q <= 2**(1-n) in the result. P and p's polynomial come
from ``benchmarks/fit_tables.py tanh-near0`` and ``tanh-exp``. t is clamped at mathtable's
TANH_TOP (tanh rounds to 1 from 9.0109 on; NaN stays NaN), so 2**-n stays normal. Both branches
are computed and one is selected (no branches, so the loop vectorizer widens the code).
Measured on znver3 (AVX2): at most 1.067 ulp over every f32 (benchmarks/ulp_sweep.py tanh), and
about 1.4 times exp's time on 8192x768, where the table took 2.7 to 3.1 times.
"""

from __future__ import annotations

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import I32, IR, ROUND_SHIFT, like
from tcp_rules.codegen.mathtable import TANH_TOP

SPLIT = 0.75
# tanh(t) = t + t * z * P(z) on [0, SPLIT], from the highest degree down
NEAR0_P = (0.0017537513049319386, -0.00768669368699193, 0.021471383050084114,
           -0.05389862135052681, 0.13332776725292206, -0.33333319425582886)
# exp(2r) on |r| <= ln2/4, from the highest degree down (the last two exact)
EXP2_P = (0.08809518069028854, 0.2678205370903015, 0.6667112708091736, 1.333321213722229,
          1.9999995231628418, 2.0, 1.0)
_TWO_LOG2E = 2.8853900817779268  # 2 / ln 2
_LN2_HALF = 0.3465735912322998  # ln2 / 2 rounded to f32


def tanh(e: IR, x: ir.Value) -> ir.Value:
    """tanh of f32 ``x`` (scalar or vector) by the near-0 polynomial or through exp(2|x|)."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ax = e.fabs(x)
    t = e.fsel(">", ax, c(TANH_TOP), c(TANH_TOP), ax)
    z = b.fmul(t, t)
    near0 = e.fma(b.fmul(e.poly(z, NEAR0_P), z), t, t)
    k = e.fma(t, c(_TWO_LOG2E), c(ROUND_SHIFT))  # n = round(2t / ln2) in k's low bits
    r = e.fma(b.fsub(k, c(ROUND_SHIFT)), c(-_LN2_HALF), t)
    p = e.poly(r, EXP2_P)
    it = like(ty, I32)
    s = b.bitcast(b.sub(e.const(it, 127 << 23), b.shl(b.bitcast(k, it), e.const(it, 23))), ty)
    q = b.fdiv(b.fadd(s, s), b.fadd(p, s))  # 2**(1-n) / (p + 2**-n), s = 2**-n
    mag = b.bitcast(e.fsel("<", t, c(SPLIT), near0, b.fsub(c(1.0), q)), it)
    # mag's sign bit is clear (or it is NaN): or-ing x's sign bit (x ^ |x|) is copysign in two
    # operations rather than three; it keeps -0.0
    return b.bitcast(b.or_(mag, b.xor(b.bitcast(x, it), b.bitcast(ax, it))), ty)
