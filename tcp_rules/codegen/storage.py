"""Conversions between a dtype's memory form and its register form.

f16 and bf16 live in memory as their 16 bits and in registers as f32, since every op on them
computes in f32 and rounds its result to storage (see types.DType). f16 converts with LLVM's
``fpext half`` and ``fptrunc ... to half`` where the CPU has instructions for them (x86 with F16C:
``vcvtph2ps``/``vcvtps2ph``, one each per vector; AArch64: ``fcvt``), and elsewhere with integer
and f32 operations only (``f16_strategy``): there LLVM's would become calls of ``__extendhfsf2`` /
``__truncsfhf2``, which the JIT cannot resolve. bf16 always converts with integer operations: it
has no LLVM conversion on most targets, and AVX512-BF16's ``vcvtneps2bf16`` flushes denormals.
Both give NumPy's bits (rounding to nearest even) for every value but NaNs, which stay NaNs of
their sign: x86's instructions quiet a signaling NaN, the integer operations keep its payload
(tests/test_codegen_storage.py). Everything here is branch-free and works lane by lane on
vectors, so loops over f16 data vectorize.

i1 lives in memory as a byte (NumPy's bool) and in registers as i1.
"""

from __future__ import annotations

import llvmlite.ir as ir

from tcp_rules.codegen import jit
from tcp_rules.codegen.irbase import F32, I16, I32, IR, like, mem_type
from tcp_rules.ops.movement import literal_array
from tcp_rules.types import DType

# f16 -> f32: the 15 magnitude bits shifted into f32's position are the right significand and an
# exponent 112 too small; multiplying by 2**112 fixes it, exactly, for normals and denormals.
_F16_SCALE = 2.0 ** 112
_F16_INF = 0x7C00
_F32_INF = 0x7F80_0000
HALF = ir.HalfType()


def f16_strategy(target: jit.Target | None = None) -> str:
    """How f16 converts on the target (default: the current one): "native" where the CPU has
    conversion instructions (x86 F16C, AArch64), else "bits" (integer operations)."""
    t = target or jit.target()
    return "native" if t.arch == "aarch64" or t.has("f16c") else "bits"


def const_value(dt: DType, v: float | int | bool) -> float | int | bool:
    """A literal of ``dt`` as its register value: f16 and bf16 literals rounded to storage the
    way the reference rounds them."""
    return float(literal_array(v, dt)) if dt.is_storage_float else v


def load_value(e: IR, v: ir.Value, dt: DType) -> ir.Value:
    """A loaded element (or vector of them) of ``dt`` in its register form."""
    if dt is DType.I1:
        return e.b.icmp_unsigned("!=", v, e.const(v.type, 0))
    if dt is DType.F16:
        return f16_to_f32(e, v)
    if dt is DType.BF16:
        return bf16_to_f32(e, v)
    return v


def load_register(e: IR, dt: DType, ptr: ir.Value, lanes: int = 0) -> ir.Value:
    """``lanes`` consecutive values of ``dt`` at ``ptr`` as a vector (0: one scalar), in their
    register form."""
    if not lanes:
        return load_value(e, e.load(mem_type(dt), ptr), dt)
    return load_value(e, e.load(ir.VectorType(mem_type(dt), lanes), ptr, align=dt.itemsize), dt)


def store_value(e: IR, v: ir.Value, dt: DType) -> ir.Value:
    """A register value of ``dt`` in its memory form (f16/bf16 rounded to nearest even)."""
    if dt is DType.I1:
        return e.b.zext(v, like(v.type, mem_type(DType.I1)))
    if dt is DType.F16:
        return f32_to_f16(e, v)
    if dt is DType.BF16:
        return f32_to_bf16(e, v)
    return v


def quantize(e: IR, v: ir.Value, dt: DType) -> ir.Value:
    """An f32 register value rounded to ``dt``'s storage precision and range, still as f32:
    what an op on f16 or bf16 yields. Other dtypes pass through."""
    if not dt.is_storage_float:
        return v
    return load_value(e, store_value(e, v, dt), dt)


