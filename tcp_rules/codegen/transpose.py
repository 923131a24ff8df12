"""Transposed reads of a tile through registers: whole rows in, a shuffle network, whole rows out.

A kernel that reads an input transposed (``out[i, j] = x[j, i]``, or any body over such reads)
iterates its last two axes in tiles (KernelEmitter._tiles). Left to the loop vectorizer, a
transposed load becomes a gather along a column of ``x``: one element from each of W rows per
vector, on Zen 4 about as slow as scalar loads. Here each full W x W tile of such a load is
first read as W vectors along the rows of ``x`` (its contiguous axis), transposed in registers by
log2(W) rounds of interleaving shuffles (``shufflevector``: unpck/perm on x86, zip on AArch64),
and stored to a W x W array on the stack, row by row of the output tile. The tile's loops then
load that array along the output's contiguous axis like any other input. Partial tiles (the
edges) keep the gathers. Only where the values move changes, not what is computed: the same
bits.

A load qualifies when its last index is the tile's row index (the second-to-last domain axis)
plus a constant and one other index is the tile's column index (the last axis) plus a
constant, neither index appearing elsewhere in it: then the tile reads a W x W block of the
buffer, W rows of contiguous elements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import I32, I64, mem_type
from tcp_rules.codegen.kernel import Affine, Kernel, Load, walk

if TYPE_CHECKING:
    from tcp_rules.codegen.emit import KernelEmitter

W = 8  # a tile's side: elements per shuffled vector, and rows per tile


def transposed_loads(k: Kernel) -> list[Load]:
    """The loads of ``k`` that read a W x W block of their buffer per tile, transposed."""
    if len(k.domain) < 2:
        return []
    row, col = f"d{len(k.domain) - 2}", f"d{len(k.domain) - 1}"
    out: list[Load] = []
    for n in walk(k.value):
        if not isinstance(n, Load) or n.mask is not None or n in out or len(n.index) < 2:
            continue
        if not all(isinstance(i, Affine) for i in n.index):
            continue
        idx = [i for i in n.index if isinstance(i, Affine)]
        *lead, last = idx
        cols = [i for i in lead if i.coeff(col)]
        if (last.coeff(row) == 1 and not last.coeff(col) and len(cols) == 1
                and cols[0].coeff(col) == 1 and not any(i.coeff(row) for i in lead)):
            out.append(n)
    return out


def _interleave(b: ir.IRBuilder, x: ir.Value, y: ir.Value, high: bool) -> ir.Value:
    """Lanes of the low (or high) halves of ``x`` and ``y``, alternately."""
    half = W // 2 if high else 0
    mask = [v for i in range(W // 2) for v in (half + i, W + half + i)]
    return b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, W), mask))


def fill_tile(em: KernelEmitter, n: Load, row0: str, col0: str) -> ir.Value:
    """Store the full tile of ``n`` starting at the tile's first row ``row0`` and column
    ``col0`` (loop variables) to a new W x W stack array, transposed: entry ``[r][c]`` holds
    ``n`` at the tile's row r, column c. Returns a pointer to its first element."""
    e, b = em.e, em.e.b
    row, col = em.dom[-2], em.dom[-1]
    dt = em.k.buffers[n.buf].dtype
    ty = mem_type(dt)
    vt = ir.VectorType(ty, W)
    arr = em._alloca(ir.ArrayType(ty, W * W))
    tile = em.allocas.bitcast(arr, ty.as_pointer())
    vecs = []
    for c in range(W):  # the buffer's rows: the tile's columns, W elements of its rows each
        at = {row: Affine.var(row0), col: Affine.var(col0) + c}
        ptr = em.address(n.buf, tuple(i.subst(at) for i in n.index if isinstance(i, Affine)))
        vecs.append(e.load(vt, b.bitcast(ptr, vt.as_pointer()), align=dt.itemsize))
    for _ in range(W.bit_length() - 1):  # perfect shuffles: log2(W) of them transpose
        h = W // 2
        vecs = [v for i in range(h) for v in (_interleave(b, vecs[i], vecs[i + h], False),
                                              _interleave(b, vecs[i], vecs[i + h], True))]
    for r, v in enumerate(vecs):
        dst = e.gep(ty, tile, ir.Constant(I64, r * W))
        # (aligned to an element: the vectors promise no more)
        b.store(v, b.bitcast(dst, vt.as_pointer()), align=dt.itemsize)
    return tile
