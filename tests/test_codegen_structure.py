"""Differential tests of reductions, data movement, matmul and whole programs (fused or not)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from codegen.support import (  # noqa: F401
    assert_same,
    edge_values,
    fuse_everything,
    overflow_patterns,
    tcpr_cache,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from numerics import assert_close_to_reference, gamma

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func
from tcp_rules.codegen.accumulators import F32_SUM_BLOCK
from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.tiling import IN_PLACE_PANELS, packs_a, tile_shape
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Apply, Func
from tcp_rules.pipeline import load_module_file
from tcp_rules.types import DType

ROOT = Path(__file__).parent.parent
F32, F64, I32, I64 = DType.F32, DType.F64, DType.I32, DType.I64


def reduce_func(op: str, dt: DType, axes: list[int], keep: bool) -> Func:
    f = tb.FuncBuilder("r")
    x = f.param("x", f"{dt}[A, B, C]")
    f.ret(tb.apply_op(op, x, axes=axes, keepdims=keep))
    return f.finish()


@pytest.mark.parametrize("dt", [F32, F64, I32, I64])
@pytest.mark.parametrize("op", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
@pytest.mark.parametrize(("axes", "keep"), [([2], False), ([0, 2], True), ([0, 1, 2], False),
                                            ([], False)])
def test_reductions(op: str, dt: DType, axes: list[int], keep: bool) -> None:
    rng = np.random.default_rng(0)
    if dt.is_float:
        x = (rng.uniform(0.5, 1.5, (3, 5, 37)) * rng.choice([-1, 1], (3, 5, 37)))
    else:
        x = rng.integers(-100, 100, (3, 5, 37))
    x = x.astype(dt.np_dtype)
    func = reduce_func(op, dt, axes, keep)
    (got,) = compile_func(func)(x)
    (ref,) = evaluate(func, [x])
    if dt.is_float and op in ("reduce_sum", "reduce_prod"):  # reassociated: approx
        assert_close_to_reference([got], func, [x], op)
    else:
        assert_same(got, ref, op)


@pytest.mark.parametrize("op", ["reduce_max", "reduce_min", "reduce_sum"])
def test_reduction_special_values(op: str) -> None:
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, 0.0], [np.inf, -np.inf, 1.0],
                  [-0.0, -0.0, -0.0]], dtype=np.float32)
    func = reduce_func(op, F32, [2], False)
    (got,) = compile_func(func)(x[None])
    (ref,) = evaluate(func, [x[None]])
    assert_same(got, ref, op)


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("op", ["reduce_max", "reduce_min"])
def test_row_max_and_min_of_zeros_keep_their_sign(dt: DType, op: str) -> None:
    """A row's float max/min first runs with either zero allowed as a zero result (fewer
    instructions a vector) and again, exactly, when its result is a zero: +0.0 beats -0.0
    for max (-0.0 for min) wherever the two sit, in the vector part of the row or its tail;
    NaN anywhere wins; rows that are not all zeros come out the same either way."""
    n, sign = 301, 1.0 if op == "reduce_max" else -1.0
    rng = np.random.default_rng(5)
    rows = []
    for a, b in ((0, 1), (1, 0), (17, 290), (290, 17), (299, 300), (64, 65)):
        row = -sign * rng.uniform(1.0, 2.0, n)  # all below the zeros (above them for min)
        row[a], row[b] = sign * 0.0, -sign * 0.0  # the wanted zero first, then the other
        rows.append(row)
        rows.append(np.where(np.arange(n) == b, -sign * 0.0, row))  # only the other zero
    rows.append(np.full(n, -sign * 0.0))
    for at in (3, 160, 300):
        row = -sign * rng.uniform(1.0, 2.0, n)
        row[at] = np.nan
        rows.append(row)
    rows.append(np.full(n, -sign * np.inf))
    rows.append(rng.standard_normal(n))
    x = np.array(rows, dtype=dt.np_dtype)[None]
    func = reduce_func(op, dt, [2], False)
    (got,) = compile_func(func)(x)
    (ref,) = evaluate(func, [x])
    assert_same(got, ref, op)


def test_empty_reductions() -> None:
    for op in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        for dt in (F32, I32):
            func = reduce_func(op, dt, [1], False)
            x = np.zeros((2, 0, 3), dt.np_dtype)
            assert_same(compile_func(func)(x)[0], evaluate(func, [x])[0], op)


def _sum_all(x: np.ndarray) -> np.ndarray:
    f = tb.FuncBuilder("s")
    p = f.param("x", "f32[N]")
    f.ret(tb.reduce_sum(p, axes=[0]))
    (got,) = compile_func(f.finish())(x)
    return got


def test_f32_sum_accuracy_beats_naive() -> None:
    """f32 sums add blocks in f32 and the block sums in f64: as close to the exact sum as
    NumPy's pairwise f32 sum."""
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 1 << 20).astype(np.float32)
    exact = np.sum(x.astype(np.float64))
    got = _sum_all(x)
    assert abs(float(got) - exact) <= abs(float(np.sum(x)) - exact) + np.spacing(np.float32(exact))


