"""Matmul: a packed, register-blocked microkernel with a fused epilogue, written with vectors.

B is packed once per call into panels of NR columns (``[batch][panel][k][NR]``, zero padded), so
the microkernel streams it with aligned vector loads. A B that is the transpose of a stored
``[batch,] n, k`` tensor (attention's QK^T, ONNX's Gemm with transB) is packed from that tensor
(``MatmulKernel.b_t``), so the transpose never runs as a kernel of its own. The microkernel
keeps an MR x NR tile of C in registers (MR rows x NR/VF vectors), and for each k broadcasts one
element from each of MR rows of A and issues MR*NR/VF fused multiply-adds, prefetching the
panel PREFETCH bytes ahead. Row blocks of MC rows keep A in L2 while all panels pass; each B
panel (K x NR) is reused by every row tile of a block. After the K loop the epilogue (the
kernel's scalar body with ``Acc`` = the product: bias, activation...) runs on the register
tile, and masked stores write only the columns that exist; rows past the end are clamped while
packing and skipped for storing, so no access leaves its buffer.

Each block of MC rows of A is packed too (``[tile][k][MR]``) into a scratch buffer of MC x K
elements that the caller provides per thread: the MR rows a tile reads sit 4 KiB apart for
K = 1024 and would otherwise collide in the same cache sets. With up to four panels of B a block
is read too few times to repay its packing (tiling.py, ``packs_a``): tiles then read A in
place.

f16 and bf16 products run as f32 ones: A's and B's elements are converted to f32 as they are
packed (or, read in place, as they are loaded), the tile sums in f32 and the epilogue rounds the
product to storage once, before its own ops (tiling.packed_item sizes the packed data).

IEEE specials as the reference (ops/linalg.py ``matmul_reference``): a fused multiply-add never
rounds its product, so a product that overflows would give a finite or infinite sum where the
reference's rounded product gives inf or NaN. Packing records each B panel's largest magnitude
(after the panels in the packed buffer) and each A block's (while packing it, or in a pass of
its own); a tile whose two maxima multiply to inf runs a K loop of rounded products and adds
instead (never on finite data that cannot overflow: measured at the noise level on 256^3 and
1024^3). Targets without FMA always do.

An operand may be read through a strided layout (``MatmulKernel.a_at``/``b_at``, strides.py:
heads split out of a projection), and a row kernel may run on each finished block of rows
(``MatmulKernel.post``, rowpass.py): the block's product then goes to the worker's scratch,
after its block of A, and the row kernel writes the output; or writes the scratch again, for a
second product to multiply those rows (``MatmulKernel.then``, chain.py: attention's P V, this
module's functions for one batch, called per block, its B packed by the step for each batch),
whose rows a third product may multiply in turn (``then.then``: a single head's output
projection; the second's rows then go to the scratch too). Other products of the same A
(``MatmulKernel.siblings``, siblings.py: attention's projections) take each block of A's rows
after ours, each with its own B, epilogue and output; those that pack A read the block the
first of them packed.

Symbols: ``<sym>_pack(a, b, ..., out, packed, a_scratch, sizes, lo, hi)`` packs panels [lo, hi)
of B, then of the chained products' B (packing.py, tiling.packed_b);
``<sym>(a, b, ..., out, packed, a_scratch, sizes, lo, hi)`` computes rows [lo, hi). Both count
through the batches one after another (``batch * npan`` panels, ``batch * m`` rows in all), so
that threads split a batched product by whole batches where there are enough (attention's
heads), each reading its batches' panels of B alone. The tile shapes, blocks and scratch
layout are in tiling.py.
"""

from __future__ import annotations

from dataclasses import replace

import llvmlite.ir as ir

from tcp_rules.codegen.emit import KernelError, emit_kernel
from tcp_rules.codegen.epilogue import Epilogue, f_min
from tcp_rules.codegen.irbase import I32, I64, IR, PTR, VOID, mem_type, reg_type
from tcp_rules.codegen.kernel import MATMUL_DTYPES, POST_ROWS, MatmulKernel, Strided
from tcp_rules.codegen.packing import (
    Fn,
    batch_offset,
    batch_part,
    bigger,
    bind_row,
    concat,
    emit_pack_all,
    packed_bytes,
    regions,
)
from tcp_rules.codegen.storage import load_register, store_value
from tcp_rules.codegen.tiling import (
    LINE,
    MC,
    fused,
    packed_item,
    packs_a,
    product_dtype,
    tile_shape,
)

