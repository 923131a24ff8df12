"""Packing B into panels for the matmul (``<sym>_pack``; see codegen/matmul.py), and the IR
scaffolding the matmul's two functions share: a function builder with counted loops, where a
batch of a (strided) operand starts, the largest magnitude of what passes, and vector
concatenation."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import I32, I64, IR, PTR, VOID, mem_type, reg_type
from tcp_rules.codegen.kernel import MatmulKernel, Size, Strided
from tcp_rules.codegen.storage import load_register
from tcp_rules.codegen.tiling import LINE, packed_item, static_n, tile_shape


def bigger(e: IR, m: ir.Value, x: ir.Value) -> ir.Value:
    """max(m, |x|), NaN ignored: one maxss. A NaN operand makes NaN fused or not; an inf one
    makes the same inf or NaN fused or not, unless a finite product overflows, which the
    finite magnitudes tell."""
    ax = e.fabs(x)
    return e.b.select(e.b.fcmp_ordered(">", ax, m), ax, m)


class Fn:
    """A function under construction with alloca-based counted loops."""

    def __init__(self, module: ir.Module, name: str, nptr: int):
        self.fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * nptr + [I64, I64]), name=name)
        for a in self.fn.args[:nptr]:
            a.add_attribute("noalias")
        self.fn.attributes.add("nounwind")
        entry = self.fn.append_basic_block("entry")
        start = self.fn.append_basic_block("start")
        self.allocas = ir.IRBuilder(entry)
        self.allocas.branch(start)
        self.e = IR(ir.IRBuilder(start))
        self.b = self.e.b

    def _alloca(self, ty: ir.Type, name: str = "") -> ir.Value:
        # Allocas live in their own entry block, so the main builder's position never shifts.
        self.allocas.position_before(self.fn.entry_basic_block.terminator)
        return self.allocas.alloca(ty, name=name)

    def c64(self, v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    def loop(self, lo: ir.Value, hi: ir.Value, step: int, body: Callable[[ir.Value], None],
             name: str) -> None:
        b = self.b
        slot = self._alloca(I64, name=name)
        b.store(lo, slot)
        cond, body_bb, done = (b.append_basic_block(f"{name}.{s}") for s in ("c", "b", "d"))
        b.branch(cond)
        b.position_at_end(cond)
        i = b.load(slot)
        b.cbranch(b.icmp_signed("<", i, hi), body_bb, done)
        b.position_at_end(body_bb)
        body(i)
        b.store(b.add(i, self.c64(step)), slot)
        b.branch(cond)
        b.position_at_end(done)

    def imin(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.e.intrinsic("smin", [a, b])

    def through(self, lo: ir.Value, hi: ir.Value, size: ir.Value, count: ir.Value,
                body: Callable[[ir.Value, ir.Value, ir.Value], None], name: str) -> None:
        """``count`` items of ``size`` units laid end to end, and a range [lo, hi) of units:
        ``body(item, start, end)`` for each item the range meets, with its share of the range
        counted from the item's first unit (how threads' chunks run through the batches)."""
        b = self.b

        def per_item(i: ir.Value) -> None:
            first = b.mul(i, size)
            body(i, self.e.intrinsic("smax", [b.sub(lo, first), self.c64(0)]),
                 self.imin(b.sub(hi, first), size))
        # items of no units (M = 0, no batches) meet no range: without the clamp, a division by
        # zero (SIGFPE)
        unit = self.e.intrinsic("smax", [size, self.c64(1)])
        last = b.sdiv(b.add(hi, b.sub(unit, self.c64(1))), unit)
        self.loop(b.sdiv(lo, unit), self.imin(last, count), 1, per_item, name)

    def sizes(self, k: MatmulKernel, arg: ir.Value) -> Callable[[Size], ir.Value]:
        vals = {s: self.e.load(I64, self.e.gep(I64, arg, self.c64(i)))
                for i, s in enumerate(k.sizes)}
        return lambda s: self.c64(s) if isinstance(s, int) else vals[s]


def batch_offset(f: Fn, bi: ir.Value, at: Strided | None, contiguous: ir.Value
                 ) -> ir.Value:
    """Where batch ``bi`` of an operand starts: ``bi * contiguous`` (its elements per batch),
    or the sum of the digits of bi over a strided layout's batch sub-axes times their strides."""
    b = f.b
    if at is None:
        return b.mul(bi, contiguous)
    off: ir.Value = f.c64(0)
    inner = 1
    for size, stride in reversed(at.batch):
        digit = b.urem(b.udiv(bi, f.c64(inner)), f.c64(size))
        off = b.add(off, b.mul(digit, f.c64(stride)))
        inner *= size
    return off