def test_f32_sum_error_grows_with_the_block_not_the_length() -> None:
    """2**20 terms of 0.1: 8 to 32 vector lanes summing in f32 over the whole length would be
    2.6e-4 to 1e-3 off; blocks of F32_SUM_BLOCK terms in f32 (in any order: gamma_B), added in
    f64, are within B u of the exact sum, plus the final rounding."""
    x = np.full(1 << 20, 0.1, np.float32)
    exact = np.float32(0.1).astype(np.float64) * x.size
    bound = float(gamma(F32_SUM_BLOCK, np.dtype(np.float32))) * exact
    assert abs(float(_sum_all(x)) - exact) <= bound + np.spacing(np.float32(exact))


MOVES = [
    ("f32[N, 3]", lambda x: tb.transpose(x, perm=[1, 0])),
    ("f32[N, 3]", lambda x: tb.broadcast(x, shape=[2, "N", 3], dims=[1, 2])),
    ("f32[N, 1]", lambda x: tb.broadcast(x, shape=["N", 5], dims=[0, 1])),
    ("i32[N, 4]", lambda x: tb.slice(x, start=[1, 0], size=[2, 2], stride=[2, 3])),
    ("f64[N, 4]", lambda x: tb.reshape(x, shape=[4, "N"])),
    ("i64[N, 3]", lambda x: tb.concat(x, tb.neg(x), x, axis=1)),
    ("f32[N, 3]", lambda x: tb.concat(x, x, axis=0)),
    ("f32[N, 3]", lambda x: tb.gather(x, tb.dense(value=[2, -1, 0, 99, 1], dtype="i32"),
                                      axis=0)),
    # a constant pad a gather reads, so materialized (the value, then x over the interior)
    ("f32[N, 3]", lambda x: tb.gather(tb.pad(x, low=[1, 2], high=[2, 1], mode="constant",
                                             value=-2.5),
                                      tb.dense(value=[0, 3, 5, 2], dtype="i32"), axis=1)),
    ("i32[N, 3]", lambda x: tb.gather(tb.pad(tb.neg(x), low=[0, 1], high=[3, 0],
                                             mode="constant", value=7),
                                      tb.dense(value=[1, 0], dtype="i32"), axis=0)),
    ("f32[N, 3]", lambda x: tb.add(x, tb.splat(value=2.5, shape=["N", 3], dtype="f32"))),
    ("f32[7, 3]", lambda x: tb.mul(tb.transpose(tb.transpose(x, perm=[1, 0]), perm=[1, 0]),
                                   tb.dense(value=[[1.0, 2.0, 3.0]] * 7, dtype="f32"))),
    ("f32[N, 3]", lambda x: tb.reshape(tb.neg(x), shape=[3, "N"])),
    ("f32[N, 3]", lambda x: x),
    ("f32[N, 3]", lambda x: tb.transpose(tb.add(x, 1.0), perm=[1, 0])),
]


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("case", range(len(MOVES)))
def test_data_movement(case: int, fuse: bool) -> None:
    t, build = MOVES[case]
    f = tb.FuncBuilder("m")
    x = f.param("x", t)
    f.ret(build(x))
    func = f.finish()
    p = func.params[0].type
    shape = tuple(d.subst({"N": 7}).const or 0 for d in p.dims)
    arr = np.resize(edge_values(p.dtype, 40), shape)
    (got,) = compile_func(fuse_everything(func) if fuse else func)(arr)
    (ref,) = evaluate(func, [arr])
    assert_same(got, ref, f"case {case}")