def bf16_to_f32(e: IR, h: ir.Value) -> ir.Value:
    """bf16 bits to f32: the upper half of an f32, exactly."""
    b = e.b
    w = b.zext(h, like(h.type, I32))
    return b.bitcast(b.shl(w, e.const(w.type, 16)), like(h.type, F32))


def f32_to_bf16(e: IR, x: ir.Value) -> ir.Value:
    """f32 to bf16 bits, round to nearest even; a NaN stays NaN (quiet, sign kept)."""
    b = e.b
    u = b.bitcast(x, like(x.type, I32))
    hi = b.lshr(u, e.const(u.type, 16))
    lsb = b.and_(hi, e.const(u.type, 1))
    # Adding 0x7fff plus the kept lsb carries into bit 16 exactly when the dropped half is
    # above one half, or equal and the kept part odd. Overflow lands on inf's bits.
    rounded = b.lshr(b.add(u, b.add(e.const(u.type, 0x7FFF), lsb)), e.const(u.type, 16))
    nan = b.or_(hi, e.const(u.type, 0x40))
    out = b.select(e.isnan(x), nan, rounded)
    return b.trunc(out, like(x.type, I16))


def f16_to_f32(e: IR, h: ir.Value) -> ir.Value:
    """f16 bits to f32, exactly: denormals, infinities and NaN payloads included."""
    b = e.b
    if f16_strategy() == "native":
        return b.fpext(b.bitcast(h, like(h.type, HALF)), like(h.type, F32))
    w = b.zext(h, like(h.type, I32))
    ty = w.type
    sign = b.shl(b.and_(w, e.const(ty, 0x8000)), e.const(ty, 16))
    mag = b.and_(w, e.const(ty, 0x7FFF))
    shifted = b.shl(mag, e.const(ty, 13))
    finite = b.fmul(b.bitcast(shifted, like(ty, F32)), e.const(like(ty, F32), _F16_SCALE))
    special = b.or_(shifted, e.const(ty, _F32_INF))  # inf, or NaN with its payload
    is_special = b.icmp_unsigned(">=", mag, e.const(ty, _F16_INF))
    bits = b.select(is_special, special, b.bitcast(finite, ty))
    return b.bitcast(b.or_(bits, sign), like(ty, F32))


def f32_to_f16(e: IR, x: ir.Value) -> ir.Value:
    """f32 to f16 bits, round to nearest even (F. Giesen's float_to_half_fast3_rtne): values
    from 65520 on become inf, NaN becomes a quiet NaN of the same sign."""
    b = e.b
    fty = x.type
    if f16_strategy() == "native":
        return b.bitcast(b.fptrunc(x, like(fty, HALF)), like(fty, I16))
    ty = like(fty, I32)
    u = b.bitcast(x, ty)
    sign = b.and_(u, e.const(ty, -0x8000_0000))
    a = b.xor(u, sign)
    c = lambda v: e.const(ty, v)  # noqa: E731
    # |x| >= 2**16: inf, or a quiet NaN above inf's bits
    big = b.select(b.icmp_unsigned(">", a, c(_F32_INF)), c(0x7E00), c(_F16_INF))
    # |x| < 2**-14 (f16 denormals and zero): adding 0.5 rounds the value at 2**-24, f16's
    # denormal spacing, to nearest even in f32 arithmetic; the low bits are then the result.
    magic = (126 << 23)
    tiny_sum = b.fadd(b.bitcast(a, fty), b.bitcast(c(magic), fty))
    tiny = b.sub(b.bitcast(tiny_sum, ty), c(magic))
    # normal: rebias the exponent and round the 13 dropped bits to nearest even
    odd = b.and_(b.lshr(a, c(13)), c(1))
    normal = b.lshr(b.add(b.add(a, c(((15 - 127) << 23) + 0xFFF)), odd), c(13))
    out = b.select(b.icmp_unsigned(">=", a, c((127 + 16) << 23)), big,
                   b.select(b.icmp_unsigned("<", a, c(113 << 23)), tiny, normal))
    out = b.or_(out, b.lshr(sign, c(16)))
    return b.trunc(out, like(fty, I16))
