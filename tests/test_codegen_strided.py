"""Matmul operands read in place through reshapes and transposes (codegen/strides.py): heads
split out of a projection as attention does it, with no transpose kernel, bit for bit the
matmul of the materialized copy; and products written straight into the layout a copy after
them would make (the heads merged back)."""

from __future__ import annotations

import numpy as np
import pytest
from codegen.support import assert_same, overflow_patterns, tcpr_cache  # noqa: F401
from numerics import assert_close_to_reference

import tcp_rules.codegen.lower as lowering
from tcp_rules import build as tb
from tcp_rules.codegen import compile_func
from tcp_rules.codegen.kernel import MatmulKernel, Strided
from tcp_rules.codegen.strides import _layout, operand_layout, view_of
from tcp_rules.codegen.tiling import IN_PLACE_PANELS, packs_a, tile_shape
from tcp_rules.ir import Func, Value
from tcp_rules.types import DType

F16, F32, F64, I32 = DType.F16, DType.F32, DType.F64, DType.I32
BATCH, HEADS = 2, 3


def split_heads(x: Value, rows: int, width: int, perm: list[int]) -> Value:
    """``x`` [BATCH * rows, HEADS * width] as [BATCH * HEADS, ...]: the heads folded into the
    batch, each head's [rows, width] (perm [0, 2, 1, 3]) or its transpose ([0, 2, 3, 1])."""
    four = tb.reshape(x, shape=[BATCH, rows, HEADS, width])
    moved = tb.transpose(four, perm=perm)
    return tb.reshape(moved, shape=[BATCH * HEADS, *moved.type.dims[2:]])


def test_views_of_split_heads() -> None:
    f = tb.FuncBuilder("views")
    x = f.param("x", "f32[256, 768]")  # 2 x 128 tokens, 12 heads of 64
    four = tb.reshape(x, shape=[2, 128, 12, 64])
    q = tb.reshape(tb.transpose(four, perm=[0, 2, 1, 3]), shape=[24, 128, 64])
    kt = tb.reshape(tb.transpose(four, perm=[0, 2, 3, 1]), shape=[24, 64, 128])
    heads = Strided(((2, 128 * 768), (12, 64)), 768)
    assert operand_layout(q) == (x, heads)
    assert operand_layout(kt) is None  # its columns are not at unit stride
    assert operand_layout(kt, transposed=True) == (x, heads)  # as b_t reads it
    assert view_of(q) == (x, [[(2, 98304), (12, 64)], [(128, 768)], [(64, 1)]])
    # contiguous: nothing to do; cut unevenly: not a view
    assert operand_layout(tb.reshape(x, shape=[2, 128, 768])) is None
    assert view_of(tb.reshape(tb.transpose(x, perm=[1, 0]), shape=[512, 384])) is None
    assert view_of(tb.reshape(tb.transpose(x, perm=[1, 0]), shape=[768, 2, 128])) == (
        x, [[(768, 1)], [(2, 98304)], [(128, 768)]])
    sym = f.param("s", "f32[T, 768]")
    assert view_of(tb.transpose(sym, perm=[1, 0])) is None  # symbolic sizes


def _heads_matmul(dt: DType, which: str, m: int, k: int, n: int) -> Func:
    """matmul with operand ``which`` (a, b, or bt: B given as its transpose) split out of a
    [BATCH * rows, HEADS * width] parameter, the other a plain [BATCH * HEADS, ...] one."""
    f = tb.FuncBuilder(f"heads_{which}")
    nb = BATCH * HEADS
    if which == "a":
        a = split_heads(f.param("x", f"{dt}[{BATCH * m}, {HEADS * k}]"), m, k, [0, 2, 1, 3])
        b = f.param("b", f"{dt}[{nb}, {k}, {n}]")
    else:
        a = f.param("a", f"{dt}[{nb}, {m}, {k}]")
        b = (split_heads(f.param("z", f"{dt}[{BATCH * k}, {HEADS * n}]"), k, n, [0, 2, 1, 3])
             if which == "b" else
             split_heads(f.param("y", f"{dt}[{BATCH * n}, {HEADS * k}]"), n, k, [0, 2, 3, 1]))
    f.ret(tb.matmul(a, b))
    return f.finish()


def _plain(dt: DType, m: int, k: int, n: int, nb: int = BATCH * HEADS) -> Func:
    f = tb.FuncBuilder("plain")
    a, b = f.param("a", f"{dt}[{nb}, {m}, {k}]"), f.param("b", f"{dt}[{nb}, {k}, {n}]")
    f.ret(tb.matmul(a, b))
    return f.finish()


