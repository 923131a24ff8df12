"""f32 erf as piecewise polynomials, coefficients looked up per lane from 16-entry tables.

|x| is cut into 16 intervals of width 1/4 over [0, 3.9375] (erf rounds to 1 beyond 3.92): with
s = 4|x|, the interval is n = floor(s) and its local variable u = s - n, both exact. There

    erf(|x|) = fma(u, acc(u), fma(u, M[n], C[n])),   acc(u) = a_4 u**4 + ... + a_0 (Horner)

with C[n] the value at the interval's left end, so nothing cancels, and interval 0 computing
|x| + |x| * acc(u) (C = 0, M = 1/4), which keeps relative accuracy down to denormals. The tables
come from ``benchmarks/fit_tables.py erf``; measured error 1.09 ulp on dense samples (the stated
bound is mathlib's). That is about 20 vector operations per 16 lanes, no exp, against about 36 for
a two-branch formula with an exp, and it makes erf memory-bound rather than compute-bound.

A lookup is one instruction per coefficient with AVX-512 (``vpermps``: each lane picks a table
entry by the low 4 bits of its index), two ``vpermps`` and a blend with AVX2, and one load per
lane otherwise; scalars load from a constant array. Every strategy computes the same values bit
for bit, and indices are masked, so a NaN's index stays in bounds.

The loop vectorizer cannot turn a scalar table load into a permute (it would gather), so kernels
call an internal scalar function whose vector variants (vector-function-abi-variant) do the
lookups; the variants are ``alwaysinline`` and jit inlines them after the O3 pipeline, once the
vectorizer has put the calls in. Vector code (the matmul epilogue) computes inline.
"""

from __future__ import annotations

from collections.abc import Sequence

import llvmlite.ir as ir

from tcp_rules.codegen import jit
from tcp_rules.codegen.irbase import F32, I32, I64, IR, element, like, offer_variants

# Rows M, C, a_4 .. a_0; column n is interval n (benchmarks/fit_tables.py erf, degree 4).
ERF_TABLE = (
    (0.25, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
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
_SHIFT = 12582912.0  # 1.5 * 2**23: adding it puts an integer-valued float's value in low bits
STRATEGIES = ("avx512", "avx2", "lanes")
_VFS = (4, 8, 16)  # vector variants offered to the loop vectorizer


def strategy() -> str:
    """The lookup strategy for this host's vectors."""
    if jit.has_feature("avx512f"):
        return "avx512"
    return "avx2" if jit.has_feature("avx2") else "lanes"


def _shuffle(e: IR, a: ir.Value, b: ir.Value, lanes: Sequence[int]) -> ir.Value:
    return e.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, len(lanes)), list(lanes)))


def _resize(e: IR, v: ir.Value, n: int) -> ir.Value:
    """The first ``n`` lanes of ``v``, padded with copies of lane 0 when ``v`` is shorter."""
    count = v.type.count
    if count == n:
        return v
    return _shuffle(e, v, v, [i if i < count else 0 for i in range(n)])


def _table_global(e: IR, name: str, table: Sequence[Sequence[float]]) -> ir.GlobalVariable:
    found = e.module.globals.get(name)
    if isinstance(found, ir.GlobalVariable):
        return found
    ty = ir.ArrayType(ir.ArrayType(F32, 16), len(table))
    g = ir.GlobalVariable(e.module, ty, name)
    g.linkage, g.global_constant, g.unnamed_addr = "internal", True, True
    g.initializer = ir.Constant(ty, [ir.Constant(ty.element, list(row)) for row in table])
    return g


def _load(e: IR, table: ir.GlobalVariable, row: int, idx: ir.Value) -> ir.Value:
    """table[row][idx & 15] for a scalar i32 index."""
    i = e.b.zext(e.b.and_(idx, ir.Constant(I32, 15)), I64)
    ptr = e.b.gep(table, [ir.Constant(I64, 0), ir.Constant(I64, row), i], inbounds=True)
    return e.b.load(ptr, typ=F32)