def emit_pack(module: ir.Module, k: MatmulKernel, name: str) -> ir.Function:
    """``name(b, packed, sizes, lo, hi)``: panels [lo, hi) of B, in the register type (f16 and
    bf16 converted to f32), each followed after all panels by its largest magnitude."""
    dt = k.buffers[0].dtype
    _, nr, _ = tile_shape(dt)
    f = Fn(module, name, 3)
    b, (src, dst, sizes, lo, hi) = f.b, f.fn.args
    size = f.sizes(k, sizes)
    kk, n = size(k.k), size(k.n)
    batch = size(k.domain[0]) if k.batched else f.c64(1)
    ty, src_ty, item = reg_type(dt), mem_type(dt), packed_item(k)
    npan = b.sdiv(b.add(n, f.c64(nr - 1)), f.c64(nr))
    tail = b.mul(b.mul(batch, npan), b.mul(kk, f.c64(nr)))  # then one max |b| per panel
    ld = f.c64(k.b_at.rows) if k.b_at is not None else (kk if k.b_t else n)  # source rows
    mx = f._alloca(ty, "bmax")
    row_ty = ir.VectorType(ty, nr)
    vmx = f._alloca(row_ty, "bmax.v")  # NR independent maxima: no serial chain per element

    def copy(s_row: ir.Value, d_row: ir.Value, j: ir.Value) -> None:
        x = load_register(f.e, dt, f.e.gep(src_ty, src, b.add(s_row, j)))
        b.store(x, f.e.gep(ty, dst, b.add(d_row, j)))
        if dt.is_float:
            b.store(bigger(f.e, b.load(mx), x), mx)

    def copy_row(s_row: ir.Value, d_row: ir.Value) -> None:
        """A full row of NR: one vector load and store."""
        x = load_register(f.e, dt, f.e.gep(src_ty, src, s_row), nr)
        b.store(x, f.e.gep(ty, dst, d_row), align=item)
        if dt.is_float:
            b.store(bigger(f.e, b.load(vmx), x), vmx)

    def per_batch(bi: ir.Value, p_lo: ir.Value, p_hi: ir.Value) -> None:
        def per_panel(p: ir.Value) -> None:
            j0 = b.mul(p, f.c64(nr))
            width = f.imin(f.c64(nr), b.sub(n, j0))
            dst0 = b.mul(b.add(b.mul(bi, npan), p), b.mul(kk, f.c64(nr)))
            b.store(ir.Constant(ty, 0), mx)
            b.store(ir.Constant(row_ty, None), vmx)
            full = b.icmp_signed("==", width, f.c64(nr))
            start = batch_offset(f, bi, k.b_at, b.mul(kk, n))
            if k.b_t:
                row0 = b.add(start, b.mul(j0, ld))  # the panel's first source row
                _pack_transposed(f, k, (src, dst, mx, vmx), (kk, ld, row0, width, dst0), full)
                finish(bi, p)
                return

            def per_k(r: ir.Value) -> None:
                s_row = b.add(b.add(start, b.mul(r, ld)), j0)
                d_row = b.add(dst0, b.mul(r, f.c64(nr)))
                with b.if_else(full) as (whole, part):
                    with whole:
                        copy_row(s_row, d_row)
                    with part:  # the last panel: the columns that exist, then zeros
                        f.loop(f.c64(0), width, 1, lambda j: copy(s_row, d_row, j), "j")
                        f.loop(width, f.c64(nr), 1, lambda j: b.store(
                            ir.Constant(ty, 0), f.e.gep(ty, dst, b.add(d_row, j))), "z")
            f.loop(f.c64(0), kk, 1, per_k, "k")
            finish(bi, p)

        def finish(bi: ir.Value, p: ir.Value) -> None:
            """The panel's largest magnitude, after the panels."""
            m = b.load(mx)
            if dt.is_float:
                m = bigger(f.e, m, f.e.intrinsic("vector.reduce.fmax", [b.load(vmx)], ret=ty))
            b.store(m, f.e.gep(ty, dst, b.add(tail, b.add(b.mul(bi, npan), p))))
        f.loop(p_lo, p_hi, 1, per_panel, "p")
    # panels [lo, hi) count through the batches one after another
    f.through(lo, hi, npan, batch, per_batch, "bi")
    b.ret_void()
    return f.fn


