"""LLVM IR helpers shared by the emitters: types, constants, intrinsics and libm calls.

Everything here works on scalars and on vectors alike (a constant takes the shape of the value it
is combined with), so the same op lowering serves the loop bodies that LLVM vectorizes and the
matmul epilogue, which is written with vectors directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from tcp_rules.codegen import jit
from tcp_rules.types import DType

F32 = ir.FloatType()
F64 = ir.DoubleType()
I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
# 1.5 * 2**23: an f32 plus this rounds to an integer, which lands in the low mantissa bits
ROUND_SHIFT = 12582912.0

# The target-specific intrinsics the emitters use, by name prefix (the longest match decides), and
# the features a target needs to select them. A target without them gets a Python error before
# LLVM sees the call: LLVM's failure to select one ends the process. A target-specific intrinsic
# missing here is refused on every target: add it with its features.
TARGET_INTRINSICS: dict[str, tuple[str, ...]] = {
    "x86.avx2.": ("avx2",),
    "x86.avx512.": ("avx512f",),
    "x86.avx512.mask.getmant.ps.128": ("avx512f", "avx512vl"),
    "x86.avx512.mask.getmant.ps.256": ("avx512f", "avx512vl"),
    "x86.avx512.mask.getexp.ps.128": ("avx512f", "avx512vl"),
    "x86.avx512.mask.getexp.ps.256": ("avx512f", "avx512vl"),
}
_ARCH_PREFIXES = {"x86.": "x86", "aarch64.": "aarch64", "arm.": "arm", "ppc.": "ppc"}


def check_intrinsic(name: str, target: jit.Target | None = None) -> None:
    """Raise TargetError unless ``target`` (default: the current one) can select ``llvm.name``.
    Generic intrinsics (fma, ldexp, maximum...) are legal everywhere: LLVM expands them."""
    arch = next((a for p, a in _ARCH_PREFIXES.items() if name.startswith(p)), None)
    if arch is None:
        return
    t = target or jit.target()
    prefixes = [p for p in TARGET_INTRINSICS if name.startswith(p)]
    if not prefixes:
        raise jit.TargetError(f"llvm.{name}: a target-specific intrinsic with no entry in "
                              "irbase.TARGET_INTRINSICS")
    need = TARGET_INTRINSICS[max(prefixes, key=len)]
    on_arch = t.is_x86 if arch == "x86" else t.arch.startswith(arch)
    missing = [f for f in need if not t.has(f)]
    if not on_arch or missing:
        lacks = f"lacks {', '.join(missing)}" if on_arch else f"is {t.arch}, not {arch}"
        raise jit.TargetError(f"llvm.{name} cannot be compiled for target {t.name} ({t.cpu}), "
                              f"which {lacks}")


# Signed and unsigned integers share LLVM's signless types; the ops pick signed or unsigned
# instructions. f16 and bf16 are f32 in registers (they compute in f32), 16 bits in memory.
_REG = {DType.F16: F32, DType.BF16: F32, DType.F32: F32, DType.F64: F64,
        DType.I8: I8, DType.I16: I16, DType.I32: I32, DType.I64: I64,
        DType.U8: I8, DType.U16: I16, DType.U32: I32, DType.U64: I64, DType.I1: I1}
_MEM = {**_REG, DType.F16: I16, DType.BF16: I16, DType.I1: I8}


def reg_type(dt: DType) -> ir.Type:
    """The LLVM type of a value of ``dt`` in registers (i1 for booleans, f32 for f16/bf16)."""
    return _REG[dt]


def mem_type(dt: DType) -> ir.Type:
    """The LLVM type of an element of ``dt`` in memory (NumPy stores booleans as bytes; f16
    and bf16 are their bits, converted by codegen.storage)."""
    return _MEM[dt]


def type_suffix(ty: ir.Type) -> str:
    """The overload suffix of an intrinsic: f32, f64, i32, v16f32..."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{type_suffix(ty.element)}"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.PointerType):
        return "p0"
    raise TypeError(f"no intrinsic suffix for {ty}")


def element(ty: ir.Type) -> ir.Type:
    """The element type of a vector type, or the type itself."""
    return ty.element if isinstance(ty, ir.VectorType) else ty


def like(ty: ir.Type, elem: ir.Type) -> ir.Type:
    """``elem``, or a vector of ``elem`` as wide as ``ty``."""
    return ir.VectorType(elem, ty.count) if isinstance(ty, ir.VectorType) else elem