@pytest.mark.parametrize("from_data", [False, True])
def test_an_index_kernel_of_iotas_is_recomputed_where_read(from_data: bool) -> None:
    """A kernel whose body is computed from iotas alone (im2col's window positions) is read
    inline by the gather, not written to memory and read back; one that reads a tensor is
    materialized as before. Both give the reference's values, out-of-range indices clamped."""
    f = tb.FuncBuilder("g")
    x = f.param("x", "f32[5, 40]")
    shape = [3, 4, 6]
    i0, i1, i2 = (tb.iota(shape=shape, axis=a, dtype="i32") for a in range(3))
    body = tb.add(tb.mul(tb.load(i0), tb.splat(value=9, shape=shape, dtype="i32")),
                  tb.add(tb.load(i1), tb.mul(tb.load(i2), tb.splat(value=3, shape=shape,
                                                                   dtype="i32"))))
    if from_data:
        y = f.param("y", "i32[3, 4, 6]")
        body = tb.add(body, tb.load(y))
    f.ret(tb.gather(x, tb.kernel(body), axis=1))
    func = f.finish()
    arrays = [np.arange(200, dtype=np.float32).reshape(5, 40)]
    if from_data:
        arrays.append(np.full(shape, 7, np.int32))
    compiled = compile_func(func)
    (got,) = compiled(*arrays)
    (ref,) = evaluate(func, arrays)
    assert_same(got, ref, "gather")
    assert len(compiled.plan.steps) == (2 if from_data else 1)


@pytest.mark.parametrize("dt", [F32, F64, I32, I64])
@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (7, 13, 33), (17, 64, 40), (33, 5, 70)])
def test_matmul(dt: DType, m: int, k: int, n: int) -> None:
    f = tb.FuncBuilder("mm")
    a, b = f.param("a", f"{dt}[M, K]"), f.param("b", f"{dt}[K, N]")
    f.ret(tb.matmul(a, b))
    func = f.finish()
    rng = np.random.default_rng(m * n)
    xa = rng.integers(-50, 50, (m, k)).astype(dt.np_dtype)
    xb = rng.integers(-50, 50, (k, n)).astype(dt.np_dtype)
    (got,) = compile_func(func)(xa, xb)
    (ref,) = evaluate(func, [xa, xb])
    assert_same(got, ref, "matmul")  # small integers: exact in floats too


def test_batched_matmul_with_epilogue() -> None:
    f = tb.FuncBuilder("bmm")
    a, b = f.param("a", "f32[B, M, K]"), f.param("b", "f32[B, K, N]")
    bias = f.param("bias", "f32[N]")
    mm = tb.matmul(a, b)
    f.ret(tb.gt(tb.add(mm, tb.broadcast(bias, shape=["B", "M", "N"], dims=[2])), 0.5))
    func = f.finish()
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((3, 9, 20), (3, 20, 35), (35,))]
    cf = compile_func(fuse_everything(func))
    assert len(cf.plan.steps) == 1  # the bias and the comparison run in the epilogue
    # Only comparisons whose operands are within the rounding bound of 0.5 may differ.
    assert_close_to_reference(cf(*xs), func, xs, "bmm")


@pytest.mark.parametrize("op", ["tanh", "erf", "sigmoid"])
def test_matmul_epilogue_with_polynomial_math(op: str) -> None:
    """The epilogue computes on vectors directly: tanh and erf take their table lookups inline."""
    f = tb.FuncBuilder("mma")
    a, b = f.param("a", "f32[M, K]"), f.param("b", "f32[K, N]")
    f.ret(tb.apply_op(op, tb.matmul(a, b)))
    func = f.finish()
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((37, 16), (16, 70))]
    cf = compile_func(fuse_everything(func))
    assert len(cf.plan.steps) == 1
    assert_close_to_reference(cf(*xs), func, xs, op)


def test_matmul_epilogue_with_strided_read() -> None:
    f = tb.FuncBuilder("mmt")
    a, b, c = f.param("a", "f64[M, K]"), f.param("b", "f64[K, M]"), f.param("c", "f64[M, M]")
    f.ret(tb.max(tb.add(tb.matmul(a, b), tb.transpose(c, perm=[1, 0])), 0.0))
    func = f.finish()
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal(s) for s in ((19, 8), (8, 19), (19, 19))]
    assert_close_to_reference(compile_func(func)(*xs), func, xs, "strided epilogue")


