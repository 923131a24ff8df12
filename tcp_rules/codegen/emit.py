"""Kernel -> LLVM function: the loop nest, hoisting by loop scope, reductions, loads and stores.

Signature of every generic kernel::

    void @name(ptr noalias b0, ..., ptr noalias bN, [ptr noalias scratch,] ptr noalias sizes,
               i64 lo, i64 hi)

``sizes`` holds the kernel's size parameters; the loop of domain axis ``Kernel.split`` (the
first, unless the axes before it have a static extent of 1) runs over ``[lo, hi)`` so the
runtime can split it across threads. Each body node is emitted once, in the outermost loop
whose indices it uses (a row reduction in a softmax runs once per row, not per element). A row
reduction whose body the output computes again stores it in the output row for the output loop
to load (stash.py: softmax's exp runs once per element, not twice). A reduction down the
columns of the innermost domain loop (a sum over axis 0) runs outside that loop, over blocks of
columns at once (columns.py), so that it reads along the rows; its accumulators are in the
``scratch`` the runner passes to the kernels that have such reductions (and to no other).
Loop-carried state lives in allocas that SROA promotes to registers before vectorization.

Reductions: only the accumulator update carries ``reassoc`` (so the loop vectorizer may keep
several vector accumulators) -- an approximate transformation, as NumPy's pairwise order is.
f32 sums add blocks of F32_SUM_BLOCK terms in f32 and the block sums in f64; f64 sums add blocks
of F64_SUM_BLOCK terms. max/min use
``llvm.maximum``/``llvm.minimum``: NaN propagates, and -0.0 counts as below +0.0 whatever the
order, as the reference defines reduce_max/reduce_min (ops/linalg.py): the same bits. A row's
float max/min runs first with ``nsz`` (x86: three instructions a vector, not seven; softmax's
max pass) and again exactly when its result is a zero, the only result ``nsz`` may change.
Kernels that read an input transposed iterate their last two axes in TILE x TILE blocks, each
full one reading the transposed loads as whole vectors shuffled in registers (transpose.py).
f32 exps in innermost loops take mathlib's fast path (no clamps, no two-step scaling) and record
their largest argument; a loop that saw one beyond the fast path runs again with the full path
(KernelEmitter.loop), so a row, a sum's block or EXP_BLOCK points cost twice, never the kernel.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from tcp_rules.codegen import mathlib
from tcp_rules.codegen.accumulators import accumulator
from tcp_rules.codegen.columns import Columns, columns_of
from tcp_rules.codegen.irbase import I8, I32, I64, IR, PTR, VOID, mem_type, reg_type
from tcp_rules.codegen.kernel import (
    Acc,
    Affine,
    ClampIndex,
    Const,
    Inside,
    Kernel,
    Load,
    Node,
    Op,
    PadIndex,
    Reduce,
    Size,
    walk,
)
from tcp_rules.codegen.llvm_ops import emit_op, np_max, np_min
from tcp_rules.codegen.padding import inside, masked_load, pad_index
from tcp_rules.codegen.scopes import KernelError, compute_scopes, needs_tiling
from tcp_rules.codegen.stash import find_stash
from tcp_rules.codegen.storage import const_value, load_value, quantize, store_value
from tcp_rules.codegen.transpose import W as TILE
from tcp_rules.codegen.transpose import fill_tile, transposed_loads
from tcp_rules.types import DType

# Ops whose f32 result on f16 or bf16 operands is already a value of that type (selection,
# sign, rounding to an integer): no rounding to storage after them.
EXACT_IN_STORAGE = frozenset({"neg", "abs", "max", "min", "select", "floor", "ceil", "round",
                              "round_even"})

# Innermost domain loops with an f32 exp run in blocks of this many points, each run again with
# exp's full path when an argument was beyond its fast path (KernelEmitter.loop).
EXP_BLOCK = 4096
CACHE_LINE = 64  # bytes: the unit a prefetch brings in
PREFETCH_LINES = 32  # at most this many prefetches at a block's start (f32 blocks: 32)
# Transposing kernels run over TILE x TILE blocks (transpose.W), so both sides stay in cache,
# by bands of TILE_BAND rows: a band's rows of the output and columns of the input stay in the
# TLB and the caches while its tiles go along the columns (2048^2 and 4096^2 f32 transposes ran
# 1.7-2x faster in bands of 128 or 256 than in bands of one tile; 256 was the better on a
# transpose added to a matrix, 3.3-3.5x against 2.2x).
TILE_BAND = 256


class BodyEmitter:
    """Emits scalar nodes; loads, reductions and the matmul accumulator are hooks."""

    def __init__(self, e: IR):
        self.e = e
        self.memo: dict[Node, ir.Value] = {}

    def value(self, n: Node) -> ir.Value:
        got = self.memo.get(n)
        if got is not None:
            return got
        v = self.compute(n)
        self.memo[n] = v
        return v

    def compute(self, n: Node) -> ir.Value:
        match n:
            case Const(value=v):
                return self.const(n.dtype, v)
            case Op(op=op, args=args, attrs=attrs):
                vals = [self.value(a) for a in args]
                v = emit_op(self.e, op, vals, [a.dtype.compute for a in args], dict(attrs),
                            n.dtype.compute)
                return v if op in EXACT_IN_STORAGE else quantize(self.e, v, n.dtype)
            case ClampIndex(value=v, extent=ext):
                x, unsigned = self.value(v), v.dtype.is_unsigned
                if x.type.width < 64:
                    x = (self.e.b.zext if unsigned else self.e.b.sext)(x, I64)
                elif unsigned:  # beyond the i64 range is beyond the end
                    x = self.e.intrinsic("umin", [x, ir.Constant(I64, 2**63 - 1)])
                hi = self.e.b.sub(self.size(ext), ir.Constant(I64, 1))
                x = self.e.intrinsic("smin", [x, hi])
                return self.e.intrinsic("smax", [x, ir.Constant(I64, 0)])
            case PadIndex(index=i, low=lo, extent=ext, mode=mode):
                return pad_index(self.e, self.index(i), lo, self.size(ext), mode)
            case Inside(axes=axes):
                return inside(self.e, [(self.index(i), lo, self.size(ext))
                                       for i, lo, ext in axes])
            case Load():
                return self.load(n)
            case Reduce():
                return self.reduce(n)
            case Acc():
                return self.acc(n)
        raise KernelError(f"cannot emit {n!r}")

    def const(self, dt: DType, v: float | int | bool) -> ir.Value:
        return self.e.const(reg_type(dt), const_value(dt, v))

    def size(self, s: Size) -> ir.Value:
        raise NotImplementedError

    def index(self, i: Affine | Node) -> ir.Value:
        """An index entry's value at the current loop indices."""
        raise KernelError("computed indices are only supported in loop-nest kernels")

    def load(self, n: Load) -> ir.Value:
        raise KernelError("loads are not supported here")

    def reduce(self, n: Reduce) -> ir.Value:
        raise KernelError("reductions are not supported here")

    def acc(self, n: Acc) -> ir.Value:
        raise KernelError("acc is only valid in a matmul epilogue")