def _permute8(e: IR, row: Sequence[float], idx: ir.Value) -> ir.Value:
    """AVX2: the 16-entry lookup for 8 lanes, as two 8-entry permutes and a blend on bit 3."""
    tabs = [ir.Constant(ir.VectorType(F32, 8), list(row[h:h + 8])) for h in (0, 8)]
    lo, hi = (e.intrinsic("x86.avx2.permps", [t, idx], tys=[]) for t in tabs)
    high = e.b.icmp_unsigned("!=", e.b.and_(idx, e.const(idx.type, 8)), e.const(idx.type, 0))
    return e.b.select(high, hi, lo)


def lookup(e: IR, table: ir.GlobalVariable, row: int, values: Sequence[float], idx: ir.Value,
           how: str) -> ir.Value:
    """Entry ``idx & 15`` of a 16-entry table row, per lane of ``idx`` (or for a scalar)."""
    if not isinstance(idx.type, ir.VectorType):
        return _load(e, table, row, idx)
    n = idx.type.count
    if how == "avx512":
        tab = ir.Constant(ir.VectorType(F32, 16), list(values))
        return _resize(e, e.intrinsic("x86.avx512.permvar.sf.512", [tab, _resize(e, idx, 16)],
                                      tys=[]), n)
    if how == "avx2":  # 8 lanes at a time
        if n > 8:
            lo, hi = (lookup(e, table, row, values, _shuffle(e, idx, idx, range(h, h + n // 2)),
                             how) for h in (0, n // 2))
            return _shuffle(e, lo, hi, range(n))
        return _resize(e, _permute8(e, values, _resize(e, idx, 8)), n)
    vec: ir.Value = ir.Constant(ir.VectorType(F32, n), ir.Undefined)
    for lane in range(n):
        at = ir.Constant(I32, lane)
        vec = e.b.insert_element(vec, _load(e, table, row, e.b.extract_element(idx, at)), at)
    return vec


def erf_f32(e: IR, x: ir.Value, how: str) -> ir.Value:
    """erf of f32 ``x`` (a scalar or a vector) by the table; ``how`` picks the vector lookup."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    ax = e.fabs(x)
    t = e.fsel(">", ax, c(ERF_TOP), c(ERF_TOP), ax)  # clamps infinities; NaN stays NaN
    s = b.fmul(t, c(4.0))
    n = e.intrinsic("floor", [s])
    idx = b.bitcast(b.fadd(n, c(_SHIFT)), like(ty, I32))  # n in the low bits, masked by lookups
    u = b.fsub(s, n)
    table = _table_global(e, "__tcpr_erf_table", ERF_TABLE)
    coef = [lookup(e, table, r, row, idx, how) for r, row in enumerate(ERF_TABLE)]
    acc = coef[2]
    for a in coef[3:]:
        acc = e.fma(acc, u, a)
    r = e.fma(u, acc, e.fma(u, coef[0], coef[1]))
    return e.copysign(r, x)


def _erf_fn(e: IR, ty: ir.Type) -> ir.Function:
    """The internal erf function on ``ty``: scalar (not inlined, so that the vectorizer sees a
    call), with vector variants (inlined after vectorization)."""
    vector = isinstance(ty, ir.VectorType)
    name = f"__tcpr_erff_v{ty.count}" if vector else "__tcpr_erff"
    found = e.module.globals.get(name)
    if isinstance(found, ir.Function):
        return found
    fn = ir.Function(e.module, ir.FunctionType(ty, [ty]), name=name)
    fn.linkage = "internal"
    for attr in ("readnone", "nounwind", "alwaysinline" if vector else "noinline"):
        fn.attributes.add(attr)
    fe = IR(ir.IRBuilder(fn.append_basic_block("entry")))
    fe.b.ret(erf_f32(fe, fn.args[0], strategy() if vector else "load"))
    if not vector:
        offer_variants(e.module, fn, [_erf_fn(e, ir.VectorType(F32, vf)) for vf in _VFS])
    return fn


def erf(e: IR, x: ir.Value) -> ir.Value:
    """erf of f32 ``x``: a call the loop vectorizer widens (scalars), inline code (vectors)."""
    assert element(x.type) == F32
    if isinstance(x.type, ir.VectorType):
        return erf_f32(e, x, strategy())
    return e.b.call(_erf_fn(e, x.type), [x])
