"""f32 erf and tanh as piecewise polynomials, coefficients looked up per lane from tables.

|x| is cut into intervals, each with its own polynomial in a local variable u >= 0 that is exact:

- erf: 16 intervals of width 1/4 over [0, 3.9375] (erf rounds to 1 from 3.92 on); with
  s = 4|x|, interval n = floor(s) and u = s - n.
- tanh: 23 intervals, [0, 1/4), four per binade from 1/4 to 8, [8, 10), and 10 (|x| clamped
  there, where tanh is 1: a constant); the exponent and top two mantissa bits of |x| give n, and
  u = |x| - L (L the interval's start: |x| with the other mantissa bits cleared, or 0 in
  interval 0; exact as L <= |x| < 2L).

In interval n, with C[n] the function at its start (so nothing cancels), except in interval 0,
which starts at 0 and takes |x| in C's place, so that it computes |x| + u * acc(u) (u a multiple
of |x| by a power of two) and keeps relative accuracy down to denormals:

    f(|x|) = fma(u, acc(u), C[n] or |x|),   acc(u) = a_d u**d + ... + a_0 (Horner)

The tables come from ``benchmarks/fit_tables.py``; mathlib states the measured errors and bounds.
That is about 20 vector operations per 16 lanes and no exp (erf: 36 before, with a two-branch
formula around an exp), so these functions are memory-bound rather than compute-bound.

A lookup is one instruction per coefficient with AVX-512 (``vpermps`` for 16 entries, each lane
picking by the low 4 bits of its index; ``vpermi2ps`` for 32), 8-entry ``vpermps`` and blends
with AVX2, and one load per lane otherwise; scalars load from a constant array. Every strategy
computes the same values bit for bit, and indices are masked, so a NaN's index stays in bounds.
mathlib takes the tanh table only with AVX-512: elsewhere its 23 entries cost three permutes and
blends per coefficient, or loads, and tanh through exp is faster (mathtanh).

The loop vectorizer cannot turn a scalar table load into a permute (it would gather), so kernels
call an internal scalar function whose vector variants (vector-function-abi-variant) do the
lookups (``irbase.widened``); the variants are ``alwaysinline`` and jit inlines them after the O3
pipeline, once the vectorizer has put the calls in. Vector code (the matmul epilogue) computes
inline.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import llvmlite.ir as ir

from tcp_rules.codegen import jit
from tcp_rules.codegen.irbase import F32, I32, I64, IR, ROUND_SHIFT, element, like, widened

# Rows C, a_4 .. a_0; column n is interval n (benchmarks/fit_tables.py erf).
ERF_TABLE = (
    (0.0, 0.27632638812065125, 0.5204998850822449, 0.7111556529998779, 0.8427007794380188,
     0.9229001402854919, 0.9661051630973816, 0.9866716861724854, 0.9953222870826721,
     0.9985373020172119, 0.9995930194854736, 0.9998993873596191, 0.9999778866767883,
     0.9999957084655762, 0.9999992847442627, 0.9999998807907104),
    (0.00010362825560150668, 4.5347038394538686e-05, -2.8260366889298894e-05,
     -7.479385385522619e-05, -5.2871997468173504e-05, -3.5773282434092835e-05,
     -1.0676475540094543e-05, 3.4089794098690618e-06, 8.59392116581148e-07,
     -1.3567569112638012e-06, 1.8726328562479466e-05, -3.0640010209026514e-06,
     1.2257329217391089e-05, -5.5947029977687635e-06, -1.4215759620128665e-05,
     1.290596992475912e-05),
    (7.572781669296091e-06, 0.0005326330428943038, 0.0007559373043477535, 0.0006250024889595807,
     0.00024307178682647645, -2.737249633355532e-05, -0.00016598882211837918,
     -0.000173159409314394, -0.00010531231964705512, -4.8241061449516565e-05,
     -6.820529233664274e-05, 1.8731324757936818e-07, -3.286993887741119e-05,
     1.3416756701190025e-05, 3.541339174262248e-05, -2.3813532607164234e-05),
    (-0.005879968870431185, -0.004848842043429613, -0.002310569863766432, 0.0003918811271432787,
     0.002182214753702283, 0.0026137675158679485, 0.002155700698494911, 0.0013939699856564403,
     0.0007282202714122832, 0.0003173884470015764, 0.00016144652909133583,
     3.224555621272884e-05, 3.769392060348764e-05, -9.601286365068518e-06,
     -3.054093394894153e-05, 1.545110353617929e-05),
    (3.8777164945713594e-07, -0.0165589340031147, -0.027456507086753845, -0.030128713697195053,
     -0.025950662791728973, -0.01847543567419052, -0.011144363321363926, -0.005766679998487234,
     -0.0025744291488081217, -0.0009966982761397958, -0.00035156519152224064,
     -9.695551852928475e-05, -3.520016252878122e-05, -1.417814928572625e-06,
     9.959463568520732e-06, -4.241772330715321e-06),
    (0.03209478408098221, 0.2650032937526703, 0.21969515085220337, 0.1607317477464676,
     0.10377760976552963, 0.059129808098077774, 0.02973181940615177, 0.013193024322390556,
     0.005165636073797941, 0.0017846350092440844, 0.000545984716154635,
     0.00014609951176680624, 3.595222005969845e-05, 6.734238922945224e-06,
     -4.2475193140489864e-08, 5.921863817093254e-07),
)
ERF_TOP = 3.9375  # |x| is clamped here: erf rounds to 1 from 3.92 on
# Rows C, a_5 .. a_0; column n is interval n (benchmarks/fit_tables.py tanh).
TANH_TABLE = (
    (0.0, 0.24491865932941437, 0.3027097284793854, 0.35835739970207214, 0.4115700423717499,
     0.46211716532707214, 0.5545997023582458, 0.6351489424705505, 0.7039055824279785,
     0.7615941762924194, 0.8482836484909058, 0.9051482677459717, 0.9413755536079407,
     0.9640275835990906, 0.9866142868995667, 0.9950547814369202, 0.9981778860092163,
     0.9993293285369873, 0.9999092221260071, 0.9999877214431763, 0.9999983310699463,
     0.9999997615814209, 1.0),
    (-0.03735059127211571, -182.11427307128906, -29.810577392578125, 47.31001663208008,
     -457.1700134277344, 6.139768600463867, -10.760998725891113, -5.3321404457092285,
     -11.540247917175293, 0.18914566934108734, 0.08295542746782303, 0.1224137544631958,
     0.12740468978881836, -0.0002557666157372296, -0.0020210284274071455, 0.003392567625269294,
     -0.001616265857592225, 3.638942143879831e-05, 3.350874612806365e-05, 1.963790964509826e-05,
     -1.2086105016351212e-05, -5.869844699191162e-07, 0.0),
    (0.1433449387550354, 33.39192581176758, 5.620135307312012, -8.862133979797363, 85.7022933959961,
     -2.2702410221099854, 3.97373104095459, 1.93684983253479, 4.2744975090026855,
     -0.17390650510787964, -0.0717441588640213, -0.09042663127183914, -0.09095867723226547,
     0.0043588257394731045, 0.004947970621287823, -0.004317589104175568, 0.002717450726777315,
     -4.0469527448294684e-05, -9.119201422436163e-05, -5.764987872680649e-05, 3.642939554993063e-05,
     3.4029849302896764e-06, 0.0),
    (-0.0012515090638771653, -2.1248939037323, -0.2337183803319931, 0.7922715544700623,
     -5.856389045715332, 0.466922402381897, -0.4287668764591217, -0.18169012665748596,
     -0.5486102104187012, 0.06362789124250412, 0.002357694786041975, -0.0001643701398279518,
     0.0031536712776869535, -0.01757507026195526, -0.009251907467842102, -8.111484930850565e-05,
     -0.002469913801178336, -0.0002214887790614739, 6.635704630753025e-05, 5.995068931952119e-05,
     -4.1647010220913216e-05, -7.378946065728087e-06, 0.0),
    (-0.33326226472854614, -0.18721903860569, -0.20686066150665283, -0.1988118290901184,
     0.0591263473033905, -0.11275617778301239, 0.018898554146289825, 0.060051992535591125,
     0.12130572646856308, 0.09894542396068573, 0.10636229068040848, 0.0845937430858612,
     0.059460561722517014, 0.04201863706111908, 0.0173371322453022, 0.005680351983755827,
     0.0027448467444628477, 0.0007814772543497384, 5.596158734988421e-05, -1.885273559310008e-05,
     2.3250346202985384e-05, 7.43340160624939e-06, 0.0),
    (-1.480327455283259e-06, -0.23116567730903625, -0.27515721321105957, -0.31204140186309814,
     -0.34471505880355835, -0.36292314529418945, -0.38509151339530945, -0.3794552683830261,
     -0.35628941655158997, -0.31957685947418213, -0.23775677382946014, -0.16337719559669495,
     -0.10693700611591339, -0.06809820979833603, -0.02627362497150898, -0.009723729453980923,
     -0.0036731066647917032, -0.0013148399302735925, -0.0001664192823227495, -1.633141073398292e-05,
     -8.25756615085993e-06, -3.6116216506343335e-06, 0.0),
    (5.034882288867948e-09, 0.9400191307067871, 0.9083678126335144, 0.8715783953666687,
     0.8306254148483276, 0.7864426970481873, 0.6924306750297546, 0.5965915322303772,
     0.5045292973518372, 0.41996848583221436, 0.2804124057292938, 0.1807025820016861,
     0.11380774527788162, 0.07065033167600632, 0.02659383788704872, 0.009862035512924194,
     0.0036425527650862932, 0.0013388360384851694, 0.0001802913029678166, 2.387071799603291e-05,
     3.748925337276887e-06, 9.607498441255302e-07, 0.0),
)
TANH_TOP = 10.0  # tanh rounds to 1 from 9.01 on; [10, 12) is an interval where it is 1 exactly
TANH_STARTS = (0.0, *(2.0 ** (e - 2) * (1 + q / 4) for e in range(5) for q in range(4)), 8.0,
               TANH_TOP)
_TANH_BIAS = (125 << 2) - 1  # the exponent and two mantissa bits of 1/4 (interval 1)
STRATEGIES = ("avx512", "avx2", "lanes")

# (u, the table index in the low bits, whether in interval 0) of the clamped |x|
Interval = Callable[[IR, ir.Value], tuple[ir.Value, ir.Value, ir.Value]]


@dataclass(frozen=True)
class Piecewise:
    """A function evaluated by table: ``interval`` maps the clamped |x| to (u, index, first)."""

    name: str
    top: float
    rows: tuple[tuple[float, ...], ...]  # C, a_d .. a_0, padded to 16 or 32 entries
    interval: Interval


# The features each vector strategy needs (lanes: none, one load per lane on any target).
NEEDS = {"avx512": ("avx512f",), "avx2": ("avx2",), "lanes": ()}


def strategy(target: jit.Target | None = None) -> str:
    """The lookup strategy for the target's vectors (default: the current target)."""
    t = target or jit.target()
    return next(how for how in STRATEGIES if all(t.has(f) for f in NEEDS[how]))