def example_inputs(func: Func, env: dict[str, int], seed: int, scaled: bool) -> list[np.ndarray]:
    """Standard normal inputs; ``scaled``: weight matrices (a constant first dim: the fan-in)
    divided by sqrt(fan-in), as networks are initialized, so activations stay of order 1. The
    unscaled attention has scores in the hundreds, where exp magnifies the worst-case rounding
    bound of the scores (right, but loose); scaled, the bound is tight enough to catch less."""
    rng = np.random.default_rng(seed)
    xs = []
    for p in func.params:
        shape = tuple(d.subst(env).const or 0 for d in p.type.dims)
        x = rng.standard_normal(shape)
        if scaled and len(shape) == 2 and p.type.dims[0].const:
            x /= np.sqrt(shape[0])
        xs.append(x.astype(np.float32))
    return xs


@pytest.mark.parametrize("name", ["mlp", "softmax", "layernorm", "gelu", "attention"])
@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("scaled", [False, True])
def test_examples(name: str, fuse: bool, scaled: bool) -> None:
    func = load_module_file(ROOT / "examples" / f"{name}.tcp").func()
    xs = example_inputs(func, {"N": 13, "D": 29, "S": 11}, 7, scaled)
    got = compile_func(fuse_everything(func) if fuse else func)(*xs)
    assert_close_to_reference(got, func, xs, name)


def _fma_relu() -> Func:
    f = tb.FuncBuilder("relu_fma")
    a, b, c = (f.param(n, "f32[N, M]") for n in "abc")
    f.ret(tb.max(tb.add(tb.mul(a, b), c), 0.0))
    return f.finish()


FMA_RELU = _fma_relu()
FLOATS = st.floats(width=32, allow_nan=True, allow_infinity=True)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 9), st.integers(0, 40), st.data())
def test_fused_elementwise_any_shape(n: int, m: int, data: st.DataObject) -> None:
    xs = [np.array(data.draw(st.lists(FLOATS, min_size=n * m, max_size=n * m)),
                   dtype=np.float32).reshape(n, m) for _ in range(3)]
    (got,) = compile_func(FMA_RELU)(*xs)
    (ref,) = evaluate(FMA_RELU, xs)
    assert_same(got, ref, "relu(a*b+c)")


EXACT_BINARY = ["add", "sub", "mul", "max", "min"]
EXACT_UNARY = ["neg", "abs", "floor", "round"]
SHAPES = {"NM": ("N", "M"), "MN": ("M", "N"), "N": ("N",), "M": ("M",)}


@st.composite
def programs(draw: st.DrawFn) -> Func:
    """Random well-typed programs of exact ops, views and max/min reductions."""
    f = tb.FuncBuilder("rand")
    pool: dict[str, list] = {k: [] for k in SHAPES}  # type: ignore[type-arg]
    pool["NM"].append(f.param("x", "f32[N, M]"))
    pool["M"].append(f.param("y", "f32[M]"))
    pool["N"].append(f.param("z", "f32[N]"))
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["unary", "binary", "view", "reduce", "select"]))
        shape = draw(st.sampled_from([k for k, v in pool.items() if v]))
        a = draw(st.sampled_from(pool[shape]))
        if kind == "unary":
            pool[shape].append(tb.apply_op(draw(st.sampled_from(EXACT_UNARY)), a))
        elif kind in ("binary", "select"):
            b = draw(st.sampled_from(pool[shape]))
            if kind == "binary":
                pool[shape].append(tb.apply_op(draw(st.sampled_from(EXACT_BINARY)), a, b))
            else:
                pool[shape].append(tb.select(tb.gt(a, b), a, tb.neg(b)))
        elif kind == "view" and shape in ("NM", "MN"):
            pool["MN" if shape == "NM" else "NM"].append(tb.transpose(a, perm=[1, 0]))
        elif kind == "view":  # a vector broadcast along a new leading axis
            full = ["N", "M"] if shape == "M" else ["M", "N"]
            pool["NM" if shape == "M" else "MN"].append(tb.broadcast(a, shape=full, dims=[1]))
        elif shape in ("NM", "MN"):
            op = draw(st.sampled_from(["reduce_max", "reduce_min"]))
            pool[shape[0]].append(tb.apply_op(op, a, axes=[1]))
    results = draw(st.lists(st.sampled_from([v for vs in pool.values() for v in vs]),
                            min_size=1, max_size=2))
    f.ret(*results)
    return f.finish()