def kernel_signature(module: ir.Module, name: str, nptr: int) -> ir.Function:
    """``void name(ptr noalias p0.., ptr noalias sizes, i64 lo, i64 hi)``, ``nptr`` pointers
    before ``sizes``."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * (nptr + 1) + [I64, I64]), name=name)
    for a in fn.args[: nptr + 1]:
        a.add_attribute("noalias")
    fn.attributes.add("nounwind")
    # A copy loop would become a memcpy call: glibc's ran at 0.75x a vector loop's speed here.
    set.add(fn.attributes, '"no-builtin-memcpy"')  # a string attribute: bypasses llvmlite's check
    return fn


class KernelEmitter(BodyEmitter):
    """Emits one generic :class:`Kernel` as a function."""

    def __init__(self, module: ir.Module, k: Kernel, name: str,
                 rerun: ir.Function | None = None):
        self.k = k
        self.rerun = rerun
        self.dom = [f"d{i}" for i in range(len(k.domain))]
        self.scopes = compute_scopes(k.value, self.dom)
        found = columns_of(k, self.scopes)
        self.fn = kernel_signature(module, name, len(k.buffers) + bool(found))
        entry = self.fn.append_basic_block("entry")
        start = self.fn.append_basic_block("start")
        self.allocas = ir.IRBuilder(entry)
        self.allocas.branch(start)
        super().__init__(IR(ir.IRBuilder(start)))
        self.sizes: dict[str, ir.Value] = {}
        sizes = self.fn.args[-3]
        for i, s in enumerate(k.sizes):
            self.sizes[s] = self.e.load(I64, self.e.gep(I64, sizes, ir.Constant(I64, i)))
        self.strides = [self._strides(buf.shape) for buf in k.buffers]
        self.order = list(walk(k.value))
        self.idx: dict[str, ir.Value] = {}
        self.bounds: dict[str, tuple[ir.Value, ir.Value]] = {}
        self.tiled = needs_tiling(k)
        self.tile_arrays: dict[Load, ir.Value] = {}  # transpose.py, during a full tile
        self.stash = find_stash(k, self.scopes)
        self.columns = Columns(self, found, self.fn.args[len(k.buffers)] if found else None)
        self.fast_exp = mathlib.scale_strategy() == "split"  # vscalefps needs no fast path
        if rerun is not None:
            self.e.trig_flag = self._alloca(I8, "trig.flag")
            self.allocas.store(ir.Constant(I8, 0), self.e.trig_flag)

    def finish(self) -> ir.Function:
        """Emit the loop nest and the return: first the precise rerun, if flagged."""
        self.emit_scope(None)
        b = self.e.b
        if self.rerun is not None and self.e.trig_flag is not None:
            flagged = b.icmp_unsigned("!=", b.load(self.e.trig_flag), ir.Constant(I8, 0))
            with b.if_then(flagged, likely=False):
                b.call(self.rerun, list(self.fn.args))
        b.ret_void()
        return self.fn

    def _alloca(self, ty: ir.Type, name: str = "") -> ir.Value:
        # Allocas live in their own entry block, so the main builder's position never shifts.
        self.allocas.position_before(self.fn.entry_basic_block.terminator)
        return self.allocas.alloca(ty, name=name)

    def size(self, s: Size) -> ir.Value:
        if isinstance(s, int):
            return ir.Constant(I64, s)
        if s not in self.sizes:
            raise KernelError(f"unknown size parameter {s}")
        return self.sizes[s]

    def _strides(self, shape: tuple[Size, ...]) -> list[ir.Value]:
        out: list[ir.Value] = []
        acc: ir.Value = ir.Constant(I64, 1)
        for s in reversed(shape):
            out.append(acc)
            acc = self.e.b.mul(acc, self.size(s), flags=["nsw"])
        return out[::-1]

    def affine(self, a: Affine) -> ir.Value:
        """The value of an index expression at the current loop indices."""
        b = self.e.b
        v: ir.Value = ir.Constant(I64, a.const)
        for name, c in (*a.vars, *a.sizes):
            term = self.idx[name] if name in self.idx else self.size(name)
            if c != 1:
                term = b.mul(term, ir.Constant(I64, c), flags=["nsw"])
            v = b.add(v, term, flags=["nsw"])
        return v

    def index(self, i: Affine | Node) -> ir.Value:
        return self.affine(i) if isinstance(i, Affine) else self.value(i)

    def address(self, buf: int, index: tuple[Affine | Node, ...]) -> ir.Value:
        """Address of ``buffers[buf][index]`` (row-major strides from the run-time shape)."""
        b = self.e.b
        off: ir.Value = ir.Constant(I64, 0)
        for i, stride in zip(index, self.strides[buf], strict=True):
            iv = self.index(i)
            off = b.add(off, b.mul(iv, stride, flags=["nsw"]), flags=["nsw"])
        return self.e.gep(mem_type(self.k.buffers[buf].dtype), self.fn.args[buf], off)

    def compute(self, n: Node) -> ir.Value:
        if self.stash is not None and n == self.stash.twin:  # stored by the row reduction
            v = self.e.load(mem_type(n.dtype), self.address(len(self.k.buffers) - 1,
                                                            self.k.out_map()))
            return load_value(self.e, v, n.dtype)
        return super().compute(n)

    def load(self, n: Load) -> ir.Value:
        buf = self.k.buffers[n.buf]
        tile = self.tile_arrays.get(n)
        if tile is not None:  # a full tile of a transposed read, in registers' order
            b = self.e.b
            r = b.sub(self.idx[self.dom[-2]], self.idx[f"{self.dom[-2]}.t"])
            c = b.sub(self.idx[self.dom[-1]], self.idx[f"{self.dom[-1]}.t"])
            at = b.add(b.mul(r, ir.Constant(I64, TILE)), c)
            ty = mem_type(buf.dtype)
            return load_value(self.e, self.e.load(ty, self.e.gep(ty, tile, at)), buf.dtype)
        if len(n.index) != buf.rank:
            raise KernelError(f"load of {buf.name} has {len(n.index)} indices for rank "
                              f"{buf.rank}")
        ty, ptr = mem_type(buf.dtype), self.address(n.buf, n.index)
        if n.mask is not None and n.other is not None:  # constant padding
            mask = self.value(n.mask)
            raw = masked_load(self.e, ty, ptr, mask, buf.dtype.itemsize)
            return self.e.b.select(mask, load_value(self.e, raw, buf.dtype),
                                   self.value(n.other))
        return load_value(self.e, self.e.load(ty, ptr), buf.dtype)

    # Loops -------------------------------------------------------------------------------------

    def loop(self, var: str, lo: ir.Value, hi: ir.Value, body: Callable[[], None],
             step: int = 1, reset: Callable[[], None] | None = None) -> None:
        """``for var in [lo, hi) by step``; values emitted inside are forgotten afterwards (they
        do not dominate the code after the loop).

        ``reset`` restores what the loop updates (an accumulator; stores are simply redone), so
        that it may run again: then its f32 exps take their fast path (mathlib.exp_fast), and
        the loop runs again with the full one if an argument was beyond it."""
        e = self.e
        if reset is None or not self._fast_exps(var):
            saved, e.exp_guard = e.exp_guard, None
            self._loop(var, lo, hi, body, step)
            e.exp_guard = saved
            return
        guard = self._alloca(I32, name=f"{var}.guard")
        e.b.store(ir.Constant(I32, 0), guard)
        saved, e.exp_guard = e.exp_guard, guard
        self._loop(var, lo, hi, body, step)
        e.exp_guard = None
        with e.b.if_then(mathlib.exp_beyond_fast(e, guard), likely=False):
            reset()
            self._loop(var, lo, hi, body, step, f"{var}.again")
        e.exp_guard = saved

    def _fast_exps(self, var: str) -> bool:
        """Whether the loop over ``var`` computes an f32 exp that has a fast path here (a
        stashed one is loaded instead)."""
        twin = self.stash.twin if self.stash is not None else None
        return self.fast_exp and any(
            isinstance(n, Op) and n.op == "exp" and n.dtype.compute is DType.F32 and n != twin
            and self.scopes.innermost(self.scopes.deps[n]) == var for n in self.order)

    def _loop(self, var: str, lo: ir.Value, hi: ir.Value, body: Callable[[], None],
              step: int, label: str | None = None) -> None:
        b, label = self.e.b, label or var
        slot = self._alloca(I64, name=label)
        b.store(lo, slot)
        cond = b.append_basic_block(f"{label}.cond")
        loop_body = b.append_basic_block(f"{label}.body")
        done = b.append_basic_block(f"{label}.done")
        b.branch(cond)
        b.position_at_end(cond)
        i = b.load(slot)
        b.cbranch(b.icmp_signed("<", i, hi), loop_body, done)
        b.position_at_end(loop_body)
        before = set(self.memo)
        self.idx[var] = i
        body()
        for key in set(self.memo) - before:
            del self.memo[key]
        del self.idx[var]
        b.store(b.add(i, ir.Constant(I64, step), flags=["nsw"]), slot)
        b.branch(cond)
        b.position_at_end(done)

    def emit_scope(self, var: str | None) -> None:
        """Emit the nodes whose innermost loop is ``var``, then the next domain loop inside."""
        self.emit_nodes(var)
        depth = -1 if var is None else self.dom.index(var) if var in self.dom else None
        if depth is None:
            return
        if depth + 1 >= len(self.dom):
            self.store()
            return
        nxt = self.dom[depth + 1]
        lo, hi = (self.fn.args[-2], self.fn.args[-1]) if depth + 1 == self.k.split else (
            ir.Constant(I64, 0), self.size(self.k.domain[depth + 1]))
        lo, hi = self.bounds.get(nxt, (lo, hi))
        if depth + 1 == len(self.dom) - 2 and self.tiled:
            self._tiles(nxt, lo, hi)
        elif depth + 2 == len(self.dom):
            def ordinary() -> None:
                if self._fast_exps(nxt):
                    self._row_blocks(nxt, lo, hi)
                else:
                    self.loop(nxt, lo, hi, lambda: self.emit_scope(nxt))
            if self.columns.reductions:
                self.columns.emit(nxt, lo, hi, lambda: self.emit_scope(nxt),
                                  (lambda: None) if self._fast_exps(nxt) else None, ordinary)
            else:
                ordinary()
        else:
            self.loop(nxt, lo, hi, lambda: self.emit_scope(nxt))

    def _blocks(self, var: str, lo: ir.Value, hi: ir.Value, size: int,
                block: Callable[[ir.Value, ir.Value], None]) -> None:
        """``block(start, end)`` for each block of ``size`` steps of loop ``var`` in [lo, hi)."""
        b, blk = self.e.b, f"{var}.blk"

        def each() -> None:
            start = self.idx[blk]
            block(start, self.e.intrinsic("smin", [b.add(start, ir.Constant(I64, size)), hi]))
        self.loop(blk, lo, hi, each, size)

    def _row_blocks(self, var: str, lo: ir.Value, hi: ir.Value) -> None:
        """The innermost domain loop in blocks of EXP_BLOCK, each of which can run again as it
        is (it only stores): an exp argument beyond the fast path costs one block twice."""
        self._blocks(var, lo, hi, EXP_BLOCK, lambda start, end: self.loop(
            var, start, end, lambda: self.emit_scope(var), reset=lambda: None))

    def _tiles(self, outer: str, lo: ir.Value, hi: ir.Value) -> None:
        """Loop over TILE x TILE blocks of the last two domain axes (transposed reads), in
        bands of TILE_BAND rows; a full tile reads its transposed loads through registers
        (transpose.py), a partial one at an edge as they are."""
        b, e = self.e.b, self.e
        inner = self.dom[-1]
        ext = self.size(self.k.domain[-1])
        tile, band = ir.Constant(I64, TILE), ir.Constant(I64, TILE_BAND)
        fast = transposed_loads(self.k)

        def rows(r0: ir.Value, r1: ir.Value, c0: ir.Value, c1: ir.Value) -> None:
            self.bounds[inner] = (c0, c1)
            self.loop(outer, r0, r1, lambda: self.emit_scope(outer))
            del self.bounds[inner]

        def per_tile(s1: ir.Value, c0: ir.Value, c1: ir.Value) -> None:
            r0 = self.idx[f"{outer}.t"]
            r1 = e.intrinsic("smin", [b.add(r0, tile), s1])
            if not fast:
                rows(r0, r1, c0, c1)
                return
            full = b.and_(b.icmp_signed("==", b.sub(r1, r0), tile),
                          b.icmp_signed("==", b.sub(c1, c0), tile))
            with b.if_else(full) as (then, otherwise):
                with then:  # known trip counts: the loops unroll into whole vectors
                    self.tile_arrays = {n: fill_tile(self, n, f"{outer}.t", f"{inner}.t")
                                        for n in fast}
                    rows(r0, b.add(r0, tile), c0, b.add(c0, tile))
                    self.tile_arrays = {}
                with otherwise:
                    rows(r0, r1, c0, c1)

        def per_band() -> None:
            s0 = self.idx[f"{outer}.s"]
            s1 = e.intrinsic("smin", [b.add(s0, band), hi])

            def per_col_tile() -> None:
                c0 = self.idx[f"{inner}.t"]
                c1 = e.intrinsic("smin", [b.add(c0, tile), ext])
                self.loop(f"{outer}.t", s0, s1, lambda: per_tile(s1, c0, c1), TILE)
            def short_tile() -> None:
                c0 = self.idx[f"{inner}.b"]
                rows(s0, s1, c0, e.intrinsic("smin", [b.add(c0, band), ext]))
            # A band of fewer than TILE rows or columns has no full tile: it runs in TILE_BAND
            # columns at a time, without the small tiles' overhead ([100000, 3] to
            # [3, 100000] ran 2.4x slower in tiles of 8 than in the 16 of before, 1.1x as fast
            # this way).
            short = b.or_(b.icmp_signed("<", b.sub(s1, s0), tile),
                          b.icmp_signed("<", ext, tile))
            with b.if_else(short) as (then, otherwise):
                with then:
                    self.loop(f"{inner}.b", ir.Constant(I64, 0), ext, short_tile, TILE_BAND)
                with otherwise:
                    self.loop(f"{inner}.t", ir.Constant(I64, 0), ext, per_col_tile, TILE)
        self.loop(f"{outer}.s", lo, hi, per_band, TILE_BAND)

    def store(self) -> None:
        k = self.k
        v = store_value(self.e, self.value(k.value), k.output.dtype)
        self.e.b.store(v, self.address(len(k.buffers) - 1, k.out_map()))

    def reduced(self, acc: ir.Value, dt: DType) -> ir.Value:
        """A reduction's result from its accumulator's value: f16 and bf16 sum in f32 (and
        f32 in f64), then round once."""
        acc = self.e.b.fptrunc(acc, reg_type(dt)) if acc.type != reg_type(dt) else acc
        return quantize(self.e, acc, dt)

    def reduce(self, n: Reduce) -> ir.Value:
        if n in self.columns:
            return self.columns.value(n)
        b, e = self.e.b, self.e
        dt = n.dtype
        acc_t, init, blocks = accumulator(n)
        acc = self._alloca(acc_t)
        b.store(e.const(acc_t, init), acc)
        body_dt = n.body.dtype

        # A float max/min first runs with either zero allowed for a zero result (three
        # instructions a vector instead of seven with AVX-512), and runs again exactly when
        # its result is a zero: see _combine.
        loose = [n.kind in ("max", "min") and body_dt.is_float and len(n.vars) == 1]

        def update(slot: ir.Value, slot_t: ir.Type) -> None:
            x = self.value(n.body)
            if self.stash is not None and n == self.stash.reduce:
                self._stash_store()
            if slot_t != x.type:
                x = b.fpext(x, slot_t)
            a = b.load(slot)
            r = self._combine(n.kind, a, x, body_dt, loose[0])
            b.store(r, slot)

        def level(j: int) -> None:
            var, ext = n.vars[j]

            def inner() -> None:
                self.emit_nodes(var)
                if j + 1 < len(n.vars):
                    level(j + 1)
                else:
                    update(acc, acc_t)
            if j + 1 == len(n.vars) and blocks is not None:
                self._blocked_sum(n, var, self.size(ext), acc, update, *blocks)
            else:  # one loop: it can run again from the initial accumulator
                reset = (lambda: b.store(e.const(acc_t, init), acc)) if len(n.vars) == 1 else None
                self.loop(var, ir.Constant(I64, 0), self.size(ext), inner, reset=reset)
                if loose[0] and reset is not None:
                    loose[0] = False
                    zero = b.fcmp_ordered("==", b.load(acc), e.const(acc_t, 0))
                    with b.if_then(zero, likely=False):
                        reset()
                        self.loop(var, ir.Constant(I64, 0), self.size(ext), inner, reset=reset)
        if n.vars:
            level(0)
        else:
            update(acc, acc_t)
        return self.reduced(b.load(acc), dt)

    def _stash_store(self) -> None:
        """Store the stashed body value at the output element the reduction index stands for."""
        assert self.stash is not None
        at = {self.dom[-1]: Affine.var(self.stash.var)}
        index = tuple(a.subst(at) for a in self.k.out_map())
        v = store_value(self.e, self.value(self.stash.body), self.k.output.dtype)
        self.e.b.store(v, self.address(len(self.k.buffers) - 1, index))

    def _combine(self, kind: str, a: ir.Value, x: ir.Value, dt: DType,
                 loose: bool = False) -> ir.Value:
        """One step of a reduction. Float max/min are ``llvm.maximum``/``minimum``:
        NaN-propagating and vectorizable. ``loose`` adds ``nsz`` (either zero may come out
        where +0.0 and -0.0 meet), which x86 lowers without the sign tests: exact whenever the
        result is not a zero, so the caller reruns the loop exactly when it is one."""
        b = self.e.b
        if kind == "sum":
            return b.fadd(a, x, flags=["reassoc"]) if dt.is_float else b.add(a, x)
        if kind == "prod":
            return b.fmul(a, x, flags=["reassoc"]) if dt.is_float else b.mul(a, x)
        if dt.is_float:
            return self.e.intrinsic("maximum" if kind == "max" else "minimum", [a, x],
                                    fastmath=("nsz",) if loose else ())
        return (np_max if kind == "max" else np_min)(self.e, a, x, dt)

    def _blocked_sum(self, n: Reduce, var: str, ext: ir.Value, acc: ir.Value,
                     update: Callable[[ir.Value, ir.Type], None], part_t: ir.Type,
                     size: int) -> None:
        """Sum terms in blocks of ``size`` into a ``part_t`` partial sum each, added to ``acc``
        (f64): the error grows with the block length, not the whole length. Each block first
        prefetches its part of the next row (_prefetch_next_row)."""
        b, e = self.e.b, self.e
        part = self._alloca(part_t)

        def block(start: ir.Value, end: ir.Value) -> None:
            def inner() -> None:
                self.emit_nodes(var)
                update(part, part_t)
            self._prefetch_next_row(n, var, size)
            reset = lambda: b.store(e.const(part_t, 0.0), part)  # noqa: E731
            reset()
            self.loop(var, start, end, inner, reset=reset)
            s = b.load(part)
            s = b.fpext(s, acc.allocated_type) if part_t != acc.allocated_type else s
            b.store(b.fadd(b.load(acc), s, flags=["reassoc"]), acc)
        self._blocks(var, ir.Constant(I64, 0), ext, size, block)

    def _prefetch_next_row(self, n: Reduce, var: str, size: int) -> None:
        """Prefetch, one cache line at a time, the ``size`` elements from the current block's
        start in the next row of each input the sum's body reads contiguously along ``var``.
        Computing a row takes long enough (a softmax's exp) that the hardware prefetcher, which
        only runs a little ahead of the loads, leaves the next row's first pass waiting on memory:
        requests spread over this row keep memory busy meanwhile (softmax 1.2x faster).

        The lines go to L2, not L1 (locality 2, x86's prefetcht1): on Zen 4 a burst of 32
        prefetches into L1 held the L1's miss buffers the row's own loads wait for, and made
        softmax and RMSNorm slower than no prefetch at all (layernorm about as fast); into L2
        they were 1.03-1.4x faster than into L1 and 0.95-1.19x as fast as with none (softmax at
        two threads the one below 1; one and two threads, 4096x1024, interleaved), the next
        row's loads then hitting L2. The 1.2x above was measured on Intel (Emerald Rapids) with
        prefetches into L1; L2 has not been measured there."""
        row = self.scopes.innermost(self.scopes.deps[n])
        if row not in self.dom:
            return
        blk = Affine.var(f"{var}.blk")
        done: set[tuple[int, tuple[Affine | Node, ...]]] = set()
        for ld in walk(n.body):
            if not (isinstance(ld, Load) and ld.mask is None and all(
                    isinstance(i, Affine) for i in ld.index)):
                continue
            idx = [i for i in ld.index if isinstance(i, Affine)]
            if (not idx or idx[-1].coeff(var) != 1 or any(i.coeff(var) for i in idx[:-1])
                    or not any(i.coeff(row) for i in idx) or (ld.buf, ld.index) in done):
                continue
            done.add((ld.buf, ld.index))
            per_line = max(1, CACHE_LINE // self.k.buffers[ld.buf].dtype.itemsize)
            if size > PREFETCH_LINES * per_line:  # f64 sums' long blocks: a burst would stall
                continue
            for k in range(0, size, per_line):
                at = {row: Affine.var(row) + 1, var: blk + k}
                ptr = self.address(ld.buf, tuple(i.subst(at) for i in idx))
                self.e.intrinsic("prefetch", [ptr, *(ir.Constant(I32, v) for v in (0, 2, 1))],
                                 ret=VOID, tys=[PTR])

    def emit_nodes(self, var: str | None) -> None:
        """Emit the nodes whose innermost loop is ``var`` (None: outside every loop)."""
        for n in self.order:
            if self.scopes.innermost(self.scopes.deps[n]) == var:
                self.value(n)


def emit_kernel(module: ir.Module, k: Kernel, name: str) -> ir.Function:
    """Add kernel ``k`` to ``module`` as function ``name``.

    A kernel computing sin or cos is emitted twice: the function ``name`` takes the inline,
    vectorizable f32 paths and flags any argument beyond their range; when the flag is set, it
    reruns its range with the precise version (mathtrig.py). A rerun is safe: a
    kernel's output never overlaps its inputs, and each run writes all of its range.
    """
    if len(k.out_map()) != k.output.rank:
        raise KernelError(f"output map has {len(k.out_map())} indices for rank {k.output.rank}")
    if not any(isinstance(n, Op) and n.op in ("sin", "cos") for n in walk(k.value)):
        return KernelEmitter(module, k, name).finish()
    precise = KernelEmitter(module, k, f"{name}.precise").finish()
    precise.linkage = "internal"
    return KernelEmitter(module, k, name, rerun=precise).finish()
