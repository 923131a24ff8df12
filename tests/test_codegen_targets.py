"""Code generation for named targets: every strategy compiles (without running) for the x86-64
levels v2, v3, v4 and for aarch64 where the target can select it, and is refused with a Python
error (never an LLVM fatal error, which ends the process) where it cannot. What runs here runs
only with the host's features; the portable paths run on every host."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from codegen.support import (  # noqa: F401
    Body,
    assert_same,
    fuse_everything,
    loop_kernels,
    loop_module,
    tcpr_cache,
    unary,
)
from numerics import assert_close_to_reference

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func, jit, mathlib, mathtable, mathtanh, matmul, tiling
from tcp_rules.codegen.irbase import IR, check_intrinsic
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import kernel_symbols, module_ir
from tcp_rules.interpret import evaluate
from tcp_rules.pipeline import load_module_file
from tcp_rules.types import DType

ROOT = Path(__file__).parent.parent
TARGETS = ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "aarch64"]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.tcp"))



def _table(fn: mathtable.Piecewise, how: str) -> Body:
    return lambda e, v: mathtable.evaluate(e, fn, v, how)


# Each strategy: (IR body for f32 vectors, the features it needs; () = portable).
STRATEGIES: dict[str, tuple[Body, tuple[str, ...]]] = {
    **{f"{fn.name}-{how}": (_table(fn, how), mathtable.NEEDS[how])
       for fn in (mathtable.ERF, mathtable.TANH) for how in mathtable.STRATEGIES},
    "tanh-exp": (lambda e, v: mathtanh.tanh(e, v), ()),
    "exp-ldexp": (lambda e, v: mathlib.exp(e, v, "ldexp"), ()),
    "exp-split": (lambda e, v: mathlib.exp(e, v, "split"), ()),
    "log-avx512": (lambda e, v: mathlib._log(e, v, "avx512"), ("avx512f", "avx512vl")),
    "log-bits": (lambda e, v: mathlib._log(e, v, "bits"), ()),
}


def _legal(t: jit.Target, needs: tuple[str, ...]) -> bool:
    return all(t.has(f) for f in needs)


def _compile(name: str, text: str, vectorize: bool = True) -> bytes:
    obj = jit.compile_for(text, jit.target(), vectorize=vectorize)
    assert isinstance(obj, bytes) and len(obj) > 100, name
    return obj


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_strategy_compiles_or_is_refused(strategy: str, target: str) -> None:
    body, needs = STRATEGIES[strategy]
    with jit.targeting(target) as t:
        if _legal(t, needs):
            # Widths 4, 8, 16 and the scalar remainder: every vector type the strategy meets.
            text = loop_module({f"s{w}": (w, body) for w in (4, 8, 16)})
            obj = _compile(strategy, text, vectorize=False)
            if t.arch == "aarch64":
                assert b"x86" not in obj
        else:
            with pytest.raises(jit.TargetError, match="cannot be compiled for target "
                               f"{target} .*(lacks {needs[0]}|is aarch64, not x86)"):
                loop_module({"s16": (16, body)})


@pytest.mark.parametrize("target", TARGETS)
def test_default_strategies_follow_the_target(target: str) -> None:
    t = jit.TARGETS[target]
    table = {"x86-64": "lanes", "x86-64-v2": "lanes", "x86-64-v3": "avx2", "x86-64-v4": "avx512",
             "aarch64": "lanes"}
    assert mathtable.strategy(t) == table[target]
    assert mathlib.scale_strategy(t) == ("ldexp" if target == "x86-64-v4" else "split")
    assert mathlib.log_strategy(t) == ("avx512" if target == "x86-64-v4" else "bits")
    # f32 lanes: 64-byte vectors with AVX-512, 32 with AVX, 16 otherwise (SSE, NEON).
    vf = {"x86-64-v4": 16, "x86-64-v3": 8}.get(target, 4)
    assert tiling.tile_shape(DType.F32, t)[2] == vf
    assert tiling.fused(t) == (target in ("x86-64-v3", "x86-64-v4", "aarch64"))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_compile_for_every_target(name: str, target: str) -> None:
    """Whole programs through the normal lowering (matmul tiles, tables, reductions), fused and
    not, to objects for each target."""
    func = load_module_file(ROOT / "examples" / f"{name}.tcp").func()
    with jit.targeting(target):
        for f in (func, fuse_everything(func)):
            for st in lower_func(f).steps:
                _, syms = kernel_symbols(st.kernel)
                _compile(name, module_ir(st.kernel, syms[0]),
                         not isinstance(st.kernel, matmul.MatmulKernel))


def test_assembly_for_a_named_target() -> None:
    with jit.targeting("aarch64"):
        text = loop_module({"tanh16": (16, lambda e, v: mathlib.tanh(e, v))})
    asm = jit.compile_for(text, "aarch64", vectorize=False, assembly=True)
    assert isinstance(asm, str) and "fmla" in asm  # NEON fused multiply-adds
    with jit.targeting("x86-64-v3"):
        text = loop_module({"erf16": (16, lambda e, v: mathlib.erf(e, v))})
    asm = jit.compile_for(text, "x86-64-v3", vectorize=False, assembly=True)
    # permps on constant tables may be selected as the equivalent integer vpermd
    assert isinstance(asm, str) and "vfmadd" in asm and "zmm" not in asm
    assert "vpermps" in asm or "vpermd" in asm


@pytest.mark.parametrize(("target", "table"), [("x86-64-v3", False), ("x86-64-v4", True),
                                               ("aarch64", False)])
def test_tanh_formula_for_a_named_target(target: str, table: bool) -> None:
    """tanh takes its table where a lookup is one permute (AVX-512), else exp and a division."""
    with jit.targeting(target):
        text = loop_module({"tanh16": (16, lambda e, v: mathlib.tanh(e, v))})
    asm = jit.compile_for(text, target, vectorize=False, assembly=True)
    assert isinstance(asm, str)
    assert ("vpermi2ps" in asm or "vpermt2ps" in asm) == table
    assert any(d in asm for d in ("vdivps", "fdiv")) != table


def test_unknown_target_specific_intrinsics_are_refused() -> None:
    with pytest.raises(jit.TargetError, match=r"no entry in irbase\.TARGET_INTRINSICS"):
        check_intrinsic("x86.sse41.blendvps", jit.TARGETS["x86-64-v4"])
    check_intrinsic("fma", jit.TARGETS["x86-64"])  # generic: LLVM expands it anywhere
    check_intrinsic("x86.avx2.permps", jit.TARGETS["x86-64-v3"])
    with pytest.raises(jit.TargetError, match="lacks avx512vl"):
        check_intrinsic("x86.avx512.mask.getmant.ps.256",
                        jit.Target("f-only", "x86_64-unknown-linux-gnu", "x86-64",
                                   "+avx2,+fma,+avx512f"))


def test_irbase_checks_at_the_call() -> None:
    import llvmlite.ir as ir

    mod = ir.Module()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), []), "f")
    e = IR(ir.IRBuilder(fn.append_basic_block()))
    x = ir.Constant(ir.VectorType(ir.FloatType(), 8), [0.0] * 8)
    with jit.targeting("aarch64"), pytest.raises(jit.TargetError, match="is aarch64, not x86"):
        e.intrinsic("x86.avx2.permps", [x, x], tys=[])
    assert "llvm.x86" not in str(mod)


def test_target_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCPR_TARGET", "x86-64-v2")
    assert jit.target() == jit.TARGETS["x86-64-v2"] and not jit.has_feature("avx2")
    with jit.targeting("x86-64-v4"):  # an explicit choice wins
        assert jit.target().name == "x86-64-v4"
    monkeypatch.setenv("TCPR_TARGET", "host")
    assert jit.target() == jit.host()
    monkeypatch.setenv("TCPR_TARGET", "pentium-pro")
    with pytest.raises(jit.TargetError, match="names no target"):
        jit.target()


def test_the_cache_key_and_symbols_depend_on_the_target() -> None:
    k = lower_func(unary("tanh", DType.F32)).steps[0].kernel
    keys = set()
    for t in TARGETS:
        with jit.targeting(t):
            keys.add(kernel_symbols(k)[0])
    with jit.targeting(jit.host()):
        keys.add(kernel_symbols(k)[0])
    assert len(keys) == len(TARGETS) + 1


def test_code_for_another_architecture_is_not_run() -> None:
    with jit.targeting("aarch64"), pytest.raises(jit.TargetError, match="cannot run compiled"):
        compile_func(unary("tanh", DType.F32))


LOWER = [t for t in ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")
         if jit.TARGETS[t].runs_here() is None]


@pytest.mark.parametrize("target", LOWER)
def test_lower_targets_run_here_with_the_same_bits(target: str) -> None:
    """Elementwise math (erf's table, exp, log, sigmoid, tanh) gives the host's bits on every
    x86 level this CPU can run: every strategy computes the same values wherever it runs, and
    llvm.fma is exact everywhere (a libm call without FMA). tanh is the one op whose algorithm
    depends on the target (its table with AVX-512, exp and a division without: mathlib), so it
    is compared with the host running the target's algorithm."""
    f = tb.FuncBuilder(f"mix_{target}")
    x = f.param("x", "f32[N]")
    f.ret(tb.add(tb.erf(x), tb.add(tb.sigmoid(x), tb.exp(tb.neg(tb.abs(x))))),
          tb.log(tb.abs(x)), tb.tanh(x))
    func = f.finish()
    rng = np.random.default_rng(2)
    xs = (rng.standard_normal(1008) * 4).astype(np.float32)
    xs[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]
    with jit.targeting(target):
        got = compile_func(func)(xs)
        how = "table" if mathtable.strategy() == "avx512" else "exp"
    want = list(compile_func(func)(xs))
    tanh = loop_kernels({f"tanh_{how}_for_{target}": (1, lambda e, v: mathlib.tanh(e, v, how))})
    want[2] = tanh[f"tanh_{how}_for_{target}"](xs)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, target)  # bit for bit; a NaN's sign and payload are not promised


