"""f32 and f64 sin and cos in LLVM IR: inline polynomials, and libm for arguments beyond a bound.

mathlib's table gives their accuracy (f32; f64: mathf64's, whose ``sincos_parts`` the f64
functions take here).
"""

from __future__ import annotations

import llvmlite.ir as ir

from tcp_rules.codegen import mathf64
from tcp_rules.codegen.irbase import (
    F32,
    I1,
    I8,
    IR,
    ROUND_SHIFT,
    VARIANT_WIDTHS,
    element,
    like,
    offer_variants,
)


def _is_f32(x: ir.Value) -> bool:
    return element(x.type) == F32


# Branch-free for |x| <= TRIG_BOUND: x = n pi/2 + r with pi/2 in three f32 parts (FMA Cody-Waite),
# Cephes polynomials on |r| <= pi/4, quadrant by selects. Beyond the bound the reduction loses
# accuracy (an exact one for all f32 needs a table of 2/pi's bits: gathers on every element), so
# libm takes those lanes. A branch per element would not do: the loop vectorizer if-converts
# every branch in a loop body (both sides always run). So a kernel computes the inline fast path
# and ORs "beyond the bound" into a flag (a reduction to the vectorizer); if the flag is set at the
# end, it reruns its range with a precise version (emit.emit_kernel). That version calls an
# internal function whose vector variants (vector-function-abi-variant) test "any lane beyond the
# bound" once per vector, and call libm for those lanes. The call per vector cost 5-10% at 16M
# elements when the stack is 64-byte aligned, ~40% when spills split cache lines.
TRIG_BOUND = 2.0 ** 19
PIO2 = (1.5707963705062866, -4.371138828673793e-08, -1.7151245005182182e-15)
_SIN_P = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
_COS_P = (2.443315711809948e-05, -1.388731625493765e-03, 4.166664568298827e-02)


def _sincos_parts(e: IR, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(k, sin r, cos r) for f32 ``x`` = n pi/2 + r, n in k's low bits: see quadrant."""
    b, ty = e.b, x.type
    c = lambda v: e.const(ty, v)  # noqa: E731
    a = e.fabs(x)  # sin(-x) = -sin(x): the sign goes back on at the end, so sin(-0.0) = -0.0
    k = e.fma(a, c(0.6366197723675814), c(ROUND_SHIFT))  # n = round(a * 2/pi) in k's low bits
    n = b.fsub(k, c(ROUND_SHIFT))
    r = e.fma(n, c(-PIO2[2]), e.fma(n, c(-PIO2[1]), e.fma(n, c(-PIO2[0]), a)))
    z = b.fmul(r, r)
    sin_r = e.fma(b.fmul(e.poly(z, _SIN_P), z), r, r)
    cos_r = e.fma(z, e.fma(z, e.poly(z, _COS_P), c(-0.5)), c(1.0))
    return k, sin_r, cos_r


def quadrant(e: IR, x: ir.Value, k: ir.Value, sin_r: ir.Value, cos_r: ir.Value,
             cos: bool) -> ir.Value:
    """sin or cos of ``x`` (f32 or f64) from |x| = n pi/2 + r: n in ``k``'s low bits, and
    sin r and cos r."""
    b, ty = e.b, x.type
    width = 32 if _is_f32(x) else 64
    it = like(ty, ir.IntType(width))
    ci = lambda v: e.const(it, v)  # noqa: E731
    q = b.bitcast(k, it)  # quadrant in the low two bits; cos(x) = sin(x + pi/2)
    q = b.add(q, ci(1)) if cos else q
    y = b.select(b.icmp_unsigned("==", b.and_(q, ci(1)), ci(0)), sin_r, cos_r)
    sign = b.shl(b.and_(q, ci(2)), ci(width - 2))
    sign = sign if cos else b.xor(sign, b.and_(b.bitcast(x, it), ci(-(1 << (width - 1)))))
    return b.bitcast(b.xor(b.bitcast(y, it), sign), ty)


def _sincos_fast(e: IR, x: ir.Value, cos: bool) -> ir.Value:
    """sin or cos of ``x``: f32 within 1.57 ulp for |x| <= TRIG_BOUND (every f32 checked), f64
    see mathf64; NaN for NaN and inf, garbage beyond the bound."""
    parts = _sincos_parts if _is_f32(x) else mathf64.sincos_parts
    return quadrant(e, x, *parts(e, x), cos)


def _trig_bound(ty: ir.Type) -> float:
    return TRIG_BOUND if element(ty) == F32 else mathf64.TRIG_BOUND


def _trig_fn(e: IR, cos: bool, ty: ir.Type) -> ir.Function:
    """The internal function computing sin or cos on ``ty`` (f32, f64 or a vector of them):
    the fast path, and libm for every lane when any |x| is beyond the type's bound."""
    libm = ("cos" if cos else "sin") + ("f" if element(ty) == F32 else "")
    base = "__tcpr_" + libm
    name = f"{base}_v{ty.count}" if isinstance(ty, ir.VectorType) else base
    found = e.module.globals.get(name)
    if isinstance(found, ir.Function):
        return found
    fn = ir.Function(e.module, ir.FunctionType(ty, [ty]), name=name)
    fn.linkage = "internal"
    for attr in ("readnone", "nounwind", "noinline"):  # errno from the libm path is never read
        fn.attributes.add(attr)
    fe = IR(ir.IRBuilder(fn.append_basic_block("entry")))
    x = fn.args[0]
    fast = _sincos_fast(fe, x, cos)
    big = fe.b.fcmp_ordered(">", fe.fabs(x), fe.const(ty, _trig_bound(ty)))
    vector = isinstance(ty, ir.VectorType)
    big_any = fe.intrinsic("vector.reduce.or", [big], ret=I1) if vector else big
    slow_bb, fast_bb = fn.append_basic_block("slow"), fn.append_basic_block("fast")
    fe.b.cbranch(big_any, slow_bb, fast_bb)
    fe.b.position_at_end(slow_bb)
    fe.b.ret(fe.b.select(big, fe.libm(libm, [x]), fast))
    fe.b.position_at_end(fast_bb)
    fe.b.ret(fast)
    if not vector:
        offer_variants(e.module, fn,
                       [_trig_fn(e, cos, ir.VectorType(ty, vf)) for vf in VARIANT_WIDTHS])
    return fn


def _trig(e: IR, x: ir.Value, cos: bool) -> ir.Value:
    if e.trig_flag is not None:  # the kernel reruns precisely if any argument is beyond the bound
        b = e.b
        big = b.fcmp_ordered(">", e.fabs(x), e.const(x.type, _trig_bound(x.type)))
        if isinstance(x.type, ir.VectorType):
            big = e.intrinsic("vector.reduce.or", [big], ret=I1)
        b.store(b.or_(b.load(e.trig_flag), b.zext(big, I8)), e.trig_flag)
        return _sincos_fast(e, x, cos)
    fn = e.b.function
    # Vector registers are spilled around the calls: aligned slots never split a cache line.
    fn.attributes.alignstack = max(fn.attributes.alignstack, 64)
    return e.b.call(_trig_fn(e, cos, x.type), [x])


def sin(e: IR, x: ir.Value) -> ir.Value:
    """Sine (polynomial, libm beyond TRIG_BOUND or mathf64.TRIG_BOUND for f64)."""
    return _trig(e, x, False)


def cos(e: IR, x: ir.Value) -> ir.Value:
    """Cosine (polynomial, libm beyond TRIG_BOUND or mathf64.TRIG_BOUND for f64)."""
    return _trig(e, x, True)
