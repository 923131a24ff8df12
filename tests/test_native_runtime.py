"""The native runner and thread pool: chunks cover each row once, at every thread count; the
whole-program entry runs many kernels in order, through the arena, as the reference does;
concurrent callers and forked children get correct results."""

from __future__ import annotations

import ctypes
import itertools
import multiprocessing
import threading

import numpy as np
import pytest
from codegen.support import fuse_everything, tcpr_cache  # noqa: F401
from numerics import assert_close_to_reference

from tcp_rules import build as tb
from tcp_rules.codegen import jit, native, program, results
from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.program import (
    ALIGN_ROWS,
    ARGS,
    EXTENT,
    FN,
    HEADER,
    KERNEL,
    KIND,
    NARGS,
    NCHUNKS,
    PACK_CHUNKS,
    PANELS,
    SIZES,
    STEP_WORDS,
    _Arena,
    split,
)
from tcp_rules.codegen.runtime import compile_func
from tcp_rules.codegen.tiling import packed_b, panel_groups, tile_shape
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func

# A kernel that counts, for every row of [lo, hi), how often it was visited, and records each
# chunk's first row: the runner's chunking made visible.
_MARK = """
define void @tcpr_test_mark(ptr %cover, ptr %starts, ptr %sizes, i64 %lo, i64 %hi) {
entry:
  %empty = icmp sge i64 %lo, %hi
  br i1 %empty, label %out, label %mark
mark:
  %sp = getelementptr i64, ptr %starts, i64 %lo
  atomicrmw add ptr %sp, i64 1 seq_cst
  br label %loop
loop:
  %i = phi i64 [%lo, %mark], [%i1, %loop]
  %p = getelementptr i64, ptr %cover, i64 %i
  atomicrmw add ptr %p, i64 1 seq_cst
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %hi
  br i1 %more, label %loop, label %out
out:
  ret void
}
"""


def _mark_fn() -> int:
    key = jit.cache_key(_MARK)
    return jit.load(key, ["tcpr_test_mark"], lambda: _MARK, use_disk=False,
                    vectorize=False)["tcpr_test_mark"]


def _run_mark(extent: int, chunks: int, align: int, threads: int) -> tuple[np.ndarray, ...]:
    cover = np.zeros(max(extent, 1), dtype=np.int64)
    starts = np.zeros(max(extent, 1), dtype=np.int64)
    sizes = np.zeros(1, dtype=np.int64)
    rec = [0] * STEP_WORDS
    rec[KIND], rec[FN], rec[NARGS], rec[SIZES] = KERNEL, _mark_fn(), 2, sizes.ctypes.data
    rec[EXTENT], rec[NCHUNKS], rec[ALIGN_ROWS] = extent, chunks, align
    rec[ARGS] = HEADER + 4 + STEP_WORDS  # after the header, 2 buffers and the record
    prog = np.array([2, 1, HEADER, HEADER + 4, 0, 0, 1, 0, *rec, 0, 1], dtype=np.int64)
    slots = np.array([cover.ctypes.data, starts.ctypes.data], dtype=np.int64)
    native.runner(2)(native.state(), prog.ctypes.data, slots.ctypes.data, threads, 0, 1, 0,
                     native.CLOCK)
    return cover[:extent], np.flatnonzero(starts), starts


@pytest.mark.parametrize(("threads", "extent", "align"), [(2, 1 << 20, 1), (3, 1001, 8),
                                                          (8, 37, 4), (4, 5, 1), (16, 64, 1)])