@settings(max_examples=30, deadline=None)
@given(programs(), st.booleans(), st.integers(1, 5), st.integers(1, 6))
def test_random_programs(func: Func, fuse: bool, n: int, m: int) -> None:
    rng = np.random.default_rng(n * 7 + m)
    xs = [(rng.standard_normal(s) * 3).astype(np.float32) for s in ((n, m), (m,), (n,))]
    xs[0].ravel()[0] = np.nan
    got = compile_func(fuse_everything(func) if fuse else func)(*xs)
    ref = evaluate(func, xs)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_array_equal(g, r)  # -0.0 == 0.0 here: max/min zero signs may differ


def _matmul_func(dt: DType, batched: bool = False) -> Func:
    f = tb.FuncBuilder("mm_ieee")
    pre = "B, " if batched else ""
    a, b = f.param("a", f"{dt}[{pre}M, K]"), f.param("b", f"{dt}[{pre}K, N]")
    f.ret(tb.matmul(a, b))
    return f.finish()


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("at", [None, 0, 9])
def test_matmul_keeps_the_references_specials(dt: DType, at: int | None) -> None:
    """A fused multiply-add never rounds its product: inf * 1 + 2 * -3e38 would be inf fused,
    where the reference (products rounded, then summed) gives inf + -inf = NaN; and -3e38 +
    2e19 * 2e19 would be 1e38 fused, inf in the reference. Compiled matmul rounds the products
    of tiles where one may overflow, so it gives the reference's specials, alone and inside
    larger matrices (several tiles and panels, finite tiles beside), at k = ``at``: packing
    reads A by vectors of k, then the last K % VF one by one, and either may hold them."""
    tiles = at is not None
    big = float(np.finfo(dt.np_dtype).max) * 0.9
    root = float(np.sqrt(np.finfo(dt.np_dtype).max)) * 1.1  # root**2 overflows, barely
    cases = [([[np.inf, 2.0]], [[1.0], [-big]]), ([[-big, root]], [[1.0], [root]])]
    func = _matmul_func(dt)
    cf = compile_func(func)
    rng = np.random.default_rng(9)
    for a, b in cases:
        xa, xb = np.array(a, dt.np_dtype), np.array(b, dt.np_dtype)
        if at is not None:  # in row 13 and column 40 of 50 x 70, K = 11, among finite values
            fa, fb = rng.standard_normal((50, 11)), rng.standard_normal((11, 70))
            fa[13, at:at + 2], fb[at:at + 2, 40] = xa[0], xb[:, 0]
            xa, xb = fa.astype(dt.np_dtype), fb.astype(dt.np_dtype)
        (ref,) = evaluate(func, [xa, xb])
        (got,) = cf(xa, xb)
        want = ref if tiles else ref[0, 0]
        assert not np.isfinite(want if not tiles else ref[13, 40])
        assert_close_to_reference([got], func, [xa, xb], f"{a} @ {b}")


def test_matmul_batched_specials_and_epilogue() -> None:
    f = tb.FuncBuilder("bmm_ieee")
    a, b = f.param("a", "f32[B, M, K]"), f.param("b", "f32[B, K, N]")
    f.ret(tb.max(tb.matmul(a, b), 0.0))
    func = f.finish()
    rng = np.random.default_rng(10)
    xa, xb = rng.standard_normal((3, 9, 20)), rng.standard_normal((3, 20, 35))
    xa[1, 4, :2], xb[1, :2, 7] = [np.inf, 2.0], [1.0, -3e38]
    xa, xb = xa.astype(np.float32), xb.astype(np.float32)
    (got,) = compile_func(fuse_everything(func))(xa, xb)
    (ref,) = evaluate(func, [xa, xb])
    assert np.isnan(ref[1, 4, 7]) and np.isnan(got[1, 4, 7])
    assert_close_to_reference([got], func, [xa, xb], "batched")


