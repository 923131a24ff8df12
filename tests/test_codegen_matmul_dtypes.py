"""Matmul across dtypes: f16 and bf16 on the packed microkernel (operands converted to f32 while
packing, each product's f32 sum rounded once, as the reference computes them), and empty
operands of every dtype the microkernel takes. Chained f16 and bf16 products (attention) are
among test_codegen_chain's cases."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from codegen.support import assert_same, fuse_everything, tcpr_cache  # noqa: F401
from numerics import assert_close_to_reference

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func
from tcp_rules.codegen.kernel import MATMUL_DTYPES, MatmulKernel
from tcp_rules.codegen.tiling import IN_PLACE_PANELS, packs_a, tile_shape
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func
from tcp_rules.types import DType

HALF = [DType.F16, DType.BF16]


def _matmul(dt: DType, batch: str = "", bt: bool = False, n: int | str = "N") -> Func:
    """matmul(a, b) of ``dt``, over a ``batch`` axis if named; B as the transpose of a stored
    ``[batch,] n, k`` tensor with ``bt``."""
    pre = f"{batch}, " if batch else ""
    f = tb.FuncBuilder("mm")
    a = f.param("a", f"{dt}[{pre}M, K]")
    if bt:
        b = f.param("bt", f"{dt}[{pre}{n}, K]")
        f.ret(tb.matmul(a, tb.transpose(b, perm=[0, 2, 1] if batch else [1, 0])))
    else:
        f.ret(tb.matmul(a, f.param("b", f"{dt}[{pre}K, {n}]")))
    return f.finish()


def _microkernels(func: Func) -> list[bool]:
    """Per step of the compiled ``func``: whether it is a microkernel product."""
    return [isinstance(s.kernel, MatmulKernel) for s in compile_func(func).steps]


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (7, 13, 33), (17, 64, 40), (33, 5, 70),
                                           (200, 300, 129)])
@pytest.mark.parametrize("bt", [False, True])
def test_half_products_are_exact_sums_rounded_once(dt: DType, m: int, k: int, n: int,
                                                   bt: bool) -> None:
    """Small integers: every product and partial sum is exact in f32 whatever the order, so
    the microkernel's result, rounded once, is the reference's bit for bit (above 2048, f16
    rounds the sum: once, in both). B as stored or read from its transpose."""
    func = _matmul(dt, bt=bt)
    assert _microkernels(func) == [True]
    rng = np.random.default_rng(m * k + n)
    xa = rng.integers(-8, 9, (m, k)).astype(dt.np_dtype)
    xb = rng.integers(-8, 9, (n, k) if bt else (k, n)).astype(dt.np_dtype)
    (got,) = compile_func(func)(xa, xb)
    (ref,) = evaluate(func, [xa, xb])
    assert got.dtype == dt.np_dtype
    assert_same(got, ref, f"{dt} {m}x{k}x{n}")


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("panels", [0.5, IN_PLACE_PANELS, 6])
def test_half_products_read_a_in_place_or_packed(dt: DType, panels: float) -> None:
    """A static N of a few panels reads A where it lies (as f16 or bf16, converted per element),
    more panels pack it: random values, batched, within the reference's rounding bound."""
    nr = tile_shape(dt)[1]
    n = max(1, int(panels * nr))
    func = _matmul(dt, batch="B", n=n)
    cf = compile_func(func)
    (k,) = [s.kernel for s in cf.steps]
    assert isinstance(k, MatmulKernel) and packs_a(k) == (panels > IN_PLACE_PANELS)
    rng = np.random.default_rng(n)
    xs = [rng.standard_normal(s).astype(dt.np_dtype) for s in ((3, 101, 37), (3, 37, n))]
    assert_close_to_reference(cf(*xs), func, xs, f"{dt} N = {n}")


@pytest.mark.parametrize("dt", HALF)
def test_half_product_with_an_epilogue(dt: DType) -> None:
    """The bias and the GELU run on the tile: the product is rounded to ``dt`` before them, and
    each of their ops after it, as the reference does."""
    f = tb.FuncBuilder("mlp")
    x, w, bias = f.param("x", f"{dt}[M, K]"), f.param("w", f"{dt}[K, N]"), f.param("b", f"{dt}[N]")
    h = tb.add(tb.matmul(x, w), tb.broadcast(bias, shape=["M", "N"], dims=[1]))
    f.ret(tb.mul(h, tb.sigmoid(tb.mul(h, 1.702))))
    func = f.finish()
    cf = compile_func(fuse_everything(func))
    assert _microkernels(fuse_everything(func)) == [True]  # one kernel: the epilogue is fused
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(s).astype(dt.np_dtype) for s in ((70, 96), (96, 80), (80,))]
    assert_close_to_reference(cf(*xs), func, xs, f"{dt} mlp")


@pytest.mark.parametrize("case", ["inf", "overflow"])
def test_bf16_products_that_overflow_f32_round_first(case: str) -> None:
    """bf16 reaches f32's range: inf * 1 + 2 * -big is NaN in the reference (the product
    rounds to -inf) and -big + root * root inf, where fused multiply-adds would give inf and a
    finite sum. Those tiles round their products first, as f32's do."""
    big = float(ml_dtypes.finfo(ml_dtypes.bfloat16).max) * 0.9
    root = float(np.sqrt(big)) * 1.2  # root**2 overflows f32
    row, col = {"inf": ([np.inf, 2.0], [1.0, -big]),
                "overflow": ([-big, root], [1.0, root])}[case]
    func = _matmul(DType.BF16)
    rng = np.random.default_rng(8)
    xa, xb = rng.standard_normal((50, 11)), rng.standard_normal((11, 70))
    xa[13, 4:6], xb[4:6, 40] = row, col
    xa, xb = xa.astype(ml_dtypes.bfloat16), xb.astype(ml_dtypes.bfloat16)
    (ref,) = evaluate(func, [xa, xb])
    assert not np.isfinite(ref[13, 40].astype(np.float32))
    with np.errstate(over="ignore", invalid="ignore"):  # the tolerance of an inf is inf
        assert_close_to_reference(compile_func(func)(xa, xb), func, [xa, xb], "bf16 specials")


@pytest.mark.parametrize("dt", sorted(MATMUL_DTYPES, key=str))
@pytest.mark.parametrize(("batch", "m", "k", "n"), [(None, 0, 3, 5), (None, 4, 0, 5),
                                                    (None, 4, 3, 0), (0, 4, 3, 5),
                                                    (2, 0, 3, 5), (2, 4, 0, 5)])
def test_empty_operands(dt: DType, batch: int | None, m: int, k: int, n: int) -> None:
    """No rows, no columns, no batches or K = 0 (a product of zeros): what the reference gives.
    No rows or no batches divided by zero in the kernel (SIGFPE, the process killed)."""
    func = _matmul(dt, batch="B" if batch is not None else "")
    lead = (batch,) if batch is not None else ()
    xa, xb = np.ones((*lead, m, k), dt.np_dtype), np.ones((*lead, k, n), dt.np_dtype)
    (got,) = compile_func(func)(xa, xb)
    (ref,) = evaluate(func, [xa, xb])
    assert got.shape == ref.shape == (*lead, m, n)
    assert_same(got, ref, f"{dt} {lead} {m}x{k}x{n}")