def test_chunks_cover_the_range_once_in_aligned_chunks(threads: int, extent: int,
                                                       align: int) -> None:
    chunks = split(extent, program.SPLIT_WORK, align, threads)
    n = min(threads, extent // align)
    assert chunks == (min(n * program.CHUNKS_PER_THREAD, extent // align) if n > 1 else 1)
    for _ in range(3):  # the pool is reused from one call to the next
        cover, firsts, starts = _run_mark(extent, chunks, align, threads)
        assert (cover == 1).all()
        assert len(firsts) == chunks and (starts[firsts] == 1).all()
        assert all(lo % align == 0 for lo in firsts)
        assert all(b > a for a, b in itertools.pairwise(firsts))


def test_an_empty_range_calls_once_and_marks_nothing() -> None:
    cover, firsts, _ = _run_mark(0, 1, 1, 4)
    assert len(cover) == 0 and len(firsts) == 0


def test_arena_never_overlaps_buffers_that_are_live_together() -> None:
    rng = np.random.default_rng(1)
    arena = _Arena()
    placed = []
    for _ in range(200):
        first = int(rng.integers(0, 50))
        last = first + int(rng.integers(0, 6))
        size = int(rng.integers(1, 5000))
        placed.append((arena.place(size, first, last), size, first, last))
    for (o1, s1, f1, l1), (o2, s2, f2, l2) in itertools.combinations(placed, 2):
        if not (l1 < f2 or l2 < f1):  # live at one step together
            assert o1 + s1 <= o2 or o2 + s2 <= o1
    assert all(o % program.ALIGN == 0 for o, *_ in placed)
    assert arena.size < sum(s for _, s, *_ in placed)  # and memory is reused


def _chain() -> Func:
    """Many small kernels in a row, temporaries reused through the arena, and a matmul."""
    f = tb.FuncBuilder("chain")
    x, w = f.param("x", "f32[N, 64]"), f.param("w", "f32[64, 64]")
    h = x
    for i in range(12):
        h = tb.tanh(tb.add(tb.matmul(h, w) if i % 4 == 0 else h, float(i)))
        if i == 7:
            h = tb.broadcast(tb.reduce_sum(h, axes=[1]), shape=["N", 64], dims=[0])
    f.ret(h, tb.exp(x))
    return f.finish()


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_whole_program_entry_matches_the_reference(threads: int) -> None:
    func = _chain()
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3000, 64)).astype(np.float32)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    cf = compile_func(func, threads=threads)
    assert len(cf.steps) > 10
    want = evaluate(func, [x, w])
    # Every value passes through tanh (1-Lipschitz, values in [-1, 1]) or exp of x; a matmul
    # over K = 64 may differ from the reference's by K u sum_k |h||w| <= K u max_j sum_k |w_kj|
    # (summation order), three of them; tanh and exp differ by a few ulp each step.
    u = float(np.finfo(np.float32).eps)
    tol = 3 * 64 * u * float(np.abs(w).sum(axis=0).max()) + 12 * 4 * u
    for _ in range(2):  # the second call reuses the arena
        got = cf(x, w)
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=tol)
        np.testing.assert_allclose(got[1], want[1], rtol=4 * u, atol=0)
    outs = [np.empty_like(r) for r in want]
    got = cf(x, w, out=outs)
    assert all(g is o for g, o in zip(got, outs, strict=True))
    times = cf.profile(x, w, repeats=1)
    assert len(times) == len(cf.steps) and all(t > 0 for t in times)
    got, wall, steps = cf.timed(x, w)
    assert len(steps) == len(cf.steps) and wall > sum(steps) > 0
    np.testing.assert_allclose(got[0], want[0], rtol=0, atol=tol)


def _batched(kind: str, batch: int, m: int, k: int, n: int) -> Func:
    f = tb.FuncBuilder("heads")
    if kind == "2-d":
        f.ret(tb.matmul(f.param("a", f"f32[{m}, {k}]"), f.param("b", f"f32[{k}, {n}]")))
        return f.finish()
    q = f.param("q", f"f32[{batch}, {m}, {k}]")
    if kind == "plain":
        f.ret(tb.matmul(q, f.param("b", f"f32[{batch}, {k}, {n}]")))
        return f.finish()
    s = tb.matmul(q, tb.transpose(f.param("k", f"f32[{batch}, {n}, {k}]"), perm=[0, 2, 1]))
    if kind == "transposed":
        f.ret(s)
        return f.finish()
    shape = [batch, m, n]
    e = tb.exp(tb.sub(s, tb.broadcast(tb.reduce_max(s, axes=[2]), shape=shape, dims=[0, 1])))
    f.ret(tb.div(e, tb.broadcast(tb.reduce_sum(e, axes=[2]), shape=shape, dims=[0, 1])))
    return fuse_everything(f.finish())


# 45 rows a batch: chunks of MR-aligned rows start inside batches. K x N of 512 x 640 is enough
# work to pack B's panels in chunks too, which start inside batches as well, and with rows too
# few for MC-row chunks, a B of 1.3 MB makes the threads split its panels into groups
@pytest.mark.parametrize(("kind", "dims"), [
    ("plain", (7, 45, 40, 50)), ("transposed", (7, 45, 40, 50)), ("softmax", (7, 45, 40, 50)),
    ("plain", (4, 9, 512, 640)), ("transposed", (4, 9, 512, 640)), ("2-d", (1, 100, 512, 640))])