@pytest.mark.parametrize("target", LOWER)
def test_lower_targets_run_matmul_with_their_tiles(target: str) -> None:
    f = tb.FuncBuilder("mm_t")
    a, b = f.param("a", "f32[M, K]"), f.param("b", "f32[K, N]")
    f.ret(tb.matmul(a, b))
    func = f.finish()
    rng = np.random.default_rng(3)
    xa = rng.integers(-50, 50, (37, 29)).astype(np.float32)
    xb = rng.integers(-50, 50, (29, 45)).astype(np.float32)
    with jit.targeting(target):
        cf = compile_func(func)
    np.testing.assert_array_equal(cf(xa, xb)[0], evaluate(func, [xa, xb])[0])  # exact
    # Random floats: fused (v3, v4) or not (x86-64, v2), within the rounding bound.
    xa, xb = rng.standard_normal((37, 300)).astype(np.float32), xb.repeat(11, axis=0)[:300]
    assert_close_to_reference(cf(xa, xb), func, [xa, xb], target)


def _narrow_dtypes_func() -> tb.Func:
    """Every new dtype through loads, stores, arithmetic, math, casts, reductions and matmul."""
    f = tb.FuncBuilder("narrow")
    h, g = f.param("h", "f16[M, K]"), f.param("g", "bf16[K, N]")
    u, s = f.param("u", "u8[M, K]"), f.param("s", "i16[M, K]")
    w = f.param("w", "u64[M, K]")
    hh = tb.exp(tb.add(h, tb.cast(s, to=DType.F16)))
    gg = tb.cast(tb.sigmoid(g), to=DType.F16)
    uu = tb.div(tb.max(u, tb.cast(s, to=DType.U8)), tb.cast(h, to=DType.U8))
    f.ret(tb.matmul(hh, gg), tb.reduce_sum(tb.cast(g, to=DType.BF16), axes=[0]),
          tb.lt(uu, tb.cast(w, to=DType.U8)), tb.cast(tb.cast(w, to=DType.F32), to=DType.I8),
          tb.matmul(tb.cast(s, to=DType.I8), tb.cast(tb.transpose(s, perm=[1, 0]), to=DType.I8)))
    return f.finish()


