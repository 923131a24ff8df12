"""Hand-built fused kernels (relu(a*b+c), row softmax, layernorm) through the compile path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from codegen.support import assert_same, tcpr_cache  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st
from numerics import assert_close_to_reference

from tcp_rules import build as tb
from tcp_rules.codegen import compile_kernel_func
from tcp_rules.codegen.accumulators import F32_SUM_BLOCK
from tcp_rules.codegen.emit import KernelError
from tcp_rules.codegen.fused import fma_relu_kernel, layernorm_kernel, softmax_kernel
from tcp_rules.codegen.kernel import Affine, Buffer, Kernel, Load, Op, Reduce, kernel_text
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import evaluate
from tcp_rules.pipeline import load_module_file
from tcp_rules.types import DType

ROOT = Path(__file__).parent.parent
F32 = DType.F32


def fma_relu_func(shape: str):  # type: ignore[no-untyped-def]
    f = tb.FuncBuilder("relu_fma")
    a, b, c = (f.param(n, f"f32[{shape}]") for n in "abc")
    f.ret(tb.max(tb.add(tb.mul(a, b), c), 0.0))
    return f.finish()


@pytest.mark.parametrize(("rank", "shape"), [(1, "N"), (2, "N, M")])
def test_fma_relu_kernel(rank: int, shape: str) -> None:
    func = fma_relu_func(shape)
    cf = compile_kernel_func(func, fma_relu_kernel(rank))
    assert len(cf.plan.steps) == 1
    rng = np.random.default_rng(0)
    dims = (1000,) if rank == 1 else (33, 65)
    xs = [rng.standard_normal(dims).astype(np.float32) for _ in range(3)]
    xs[0].ravel()[:4] = [np.nan, np.inf, -0.0, -np.inf]
    assert_same(cf(*xs)[0], evaluate(func, xs)[0], "relu(a*b+c)")


SOFTMAX = load_module_file(ROOT / "examples" / "softmax.tcp").func()


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 9), st.integers(1, 300), st.floats(0.1, 50), st.integers(0, 2**31))
def test_softmax_kernel(n: int, d: int, scale: float, seed: int) -> None:
    cf = compile_kernel_func(SOFTMAX, softmax_kernel())
    x = (np.random.default_rng(seed).standard_normal((n, d)) * scale).astype(np.float32)
    assert_close_to_reference(cf(x), SOFTMAX, [x], "softmax")


def test_softmax_kernel_special_rows() -> None:
    cf = compile_kernel_func(SOFTMAX, softmax_kernel())
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 0.0, 1.0], [-np.inf, -np.inf, 0.0],
                  [1e30, -1e30, 0.0]], dtype=np.float32)
    (got,) = cf(x)
    (ref,) = evaluate(SOFTMAX, [x])
    assert_same(got, ref, "softmax special values")


def test_softmax_hoists_the_row_reductions() -> None:
    """The row max and row sum run once per row: both reductions sit outside the d1 loop."""
    from tcp_rules.codegen.emit import compute_scopes

    k = softmax_kernel()
    sc = compute_scopes(k.value, ["d0", "d1"])
    reduces = [n for n in sc.deps if isinstance(n, Reduce)]
    assert len(reduces) == 2
    assert all(sc.innermost(sc.deps[r]) == "d0" for r in reduces)


def test_row_sums_prefetch_the_next_row() -> None:
    """Each f32 row sum's block (F32_SUM_BLOCK terms, one prefetch per 64-byte line) first
    prefetches the same block of the next row of what its body reads: softmax's sum reads x,
    layernorm's two sums read x each; the max reads without prefetching (no blocks). Each is a
    read into L2 (locality 2): into L1, the bursts made the norms slower on Zen 4 (emit.py)."""
    def prefetches(k: Kernel) -> int:
        calls = [ln for ln in module_ir(k, "pf").splitlines()
                 if 'call void @"llvm.prefetch.p0"' in ln]
        assert all(ln.endswith("i32 0, i32 2, i32 1)") for ln in calls)
        return len(calls)

    lines = F32_SUM_BLOCK * 4 // 64
    assert prefetches(softmax_kernel()) == lines
    assert prefetches(layernorm_kernel(1024)) == 2 * lines
    # A scalar (rank 0) read in the sum has no next row: only x is prefetched.
    d0, r = Affine.var("d0"), Affine.var("r")
    scaled = Op(F32, "mul", (Load(F32, 0, (d0, r)), Load(F32, 1, ())))
    k = Kernel("k", (Buffer("x", F32, ("N", "D")), Buffer("s", F32, ()), Buffer("o", F32, ("N",))),
               ("N", "D"), ("N",), Reduce(F32, "sum", (("r", "D"),), scaled))
    assert prefetches(k) == lines
    f = tb.FuncBuilder("scaled_sum")
    f.ret(tb.reduce_sum(tb.mul(f.param("x", "f32[N, D]"), tb.broadcast(
        f.param("s", "f32[]"), shape=["N", "D"], dims=[])), axes=[1]))
    x, sv = np.ones((3, 700), np.float32), np.array(0.5, np.float32)
    assert_same(compile_kernel_func(f.finish(), k)(x, sv)[0], np.full(3, 350.0, np.float32))


def test_layernorm_kernel() -> None:
    src = (ROOT / "benchmarks" / "programs" / "layernorm.tcp").read_text()
    func = load_module_file(ROOT / "benchmarks" / "programs" / "layernorm.tcp").func()
    assert "1024" in src
    cf = compile_kernel_func(func, layernorm_kernel(1024))
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((5, 1024), (1024,), (1024,))]
    assert_close_to_reference(cf(*xs), func, xs, "layernorm")


def test_kernel_text_is_canonical() -> None:
    assert kernel_text(softmax_kernel()) == kernel_text(softmax_kernel())
    assert kernel_text(softmax_kernel()) != kernel_text(fma_relu_kernel())
    assert "reduce_max[r0<D]" in kernel_text(softmax_kernel())


def test_malformed_kernel_is_refused() -> None:
    x = Buffer("x", F32, ("N",))
    leak = Load(F32, 0, (Affine.var("r0"),))  # uses a reduction index outside its reduction
    value = Op(F32, "add", (Reduce(F32, "sum", (("r0", "N"),), leak), leak))
    k = Kernel("bad", (x, Buffer("out", F32, ("N",))), ("N",), ("N",), value)
    f = tb.FuncBuilder("bad")
    f.ret(tb.neg(f.param("x", "f32[N]")))
    with pytest.raises(KernelError):
        compile_kernel_func(f.finish(), k)


def test_out_of_bounds_kernel_is_refused_before_running() -> None:
    x = Buffer("x", F32, ("N",))
    shifted = Load(F32, 0, (Affine.var("d0") + 1,))  # reads one past the end
    k = Kernel("shift", (x, Buffer("out", F32, ("N",))), ("N",), ("N",), shifted)
    f = tb.FuncBuilder("shift")
    f.ret(tb.neg(f.param("x", "f32[N]")))
    cf = compile_kernel_func(f.finish(), k)
    with pytest.raises(TcpError, match=r"reads x at 1\.\.8"):
        cf(np.zeros(8, np.float32))
