"""Pad in kernels: the source index per axis, as scalar LLVM code and as a lowering template.

A pad is never copied on its own: like a gather, it is a read of its (materialized) operand
through computed indices, inline in whatever kernel consumes it (a fused body, or the copy that
materializes a pad result). Per padded axis the result index i reads operand index j = i - low:

- edge: j clamped into 0..n-1;
- reflect: |j| mirrored at n-1 (2(n-1) - j), numpy.pad's mode="reflect" (the shape rule and a
  run-time check keep low, high < n, so one reflection suffices; a final clamp keeps every
  address inside the buffer even so);
- constant: j clamped, and the load is predicated on 0 <= j < n (the value elsewhere), so an
  empty operand is never read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import I32, I64, IR, PTR
from tcp_rules.codegen.kernel import Affine, Const, Inside, Load, Node, PadIndex, Size
from tcp_rules.types import Dim, DType

Index = tuple[Affine | Node, ...]
Reader = Callable[[Index], Node]


def pad_index(e: IR, i: ir.Value, low: int, n: ir.Value, mode: str) -> ir.Value:
    """The operand index that result index ``i`` reads (i64), always within 0..max(n-1, 0)."""
    b = e.b
    one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)
    j = b.sub(i, ir.Constant(I64, low)) if low else i
    last = b.sub(n, one)
    if mode == "reflect":
        j = e.intrinsic("smax", [j, b.neg(j)])  # mirror at 0: -1 reads 1
        j = e.intrinsic("smin", [j, b.sub(b.add(last, last), j)])  # mirror at n-1
    return e.intrinsic("smax", [e.intrinsic("smin", [j, last]), zero])


def inside(e: IR, axes: Sequence[tuple[ir.Value, int, ir.Value]]) -> ir.Value:
    """i1: ``0 <= i - low < n`` on every axis (one unsigned compare each)."""
    b = e.b
    ok: ir.Value = ir.Constant(ir.IntType(1), 1)
    for i, low, n in axes:
        j = b.sub(i, ir.Constant(I64, low)) if low else i
        ok = b.and_(ok, b.icmp_unsigned("<", j, n))  # negative j wraps to a huge unsigned
    return ok


def masked_load(e: IR, ty: ir.Type, ptr: ir.Value, mask: ir.Value, align: int) -> ir.Value:
    """``*ptr`` where ``mask`` holds, zero elsewhere; no memory is touched when it does not
    (a one-lane llvm.masked.load: a select of a plain load would still read the address)."""
    vt = ir.VectorType(ty, 1)
    lane = ir.Constant(I32, 0)
    m = e.b.insert_element(ir.Constant(ir.VectorType(ir.IntType(1), 1), None), mask, lane)
    v = e.intrinsic("masked.load", [ptr, ir.Constant(I32, align), m, ir.Constant(vt, None)],
                    ret=vt, tys=[vt, PTR])
    return e.b.extract_element(v, lane)


def pad_reader(read_x: Reader, x_dims: Sequence[Dim], low: Sequence[int],
               high: Sequence[int], mode: str, value: float | int | bool, dtype: DType,
               size: Callable[[Dim], Size]) -> Reader:
    """How a kernel reads ``pad(x)`` at an index, given how it reads x's buffer (``read_x``).

    Axes without padding keep their index expression, so an unpadded axis stays affine (and
    vectorizable); constant padding masks the load and yields ``value`` outside x.
    """
    padded = [lo > 0 or hi > 0 for lo, hi in zip(low, high, strict=True)]

    def read(idx: Index) -> Node:
        src: list[Affine | Node] = []
        for i, ix in enumerate(idx):
            if not padded[i]:
                src.append(ix)
                continue
            src.append(PadIndex(DType.I64, ix, low[i], size(x_dims[i]),
                                "clamp" if mode == "constant" else mode))
        load = read_x(tuple(src))
        if mode != "constant" or not any(padded):
            return load
        assert isinstance(load, Load)
        mask = Inside(DType.I1, tuple((idx[i], low[i], size(x_dims[i]))
                                      for i in range(len(idx)) if padded[i]))
        return Load(load.dtype, load.buf, load.index, mask, Const(dtype, value))
    return read
