"""Stashing a row reduction's body in the output row (codegen/stash.py): which kernels do, and
that a stashing kernel computes the same bits as one that recomputes, threads included."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from codegen.support import assert_same, tcpr_cache  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from tcp_rules.codegen import compile_kernel_func
from tcp_rules.codegen.fused import layernorm_kernel, softmax_kernel
from tcp_rules.codegen.kernel import Affine, Buffer, Kernel, Load, Node, Op, Reduce
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.codegen.scopes import compute_scopes
from tcp_rules.codegen.stash import Stash, find_stash
from tcp_rules.pipeline import load_module_file
from tcp_rules.types import DType

ROOT = Path(__file__).parent.parent
F32 = DType.F32
SOFTMAX = load_module_file(ROOT / "examples" / "softmax.tcp").func()


def stash_of(k: Kernel) -> Stash | None:
    return find_stash(k, compute_scopes(k.value, [f"d{i}" for i in range(len(k.domain))]))


def recomputing_softmax() -> Kernel:
    """softmax_kernel with the output's x - m written x + (-m): the same bits in IEEE
    arithmetic, but no longer the sum's body, so nothing is stashed."""
    k = softmax_kernel()
    assert isinstance(k.value, Op)
    num, total = k.value.args
    assert isinstance(num, Op) and isinstance(num.args[0], Op)
    x, m = num.args[0].args
    shifted = Op(F32, "add", (x, Op(F32, "neg", (m,))))
    return replace(k, value=Op(F32, "div", (Op(F32, "exp", (shifted,)), total)))


def test_softmax_stashes_the_exp() -> None:
    s = stash_of(softmax_kernel())
    assert s is not None
    assert s.reduce.kind == "sum" and s.var == "r1"
    assert isinstance(s.body, Op) and s.body.op == "exp"
    assert isinstance(s.twin, Op) and s.twin.op == "exp"
    loads = [a for a in s.twin.args[0].args if isinstance(a, Load)]  # type: ignore[attr-defined]
    assert loads[0].index == (Affine.var("d0"), Affine.var("d1"))
    # The reduction loop stores into the output too: two stores to memory instead of one, and
    # one exp per element instead of two.
    assert buffer_stores(softmax_kernel()) == 2
    assert buffer_stores(recomputing_softmax()) == 1
    assert exp_reductions(softmax_kernel()) == 1
    assert exp_reductions(recomputing_softmax()) == 2


def first_run_lines(k: Kernel) -> list[str]:
    """The kernel function's IR outside the loops that run again when an exp argument was
    beyond the fast path (blocks labelled ``*.again.*``, emit.KernelEmitter.loop); not the
    math functions it calls (irbase.widened)."""
    out, again, helper = [], False, False
    for ln in module_ir(k, "stores").splitlines():
        if ln.startswith("define "):
            helper = "@\"__tcpr_" in ln
        elif ln and not ln[0].isspace() and ln.rstrip().endswith(":"):
            again = ".again." in ln
        elif not (again or helper):
            out.append(ln)
    return out


def buffer_stores(k: Kernel) -> int:
    """Stores to buffers in the kernel's IR (loop state lives in typed allocas, float*)."""
    return sum(ln.lstrip().startswith("store float") and ", ptr " in ln
               for ln in first_run_lines(k))


def exp_reductions(k: Kernel) -> int:
    """f32 exps in the kernel's IR: each reduces its argument by ln 2 with one fma by log2(e),
    inline or in the function it calls (with AVX-512, see mathlib._exp_ldexp)."""
    return sum(("@\"llvm.fma.f32\"" in ln and "0x3ff7154760000000" in ln)
               or "@\"__tcpr_expf\"(" in ln for ln in first_run_lines(k))


def _row_kernel(value: Node, domain: tuple[str, ...] = ("N", "D")) -> Kernel:
    bufs = (Buffer("x", F32, ("N", "D")), Buffer("out", F32, domain))
    return Kernel("k", bufs, ("N", "D"), domain, value)


def test_kernels_without_a_stash() -> None:
    d0, d1, r = Affine.var("d0"), Affine.var("d1"), Affine.var("r")
    x_r, x_d = Load(F32, 0, (d0, r)), Load(F32, 0, (d0, d1))
    exp_sum = Reduce(F32, "sum", (("r", "D"),), Op(F32, "exp", (x_r,)))
    assert stash_of(recomputing_softmax()) is None  # the output computes another expression
    assert stash_of(layernorm_kernel(64)) is None  # x - mu is cheaper than a store and a load
    # The reduction runs over N, not the output row.
    over_n = Reduce(F32, "sum", (("r", "N"),), Op(F32, "exp", (Load(F32, 0, (r, d1)),)))
    assert stash_of(_row_kernel(Op(F32, "div", (Op(F32, "exp", (x_d,)), over_n)))) is None
    # The output row is not the reduced one: out[d0, d1] uses the row d1 of x.
    other_row = Op(F32, "div", (Op(F32, "exp", (Load(F32, 0, (d1, d0)),)), exp_sum))
    assert stash_of(_row_kernel(other_row)) is None
    # Rank 1: the reduction is over the whole range the threads split.
    flat_x = Load(F32, 0, (r,))
    flat = Kernel("k", (Buffer("x", F32, ("N",)), Buffer("out", F32, ("N",))), ("N",), ("N",),
                  Op(F32, "div", (Op(F32, "exp", (Load(F32, 0, (d0,)),)),
                                  Reduce(F32, "sum", (("r", "N"),), Op(F32, "exp", (flat_x,))))))
    assert stash_of(flat) is None
    # The same kernel as the stashing one, but through a shifted output map (concat).
    stashing = _row_kernel(Op(F32, "div", (Op(F32, "exp", (x_d,)), exp_sum)))
    assert stash_of(stashing) is not None
    assert stash_of(replace(stashing, out_index=(d0, d1 + 1))) is None


@pytest.mark.parametrize("threads", [1, 2])
@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 40), d=st.integers(1, 700), scale=st.floats(0.1, 60),
       seed=st.integers(0, 2**31), specials=st.booleans())
def test_stash_computes_the_same_bits(threads: int, n: int, d: int, scale: float, seed: int,
                                      specials: bool) -> None:
    stashed = compile_kernel_func(SOFTMAX, softmax_kernel(), threads=threads)
    recomputed = compile_kernel_func(SOFTMAX, recomputing_softmax(), threads=threads)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, d)) * scale).astype(np.float32)
    if specials:
        flat = x.ravel()
        at = rng.integers(0, flat.size, 3)
        flat[at] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 1e-40], 3)
    assert_same(stashed(x)[0], recomputed(x)[0], "stashed softmax")


def test_stash_under_threads_on_large_rows() -> None:
    """Many rows split across threads: each row's stores and loads stay in its thread."""
    stashed = compile_kernel_func(SOFTMAX, softmax_kernel(), threads=2)
    recomputed = compile_kernel_func(SOFTMAX, recomputing_softmax(), threads=1)
    x = (np.random.default_rng(7).standard_normal((3001, 1024)) * 5).astype(np.float32)
    assert_same(stashed(x)[0], recomputed(x)[0], "stashed softmax, 2 threads")