@pytest.mark.parametrize("dt", [F32, F64, I32])
@pytest.mark.parametrize(("batch", "m", "k", "n"), [(0, 7, 13, 33), (0, 17, 64, 40),
                                                    (0, 33, 37, 64), (0, 5, 3, 1), (3, 9, 20, 35)])
def test_matmul_of_a_transpose_reads_it_in_place(dt: DType, batch: int, m: int, k: int,
                                                 n: int) -> None:
    """matmul(a, transpose(bt)) over B's last two axes packs B from bt (no transpose kernel),
    giving bit for bit what the matmul of the transposed copy gives: full panels go by
    registers transposed G rows x VF values of k, the last K % VF values and a narrower last
    panel element by element; products that overflow among them (at k = 0, in the vectorized
    part, and at k - 2, often in the tail: inf in A, or finite operands whose product is not,
    which only B's recorded maximum reveals) take the rounded products."""
    pre = "B, " if batch else ""
    f = tb.FuncBuilder("mm_bt")
    a, bt = f.param("a", f"{dt}[{pre}M, K]"), f.param("bt", f"{dt}[{pre}N, K]")
    f.ret(tb.matmul(a, tb.transpose(bt, perm=[0, 2, 1] if batch else [1, 0])))
    func = f.finish()
    cf = compile_func(func)
    assert [getattr(s.kernel, "b_t", None) for s in cf.steps] == [True]
    lead = (batch,) if batch else ()
    rng = np.random.default_rng(11)
    plain = compile_func(_matmul_func(dt, bool(batch)))
    # (an inf in A makes every tile of its block take the rounded products: one pattern a run)
    for pattern in overflow_patterns(dt):
        xa = (rng.standard_normal((*lead, m, k)) * 8).astype(dt.np_dtype)
        xbt = (rng.standard_normal((*lead, n, k)) * 8).astype(dt.np_dtype)
        if pattern is not None:
            if not (m > 3 and n > 5 and k >= 4):
                continue
            for at in (0, k - 2):
                xa[..., 3, at:at + 2], xbt[..., 5, at:at + 2] = pattern
        want = plain(xa, np.ascontiguousarray(np.swapaxes(xbt, -1, -2)))
        assert_same(cf(xa, xbt)[0], want[0], f"{dt} {lead} {m}x{k}x{n} {pattern}")
        with np.errstate(over="ignore", invalid="ignore"):  # the tolerance of an inf is inf
            assert_close_to_reference(list(cf(xa, xbt)), func, [xa, xbt], "transposed b")


def _static_matmul(dt: DType, batch: int, m: int, k: int, n: int) -> Func:
    pre = [batch] if batch else []
    f = tb.FuncBuilder("mm_static")
    a, b = f.param("a", f"{dt}{[*pre, m, k]}"), f.param("b", f"{dt}{[*pre, k, n]}")
    f.ret(tb.matmul(a, b))
    return f.finish()


@pytest.mark.parametrize("dt", [F32, F64, I32, I64])
@pytest.mark.parametrize(("batch", "m", "k"), [(0, 2, 1), (0, 7, 13), (0, 101, 37),
                                               (0, 200, 64), (3, 9, 20)])
@pytest.mark.parametrize("panels", [0.5, IN_PLACE_PANELS])
def test_narrow_matmul_reads_a_in_place(dt: DType, batch: int, m: int, k: int,
                                        panels: float) -> None:
    """With a few panels of B (a static N of at most IN_PLACE_PANELS NR) the tiles read A where
    it lies instead of packing it: bit for bit what the packing kernel gives (the same sums in
    the same order), over several blocks of rows and a last tile of missing rows; products that
    overflow (at k = 0, and at k - 2 of the last row, where the pass taking A's maximum ends in
    its element by element tail) take the rounded products, as the reference does."""
    nr = tile_shape(dt)[1]
    n = max(1, int(panels * nr))
    func = _static_matmul(dt, batch, m, k, n)
    cf = compile_func(func)
    kernels = [s.kernel for s in cf.steps]
    assert [packs_a(q) for q in kernels if isinstance(q, MatmulKernel)] == [False]
    packing = compile_func(_matmul_func(dt, bool(batch)))
    assert packs_a(packing.steps[0].kernel)
    lead = (batch,) if batch else ()
    rng = np.random.default_rng(m * k + n)
    for pattern in overflow_patterns(dt):
        xa = (rng.standard_normal((*lead, m, k)) * 8).astype(dt.np_dtype)
        xb = (rng.standard_normal((*lead, k, n)) * 8).astype(dt.np_dtype)
        if pattern is not None:
            if k < 2:
                continue
            for row, at in ((0, 0), (m - 1, k - 2)):
                xa[..., row, at:at + 2], xb[..., at:at + 2, n - 1] = pattern
        got = cf(xa, xb)
        assert_same(got[0], packing(xa, xb)[0], f"{dt} {lead} {m}x{k}x{n} {pattern}")
        with np.errstate(over="ignore", invalid="ignore"):  # the tolerance of an inf is inf
            assert_close_to_reference(list(got), func, [xa, xb], "narrow matmul")