class IR:
    """An IRBuilder with typed constant, intrinsic and libm helpers."""

    def __init__(self, builder: ir.IRBuilder):
        self.b = builder
        self.module: ir.Module = builder.module
        # An i8 slot, set by a kernel emitter: f32 sin and cos then take their inline fast path
        # and set it for arguments beyond its range; the kernel then reruns precisely.
        self.trig_flag: ir.Value | None = None
        # An i32 slot, set by a kernel emitter around a loop it can run again: f32 exp then
        # takes its fast path and keeps the largest |x|'s bits there (mathlib.exp).
        self.exp_guard: ir.Value | None = None

    def const(self, ty: ir.Type, value: float | int | bool) -> ir.Constant:
        """``value`` as a constant of ``ty`` (splatted when ``ty`` is a vector)."""
        el = element(ty)
        if isinstance(el, ir.IntType):
            w = el.width
            v: float | int = int(value) & ((1 << w) - 1)  # wrap, then print as signed
            v = v - (1 << w) if w > 1 and v >= 1 << (w - 1) else v
        else:
            v = float(value)
        c = ir.Constant(el, v)
        if isinstance(ty, ir.VectorType):
            return ir.Constant(ty, [c] * ty.count)
        return c

    def declare(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name=name)
        assert isinstance(fn, ir.Function)
        return fn

    def intrinsic(self, name: str, args: Sequence[ir.Value], ret: ir.Type | None = None,
                  tys: Sequence[ir.Type] | None = None, fastmath: tuple[str, ...] = ()
                  ) -> ir.Value:
        """Call ``llvm.<name>`` overloaded on ``tys`` (default: the first argument's type),
        with the ``fastmath`` flags given."""
        check_intrinsic(name)
        tys = tys if tys is not None else [args[0].type]
        full = "llvm." + name + "".join("." + type_suffix(t) for t in tys)
        fn = self.declare(full, ret or args[0].type, [a.type for a in args])
        return self.b.call(fn, list(args), fastmath=fastmath)

    def libm(self, name: str, args: Sequence[ir.Value]) -> ir.Value:
        """Call a C math function (``sinf``, ``atan2``...), lane by lane for vectors."""
        ty = args[0].type
        el = element(ty)
        fn = self.declare(name, el, [el] * len(args))
        return self.lanewise(lambda xs: self.b.call(fn, xs), args)

    def lanewise(self, f: Callable[[list[ir.Value]], ir.Value],
                 args: Sequence[ir.Value]) -> ir.Value:
        ty = args[0].type
        if not isinstance(ty, ir.VectorType):
            return f(list(args))
        out: ir.Value = ir.Constant(ty, ir.Undefined)
        for lane in range(ty.count):
            i = ir.Constant(I32, lane)
            r = f([self.b.extract_element(a, i) for a in args])
            out = self.b.insert_element(out, r, i)
        return out

    # Frequently used float helpers -------------------------------------------------------------

    def gep(self, ty: ir.Type, ptr: ir.Value, idx: ir.Value) -> ir.Value:
        """Address of element ``idx`` of type ``ty`` from ``ptr``."""
        return self.b.gep(ptr, [idx], source_etype=ty)

    def load(self, ty: ir.Type, ptr: ir.Value, align: int | None = None) -> ir.Value:
        return self.b.load(ptr, typ=ty, align=align)

    def splat(self, x: ir.Value, n: int) -> ir.Value:
        """A vector of ``n`` copies of scalar ``x``."""
        vt = ir.VectorType(x.type, n)
        v = self.b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(I32, 0))
        return self.b.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                     ir.Constant(ir.VectorType(I32, n), [0] * n))

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return self.intrinsic("fma", [a, b, c])

    def poly(self, x: ir.Value, coeffs: Sequence[float]) -> ir.Value:
        """Horner's rule with fused multiply-adds; ``coeffs`` from the highest degree down."""
        acc: ir.Value = self.const(x.type, coeffs[0])
        for c in coeffs[1:]:
            acc = self.fma(acc, x, self.const(x.type, c))
        return acc

    def fsel(self, pred: str, a: ir.Value, b: ir.Value, t: ir.Value, f: ir.Value) -> ir.Value:
        return self.b.select(self.b.fcmp_ordered(pred, a, b), t, f)

    def isnan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    def fabs(self, x: ir.Value) -> ir.Value:
        return self.intrinsic("fabs", [x])

    def copysign(self, mag: ir.Value, sign: ir.Value) -> ir.Value:
        return self.intrinsic("copysign", [mag, sign])