# How far ahead the K loop prefetches B's panel: interleaved in one process against no
# prefetch (f32, one thread), 2 KiB ahead made 1024x1024x256, 1024x784x128, 1024x256x1024 and
# 32 x 128x256x128 1-4% faster (5-11% while the machine was slow), attention's K = 64
# products 0-2%, nothing slower; AVX2 code (64-byte rows) 0-3%.
PREFETCH = 2048


def _risky(e: IR, amax: ir.Value, bmax: ir.Value) -> ir.Value:
    """Whether a product of an element of A (magnitudes at most ``amax``) and one of B (at most
    ``bmax``) can round to inf. Rounding is monotonic, so when amax * bmax rounds to a finite
    number no product overflows. (An inf operand makes the test true: harmlessly, as then
    rounded products give what fused ones do, inf or NaN.)"""
    return e.b.fcmp_unordered("==", e.b.fmul(amax, bmax), e.const(amax.type, float("inf")))


def emit_matmul(module: ir.Module, k: MatmulKernel, sym: str) -> None:
    """Add ``sym`` and ``sym_pack`` for matmul kernel ``k`` to ``module``."""
    if k.buffers[0].dtype not in MATMUL_DTYPES:
        raise KernelError(f"matmul of {k.buffers[0].dtype} is not supported")
    emit_pack_all(module, k, sym + "_pack")
    if k.siblings:
        _emit_siblings(module, k, sym)
    else:
        _emit_compute(module, k, sym)


def _emit_siblings(module: ir.Module, k: MatmulKernel, name: str) -> None:
    """``name`` for a kernel with siblings (siblings.py): each block of MC rows of A goes
    through every product in turn, so that A's rows are read from memory once. Each
    product's B is packed in its region (tiling.packed_b); the products share the worker's
    scratch, one at a time, and those that pack A the block the first of them packs."""
    nb = k.step_buffers
    f = Fn(module, name, nb + 3)
    b = f.b
    args = list(f.fn.args)
    bufs, packed, scratch, sizes, lo, hi = (args[:nb], args[nb], args[nb + 1], args[nb + 2],
                                            args[nb + 3], args[nb + 4])
    # The products that pack A share its packed block: the first packs it (and its largest
    # magnitude, into ``amax``), the others find it in the scratch (they write nothing else
    # there). Packing A took ~3.6% of a 1024x256x256 product's time (perf samples).
    amax = f._alloca(reg_type(k.buffers[0].dtype), "amax.shared")
    calls: list[tuple[ir.Function, list[ir.Value]]] = []
    packing = False
    for i, (p, pbufs, _, at) in enumerate(regions(f, k, bufs, f.sizes(k, sizes), f.c64(1))[0]):
        role = None
        if packs_a(p):
            role, packing = ("follow" if packing else "lead"), True
        fn = _emit_compute(module, p, f"{name}.{i}", role)
        fn.linkage = "internal"
        shared = [amax] if role is not None else []
        calls.append((fn, [*pbufs, f.e.gep(ir.IntType(8), packed, at), scratch, sizes, *shared]))

    def per_block(ic: ir.Value) -> None:
        ic_end = f_min(f.e, b.add(ic, f.c64(MC)), hi)
        for fn, fargs in calls:
            b.call(fn, [*fargs, ic, ic_end])
    f.loop(lo, hi, MC, per_block, "ic")
    b.ret_void()