@pytest.mark.parametrize("dt", [F32, F64])
def test_constant_operands_fold_into_their_readers(dt: DType) -> None:
    """add, sub, mul, div, neg, abs, sqrt and rsqrt of constants (div(1.0, c), a scale
    computed in the graph) fold into the kernels that read them instead of running as
    kernels of their own, with the reference's bits: inf, NaN and -0.0 included."""
    f = tb.FuncBuilder("fold")
    x = f.param("x", f"{dt}[N]")

    def c(v: float, shape: tuple[int, ...] = ()) -> Apply:
        return tb.apply_op("splat", value=v, shape=list(shape), dtype=dt)

    def scalar(v: Apply) -> Apply:
        return tb.broadcast(v, shape=["N"], dims=[])

    folds = [tb.div(c(1.0), c(3.0)), tb.sqrt(c(2.0)), tb.rsqrt(c(2.0)), tb.div(c(1.0), c(0.0)),
             tb.sqrt(c(-1.0)), tb.neg(tb.sub(c(0.5), c(0.5))),
             tb.abs(tb.mul(c(-1e300 if dt is F64 else -1e30), c(1e300 if dt is F64 else 1e30))),
             tb.add(tb.reshape(c(0.25), shape=[1]), c(1.0, (1,)))]
    outs = [tb.mul(x, scalar(v)) if v.type.rank == 0 else tb.mul(x, tb.broadcast(
        v, shape=["N"], dims=[0])) for v in folds[:-1]]
    outs.append(tb.add(x, tb.broadcast(folds[-1], shape=["N"], dims=[0])))
    for o in outs:
        f.ret(o)
    func = f.finish()
    cf = compile_func(func)
    assert len(cf.steps) == len(outs)  # one kernel per result, none for the constants
    xs = [np.array([1.0, -2.0, 0.0, np.inf], dt.np_dtype)]
    with np.errstate(all="ignore"):
        for got, want in zip(cf(*xs), evaluate(func, xs), strict=True):
            assert_same(got, want, "folded")


def test_matmul_of_a_reshaped_transpose_reads_it_in_place() -> None:
    """ONNX's multi-head QK^T: K [B, H, S, D] transposed over its last two axes, the heads
    folded into the batch by a reshape that keeps those axes, is packed from K itself: one
    kernel, bit for bit the matmul of the materialized transpose."""
    f = tb.FuncBuilder("heads")
    q, k = f.param("q", "f32[6, 5, 4]"), f.param("k", "f32[2, 3, 7, 4]")
    kt = tb.reshape(tb.transpose(k, perm=[0, 1, 3, 2]), shape=[6, 4, 7])
    f.ret(tb.matmul(q, kt))
    cf = compile_func(f.finish())
    assert [getattr(s.kernel, "b_t", None) for s in cf.steps] == [True]
    rng = np.random.default_rng(12)
    xq = rng.standard_normal((6, 5, 4)).astype(np.float32)
    xk = rng.standard_normal((2, 3, 7, 4)).astype(np.float32)
    plain = compile_func(_matmul_func(F32, True))
    want = plain(xq, np.ascontiguousarray(np.swapaxes(xk, -1, -2).reshape(6, 4, 7)))
    assert_same(cf(xq, xk)[0], want[0], "reshaped transpose")