def _keep(module: ir.Module, fn: ir.Function) -> None:
    """Add ``fn`` to @llvm.compiler.used, so it survives until the vectorizer refers to it."""
    used = module.globals.get("llvm.compiler.used")
    members = [*used.initializer.constant, fn] if used is not None else [fn]
    if used is None:
        used = ir.GlobalVariable(module, ir.ArrayType(PTR, 1), "llvm.compiler.used")
        used.linkage = "appending"
        used.section = "llvm.metadata"
    used.value_type = ir.ArrayType(PTR, len(members))
    used.initializer = ir.Constant(used.value_type, members)


def offer_variants(module: ir.Module, fn: ir.Function, variants: Sequence[ir.Function]) -> None:
    """Declare ``variants`` (one argument vector each) as ``fn``'s vector versions."""
    for v in variants:
        _keep(module, v)
    abi = ",".join(f"_ZGV_LLVM_N{v.args[0].type.count}v_{fn.name}({v.name})" for v in variants)
    set.add(fn.attributes, f'"vector-function-abi-variant"="{abi}"')  # bypasses the check


VARIANT_WIDTHS = (4, 8, 16)  # the vector variants offered to the loop vectorizer
Body = Callable[[IR, ir.Value], ir.Value]


def _widenable(e: IR, name: str, ty: ir.Type, body: Body) -> ir.Function:
    """Internal function ``__tcpr_{name}`` computing ``body`` on ``ty``: the scalar one not
    inlined (the vectorizer sees a call), its vector variants inlined after vectorization."""
    vector = isinstance(ty, ir.VectorType)
    fname = f"__tcpr_{name}" + (f"_v{ty.count}" if vector else "")
    found = e.module.globals.get(fname)
    if isinstance(found, ir.Function):
        return found
    f = ir.Function(e.module, ir.FunctionType(ty, [ty]), name=fname)
    f.linkage = "internal"
    for attr in ("readnone", "nounwind", "alwaysinline" if vector else "noinline"):
        f.attributes.add(attr)
    fe = IR(ir.IRBuilder(f.append_basic_block("entry")))
    fe.b.ret(body(fe, f.args[0]))
    if not vector:
        offer_variants(e.module, f, [_widenable(e, name, ir.VectorType(ty, vf), body)
                                     for vf in VARIANT_WIDTHS])
    return f


def widened(e: IR, name: str, x: ir.Value, body: Body) -> ir.Value:
    """``body(e, x)`` for code the loop vectorizer cannot widen itself (x86 vector intrinsics,
    permutes): for a scalar ``x``, a call of an internal function whose vector variants the
    vectorizer substitutes (jit._optimize inlines them after O3); for a vector, inline code.
    ``body`` gets scalars in the remainder loop and must compute the same bits there."""
    if isinstance(x.type, ir.VectorType):
        return body(e, x)
    return e.b.call(_widenable(e, name, x.type, body), [x])


def scale(e: IR, y: ir.Value, n: ir.Value, how: str) -> ir.Value:
    """``y * 2**n`` rounded once (denormal results included) for y in [0.5, 2): f32 with i32
    ``n`` in [-250, 254], f64 with i64 ``n`` in [-1090, 1030]. "ldexp" (vscalefps/pd with
    AVX-512) and "split" (two products by normal powers of two, the first exact) compute the
    same bits; llvm.ldexp elsewhere would be a libm call per lane."""
    b = e.b
    if how == "ldexp":
        n32 = n if element(n.type) == I32 else b.trunc(n, like(n.type, I32))
        return e.intrinsic("ldexp", [y, n32], tys=[y.type, n32.type])
    bias, shift = (127, 23) if element(y.type) == F32 else (1023, 52)
    ci = lambda v: e.const(n.type, v)  # noqa: E731
    n1 = b.ashr(n, ci(1))
    s1, s2 = (b.bitcast(b.shl(b.add(m, ci(bias)), ci(shift)), y.type) for m in (n1, b.sub(n, n1)))
    return b.fmul(b.fmul(y, s1), s2)