def _emit_compute(module: ir.Module, k: MatmulKernel, name: str, shared_a: str | None = None
                  ) -> ir.Function:
    """The compute function of ``k``; with ``shared_a`` (a sibling product that packs A,
    _emit_siblings) it takes a pointer to the block's largest magnitude of A after ``sizes``:
    "lead" packs each block and stores it there, "follow" finds the block packed in the
    scratch and loads it."""
    dt = k.buffers[0].dtype
    mr, nr, vf = tile_shape(dt)
    nv = nr // vf
    nb = len(k.buffers)
    shared = shared_a is not None
    f = Fn(module, name, nb + 3 + shared)
    b, e = f.b, f.e
    args = list(f.fn.args)
    bufs, packed, apack, sizes = args[:nb], args[nb], args[nb + 1], args[nb + 2]
    lo, hi = args[nb + 3 + shared], args[nb + 4 + shared]
    size = f.sizes(k, sizes)
    m, kk, n = size(k.m), size(k.k), size(k.n)
    batch = size(k.domain[0]) if k.batched else f.c64(1)
    el, item = reg_type(dt), packed_item(k)  # packed A and B, and the tile (f16: f32)
    a_ty = mem_type(dt)  # A where it lies
    vt = ir.VectorType(el, vf)
    npan = b.sdiv(b.add(n, f.c64(nr - 1)), f.c64(nr))
    epi = Epilogue(e, k, bufs, size, vf)
    out_dt = product_dtype(k)
    out_ty = mem_type(out_dt)
    rows_at = post_fn = None

    def lines(nbytes: ir.Value) -> ir.Value:
        return b.mul(b.sdiv(b.add(nbytes, f.c64(LINE - 1)), f.c64(LINE)), f.c64(LINE))

    if k.post is not None:  # the product's rows follow A's block (worker_scratch)
        post_fn = emit_kernel(module, k.post, name + ".rows")
        post_fn.linkage = "internal"
        a_bytes = b.mul(kk, f.c64(MC * item)) if packs_a(k) else f.c64(1)
        rows_at = e.gep(ir.IntType(8), apack, lines(a_bytes))
    t = k.then
    u = t.then if t is not None else None  # a third product, of t's rows (chain.py)
    if t is not None:  # then the row pass's rows and t's scratch (worker_scratch); t's B
        # packed for each batch after ours, and u's after those (tiling.packed_b)
        assert rows_at is not None and isinstance(t.n, int)
        t_plain = replace(t, then=None)  # (its own rows are handed to u below)
        t_fn = _emit_compute(module, t_plain, name + ".then")
        t_fn.linkage = "internal"
        t_el = mem_type(t.buffers[0].dtype)
        p_at = e.gep(ir.IntType(8), rows_at, lines(b.mul(n, f.c64(MC * out_dt.itemsize))))
        p_rows = b.mul(n, f.c64(MC * t.buffers[0].dtype.itemsize))  # P's rows, as stored
        t_scratch = e.gep(ir.IntType(8), p_at, lines(p_rows))
        t_first = regions(f, k, bufs, size, batch)[1]
        t_bytes = packed_bytes(f, t_plain, f.c64(1), n, f.c64(t.n))
    if u is not None:  # then t's rows and u's scratch (tiling.chained_scratch)
        assert t is not None and isinstance(t.n, int) and isinstance(u.n, int)
        u_fn = _emit_compute(module, u, name + ".then.then")
        u_fn.linkage = "internal"
        u_el = mem_type(u.buffers[0].dtype)
        t_a = b.mul(n, f.c64(MC * packed_item(t)))  # t's packed block of P (f16: as f32)
        o_at = e.gep(ir.IntType(8), t_scratch, lines(t_a if packs_a(t) else f.c64(1)))
        t_rows = MC * t.n * u.buffers[0].dtype.itemsize  # t's rows, as stored: u's A
        u_scratch = e.gep(ir.IntType(8), o_at, lines(f.c64(t_rows)))
        u_packed = e.gep(ir.IntType(8), packed, b.add(t_first, b.mul(batch, t_bytes)))
    lane_ids = ir.Constant(ir.VectorType(I64, vf), list(range(vf)))
    is_float = dt.is_float
    direct = not packs_a(k)
    lda = f.c64(k.a_at.rows) if k.a_at is not None else kk  # A's row stride

    def a_rows(bi: ir.Value, first: ir.Value, last_row: ir.Value) -> list[ir.Value]:
        """Pointers to the MR rows of A from ``first`` on; rows past ``last_row`` repeat it."""
        base = batch_offset(f, bi, k.a_at, b.mul(m, kk))
        return [e.gep(a_ty, bufs[0], b.add(base, b.mul(
            f_min(e, b.add(first, f.c64(r)), last_row), lda))) for r in range(mr)]

    amax = f._alloca(el, "amax")
    vmax = f._alloca(vt, "amax.v")
    fma = fused()
    guard = is_float and fma  # products rounded one by one where one may overflow (below)

    def pack_a(bi: ir.Value, ic: ir.Value, ic_end: ir.Value) -> None:
        """Rows [ic, ic_end) of A into [tile][k][MR]: each k's MR values are adjacent, and
        rows 4 KiB apart no longer collide in the cache. Missing rows repeat the last one.
        Records the block's largest magnitude (NaNs ignored) in ``amax``."""
        last_row = b.sub(ic_end, f.c64(1))
        b.store(ir.Constant(el, 0), amax)

        def copy(src: ir.Value, dst: ir.Value, kv: ir.Value) -> None:
            x = load_register(e, dt, e.gep(a_ty, src, kv))
            b.store(x, e.gep(el, dst, b.mul(kv, f.c64(mr))))
            if guard:
                b.store(bigger(e, b.load(amax), x), amax)

        def chunk(srcs: list[ir.Value], dst: ir.Value, kv: ir.Value) -> None:
            """VF values of k from each of the tile's MR rows, transposed to [k][MR] in
            registers and stored as whole vectors; the maxima in independent lanes (element by
            element, with one serial max, packing took a third of a 512x512x64 product)."""
            rows = [load_register(e, dt, e.gep(a_ty, src, kv), vf) for src in srcs]
            flat = concat(b, rows)
            order = [r * vf + j for j in range(vf) for r in range(mr)]
            tr = b.shuffle_vector(flat, ir.Constant(flat.type, None),
                                  ir.Constant(ir.VectorType(I32, mr * vf), order))
            b.store(tr, e.gep(el, dst, b.mul(kv, f.c64(mr))), align=item)
            if guard:
                m = b.load(vmax)
                for x in rows:
                    m = bigger(e, m, x)
                b.store(m, vmax)

        def per_tile(t: ir.Value) -> None:
            srcs = a_rows(bi, b.add(ic, b.mul(t, f.c64(mr))), last_row)
            dst = e.gep(el, apack, b.mul(t, b.mul(kk, f.c64(mr))))
            whole = b.mul(b.sdiv(kk, f.c64(vf)), f.c64(vf))
            b.store(ir.Constant(vt, None), vmax)
            f.loop(f.c64(0), whole, vf, lambda kv: chunk(srcs, dst, kv), "pkv")
            for r, src in enumerate(srcs):  # the last K % VF values, one by one
                f.loop(whole, kk, 1, bind_row(copy, src, e.gep(el, dst, f.c64(r))), f"pk{r}")
            if guard:
                lanes = e.intrinsic("vector.reduce.fmax", [b.load(vmax)], ret=el)
                b.store(bigger(e, b.load(amax), lanes), amax)
        tiles = b.sdiv(b.add(b.sub(ic_end, ic), f.c64(mr - 1)), f.c64(mr))
        f.loop(f.c64(0), tiles, 1, per_tile, "pt")

    def block_max(bi: ir.Value, ic: ir.Value, ic_end: ir.Value) -> None:
        """The largest magnitude (NaNs ignored) of rows [ic, ic_end) of A into ``amax``: VF
        independent lanes, then the tail one by one; in one run where the rows are
        contiguous, else row by row."""
        b.store(ir.Constant(vt, None), vmax)
        b.store(ir.Constant(el, 0), amax)
        base = batch_offset(f, bi, k.a_at, b.mul(m, kk))
        if k.a_at is None:
            run(b.add(base, b.mul(ic, kk)), b.mul(b.sub(ic_end, ic), kk))
        else:
            f.loop(ic, ic_end, 1, lambda i: run(b.add(base, b.mul(i, lda)), kk), "amr")
        lanes = e.intrinsic("vector.reduce.fmax", [b.load(vmax)], ret=el)
        b.store(bigger(e, b.load(amax), lanes), amax)

    def run(start: ir.Value, count: ir.Value) -> None:
        """The largest magnitude of ``count`` elements of A from ``start`` into the maxima."""
        whole = b.mul(b.sdiv(count, f.c64(vf)), f.c64(vf))

        def vec(i: ir.Value) -> None:
            x = load_register(e, dt, e.gep(a_ty, bufs[0], b.add(start, i)), vf)
            b.store(bigger(e, b.load(vmax), x), vmax)

        def one(i: ir.Value) -> None:
            x = load_register(e, dt, e.gep(a_ty, bufs[0], b.add(start, i)))
            b.store(bigger(e, b.load(amax), x), amax)
        f.loop(f.c64(0), whole, vf, vec, "amv")
        f.loop(whole, count, 1, one, "am1")

    def k_loop(ap: ir.Value | list[ir.Value], bp: ir.Value, fuse: bool
               ) -> tuple[ir.Block, list[ir.Value]]:
        """The MR x NR tile's sums over k, fused multiply-adds or products rounded first; the
        block it ends in and the accumulators there."""
        pre = b.block
        head = b.append_basic_block("k.head")
        body = b.append_basic_block("k.body")
        done = b.append_basic_block("k.done")
        b.branch(head)
        b.position_at_end(head)
        kv = b.phi(I64)
        kv.add_incoming(f.c64(0), pre)
        accs = []
        for _ in range(mr * nv):
            ph = b.phi(vt)
            ph.add_incoming(e.const(vt, 0), pre)
            accs.append(ph)
        b.cbranch(b.icmp_signed("<", kv, kk), body, done)
        b.position_at_end(body)
        row = e.gep(el, bp, b.mul(kv, f.c64(nr)))
        # B's panel row PREFETCH bytes ahead, each cache line of it: measured faster than the
        # hardware prefetcher alone (PREFETCH). A prefetch never faults: past the panel's end
        # it is harmless
        for off in range(0, nr * item, LINE):
            ahead = b.gep(row, [f.c64(PREFETCH + off)], source_etype=ir.IntType(8))
            e.intrinsic("prefetch", [ahead, ir.Constant(I32, 0), ir.Constant(I32, 3),
                                     ir.Constant(I32, 1)], ret=VOID, tys=[PTR])
        bvec = [e.load(vt, e.gep(vt, row, f.c64(v)), align=item) for v in range(nv)]
        new = []
        if isinstance(ap, list):  # A read in place: one pointer per row of the tile
            a_vals = [load_register(e, dt, e.gep(a_ty, ap[r], kv)) for r in range(mr)]
        else:
            arow = e.gep(el, ap, b.mul(kv, f.c64(mr)))
            a_vals = [e.load(el, e.gep(el, arow, f.c64(r))) for r in range(mr)]
        for r in range(mr):
            av = e.splat(a_vals[r], vf)
            for v in range(nv):
                acc = accs[r * nv + v]
                if not is_float:
                    new.append(b.add(acc, b.mul(av, bvec[v])))
                elif fuse:
                    new.append(e.fma(av, bvec[v], acc))
                else:  # no fast-math flags: LLVM never contracts these two
                    new.append(b.fadd(acc, b.fmul(av, bvec[v])))
        kn = b.add(kv, f.c64(1))
        latch = b.block
        kv.add_incoming(kn, latch)
        for ph, val in zip(accs, new, strict=True):
            ph.add_incoming(val, latch)
        b.branch(head)
        b.position_at_end(done)
        return done, list(accs)

    def tile(bi: ir.Value, i0: ir.Value, rows: ir.Value, p: ir.Value, ic: ir.Value,
             risky: ir.Value | None) -> None:
        ap: ir.Value | list[ir.Value]
        if direct:  # rows past the end repeat the last one, as packing does
            ap = a_rows(bi, i0, b.sub(b.add(i0, rows), f.c64(1)))
        else:
            ap = e.gep(el, apack, b.mul(b.sdiv(b.sub(i0, ic), f.c64(mr)),
                                        b.mul(kk, f.c64(mr))))
        bp = e.gep(el, packed, b.mul(b.add(b.mul(bi, npan), p), b.mul(kk, f.c64(nr))))
        if risky is None:
            accs = k_loop(ap, bp, fma)[1]
        else:
            # A fused multiply-add never rounds the product, so where a product overflows it
            # gives a finite or infinite sum where the rounded product gives inf or NaN (inf *
            # 1 + 2 * -3e38: NaN in the reference, inf fused). Tiles whose operands could do
            # that (or hold inf or NaN) round the products first, as the reference does.
            slow, quick, join = (b.append_basic_block(s) for s in ("k.exact", "k.fast", "k.j"))
            b.cbranch(risky, slow, quick)
            b.position_at_end(quick)
            d1, acc1 = k_loop(ap, bp, True)
            b.branch(join)
            b.position_at_end(slow)
            d2, acc2 = k_loop(ap, bp, False)
            b.branch(join)
            b.position_at_end(join)
            accs = []
            for x1, x2 in zip(acc1, acc2, strict=True):
                ph = b.phi(vt)
                ph.add_incoming(x1, d1)
                ph.add_incoming(x2, d2)
                accs.append(ph)
        j0 = b.mul(p, f.c64(nr))
        # Masked stores are slow on some cores (microcoded on AMD's): a panel whose NR
        # columns all exist stores with plain vector stores (an all-true constant mask, which
        # LLVM turns into ordinary stores and loads).
        whole, part, stored = (b.append_basic_block(s) for s in ("st.whole", "st.part", "st"))
        b.cbranch(b.icmp_signed("<=", b.add(j0, f.c64(nr)), n), whole, part)
        for blk, masked in ((whole, False), (part, True)):
            b.position_at_end(blk)
            store_tile(bi, i0, rows, j0, accs, masked, ic)
            b.branch(stored)
        b.position_at_end(stored)

    def store_tile(bi: ir.Value, i0: ir.Value, rows: ir.Value, j0: ir.Value,
                   accs: list[ir.Value], masked: bool, ic: ir.Value) -> None:
        """The epilogue on the tile's rows that exist, stored to the output (with a row pass:
        to the scratch's rows of the block starting at row ``ic``)."""
        for r in range(mr):
            yes = b.append_basic_block(f"row{r}")
            nxt = b.append_basic_block(f"row{r}.next")
            b.cbranch(b.icmp_signed("<", f.c64(r), rows), yes, nxt)
            b.position_at_end(yes)
            i = b.add(i0, f.c64(r))
            for v in range(nv):
                jv = b.add(j0, f.c64(v * vf))
                epi.memo.clear()
                epi.at = {"d0": bi, "d1": i} if k.batched else {"d0": i}
                epi.at[epi.jvar] = jv
                epi.mask = (b.icmp_signed("<", b.add(e.splat(jv, vf), lane_ids), e.splat(n, vf))
                            if masked else ir.Constant(ir.VectorType(ir.IntType(1), vf),
                                                       [True] * vf))
                epi.acc_value = accs[r * nv + v]
                val = epi.value(k.epilogue)
                val = store_value(e, val, out_dt)
                if k.c_at is not None:
                    at = b.add(batch_offset(f, bi, k.c_at, f.c64(0)), b.mul(i, f.c64(k.c_at.rows)))
                    ptr = e.gep(out_ty, bufs[-1], b.add(at, jv))
                elif rows_at is None:
                    ptr = e.gep(out_ty, bufs[-1], b.add(b.mul(b.add(b.mul(bi, m), i), n), jv))
                else:
                    ptr = e.gep(out_ty, rows_at, b.add(b.mul(b.sub(i, ic), n), jv))
                e.intrinsic("masked.store", [val, ptr, ir.Constant(I32, out_dt.itemsize),
                                             epi.mask], ret=VOID, tys=[val.type, PTR])
            b.branch(nxt)
            b.position_at_end(nxt)

    def row_pass(bi: ir.Value, ic: ir.Value, ic_end: ir.Value) -> None:
        """The post kernel on the block's rows of batch ``bi``: each buffer from where that
        batch's part starts, the product's rows from the scratch (addressed as if it held the
        whole batch: the kernel reads only these rows)."""
        assert k.post is not None and post_fn is not None and rows_at is not None
        ptrs = []
        for i, subs in zip((*k.post_bufs, len(bufs) - 1), k.post_batch, strict=True):
            if i == POST_ROWS:
                ptrs.append(e.gep(out_ty, rows_at, b.sub(f.c64(0), b.mul(ic, n))))
            elif t is not None and i == len(bufs) - 1:  # the rows of P, for P V below
                ptrs.append(e.gep(t_el, p_at, b.sub(f.c64(0), b.mul(ic, n))))
            else:
                ty = mem_type(k.buffers[i].dtype)
                ptrs.append(e.gep(ty, bufs[i], batch_offset(f, bi, Strided(subs, 0), bi)))
        b.call(post_fn, [*ptrs, sizes, ic, ic_end])
        if t is not None:  # this batch's B of t (and its part of it), packed by the step
            t_packed = e.gep(ir.IntType(8), packed, b.add(t_first, b.mul(bi, t_bytes)))
            t_b = batch_part(f, k, bufs, bi, k.then_b, 0)
        if t is not None and u is None:  # t's rows [ic, ic_end) of this batch, A the rows
            b.call(t_fn, [ptrs[-1], t_b, batch_part(f, k, bufs, bi, len(bufs) - 1, 1),
                          t_packed, t_scratch, sizes, ic, ic_end])
        elif t is not None and u is not None:  # t's rows to the scratch, then u's of them
            assert isinstance(t.n, int)
            o_rows = e.gep(u_el, o_at, b.sub(f.c64(0), b.mul(ic, f.c64(t.n))))
            b.call(t_fn, [ptrs[-1], t_b, o_rows, t_packed, t_scratch, sizes, ic, ic_end])
            b.call(u_fn, [o_rows, bufs[t.then_b], bufs[-1], u_packed, u_scratch, sizes, ic,
                          ic_end])

    tail = b.mul(b.mul(batch, npan), b.mul(kk, f.c64(nr)))  # the panels' max |b| (emit_pack)

    # rows [lo, hi) count through the batches, then through groups of panels (program.py
    # writes the group count after the kernel's sizes; tiling.panel_groups)
    groups = e.load(I64, e.gep(I64, sizes, f.c64(len(k.sizes))))
    group_panels = b.sdiv(b.add(npan, b.sub(groups, f.c64(1))), groups)

    def per_batch(bi: ir.Value, r0: ir.Value, r1: ir.Value, p_lo: ir.Value, p_hi: ir.Value
                  ) -> None:
        """Rows [r0, r1) of batch ``bi``, over a group's panels [p_lo, p_hi)."""

        def per_block(ic: ir.Value) -> None:
            ic_end = f_min(e, b.add(ic, f.c64(MC)), r1)
            if direct:
                if guard:
                    block_max(bi, ic, ic_end)
            elif shared_a == "follow":
                b.store(e.load(el, args[nb + 3]), amax)
            else:
                pack_a(bi, ic, ic_end)
                if shared_a == "lead":
                    b.store(b.load(amax), args[nb + 3])

            def per_panel(p: ir.Value) -> None:
                risky = None
                if guard:
                    bmax = e.load(el, e.gep(el, packed, b.add(tail, b.add(b.mul(bi, npan), p))))
                    risky = _risky(e, b.load(amax), bmax)
                f.loop(ic, ic_end, mr, lambda i0: tile(
                    bi, i0, f_min(e, f.c64(mr), b.sub(ic_end, i0)), p, ic, risky), "ir")
            f.loop(p_lo, p_hi, 1, per_panel, "jr")
            if post_fn is not None:
                row_pass(bi, ic, ic_end)
        f.loop(r0, r1, MC, per_block, "ic")

    def per_group(g: ir.Value, glo: ir.Value, ghi: ir.Value) -> None:
        p_lo = b.mul(g, group_panels)
        p_hi = f_min(e, b.add(p_lo, group_panels), npan)
        f.through(glo, ghi, m, batch, lambda bi, r0, r1: per_batch(bi, r0, r1, p_lo, p_hi),
                  "bi")
    f.through(lo, hi, b.mul(batch, m), groups, per_group, "g")
    b.ret_void()
    return f.fn
