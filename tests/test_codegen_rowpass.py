"""Row kernels fused into the matmul whose product they read (codegen/rowpass.py): attention's
softmax after QK^T (masks included), a layernorm after a projection."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from codegen.support import fuse_everything, scores, sized_inputs, softmax, tcpr_cache  # noqa: F401
from numerics import assert_close_to_reference

import tcp_rules.codegen.lower as lowering
from tcp_rules import build as tb
from tcp_rules.codegen import compile_func
from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.tiling import MC
from tcp_rules.ir import Func
from tcp_rules.pipeline import load_module_file

ROOT = Path(__file__).parent.parent


def attention(batch: list[int], m: int, k: int, n: int) -> Func:
    f, s = scores(batch, m, k, n)
    f.ret(softmax(s))
    return fuse_everything(f.finish())


def heads(m: int, n: int) -> Func:
    """Scores of 6 = 2 x 3 heads whose softmax runs over [2, 3, m, n] (a reshape of them)."""
    f, s = scores([6], m, 16, n)
    f.ret(softmax(tb.reshape(s, shape=[2, 3, m, n])))
    return fuse_everything(f.finish())


def layernorm(m: int, k: int, n: int) -> Func:
    f = tb.FuncBuilder("ln")
    x, w, g = f.param("x", f"f32[{m}, {k}]"), f.param("w", f"f32[{k}, {n}]"), f.param(
        "g", f"f32[{n}]")
    h = tb.matmul(x, w)
    mean = tb.div(tb.reduce_sum(h, axes=[1]), float(n))
    c = tb.sub(h, tb.broadcast(mean, shape=[m, n], dims=[0]))
    var = tb.div(tb.reduce_sum(tb.mul(c, c), axes=[1]), float(n))
    inv = tb.rsqrt(tb.add(var, 1e-5))
    f.ret(tb.mul(tb.mul(c, tb.broadcast(inv, shape=[m, n], dims=[0])),
                 tb.broadcast(g, shape=[m, n], dims=[1])))
    return fuse_everything(f.finish())


def masked(m: int, n: int) -> Func:
    """Attention's masks over [2, 3, m, n] scores: a causal [m, n] one shared by every head, a
    padding [2, 1, 1, n] one per batch, and a flag per query row (i1 [m]) zeroing its row."""
    f, s = scores([6], m, 16, n)
    shape = [2, 3, m, n]
    causal, pad = f.param("causal", f"f32[{m}, {n}]"), f.param("pad", f"f32[2, 1, 1, {n}]")
    flag = tb.lt(f.param("flag", f"f32[{m}]"), 0.0)
    x = tb.add(tb.add(tb.reshape(s, shape=shape), tb.broadcast(causal, shape=shape, dims=[2, 3])),
               tb.broadcast(pad, shape=shape, dims=[0, 1, 2, 3]))
    f.ret(tb.select(tb.broadcast(flag, shape=shape, dims=[2]), 0.0, softmax(x)))
    return fuse_everything(f.finish())


def rows_of_tokens(batch: int, seq: int, k: int, n: int) -> Func:
    """A [batch * seq, k] @ [k, n] projection whose layernorm runs over [batch, seq, n]."""
    f = tb.FuncBuilder("tokens")
    x, w = f.param("x", f"f32[{batch * seq}, {k}]"), f.param("w", f"f32[{k}, {n}]")
    h = tb.reshape(tb.matmul(x, w), shape=[batch, seq, n])
    mean = tb.div(tb.reduce_sum(h, axes=[2]), float(n))
    c = tb.sub(h, tb.broadcast(mean, shape=[batch, seq, n], dims=[0, 1]))
    var = tb.div(tb.reduce_sum(tb.mul(c, c), axes=[2]), float(n))
    f.ret(tb.mul(c, tb.broadcast(tb.rsqrt(tb.add(var, 1e-5)), shape=[batch, seq, n],
                                 dims=[0, 1])))
    return fuse_everything(f.finish())


def narrowed(m: int, k: int, n: int) -> Func:
    """The product cast to f16 by a kernel of its own (unoptimized): the scratch holds f32."""
    f = tb.FuncBuilder("narrow")
    a, b = f.param("a", f"f32[{m}, {k}]"), f.param("b", f"f32[{k}, {n}]")
    f.ret(tb.apply_op("cast", tb.matmul(a, b), to="f16"))
    return f.finish()


CASES: dict[str, Callable[[], Func]] = {
    "2-d softmax, several blocks": lambda: attention([], 2 * MC + 17, 24, 70),
    "batched softmax": lambda: attention([5], 40, 8, 33),
    "softmax over a reshape": lambda: heads(37, 50),
    "masked softmax over heads": lambda: masked(MC + 9, 40),
    "layernorm with a weight": lambda: layernorm(MC + 3, 20, 48),
    "layernorm over tokens": lambda: rows_of_tokens(3, 70, 24, 40),
    "a cast to f16": lambda: narrowed(MC + 30, 20, 36),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_row_kernels_run_inside_the_matmul(case: str, threads: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The row kernel runs on each block of rows the matmul finishes (one kernel, fewer than
    without the fusion), at any thread count, within the reference's rounding bound as the two
    kernels are. (Not bit for bit: a row sum is reassociated, and the loop vectorizer may
    order it differently in the two functions.)"""
    func = CASES[case]()
    cf = compile_func(func, threads=threads)
    fused = [s.kernel for s in cf.steps if isinstance(s.kernel, MatmulKernel) and s.kernel.post]
    assert len(fused) == 1
    rng = np.random.default_rng(len(case))
    xs = [(rng.standard_normal(tuple(int(d.const or 0) for d in p.type.dims)) * 4)
          .astype(np.float32) for p in func.params]
    got = cf(*xs)
    with monkeypatch.context() as mp:
        mp.setattr(lowering, "fuse_row_passes", lambda plan: None)
        apart = compile_func(CASES[case](), threads=threads)
        assert len(apart.steps) > len(cf.steps)
        want = apart(*xs)
    assert_close_to_reference(list(got), func, xs, case)
    assert_close_to_reference(list(want), func, xs, case)