def test_matmul_chunks_run_through_batches_and_panel_groups(
        kind: str, dims: tuple[int, int, int, int]) -> None:
    """Threads split a product's rows counted batch after batch, and then through groups of
    B's panels where the rows are too few for MC-row chunks (tiling.panel_groups; not with a
    row pass); B's panels are packed in chunks counted batch after batch: chunks start and end
    inside batches and groups. Every thread count gives the one-thread result bit for bit
    (each element's sum over k runs the same way in any tile), and that is the reference's."""
    batch, m, k, n = dims
    func = _batched(kind, *dims)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(tuple(int(d.const or 0) for d in p.type.dims)).astype(np.float32)
          for p in func.params]
    one = compile_func(func, threads=1)
    (step,) = one.steps
    assert isinstance(step.kernel, MatmulKernel) and step.kernel.batched == (kind != "2-d")
    assert (step.kernel.post is not None) == (kind == "softmax")
    want = one(*xs)
    assert_close_to_reference(list(want), func, xs, kind)
    mr, nr, _ = tile_shape(step.kernel.buffers[0].dtype)
    npan = -(-n // nr)
    grouped = []
    for threads in (2, 3, 8):
        cf = compile_func(func, threads=threads)
        got = cf(*xs)
        np.testing.assert_array_equal(got[0], want[0], err_msg=f"{kind}, {threads} threads")
        prog = cf._layout(cf._validated(xs)).prog
        rec = prog[prog[3]:prog[3] + STEP_WORDS]  # the one step's record
        groups = panel_groups(step.kernel, batch * m, k, npan, nr, threads)
        assert groups == 1 or kind != "softmax"
        grouped.append(groups)
        assert rec[NCHUNKS] == split(groups * batch * m, batch * m * k * n, mr, threads) > 1
        assert rec[EXTENT] == groups * batch * m and rec[ALIGN_ROWS] == mr
        assert np.ctypeslib.as_array(ctypes.cast(int(rec[SIZES]), ctypes.POINTER(
            ctypes.c_int64)), (len(step.kernel.sizes) + 1,))[-1] == groups
        assert rec[PANELS] == batch * npan
        packed = packed_b(step.kernel, batch, k, n)[0] // step.kernel.buffers[0].dtype.itemsize
        assert rec[PACK_CHUNKS] == split(batch * npan, packed, 1, threads, program.SPLIT_PACK)
        if m == 45:
            assert rec[NCHUNKS] > batch  # more chunks than batches: some start inside one
        elif kind != "2-d":
            assert rec[PACK_CHUNKS] > batch
    if kind == "softmax":
        assert max(grouped) == 1
    elif m != 45:
        assert max(grouped) > 2


def test_concurrent_callers_get_their_own_results() -> None:
    func = _chain()
    cf = compile_func(func, threads=2)
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    xs = [rng.standard_normal((2000, 64)).astype(np.float32) for _ in range(4)]
    want = [cf(x, w)[0] for x in xs]
    got: dict[int, np.ndarray] = {}

    def call(i: int) -> None:
        for _ in range(5):
            got[i] = cf(xs[i], w)[0]

    ts = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i in range(4):
        np.testing.assert_array_equal(got[i], want[i])


def _in_child(q: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    f = tb.FuncBuilder("twice")
    x = f.param("x", "f32[N]")
    f.ret(tb.mul(x, 2.0))
    x0 = np.arange(1 << 20, dtype=np.float32)
    q.put(bool((compile_func(f.finish(), threads=2)(x0)[0] == 2 * x0).all()))


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_child_gets_a_fresh_pool() -> None:
    _run_mark(1 << 20, 16, 1, 2)  # the parent's pool has threads
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_in_child, args=(q,))
    p.start()
    ok = q.get(timeout=60)
    p.join(timeout=60)
    assert ok and p.exitcode == 0


def test_cached_input_addresses_follow_the_arrays() -> None:
    f = tb.FuncBuilder("plus1")
    x = f.param("x", "f32[N]")
    f.ret(tb.add(x, 1.0))
    cf = compile_func(f.finish(), threads=1)
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(cf(a)[0], a + 1)
    with pytest.raises(ValueError):  # the cache's weak reference keeps the address valid
        a.resize(16)
    a[:] = 5
    np.testing.assert_array_equal(cf(a)[0], np.full(8, 6, np.float32))
    for n in range(20):  # new arrays, some of which reuse freed ids
        b = np.full(8, n, dtype=np.float32)
        np.testing.assert_array_equal(cf(b)[0], b + 1)
        del b
    c = np.arange(8, dtype=np.float32)
    c.resize(16, refcheck=False)  # past NumPy's check: the shape changed, the address too
    np.testing.assert_array_equal(cf(c)[0], c + 1)


def test_result_memory_is_reused_only_once_no_array_holds_it() -> None:
    f = tb.FuncBuilder("plus1")
    x = f.param("x", "f32[N]")
    f.ret(tb.add(x, 1.0))
    cf = compile_func(f.finish(), threads=1)
    a = np.arange(1 << 19, dtype=np.float32)  # a 2 MiB result: pooled
    held = [cf(a)[0] for _ in range(results.PER_SIZE + 2)]  # more than the pool keeps a size
    for i, r in enumerate(held):
        np.testing.assert_array_equal(r, a + 1)
        assert not any(np.shares_memory(r, s) for s in held[:i])
    view = held[0][5:]
    first = held[1].ctypes.data
    del held[:2]  # the block under held[0] is still held by the view
    again = cf(a)[0]
    assert again.ctypes.data == first  # held[1]'s block, freed, comes back
    assert not np.shares_memory(again, view)
    np.testing.assert_array_equal(view, a[5:] + 1)  # untouched by the later calls
    np.testing.assert_array_equal(again, a + 1)


def test_result_pool_keeps_to_its_limit() -> None:
    mib = 1 << 20
    off = results.ResultPool(limit=0)
    x = off.empty((mib,), np.dtype(np.float32))
    assert off.pooled_bytes == 0 and x.shape == (mib,)
    pool = results.ResultPool(limit=10 * mib)
    a = pool.empty((mib,), np.dtype(np.float32))  # 4 MiB
    b = pool.empty((mib,), np.dtype(np.float32))
    assert pool.pooled_bytes == 8 * mib
    c = pool.empty((mib,), np.dtype(np.float32))  # over the limit, a and b in use: not pooled
    assert pool.pooled_bytes == 8 * mib
    del b  # a, still in use, comes first in its size's list
    d = pool.empty((3 * mib // 4,), np.dtype(np.float32))  # 3 MiB: b's free block gives way
    assert pool.pooled_bytes == 7 * mib
    assert not np.shares_memory(a, d)
    del a, d
    d = pool.empty((2 * mib,), np.dtype(np.float32))  # 8 MiB: the free blocks give way
    assert pool.pooled_bytes == 8 * mib
    small = pool.empty((16,), np.dtype(np.float32))  # below MIN_BYTES: malloc's
    assert pool.pooled_bytes == 8 * mib
    assert c.shape == (mib,) and d.shape == (2 * mib,) and small.shape == (16,)


def test_kernels_of_a_batch_of_one_split_their_first_longer_axis() -> None:
    """A kernel over [1, R, C] (a program imported at batch 1) hands the threads its R rows,
    not its one batch (Kernel.split): the runtime used to split the first axis, of extent 1, so
    such kernels ran on one thread. A softmax (its row reductions), a transposed read (its
    tiles) and a broadcast: every thread count gives the same bits."""
    from tcp_rules.codegen.kernel import Kernel
    from tcp_rules.codegen.lower import lower_func
    from tcp_rules.codegen.plan import instantiate
    from tcp_rules.grammar.parser import source_from_bytes
    from tcp_rules.pipeline import load_module

    text = b"""func b1(x: f32[1, 700, 300], w: f32[1, 300, 700], v: f32[1, 300])
    -> f32[1, 700, 300] {
  m = reduce_max(x, axes=[2], keepdims=false)
  e = exp(sub(x, broadcast(m, shape=[1, 700, 300], dims=[0, 1])))
  s = reduce_sum(e, axes=[2], keepdims=false)
  sm = div(e, broadcast(s, shape=[1, 700, 300], dims=[0, 1]))
  t = add(sm, transpose(w, perm=[0, 2, 1]))
  return add(t, broadcast(v, shape=[1, 700, 300], dims=[0, 2]))
}
"""
    func = load_module(source_from_bytes("b1.tcp", text)).funcs[0]
    plan = lower_func(func)
    kernels = [st.kernel for st in plan.steps if isinstance(st.kernel, Kernel)]
    assert kernels and all(k.split == 1 for k in kernels)
    assert all(si.extent == 700 for si in instantiate(plan, {}).steps)
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in ((1, 700, 300), (1, 300, 700), (1, 300))]
    want = compile_func(func, threads=1)(*args)
    assert_close_to_reference(list(want), func, args, "batch of one")
    for threads in (2, 3):
        got = compile_func(func, threads=threads)(*args)
        np.testing.assert_array_equal(got[0], want[0])