def regions(f: Fn, k: MatmulKernel, bufs: list[ir.Value], size: Callable[[Size], ir.Value],
            batch: ir.Value) -> tuple[list[tuple[MatmulKernel, list[ir.Value], ir.Value,
                                                  ir.Value]], ir.Value]:
    """Each product of ``k`` (MatmulKernel.products) with its buffers among the step's
    ``bufs``, its N and the byte where its B's region of the packed buffer starts
    (tiling.packed_b); and the byte after the last region, where a chained product's start."""
    out, at, kk = [], f.c64(0), size(k.k)
    for i, (p, idx) in enumerate(k.products):
        n = size(p.n) if i == 0 else f.c64(static_n(p.n))
        out.append((p, [bufs[j] for j in idx], n, at))
        at = f.b.add(at, packed_bytes(f, p, batch, kk, n))
    return out, at


def batch_part(f: Fn, k: MatmulKernel, bufs: list[ir.Value], bi: ir.Value, i: int,
               at: int) -> ir.Value:
    """Where batch ``bi``'s part of buffer ``i`` starts for ``k``'s chained product: its B
    (``at`` 0) or its output (1), by the sub-axes of ``then_batch``."""
    ty = mem_type(k.buffers[i].dtype)
    return f.e.gep(ty, bufs[i], batch_offset(f, bi, Strided(k.then_batch[at], 0), bi))


