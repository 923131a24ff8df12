"""Attention's P V, and a single head's output projection, run inside the kernel that computes
Q K^T and its softmax (codegen/chain.py): one loop nest over blocks of query rows."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from codegen.support import (  # noqa: F401
    assert_same,
    fuse_everything,
    scores,
    sized_inputs,
    softmax,
    tcpr_cache,
)
from numerics import assert_close_to_reference

import tcp_rules.codegen.lower as lowering
from tcp_rules import build as tb
from tcp_rules.codegen import compile_func, program
from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.runtime import CompiledFunc
from tcp_rules.codegen.tiling import MC, tile_shape
from tcp_rules.extract.cost import RooflineCost
from tcp_rules.extract.decode import kernel_costs
from tcp_rules.ir import Func
from tcp_rules.kernels import kernel_infos
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.pipeline import load_module_file
from tcp_rules.rules.library import load_standard_library
from tcp_rules.types import DType

ROOT = Path(__file__).parent.parent


def attention(batch: list[int], m: int, k: int, n: int, dv: int) -> Func:
    """softmax(Q K^T / 8) V over ``batch`` heads."""
    f, s = scores(batch, m, k, n)
    v = f.param("v", f"f32{[*batch, n, dv]}")
    f.ret(tb.matmul(softmax(s), v))
    return fuse_everything(f.finish())


def attention_of(dt: str, heads: int, m: int, n: int, dv: int) -> Func:
    """softmax(Q K^T) V in ``dt``: f64 (tiles of half as many lanes), f16 or bf16 (f32 tiles;
    the scratch holds P as stored and P V's block of it packed as f32)."""
    f = tb.FuncBuilder(dt)
    q, kt = f.param("q", f"{dt}[{heads}, {m}, 8]"), f.param("k", f"{dt}[{heads}, {n}, 8]")
    s = tb.matmul(q, tb.transpose(kt, perm=[0, 2, 1]))
    f.ret(tb.matmul(softmax(s), f.param("v", f"{dt}[{heads}, {n}, {dv}]")))
    return fuse_everything(f.finish())


def masked(m: int, n: int, dv: int) -> Func:
    """A causal mask shared by 6 heads, then P V."""
    f, s = scores([6], m, 16, n)
    causal, v = f.param("causal", f"f32[{m}, {n}]"), f.param("v", f"f32[6, {n}, {dv}]")
    x = tb.add(s, tb.broadcast(causal, shape=[6, m, n], dims=[1, 2]))
    f.ret(tb.matmul(softmax(x), v))
    return fuse_everything(f.finish())


def multi_head(seq: int, heads: int, width: int, project: bool = False) -> Func:
    """Heads split out of [seq, heads * width] projections and merged back: V is read and
    the output written through strided layouts; ``project``: then an output projection."""
    f = tb.FuncBuilder("mha")
    d = heads * width
    x = f.param("x", f"f32[{seq}, {d}]")
    split = []
    for name in ("wq", "wk", "wv"):
        h = tb.reshape(tb.matmul(x, f.param(name, f"f32[{d}, {d}]")), shape=[seq, heads, width])
        split.append(tb.transpose(h, perm=[1, 0, 2]))
    q, k, v = split
    s = tb.matmul(q, tb.transpose(k, perm=[0, 2, 1]))
    s = tb.mul(s, tb.broadcast(tb.apply_op("splat", value=0.25, shape=[], dtype="f32"),
                               shape=list(s.type.dims), dims=[]))
    o = tb.matmul(softmax(s), v)
    merged = tb.reshape(tb.transpose(o, perm=[1, 0, 2]), shape=[seq, d])
    f.ret(tb.matmul(merged, f.param("wo", f"f32[{d}, {d}]")) if project else merged)
    return fuse_everything(f.finish())


_, NR, _ = tile_shape(DType.F32)

CASES: dict[str, Callable[[], Func]] = {
    "2-d, several blocks": lambda: attention([], 2 * MC + 17, 24, 70, 64),
    "batched, a partial panel": lambda: attention([5], 40, 8, 33, NR + 7),
    "a causal mask over heads": lambda: masked(MC + 9, 40, 16),
    "heads split and merged": lambda: multi_head(50, 4, 16),
    "V wide enough to pack P": lambda: attention([3], MC + 1, 16, 20, 5 * NR + 3),
    "f64": lambda: attention_of("f64", 3, 37, 29, 11),
    "f16, V wide enough to pack P": lambda: attention_of("f16", 2, MC + 9, 40, 5 * NR + 3),
    "bf16": lambda: attention_of("bf16", 3, 37, 29, 11),
}


def _inputs(func: Func, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(tuple(int(d.const or 0) for d in p.type.dims)) * 2)
            .astype(p.type.dtype.np_dtype) for p in func.params]