# Conversions LLVM would lower to libcalls the JIT cannot resolve (x86 without F16C, or bf16).
_LIBCALLS = (b"__extendhfsf2", b"__truncsfhf2", b"__truncdfhf2", b"__truncsfbf2",
             b"__extendbfsf2", b"__gnu_h2f_ieee", b"__gnu_f2h_ieee")


@pytest.mark.parametrize("target", TARGETS)
def test_narrow_dtypes_compile_for_every_target_without_libcalls(target: str) -> None:
    """f16 converts with the CPU's instructions only where the target has them (storage.py),
    and bf16 with integer operations: no target needs a conversion libcall."""
    func = _narrow_dtypes_func()
    with jit.targeting(target):
        for f in (func, fuse_everything(func)):
            for st in lower_func(f).steps:
                _, syms = kernel_symbols(st.kernel)
                obj = _compile("narrow", module_ir(st.kernel, syms[0]),
                               not isinstance(st.kernel, matmul.MatmulKernel))
                assert not [c for c in _LIBCALLS if c in obj], (target, st.kernel)


@pytest.mark.parametrize("target", LOWER)
def test_lower_targets_run_narrow_dtypes_with_the_reference_bits(target: str) -> None:
    func = _narrow_dtypes_func()
    rng = np.random.default_rng(4)
    m, k, n = 9, 7, 11
    h = rng.standard_normal((m, k)).astype(np.float16)
    h[0, :4] = [np.inf, np.nan, -0.0, 6e-8]
    g = (rng.standard_normal((k, n)) * 3).astype(DType.BF16.np_dtype)
    u = rng.integers(0, 256, (m, k)).astype(np.uint8)
    s = rng.integers(-2**15, 2**15, (m, k)).astype(np.int16)
    w = rng.integers(0, 2**64, (m, k), dtype=np.uint64)
    inputs = [h, g, u, s, w]
    with jit.targeting(target):
        got = compile_func(func)(*inputs)
    want = evaluate(func, inputs)
    for i in (2, 3, 4):  # integer results: exact
        assert_same(got[i], want[i], f"{target} result {i}")
    # f16/bf16 sums and products: f32 sums in another order, rounded once to 16 bits
    assert_close_to_reference(got, func, inputs, target)