@pytest.mark.parametrize("dt", [F32, F64, I32, F16])
@pytest.mark.parametrize("which", ["a", "b", "bt"])
@pytest.mark.parametrize(("m", "k", "n"), [(9, 20, 35), (17, 13, 5), (100, 33, 140),
                                           (5, 1, 3)])
def test_split_heads_are_read_in_place(dt: DType, which: str, m: int, k: int, n: int) -> None:
    """One matmul kernel reads the heads where they lie, with A packed (wide N) or read in
    place (narrow N), B packed or packed transposed; every result bit for bit what the matmul
    of the materialized heads gives, overflowing products (in head 4, at k = 0 and k - 2,
    where A's maximum pass and B's packing end in their element-by-element tails) included."""
    func = _heads_matmul(dt, which, m, k, n)
    cf = compile_func(func)
    (kernel,) = [s.kernel for s in cf.steps]
    assert isinstance(kernel, MatmulKernel)
    assert (kernel.a_at is not None) == (which == "a")
    assert (kernel.b_at is not None) == (which != "a") and kernel.b_t == (which == "bt")
    assert packs_a(kernel) == (n > IN_PLACE_PANELS * tile_shape(dt)[1])
    plain = compile_func(_plain(dt, m, k, n))
    rng = np.random.default_rng(m * k + n)
    for pattern in overflow_patterns(dt):
        qa = (rng.standard_normal((BATCH * HEADS, m, k)) * 8).astype(dt.np_dtype)
        qb = (rng.standard_normal((BATCH * HEADS, k, n)) * 8).astype(dt.np_dtype)
        if pattern is not None:
            if k < 2:
                continue
            for at in (0, k - 2):
                qa[4, m - 1, at:at + 2], qb[4, at:at + 2, n - 1] = pattern
        # the parameters holding these heads
        if which == "a":
            xs = [qa.reshape(BATCH, HEADS, m, k).transpose(0, 2, 1, 3).reshape(
                BATCH * m, HEADS * k), qb]
        elif which == "b":
            xs = [qa, qb.reshape(BATCH, HEADS, k, n).transpose(0, 2, 1, 3).reshape(
                BATCH * k, HEADS * n)]
        else:
            xs = [qa, qb.reshape(BATCH, HEADS, k, n).transpose(0, 3, 1, 2).reshape(
                BATCH * n, HEADS * k)]
        xs = [np.ascontiguousarray(x) for x in xs]
        got = cf(*xs)
        assert_same(got[0], plain(qa, qb)[0], f"{dt} {which} {m}x{k}x{n} {pattern}")
        with np.errstate(over="ignore", invalid="ignore"):  # the tolerance of an inf is inf
            assert_close_to_reference(list(got), func, xs, "split heads")


def test_attention_heads_need_no_transpose_kernels() -> None:
    """softmax(q k^T) v over heads split from three projections: the two matmuls read q, k
    and v in place, and no kernel copies them."""
    f = tb.FuncBuilder("mha")
    s, d = 16, 8
    x = [f.param(n, f"f32[{BATCH * s}, {HEADS * d}]") for n in "qkv"]
    q, kt, v = (split_heads(x[0], s, d, [0, 2, 1, 3]), split_heads(x[1], s, d, [0, 2, 3, 1]),
                split_heads(x[2], s, d, [0, 2, 1, 3]))
    scores = tb.matmul(q, kt)
    shape = [BATCH * HEADS, s, s]
    e = tb.exp(tb.sub(scores, tb.broadcast(tb.reduce_max(scores, axes=[2]), shape=shape,
                                           dims=[0, 1])))
    p = tb.div(e, tb.broadcast(tb.reduce_sum(e, axes=[2]), shape=shape, dims=[0, 1]))
    f.ret(tb.matmul(p, v))
    func = f.finish()
    cf = compile_func(func)
    names = [st.kernel.name for st in cf.steps]
    assert not [n for n in names if "transpose" in n or "reshape" in n], names
    mms = [st.kernel for st in cf.steps if isinstance(st.kernel, MatmulKernel)]
    assert [(k.a_at is not None, k.b_at is not None, k.b_t) for k in mms] == [
        (True, True, True), (False, True, False)]
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((BATCH * s, HEADS * d)).astype(np.float32) for _ in range(3)]
    assert_close_to_reference(list(cf(*xs)), func, xs, "attention heads")


def merge_heads(x: Value, rows: int, width: int) -> Value:
    """[BATCH * HEADS, rows, width] back to [BATCH * rows, HEADS * width]."""
    four = tb.reshape(x, shape=[BATCH, HEADS, rows, width])
    return tb.reshape(tb.transpose(four, perm=[0, 2, 1, 3]), shape=[BATCH * rows, HEADS * width])