def emit_pack_all(module: ir.Module, k: MatmulKernel, name: str) -> ir.Function:
    """``name(a, b, ..., out, packed, scratch, sizes, lo, hi)``: panels [lo, hi) of what the
    kernel's step packs before its rows run (tiling.packed_b): B's panels through the batches,
    then each sibling's B; or then a chained product's B for each batch (where its part of
    our buffer ``then_b`` starts), then a third's. Each in its region, as emit_pack lays
    them out."""
    nb = k.step_buffers
    f = Fn(module, name, nb + 3)
    b, e = f.b, f.e
    args = list(f.fn.args)
    bufs, packed, sizes, lo, hi = args[:nb], args[nb], args[nb + 2], args[nb + 3], args[nb + 4]
    size = f.sizes(k, sizes)
    n = size(k.n)
    batch = size(k.domain[0]) if k.batched else f.c64(1)

    def clamp(x: ir.Value, count: ir.Value) -> ir.Value:
        return f.imin(f.e.intrinsic("smax", [x, f.c64(0)]), count)

    def region(fn: ir.Function, src: ir.Value, at: ir.Value, first: ir.Value, count: ir.Value
               ) -> None:
        """``fn`` on the panels [first, first + count) of the range, packed at byte ``at``."""
        b.call(fn, [src, e.gep(ir.IntType(8), packed, at), sizes, clamp(b.sub(lo, first), count),
                    clamp(b.sub(hi, first), count)])

    def packer(p: MatmulKernel, suffix: str) -> ir.Function:
        fn = emit_pack(module, p, name + suffix)
        fn.linkage = "internal"
        return fn
    done = f.c64(0)  # panels before a product's
    own, at = regions(f, k, bufs, size, batch)
    for i, (p, pbufs, pn, p_at) in enumerate(own):
        count = b.mul(batch, panels(f, p, pn))
        region(packer(p, f".b{i}"), pbufs[1], p_at, done, count)
        done = b.add(done, count)
    t = k.then
    if t is not None:  # (t's K is our N: it multiplies our rows)
        t_plain = replace(t, then=None)
        t_pack = packer(t_plain, ".then")
        t_npan = panels(f, t_plain, f.c64(static_n(t.n)))
        t_bytes = packed_bytes(f, t_plain, f.c64(1), n, f.c64(static_n(t.n)))
        t_all = b.mul(batch, t_npan)

        def per_batch(bi: ir.Value, p_lo: ir.Value, p_hi: ir.Value) -> None:
            dst = e.gep(ir.IntType(8), packed, b.add(at, b.mul(bi, t_bytes)))
            b.call(t_pack, [batch_part(f, k, bufs, bi, k.then_b, 0), dst, sizes, p_lo, p_hi])
        f.through(clamp(b.sub(lo, done), t_all), clamp(b.sub(hi, done), t_all), t_npan, batch,
                  per_batch, "tb")
        if t.then is not None:
            u = t.then
            region(packer(u, ".then.then"), bufs[t.then_b], b.add(at, b.mul(batch, t_bytes)),
                   b.add(done, t_all), panels(f, u, f.c64(static_n(u.n))))
    b.ret_void()
    return f.fn


def panels(f: Fn, k: MatmulKernel, n: ir.Value) -> ir.Value:
    """How many panels of NR columns ``n`` columns of ``k``'s B make."""
    nr = tile_shape(k.buffers[0].dtype)[1]
    return f.b.sdiv(f.b.add(n, f.c64(nr - 1)), f.c64(nr))


def packed_bytes(f: Fn, k: MatmulKernel, batch: ir.Value, kk: ir.Value, n: ir.Value
                 ) -> ir.Value:
    """Bytes of one product's B packed, whole cache lines (tiling.packed_b)."""
    b, nr = f.b, tile_shape(k.buffers[0].dtype)[1]
    npan = b.mul(batch, panels(f, k, n))
    elems = b.add(b.mul(npan, b.mul(kk, f.c64(nr))), npan)
    nbytes = b.mul(elems, f.c64(packed_item(k)))
    return b.mul(b.sdiv(b.add(nbytes, f.c64(LINE - 1)), f.c64(LINE)), f.c64(LINE))