@pytest.mark.parametrize("target", ["x86-64-v3", "x86-64-v4"])
@pytest.mark.parametrize("width", [12, 16, 24])
def test_short_rows_are_vectorized_whole(target: str, width: int) -> None:
    """Kernels over rows of a few known elements (2x and relu of it on [N, width], each its own
    kernel) compute them with packed vector instructions alone. O3 used to unroll such a row
    loop before the loop vectorizer saw it, and the straight-line code left was vectorized in
    part, with scalar single-precision instructions for the rest: five times slower with
    AVX-512 (jit._optimize)."""
    f = tb.FuncBuilder("relu2")
    x = f.param("x", f"f32[N, {width}]")
    f.ret(tb.max(tb.mul(x, 2.0), 0.0))
    with jit.targeting(target):
        steps = lower_func(f.finish()).steps
        assert len(steps) == 2
        for st in steps:
            _, syms = kernel_symbols(st.kernel)
            asm = jit.compile_for(module_ir(st.kernel, syms[0]), target, assembly=True)
            assert isinstance(asm, str)
            ops = [ln.split()[0] for ln in asm.splitlines() if ln.startswith("\tv")]
            assert any(op.endswith("ps") and not op.startswith("vmov") for op in ops)
            assert [op for op in ops if op.endswith("ss") and not op.startswith("vbroadcast")
                    ] == []