def _pad(row: Sequence[float]) -> tuple[float, ...]:
    return (*row, *[0.0] * ((16 if len(row) <= 16 else 32) - len(row)))


def _shuffle(e: IR, a: ir.Value, b: ir.Value, lanes: Sequence[int]) -> ir.Value:
    return e.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, len(lanes)), list(lanes)))


def _resize(e: IR, v: ir.Value, n: int) -> ir.Value:
    """The first ``n`` lanes of ``v``, padded with copies of lane 0 when ``v`` is shorter."""
    count = v.type.count
    if count == n:
        return v
    return _shuffle(e, v, v, [i if i < count else 0 for i in range(n)])


def _load(e: IR, values: tuple[float, ...], idx: ir.Value) -> ir.Value:
    """values[idx mod len(values)] for a scalar i32 index, from a constant array."""
    name = "__tcpr_table." + hashlib.sha256(repr(values).encode()).hexdigest()[:16]
    table = e.module.globals.get(name)
    if not isinstance(table, ir.GlobalVariable):
        ty = ir.ArrayType(F32, len(values))
        table = ir.GlobalVariable(e.module, ty, name)
        table.linkage, table.global_constant, table.unnamed_addr = "internal", True, True
        table.initializer = ir.Constant(ty, list(values))
    i = e.b.zext(e.b.and_(idx, ir.Constant(I32, len(values) - 1)), I64)
    ptr = e.b.gep(table, [ir.Constant(I64, 0), i], inbounds=True)
    return e.b.load(ptr, typ=F32)