def _pack_transposed(f: Fn, k: MatmulKernel, ptrs: tuple[ir.Value, ...],
                     dims: tuple[ir.Value, ...], full: ir.Value) -> None:
    """One panel of B from its transpose ``[batch,] n, k``: columns j0.. of B are rows of the
    source (``ld`` apart, the first at ``row0``). A full panel goes G rows at a time: VF values
    of k from each, transposed to [k][G] in registers (as matmul packs A) and stored as G-wide
    pieces of the panel's k rows; the last K % VF values, and a last panel narrower than NR,
    go one element at a time."""
    src, dst, mx, vmx = ptrs
    kk, ld, row0, width, dst0 = dims
    b, e = f.b, f.e
    dt = k.buffers[0].dtype
    _, nr, vf = tile_shape(dt)
    g = min(8, nr)
    ty, src_ty, item = reg_type(dt), mem_type(dt), packed_item(k)
    vt = ir.VectorType(ty, vf)
    whole = b.mul(b.sdiv(kk, f.c64(vf)), f.c64(vf))
    order = [r * vf + t for t in range(vf) for r in range(g)]

    def copy(jj: ir.Value, r: ir.Value) -> None:
        x = load_register(e, dt, e.gep(src_ty, src, b.add(row0, b.add(b.mul(jj, ld), r))))
        b.store(x, e.gep(ty, dst, b.add(dst0, b.add(b.mul(r, f.c64(nr)), jj))))
        if dt.is_float:
            b.store(bigger(e, b.load(mx), x), mx)

    def chunk(g0: int, kv: ir.Value) -> None:
        rows = [load_register(e, dt, e.gep(src_ty, src, b.add(row0, b.add(
            b.mul(f.c64(g0 + r), ld), kv))), vf) for r in range(g)]
        flat = concat(b, rows)
        tr = b.shuffle_vector(flat, ir.Constant(flat.type, None),
                              ir.Constant(ir.VectorType(I32, g * vf), order))
        for t in range(vf):
            piece = b.shuffle_vector(tr, ir.Constant(tr.type, None), ir.Constant(
                ir.VectorType(I32, g), list(range(t * g, (t + 1) * g))))
            at = b.add(dst0, b.add(b.mul(b.add(kv, f.c64(t)), f.c64(nr)), f.c64(g0)))
            b.store(piece, e.gep(ty, dst, at), align=item)
        if dt.is_float:
            m = ir.Constant(vt, None)
            for x in rows:
                m = bigger(e, m, x)
            # vmx holds NR lanes: widened once, the first VF take these maxima
            wide = concat(b, [m, *[ir.Constant(vt, None)] * (nr // vf - 1)])
            b.store(bigger(e, b.load(vmx), wide), vmx)

    def column(lo: ir.Value) -> Callable[[ir.Value], None]:
        """Column jj of the panel: its k values from ``lo`` on."""
        return lambda jj: f.loop(lo, kk, 1, lambda r: copy(jj, r), "tk")

    def zeros(r: ir.Value) -> None:
        at = b.add(dst0, b.mul(r, f.c64(nr)))
        f.loop(width, f.c64(nr), 1, lambda jj: b.store(ir.Constant(ty, 0), e.gep(
            ty, dst, b.add(at, jj))), "tz")

    with b.if_else(full) as (whole_panel, part):
        with whole_panel:
            for g0 in range(0, nr, g):
                f.loop(f.c64(0), whole, vf, functools.partial(chunk, g0), f"t{g0}")
            f.loop(f.c64(0), f.c64(nr), 1, column(whole), "tj")
        with part:  # the columns that exist, then zeros
            f.loop(f.c64(0), width, 1, column(f.c64(0)), "pj")
            f.loop(f.c64(0), kk, 1, zeros, "pr")


def bind_row(fn: Callable[[ir.Value, ir.Value, ir.Value], None], src: ir.Value, dst: ir.Value
          ) -> Callable[[ir.Value], None]:
    """``fn(src, dst, ·)``: a loop body bound to one row (a lambda in a loop would see the
    loop's last row)."""
    return lambda kv: fn(src, dst, kv)


def concat(b: ir.IRBuilder, vs: list[ir.Value]) -> ir.Value:
    """One vector of the elements of ``vs`` (vectors of one type) in order, then zeros up to
    a power of two of vectors (shufflevector joins two vectors of one type)."""
    n = len(vs)
    while n & (n - 1):
        vs, n = [*vs, ir.Constant(vs[0].type, None)], n + 1
    while len(vs) > 1:
        w = vs[0].type.count
        mask = ir.Constant(ir.VectorType(I32, 2 * w), list(range(2 * w)))
        vs = [b.shuffle_vector(x, y, mask) for x, y in zip(vs[::2], vs[1::2], strict=True)]
    return vs[0]