@pytest.mark.parametrize("dt", [F32, I32, F16])
@pytest.mark.parametrize(("m", "k", "n"), [(9, 20, 35), (17, 13, 5), (100, 33, 70)])
def test_merged_heads_are_written_in_place(dt: DType, m: int, k: int, n: int,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A matmul whose product is only copied into another layout (the heads merged back)
    writes that layout itself: one kernel, the copy's bits."""
    def build() -> Func:
        f = tb.FuncBuilder("merge")
        nb = BATCH * HEADS
        a, b = f.param("a", f"{dt}[{nb}, {m}, {k}]"), f.param("b", f"{dt}[{nb}, {k}, {n}]")
        f.ret(merge_heads(tb.matmul(a, b), m, n))
        return f.finish()
    cf = compile_func(build())
    (kernel,) = [s.kernel for s in cf.steps]
    assert isinstance(kernel, MatmulKernel) and kernel.c_at == Strided(
        ((BATCH, m * HEADS * n), (HEADS, n)), HEADS * n)
    rng = np.random.default_rng(m + n)
    xs = [(rng.standard_normal((BATCH * HEADS, *s)) * 8).astype(dt.np_dtype)
          for s in ((m, k), (k, n))]
    with monkeypatch.context() as mp:
        mp.setattr(lowering, "write_through_copies", lambda plan: None)
        apart = compile_func(build())
        assert len(apart.steps) == 2
        want = apart(*xs)
    assert_same(cf(*xs)[0], want[0], f"{dt} {m}x{k}x{n}")


def test_layouts_found_from_offsets() -> None:
    heads = np.arange(8 * 128 * 4 * 64).reshape(8, 128, 4, 64).transpose(0, 2, 1, 3)
    assert _layout(heads.reshape(32, 128, 64), True) == Strided(((8, 32768), (4, 64)), 256)
    assert _layout(np.arange(12).reshape(3, 4), False) == Strided((), 4)
    assert _layout(np.ascontiguousarray(np.arange(12).reshape(4, 3).T), False) is None
    assert _layout(np.arange(24).reshape(2, 3, 4)[[1, 0]], True) is None  # batches swapped


@pytest.mark.parametrize("dt", [F32, I32])
@pytest.mark.parametrize("transposed", [False, True])
def test_heads_shared_by_a_broadcast_are_read_in_place(dt: DType, transposed: bool) -> None:
    """Grouped-query attention: 2 x 4 key/value heads, each shared by 3 query heads through a
    broadcast, read at stride 0 (no copy of the broadcast), as B or as B's transpose; bit for
    bit the matmul of the broadcast copy."""
    m, k, n = 9, 16, 20
    f = tb.FuncBuilder("gqa")
    a = f.param("a", f"{dt}[24, {m}, {k}]")
    kv = f.param("kv", f"{dt}[2, 4, {n if transposed else k}, {k if transposed else n}]")
    wide = tb.broadcast(kv, shape=[2, 4, 3, *kv.type.dims[2:]], dims=[0, 1, 3, 4])
    b = tb.reshape(wide, shape=[24, *kv.type.dims[2:]])
    f.ret(tb.matmul(a, tb.transpose(b, perm=[0, 2, 1]) if transposed else b))
    func = f.finish()
    assert view_of(b) == (kv, [[(8, b.type.dims[1].const * b.type.dims[2].const), (3, 0)],
                               [(b.type.dims[1].const, b.type.dims[2].const)],
                               [(b.type.dims[2].const, 1)]])
    cf = compile_func(func)
    (kernel,) = [s.kernel for s in cf.steps]
    assert isinstance(kernel, MatmulKernel) and kernel.b_t == transposed
    assert kernel.b_at is not None and kernel.b_at.batch[-1] == (3, 0)
    rng = np.random.default_rng(7)
    xa = (rng.standard_normal((24, m, k)) * 8).astype(dt.np_dtype)
    xkv = (rng.standard_normal(tuple(int(d.const or 0) for d in kv.type.dims)) * 8).astype(
        dt.np_dtype)
    copy = np.ascontiguousarray(np.broadcast_to(xkv[:, :, None], (2, 4, 3, *xkv.shape[2:]))
                                .reshape(24, *xkv.shape[2:]))
    if transposed:
        copy = np.ascontiguousarray(np.swapaxes(copy, 1, 2))
    want = compile_func(_plain(dt, m, k, n, 24))(xa, copy)
    assert_same(cf(xa, xkv)[0], want[0], f"{dt} transposed={transposed}")
