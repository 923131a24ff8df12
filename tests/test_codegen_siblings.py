"""Products of one A as one kernel (codegen/siblings.py): attention's Q, K and V projections."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from codegen.support import assert_same, fuse_everything, sized_inputs, tcpr_cache  # noqa: F401
from numerics import assert_close_to_reference

import tcp_rules.codegen.lower as lowering
from tcp_rules import build as tb
from tcp_rules.codegen import compile_func, program
from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.runtime import CompiledFunc, module_ir
from tcp_rules.codegen.tiling import MC, packs_a, tile_shape
from tcp_rules.ir import Func
from tcp_rules.types import DType

_, NR, _ = tile_shape(DType.F32)


def projections(m: int | str, k: int, widths: list[int], dtype: str = "f32",
                bias: bool = True) -> Func:
    """x W_i (+ b_i) for each width: products of one A, each with its own epilogue."""
    f = tb.FuncBuilder("proj")
    x = f.param("x", f"{dtype}[{m}, {k}]")
    outs = []
    for i, w in enumerate(widths):
        y = tb.matmul(x, f.param(f"w{i}", f"{dtype}[{k}, {w}]"))
        if bias:
            y = tb.add(y, tb.broadcast(f.param(f"b{i}", f"{dtype}[{w}]"),
                                       shape=list(y.type.dims), dims=[1]))
        outs.append(y)
    for y in outs:
        f.ret(y)
    return fuse_everything(f.finish())


CASES: dict[str, Callable[[], Func]] = {
    "three heads' projections": lambda: projections(2 * MC + 17, 40, [64, 64, 64]),
    "partial panels, one wide": lambda: projections(50, 24, [NR + 3, 7, 9 * NR + 1]),
    "no bias, K off the vector": lambda: projections(MC - 3, 29, [NR, 2 * NR], bias=False),
    "symbolic rows": lambda: projections("S", 32, [48, 16]),
    "f64": lambda: projections(37, 11, [13, 5, 21], "f64"),
    "two pack A, one reads it": lambda: projections(2 * MC + 5, 37, [5 * NR + 3, NR, 6 * NR]),
}


def _inputs(func: Func, size: int) -> list[np.ndarray]:
    """N(0, 0.09) inputs of each parameter's dtype, symbolic dims ``size``."""
    return [x.astype(p.type.dtype.np_dtype)
            for x, p in zip(sized_inputs(func, size), func.params, strict=True)]


def _joined(cf: CompiledFunc) -> list[MatmulKernel]:
    return [s.kernel for s in cf.steps if isinstance(s.kernel, MatmulKernel)
            and s.kernel.siblings]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_products_of_one_a_run_as_one_kernel(case: str, threads: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """One kernel instead of one per product, the same bits as the products apart (the same
    microkernel on the same rows), at any thread count and split however finely."""
    func = CASES[case]()
    xs = _inputs(func, 2 * MC + 9)
    with monkeypatch.context() as mp:
        mp.setattr(lowering, "fuse_siblings", lambda plan: None)
        apart = compile_func(func, threads=threads)
        want = apart(*xs)
    for split in (program.SPLIT_WORK, 1):  # chunks of rows and of panels anywhere
        monkeypatch.setattr(program, "SPLIT_WORK", split)
        monkeypatch.setattr(program, "SPLIT_PACK", min(split, program.SPLIT_PACK))
        cf = compile_func(func, threads=threads)
        (k,) = _joined(cf)
        assert len(cf.steps) == 1 and len(apart.steps) == len(k.siblings) + 1
        for g, w in zip(cf(*xs), want, strict=True):
            assert_same(g, w, case)
    assert_close_to_reference(list(cf(*xs)), func, xs, case)


def test_specials_as_the_reference() -> None:
    """inf and NaN in one product's B and a huge A: each product rounds its own risky tiles
    (its panels' maxima are in its own region of what the step packs)."""
    func = projections(40, 16, [NR + 5, 20])
    xs = sized_inputs(func, 1)
    xs[0][3, 2] = 3e38
    xs[1][2, 4], xs[3][5, 1] = np.inf, np.nan
    cf = compile_func(func, threads=2)
    assert _joined(cf)
    assert_close_to_reference(list(cf(*xs)), func, xs, "specials")


def test_products_share_the_packed_block() -> None:
    """Products that pack A pack each block once: the first packs it, the others read it from
    the scratch with its largest magnitude, so a later product's risky tiles still round their
    products: a row of A at 3e38 against 10 and -10 sums inf and -inf, NaN as the reference
    has it (fused multiply-adds would give inf)."""
    func = projections(40, 16, [5 * NR, NR, 5 * NR + 2])
    cf = compile_func(func, threads=1)
    (k,) = _joined(cf)
    assert all(packs_a(p) for p in (k, k.siblings[1])) and not packs_a(k.siblings[0])
    ir_text = module_ir(k, "sib")
    assert ir_text.count("\npt.c") == 1  # one product's loop packs A's tiles
    xs = sized_inputs(func, 1)
    xs[0][3, :2] = 3e38
    xs[5][:2, 4] = (10.0, -10.0)  # the third product's B
    got = cf(*xs)
    assert np.isnan(got[2][3, 4])
    assert_close_to_reference(list(got), func, xs, "shared block")


def test_what_does_not_join() -> None:
    """A product that reads the first's output (it needs all of it, the first writes a block
    at a time), one whose B a step between makes, other rows, and batched products stay
    apart."""
    f = tb.FuncBuilder("dep")
    x, w = f.param("x", "f32[32, 32]"), f.param("w", "f32[32, 32]")
    y = tb.matmul(x, w)
    f.ret(tb.matmul(x, y))  # B is the first product
    f.ret(tb.matmul(x, tb.exp(w)))  # B made between
    f.ret(tb.matmul(tb.exp(x), w))  # another A
    f.ret(tb.matmul(tb.broadcast(x, shape=[2, 32, 32], dims=[1, 2]),
                    tb.broadcast(w, shape=[2, 32, 32], dims=[1, 2])))  # batched
    cf = compile_func(fuse_everything(f.finish()))
    assert not _joined(cf)
    xs = sized_inputs(cf.func, 1)
    assert_close_to_reference(list(cf(*xs)), cf.func, xs, "apart")