def _avx2(e: IR, values: tuple[float, ...], idx: ir.Value) -> ir.Value:
    """AVX2, 8 lanes: 8-entry permutes, halves of larger tables picked by the index's bits."""
    if len(values) == 8:
        tab = ir.Constant(ir.VectorType(F32, 8), list(values))
        return e.intrinsic("x86.avx2.permps", [tab, idx], tys=[])
    h = len(values) // 2
    high = e.b.icmp_unsigned("!=", e.b.and_(idx, e.const(idx.type, h)), e.const(idx.type, 0))
    return e.b.select(high, _avx2(e, values[h:], idx), _avx2(e, values[:h], idx))


def lookup(e: IR, values: tuple[float, ...], idx: ir.Value, how: str) -> ir.Value:
    """Entry ``idx mod len(values)`` (16 or 32 entries) per lane of ``idx``, or for a scalar."""
    if not isinstance(idx.type, ir.VectorType):
        return _load(e, values, idx)
    n = idx.type.count
    if how == "avx512":
        vec16 = ir.VectorType(F32, 16)
        i16 = _resize(e, idx, 16)
        if len(values) == 16:
            out = e.intrinsic("x86.avx512.permvar.sf.512", [ir.Constant(vec16, list(values)), i16],
                              tys=[])
        else:  # bit 4 of the index picks the second half
            lo, hi = (ir.Constant(vec16, list(values[h:h + 16])) for h in (0, 16))
            out = e.intrinsic("x86.avx512.vpermi2var.ps.512", [lo, i16, hi], tys=[])
        return _resize(e, out, n)
    if how == "avx2":
        if n > 8:
            lo, hi = (lookup(e, values, _shuffle(e, idx, idx, range(h, h + n // 2)), how)
                      for h in (0, n // 2))
            return _shuffle(e, lo, hi, range(n))
        return _resize(e, _avx2(e, values, _resize(e, idx, 8)), n)
    vec: ir.Value = ir.Constant(ir.VectorType(F32, n), ir.Undefined)
    for lane in range(n):
        at = ir.Constant(I32, lane)
        vec = e.b.insert_element(vec, _load(e, values, e.b.extract_element(idx, at)), at)
    return vec


def _erf_interval(e: IR, t: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    s = e.b.fmul(t, e.const(t.type, 4.0))
    n = e.intrinsic("floor", [s])
    idx = e.b.bitcast(e.b.fadd(n, e.const(t.type, ROUND_SHIFT)), like(t.type, I32))  # n, low bits
    return e.b.fsub(s, n), idx, e.b.fcmp_ordered("==", n, e.const(t.type, 0.0))


def _tanh_interval(e: IR, t: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    b, it = e.b, like(t.type, I32)
    bits = b.bitcast(t, it)
    q = b.sub(b.lshr(bits, e.const(it, 21)), e.const(it, _TANH_BIAS))
    idx = b.select(b.icmp_signed("<", q, e.const(it, 0)), e.const(it, 0), q)  # [0, 1/4)
    start = b.bitcast(b.and_(bits, e.const(it, -1 << 21)), t.type)  # two mantissa bits kept
    first = b.icmp_signed("==", idx, e.const(it, 0))
    return b.fsub(t, b.select(first, e.const(t.type, 0.0), start)), idx, first


ERF = Piecewise("erf", ERF_TOP, tuple(_pad(r) for r in ERF_TABLE), _erf_interval)
TANH = Piecewise("tanh", TANH_TOP, tuple(_pad(r) for r in TANH_TABLE), _tanh_interval)


def evaluate(e: IR, fn: Piecewise, x: ir.Value, how: str) -> ir.Value:
    """``fn`` of f32 ``x``, a scalar (table loads) or a vector (``how``, one of STRATEGIES)."""
    ty = x.type
    ax = e.fabs(x)
    t = e.fsel(">", ax, e.const(ty, fn.top), e.const(ty, fn.top), ax)  # NaN stays NaN
    u, idx, first = fn.interval(e, t)
    c, *acc = (lookup(e, row, idx, how) for row in fn.rows)
    a = acc[0]
    for k in acc[1:]:
        a = e.fma(a, u, k)
    base = e.b.select(first, t, c)  # interval 0 starts at 0, where the function is 0
    return e.copysign(e.fma(u, a, base), x)  # odd functions: -0.0 and NaN kept


def call(e: IR, fn: Piecewise, x: ir.Value) -> ir.Value:
    """``fn`` of f32 ``x``: a call the loop vectorizer widens (scalars), inline code (vectors)."""
    assert element(x.type) == F32
    return widened(e, f"{fn.name}f", x, lambda fe, v: evaluate(
        fe, fn, v, strategy() if isinstance(v.type, ir.VectorType) else "load"))