@pytest.mark.parametrize("rows", [1, 50, 2 * MC + 5])
def test_symbolic_rows_and_columns(rows: int) -> None:
    """The attention example's S x S scores (symbolic sizes, no batch) fuse their softmax too:
    the example's attention is QK^T with its softmax and P V."""
    func = load_module_file(ROOT / "examples" / "attention.tcp").funcs[0]
    cf = compile_func(func)
    fused = [s.kernel for s in cf.steps if isinstance(s.kernel, MatmulKernel) and s.kernel.post]
    assert len(fused) == 1 and fused[0].sizes
    xs = sized_inputs(func, rows)
    assert_close_to_reference(list(cf(*xs)), func, xs, f"S={rows}")


def test_what_is_not_fused() -> None:
    """The product also read elsewhere (here: returned too), a row kernel reading across rows
    (a softmax over the product's columns), and a batch of symbolic size: two kernels each."""
    f, s = scores([6], 9, 8, 12)
    f.ret(softmax(s))
    f.ret(s)
    cols, s2 = scores([6], 9, 8, 12)
    cols.ret(tb.transpose(softmax(tb.transpose(s2, perm=[0, 2, 1])), perm=[0, 2, 1]))
    sym = tb.FuncBuilder("sym")
    q, kt = sym.param("q", "f32[B, 9, 8]"), sym.param("k", "f32[B, 8, 12]")
    sym.ret(softmax(tb.matmul(q, kt)))
    for func in (f.finish(), cols.finish(), sym.finish()):
        cf = compile_func(fuse_everything(func))
        assert not [s for s in cf.steps if getattr(s.kernel, "post", None) is not None]
