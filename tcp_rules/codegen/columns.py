"""Reductions down the columns: the reduced axis' loop outside the column loop, not inside it.

``reduce_sum(x, axes=[0])`` over a row-major ``[R, C]`` computes at each output column ``d`` a
reduction over ``r`` of ``x[r, d]``. Emitted as the output is indexed, the reduction's loop sits
inside the loop over ``d``, so each column walks down the rows a whole row apart: no vector
loads, and every cache line of ``x`` fetched once for each column it holds. Over 4096x1024 f32
that took 26 ms where NumPy takes 0.6 ms.

Here the loop over ``d`` runs in blocks of COLUMN_BLOCK columns. For each block, each such
reduction first runs with its own loops outside a loop over the block's columns, into an array
of accumulators, one per column: the innermost loop reads along a row, contiguously, and
vectorizes across columns. The output loop over the block then loads the accumulators. Each
column still combines its terms one by one in the reduced axes' order (f32 sums in f32 blocks of
F32_SUM_BLOCK terms added in f64, as the row sums), so its result depends neither on the block
nor on how the threads split the columns.

A reduction qualifies when it is computed once per output element of the innermost domain loop
(it uses that loop's index, and only domain indices) and every load of its body that uses both
its own indices and that loop's reads along the last axis with that loop's index and none of its
own: what makes the column loop contiguous (a load without the column index is one value for the
whole column loop, as a vector-matrix product's vector). Its body may use other such reductions
(a variance over axis 0 uses the mean): they come first, and its accumulation reads their
accumulators as the output loop does. A body with any other reduction stays as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import llvmlite.ir as ir

from tcp_rules.codegen.accumulators import accumulator, type_bytes
from tcp_rules.codegen.irbase import I8, I64
from tcp_rules.codegen.kernel import Affine, Kernel, Load, Reduce, walk
from tcp_rules.codegen.scopes import Scopes, compute_scopes, index_vars
from tcp_rules.codegen.stash import find_stash
from tcp_rules.codegen.tiling import whole_lines

if TYPE_CHECKING:
    from tcp_rules.codegen.emit import KernelEmitter

# Columns a block: each row's part of a block is read contiguously, 16 KB of f32. Blocks of 512
# (2 KB a row, a row 4 KB apart) ran 2.5x slower than blocks of whole 4 KB rows, 4096 columns
# 1.25x slower than whole 32 KB rows (Zen 4). The accumulators take 12 bytes a column of scratch
# for f32 (an f64 sum and an f32 partial), 16 for f64.
COLUMN_BLOCK = 4096
# Fewer columns than this (a static count, or at run time) keep the reductions inside the column
# loop, where the loop vectorizer reads a row's few elements with interleaved loads: in blocks,
# the column loop's overhead per row made sums over 2, 3 and 4 columns 2.3-9x slower; over 8,
# as fast or 3x faster; over 16, 1.3-6.6x faster (Zen 4).
MIN_COLUMNS = 8


def find_columns(k: Kernel, scopes: Scopes, skip: Reduce | None = None) -> list[Reduce]:
    """The reductions of ``k`` that run down the columns of its innermost domain loop, operands
    first (``skip``: the stash's row reduction)."""
    if not k.domain or k.out_index is not None or (isinstance(k.domain[-1], int)
                                                   and k.domain[-1] < MIN_COLUMNS):
        return []
    last = f"d{len(k.domain) - 1}"
    found = []
    for n in walk(k.value):
        if (not isinstance(n, Reduce) or n == skip
                or scopes.innermost(scopes.deps[n]) != last
                or any(isinstance(m, Reduce) and m not in found for m in walk(n.body))):
            continue
        own = {v for v, _ in n.vars}
        # what the body reads in its own loops: down the columns, or one value for all of them
        # (a matrix-vector product's vector)
        reads = [ld for ld in walk(n.body) if isinstance(ld, Load) and index_vars(ld) & own
                 and last in index_vars(ld)]
        if reads and all(_down_a_column(ld, last, own) for ld in reads):
            found.append(n)
    return found


def columns_of(k: Kernel, scopes: Scopes | None = None) -> list[Reduce]:
    """The column reductions ``k`` is emitted with (``scopes``: its own, if already known):
    :func:`find_columns`, leaving out the stash's row reduction."""
    if scopes is None:
        scopes = compute_scopes(k.value, [f"d{i}" for i in range(len(k.domain))])
    stash = find_stash(k, scopes)
    return find_columns(k, scopes, stash.reduce if stash is not None else None)


def column_scratch(k: Kernel) -> int:
    """The bytes of scratch each worker needs for ``k``'s column accumulators (0: none): per
    column reduction, COLUMN_BLOCK accumulators and as many block partials (blocked sums),
    each array starting on a cache line."""
    total = 0
    for n in columns_of(k):
        acc_t, _, blocks = accumulator(n)
        total += _array_bytes(acc_t) + (_array_bytes(blocks[0]) if blocks else 0)
    return total


def _array_bytes(ty: ir.Type) -> int:
    return whole_lines(COLUMN_BLOCK * type_bytes(ty))


def chunk_columns(k: Kernel) -> int:
    """The threads' chunks of ``k``'s split loop start at multiples of this many points:
    COLUMN_BLOCK where that loop is the column loop of column reductions (a rank-1 output, or
    [1, N]), so that each chunk reads whole blocks of each row; 1 elsewhere. Two threads that
    each summed half of every 4 KB row took twice as long as one summing whole rows (Zen 4)."""
    if k.split != len(k.domain) - 1:
        return 1
    return COLUMN_BLOCK if columns_of(k) else 1


def _down_a_column(ld: Load, last: str, own: set[str]) -> bool:
    """Whether ``ld`` reads along its last axis with ``last`` and with none of ``own``."""
    if not ld.index:
        return False
    i = ld.index[-1]
    return isinstance(i, Affine) and i.coeff(last) == 1 and not any(i.coeff(v) for v in own)


class Columns:
    """A kernel's column reductions; within a block of columns, their accumulators, in the
    worker's ``scratch`` (the kernel's pointer argument; None without column reductions)."""

    def __init__(self, em: KernelEmitter, reductions: list[Reduce], scratch: ir.Value | None):
        self.em = em
        self.reductions = reductions
        self.scratch = scratch
        self.used = 0  # bytes of the scratch the current block's arrays take
        self.slots: dict[Reduce, tuple[ir.Value, ir.Type]] = {}
        self.start: ir.Value | None = None
        self.var = ""

    def __contains__(self, n: Reduce) -> bool:
        return n in self.slots

    def emit(self, var: str, lo: ir.Value, hi: ir.Value, output: Callable[[], None],
             reset: Callable[[], None] | None, ordinary: Callable[[], None]) -> None:
        """The loop over ``var`` in ``[lo, hi)``, by blocks: each reduction's accumulators for
        the block, then ``output`` at each of its columns (``reset``: see KernelEmitter.loop).
        With fewer than MIN_COLUMNS columns in all (known at run time only), ``ordinary``."""
        em, columns = self.em, self.em.k.domain[-1]
        if isinstance(columns, int):  # (find_columns left out fewer than MIN_COLUMNS)
            self._blocks(var, lo, hi, output, reset)
            return
        b = em.e.b
        wide = b.icmp_signed(">=", em.size(columns), ir.Constant(I64, MIN_COLUMNS))
        with b.if_else(wide) as (then, otherwise):
            with then:
                self._blocks(var, lo, hi, output, reset)
            with otherwise:
                ordinary()

    def _blocks(self, var: str, lo: ir.Value, hi: ir.Value, output: Callable[[], None],
                reset: Callable[[], None] | None) -> None:
        em = self.em

        def block(start: ir.Value, end: ir.Value) -> None:
            self.start, self.var, self.used = start, var, 0  # one block at a time
            for n in self.reductions:
                self.slots[n] = self._accumulate(n, var, start, end)
            em.loop(var, start, end, output, reset=reset)
            self.slots.clear()
        em._blocks(var, lo, hi, COLUMN_BLOCK, block)

    def value(self, n: Reduce) -> ir.Value:
        """``n`` at the current column of the block."""
        slot, acc_t = self.slots[n]
        return self.em.reduced(self.em.e.load(acc_t, self._at(slot, acc_t)), n.dtype)

    def _at(self, slot: ir.Value, ty: ir.Type) -> ir.Value:
        """The address of the current column's entry of an accumulator array."""
        assert self.start is not None
        e = self.em.e
        return e.gep(ty, slot, e.b.sub(self.em.idx[self.var], self.start))

    def _array(self, ty: ir.Type) -> ir.Value:
        """A pointer to a new array of COLUMN_BLOCK ``ty`` in the scratch (column_scratch
        counts the same arrays)."""
        assert self.scratch is not None
        at = self.em.e.gep(I8, self.scratch, ir.Constant(I64, self.used))
        self.used += _array_bytes(ty)
        return at

    def _accumulate(self, n: Reduce, var: str, start: ir.Value,
                    end: ir.Value) -> tuple[ir.Value, ir.Type]:
        """Emit ``n`` over the block's columns into an array of accumulators; return it."""
        em, e = self.em, self.em.e
        b = e.b
        acc_t, init, blocks = accumulator(n)
        acc = self._array(acc_t)
        em.loop(var, start, end, lambda: b.store(e.const(acc_t, init), self._at(acc, acc_t)))

        def update(slot: ir.Value, slot_t: ir.Type) -> None:
            x = em.value(n.body)
            if slot_t != x.type:
                x = b.fpext(x, slot_t)
            at = self._at(slot, slot_t)
            b.store(em._combine(n.kind, e.load(slot_t, at), x, n.body.dtype), at)

        def level(j: int) -> None:
            v, ext = n.vars[j]
            zero, size = ir.Constant(I64, 0), em.size(ext)
            if j + 1 < len(n.vars):
                em.loop(v, zero, size, lambda: level(j + 1))
            elif blocks is None:
                em.loop(v, zero, size,
                        lambda: em.loop(var, start, end, lambda: update(acc, acc_t)))
            else:
                part_t, length = blocks
                part = self._array(part_t)

                def add_part() -> None:
                    s = e.load(part_t, self._at(part, part_t))
                    s = b.fpext(s, acc_t) if part_t != acc_t else s
                    at = self._at(acc, acc_t)
                    b.store(b.fadd(e.load(acc_t, at), s), at)

                def block(bs: ir.Value, be: ir.Value) -> None:
                    em.loop(var, start, end,
                            lambda: b.store(e.const(part_t, 0.0), self._at(part, part_t)))
                    em.loop(v, bs, be,
                            lambda: em.loop(var, start, end, lambda: update(part, part_t)))
                    em.loop(var, start, end, add_part)
                em._blocks(v, zero, size, length, block)
        level(0)
        return acc, acc_t