def _chained(cf: CompiledFunc) -> list[MatmulKernel]:
    return [s.kernel for s in cf.steps if isinstance(s.kernel, MatmulKernel)
            and s.kernel.then is not None]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_p_v_runs_inside_the_softmax_kernel(case: str, threads: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One kernel fewer than with P V apart, the same bits as that (the same microkernel on
    the same rows of P, from the scratch instead of memory), at any thread count, and within
    the reference's rounding bound."""
    (k,) = _against_apart(case, CASES[case], threads, 1, monkeypatch)
    assert k.then is not None and k.then.then is None


def _against_apart(case: str, make: Callable[[], Func], threads: int, fewer: int,
                   monkeypatch: pytest.MonkeyPatch) -> list[MatmulKernel]:
    """Compile ``make()`` with its products chained and apart: ``fewer`` kernels, the same
    bits, within the reference's bound; the chained kernels."""
    func = make()
    cf = compile_func(func, threads=threads)
    xs = _inputs(func, len(case))
    got = cf(*xs)
    with monkeypatch.context() as mp:
        mp.setattr(lowering, "fuse_row_products", lambda plan: None)
        apart = compile_func(make(), threads=threads)
        assert len(apart.steps) == len(cf.steps) + fewer and not _chained(apart)
        want = apart(*xs)
    for g, w in zip(got, want, strict=True):
        assert_same(g, w, case)
    assert_close_to_reference(list(got), func, xs, case)
    return _chained(cf)


def test_strided_heads_are_read_and_written_in_place() -> None:
    """The multi-head case reads V's heads out of its projection and writes its heads into
    the merged [seq, heads * width] layout, through strided layouts (no transposes of V or of
    the output as kernels of their own)."""
    (k,) = _chained(compile_func(CASES["heads split and merged"]()))
    assert k.then is not None and k.then.b_at is not None and k.then.c_at is not None
    assert k.then_batch == (((4, 16),),) * 2  # each head 16 columns on from the one before


def test_specials_in_v_as_the_reference() -> None:
    """inf, NaN and values whose sums overflow in V: the second product's overflow guard
    works inside the fused kernel as in a matmul of its own."""
    func = CASES["batched, a partial panel"]()
    xs = _inputs(func, 1)
    v = xs[2]
    v[0, 3, 5], v[1, :, 2], v[2, 7, 0], v[3, :, 9] = np.inf, 3e38, np.nan, -3e38
    cf = compile_func(func, threads=2)
    assert _chained(cf)
    assert_close_to_reference(list(cf(*xs)), func, xs, "specials")


@functools.cache
def _example() -> Func:
    """The attention example as ``tcpr opt`` makes it (its softmax is then one row kernel)."""
    func = load_module_file(ROOT / "examples" / "attention.tcp").funcs[0]
    return optimize(func, list(load_standard_library().rules), OptOptions(isolate=False)).func


@pytest.mark.parametrize("rows", [1, 50, 2 * MC + 5])
def test_the_attention_example(rows: int) -> None:
    """The optimized example's S x S scores (symbolic sizes, no batch): Q K^T, softmax, P V
    and the output projection are one kernel; with the three projections (one kernel of
    sibling products, siblings.py), two."""
    func = _example()
    cf = compile_func(func)
    (k,) = _chained(cf)
    assert k.then is not None and k.then.then is not None and len(cf.steps) == 2
    (qkv,) = [s.kernel for s in cf.steps if s.kernel is not k]
    assert isinstance(qkv, MatmulKernel) and len(qkv.siblings) == 2
    xs = sized_inputs(func, rows)
    assert_close_to_reference(list(cf(*xs)), func, xs, f"S={rows}")


def projected(m: int, n: int, dv: int, width: int, dtype: str = "f32") -> Func:
    """softmax(Q K^T) V W, one head: the output projection as a third product."""
    f = tb.FuncBuilder("projected")
    q, kt = f.param("q", f"{dtype}[{m}, 8]"), f.param("k", f"{dtype}[{n}, 8]")
    s = tb.matmul(q, tb.transpose(kt, perm=[1, 0]))
    o = tb.matmul(softmax(s), f.param("v", f"{dtype}[{n}, {dv}]"))
    f.ret(tb.matmul(o, f.param("w", f"{dtype}[{dv}, {width}]")))
    return fuse_everything(f.finish())


THIRD: dict[str, Callable[[], Func]] = {
    "several blocks, a partial panel": lambda: projected(2 * MC + 17, 70, 64, NR + 9),
    "W wide enough to pack O": lambda: projected(MC + 1, 20, 24, 5 * NR + 3),
    "f64": lambda: projected(37, 29, 11, 13, "f64"),
    "f16, V wide enough to pack P": lambda: projected(MC + 1, 40, 5 * NR + 3, 24, "f16"),
    "bf16": lambda: projected(2 * MC + 17, 70, 64, NR + 9, "bf16"),
}


@pytest.mark.parametrize("case", list(THIRD))
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_the_output_projection_runs_inside_too(case: str, threads: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """(P V) W: two kernels fewer than with both products apart, the same bits as that, and
    within the reference's rounding bound."""
    (k,) = _against_apart(case, THIRD[case], threads, 2, monkeypatch)
    assert k.then is not None and k.then.then is not None


@pytest.mark.parametrize("case", ["several blocks, a partial panel", "W wide enough to pack O"])
@pytest.mark.parametrize("threads", [3, 8])
def test_what_the_step_packs_splits_anywhere(case: str, threads: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The step packs K^T, then V for each batch, then W, once a call, its panels split over
    the threads: with every kernel split as finely as it goes, chunks of panels start and end
    inside each product's panels and across from one to the next, and the results are the
    bits of the products apart."""
    monkeypatch.setattr(program, "SPLIT_WORK", 1)
    monkeypatch.setattr(program, "SPLIT_PACK", 1)
    (k,) = _against_apart(case, THIRD[case], threads, 2, monkeypatch)
    assert k.then is not None and k.then.then is not None
    cf = compile_func(THIRD[case](), threads=threads)
    lay = program.layout(cf.plan, cf.instance({}), cf.addrs, threads, cf.target)
    at = int(lay.prog[3])
    (rec,) = [lay.prog[at + program.STEP_WORDS * s:][:program.STEP_WORDS]
              for s in range(lay.nsteps)]
    assert isinstance(k.n, int)
    head = -(-k.n // tile_shape(DType.F32)[1])  # K^T's panels
    # the step's panels: K^T's, then V's and W's; its chunks cut them into more than three
    assert rec[program.KIND] == program.MATMUL and rec[program.PANELS] > head
    assert rec[program.PACK_CHUNKS] > 3


def test_what_takes_no_third_product() -> None:
    """O also returned, a bias on the projection, and heads (a block of O's rows holds one
    head's columns): the projection stays a kernel of its own."""
    f, s = scores([], 9, 8, 12)
    o = tb.matmul(softmax(s), f.param("v", "f32[12, 5]"))
    f.ret(tb.matmul(o, f.param("w", "f32[5, 7]")))
    f.ret(o)
    bias, s2 = scores([], 9, 8, 12)
    o2 = tb.matmul(softmax(s2), bias.param("v", "f32[12, 5]"))
    y = tb.matmul(o2, bias.param("w", "f32[5, 7]"))
    bias.ret(tb.add(y, tb.broadcast(bias.param("b", "f32[7]"), shape=[9, 7], dims=[1])))
    for func in (fuse_everything(f.finish()), fuse_everything(bias.finish()),
                 multi_head(50, 4, 16, project=True)):
        cf = compile_func(func)
        (k,) = _chained(cf)
        assert k.then is not None and k.then.then is None, func.name
        assert any(isinstance(st.kernel, MatmulKernel) and st.kernel.post is None
                   and st.kernel.then is None for st in cf.steps), func.name


def test_what_is_not_chained() -> None:
    """P also returned, P as the second product's B, an epilogue reading a bias, and a
    second product of symbolic width: P V stays a kernel of its own."""
    f, s = scores([2], 9, 8, 12)
    p = softmax(s)
    f.ret(tb.matmul(p, f.param("v", "f32[2, 12, 5]")))
    f.ret(p)
    b_side, s2 = scores([2], 9, 8, 12)
    b_side.ret(tb.matmul(b_side.param("w", "f32[2, 4, 9]"), softmax(s2)))
    bias, s3 = scores([2], 9, 8, 12)
    pv = tb.matmul(softmax(s3), bias.param("v", "f32[2, 12, 5]"))
    bias.ret(tb.add(pv, tb.broadcast(bias.param("b", "f32[5]"), shape=[2, 9, 5], dims=[2])))
    sym = tb.FuncBuilder("sym")
    q, kt = sym.param("q", "f32[9, 8]"), sym.param("k", "f32[8, 12]")
    sym.ret(tb.matmul(softmax(tb.matmul(q, kt)), sym.param("v", "f32[12, D]")))
    for func in (f.finish(), b_side.finish(), bias.finish(), sym.finish()):
        cf = compile_func(fuse_everything(func))
        assert [s for s in cf.steps if getattr(s.kernel, "post", None) is not None]
        assert not _chained(cf), func.name


def test_the_kernel_listing_shows_what_the_fused_kernel_computes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--emit kernels`` lists the fused kernel's ops, the softmax's, P V's and the output
    projection's (the program's two load_matmul_rows), with the cost model's estimate of the
    program's kernel. Were the code generator to run them apart, the steps writing P and O
    would be its own, not the program's: listed without an estimate."""
    func = _example()
    fused = [i for i in kernel_infos(func, RooflineCost()) if "exp" in i.ops]
    with monkeypatch.context() as mp:
        mp.setattr(lowering, "fuse_row_products", lambda plan: None)
        apart = kernel_infos(func, RooflineCost())
    (att,) = fused
    assert att.ops[0] == "load_matmul" and "reduce_sum" in att.ops
    assert att.ops[-2:] == ["load_matmul_rows"] * 2 and att.text.count("then times") == 2
    assert att.estimated_us == pytest.approx(kernel_costs(func, RooflineCost())[
        func.results[0]] / 1e3)
    softmax_k = next(i for i in apart if "exp" in i.ops)
    pv = next(i for i in apart if " k=s0 n=64" in i.text)  # P V
    proj = next(i for i in apart if " k=64 n=128" in i.text)  # O W
    assert len(apart) == 4 and softmax_k.estimated_us is None and pv.estimated_us is None
    assert pv.ops == proj.ops == ["load_matmul_rows"] and proj.estimated_us == att.estimated_us
