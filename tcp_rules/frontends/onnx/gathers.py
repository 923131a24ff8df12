"""ONNX's Gather, GatherND and GatherElements, each as TCP's gather (which clamps indices into
range, where ONNX leaves out-of-range indices undefined): Gather along its axis, the other two
at linear indices into the flattened data. Negative indices are wrapped, into symbolic axes
too (Context.wrapped); constant indices into static axes are checked and computed at import.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.context import Context, Tensor, converts, normalize_axis
from tcp_rules.frontends.onnx.movement import reshape_any, shape_of
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType, dims_product


@converts("Gather")
def gather(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), x.type.rank)
    t = ctx.tensor(1)
    n = x.type.dims[axis]
    if isinstance(t, np.ndarray) and (n.const is not None or not (t < 0).any()):
        if n.const is not None:
            bad = t[(t < -n.const) | (t >= n.const)]
            if bad.size:
                raise ctx.error(f"index {int(bad.ravel()[0])} is out of range for an axis of "
                                f"size {n}")
            t = np.where(t < 0, t + n.const, t)
        idx = ctx.as_value(t.astype(np.int64), "indices")
    else:  # run-time indices, or negative ones into a symbolic axis: wrapped in TCP ops
        idx = ctx.wrapped(ctx.as_value(t, "indices"), n)
    return [ctx.op("gather", x, idx, axis=axis)]


@converts("GatherND")
def gather_nd(ctx: Context) -> Sequence[Tensor]:
    """data[batch..., i_0, ..., i_{k-1}, ...] for each k-tuple of ``indices``: the batch and
    indexed axes of ``data`` flattened into one, read by TCP's gather at the linear index
    (batch * P + sum_j i_j * stride_j, P the indexed axes' product). Constant indices into
    static axes become linear indices at import; otherwise they are summed in TCP ops, each
    wrapped if negative and clamped into its axis (TCP's gather clamps where ONNX leaves
    out-of-range undefined), symbolic sizes and strides computed as data (Context.dim_value)."""
    x = ctx.value(0)
    t = ctx.tensor(1)
    if isinstance(t, np.ndarray) and t.dtype == object:  # a shape used as indices
        t = ctx.as_value(t, "indices")
    b = ctx.attr("batch_dims", 0)
    q = t.ndim if isinstance(t, np.ndarray) else t.type.rank
    lead = shape_of(t)
    k = lead[-1].const if q else None
    if not q or k is None or not 1 <= k <= x.type.rank - b or not 0 <= b < q:
        raise ctx.error(f"GatherND with batch_dims={b} needs indices of rank above {b} whose "
                        f"last axis is static and at most {x.type.rank - b}, got "
                        f"[{', '.join(str(d) for d in lead)}]")
    dims = list(x.type.dims)
    batch, indexed, rest = dims[:b], dims[b:b + k], dims[b + k:]
    strides = [dims_product(indexed[j + 1:]) for j in range(k)]
    out_lead = lead[:-1]
    # the batch position of each index tuple: a constant over the indices' leading axes
    offsets = None
    if b:
        if any(d.const is None for d in out_lead):
            raise ctx.error("GatherND with batch_dims needs the indices' leading axes static")
        shape = [int(d.const) for d in out_lead]  # type: ignore[arg-type]
        pos = np.arange(math.prod(shape[:b]), dtype=np.int64)
        offsets = np.broadcast_to(pos.reshape(shape[:b] + [1] * (len(shape) - b)), shape)
    static = all(d.const is not None for d in indexed)
    if isinstance(t, np.ndarray) and static:
        idx = checked_indices(ctx, t, indexed)
        lin = (idx * np.array([s.const for s in strides], np.int64)).sum(axis=-1)
        if offsets is not None:
            lin = lin + offsets * int(np.prod([d.const for d in indexed]))
        linear: Value = ctx.as_value(np.array(lin, np.int64), "indices")  # 0-d stays 0-d
    else:
        linear = linear_index(ctx, ctx.cast(ctx.as_value(t, "indices"), DType.I64), indexed,
                               strides, out_lead)
        if offsets is not None:
            at = ctx.as_value(np.array(offsets), "batch_offsets")
            linear = ctx.op("add", linear,
                            ctx.op("mul", at, ctx.dim_value(dims_product(indexed), at)))
    flat = reshape_any(ctx, x, [dims_product(batch + indexed), *rest])
    return [ctx.op("gather", ctx.as_value(flat), linear, axis=0)]


def checked_indices(ctx: Context, t: np.ndarray, sizes: Sequence[Dim]) -> np.ndarray:
    """Constant indices whose last axis indexes static axes of ``sizes``, negative ones
    wrapped; one out of range is an error naming it."""
    n = np.array([d.const for d in sizes], np.int64)
    idx = t.astype(np.int64)
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ctx.error(f"index {int(idx[where])} at {list(where)} is out of range for an axis "
                        f"of size {n[where[-1]]}")
    return np.where(idx < 0, idx + n, idx)


def linear_index(ctx: Context, idx: Value, sizes: Sequence[Dim], strides: Sequence[Dim],
                  lead: Sequence[Dim]) -> Value:
    """sum_j clamp(wrap(idx[..., j])) * stride_j over the last axis of ``idx``, in TCP ops."""
    q = idx.type.rank
    total: Value | None = None
    for j, (size, stride) in enumerate(zip(sizes, strides, strict=True)):
        part = ctx.op("slice", idx, start=[0] * (q - 1) + [j], size=[*lead, Dim.of(1)],
                      stride=[1] * q)
        part = into_axis(ctx, ctx.op("reshape", part, shape=list(lead)), size)
        if stride != Dim.of(1):
            part = ctx.op("mul", part, ctx.dim_value(stride, part))
        total = part if total is None else ctx.op("add", total, part)
    assert total is not None
    return total


def into_axis(ctx: Context, idx: Value, size: Dim) -> Value:
    """Indices into an axis of ``size``: negative ones wrapped, then each clamped into the
    axis, as TCP's gather clamps (not into the next row through a linear index)."""
    idx = ctx.wrapped(idx, size)
    if size.const is not None:
        return ctx.op("clamp", idx, min=0, max=size.const - 1)
    last = ctx.op("sub", ctx.dim_value(size, idx), ctx.scalar(1, idx))
    return ctx.op("max", ctx.op("min", idx, last), ctx.scalar(0, idx))


@converts("GatherElements")
def gather_elements(ctx: Context) -> Sequence[Tensor]:
    """y[p] = data[p with its ``axis`` entry replaced by indices[p]], for every position p of
    ``indices`` (of data's rank, no larger on the other axes): data flattened and read by TCP's
    gather at sum_k p_k * stride_k. Constant indices into static data are checked and summed at
    import; others wrapped and clamped into the axis in TCP ops, the other positions iotas."""
    x, t = ctx.value(0), ctx.tensor(1)
    rank = x.type.rank
    axis = normalize_axis(ctx, ctx.attr("axis", 0), rank)
    dims, out = list(x.type.dims), shape_of(t)
    if len(out) != rank or any(
            k != axis and (o.const is None or d.const is None or o.const > d.const) and o != d
            for k, (o, d) in enumerate(zip(out, dims, strict=True))):
        raise ctx.error(f"indices [{', '.join(map(str, out))}] must have the data's rank and no "
                        f"axis longer than the data's [{', '.join(map(str, dims))}] but for "
                        f"axis {axis}")
    strides = [dims_product(dims[k + 1:]) for k in range(rank)]
    flat = reshape_any(ctx, x, [dims_product(dims)])
    if isinstance(t, np.ndarray) and t.dtype != object and \
            all(d.const is not None for d in dims):
        n = int(dims[axis].const)  # type: ignore[arg-type]
        given = t.astype(np.int64)
        bad = (given < -n) | (given >= n)
        if bad.any():
            raise ctx.error(f"index {int(given[bad][0])} is out of range for axis {axis} of "
                            f"size {n}")
        pos = np.indices(given.shape, dtype=np.int64)
        pos[axis] = np.where(given < 0, given + n, given)
        lin = np.tensordot(np.array([int(s.const) for s in strides]),  # type: ignore[arg-type]
                           pos, axes=1)
        return [ctx.op("gather", ctx.as_value(flat), ctx.as_value(lin, "indices"), axis=0)]
    idx = into_axis(ctx, ctx.cast(ctx.as_value(t, "indices"), DType.I64), dims[axis])
    total: Value | None = None
    for k, stride in enumerate(strides):
        part = idx if k == axis else ctx.op("iota", shape=out, axis=k, dtype=DType.I64)
        if stride != Dim.of(1):
            part = ctx.op("mul", part, ctx.dim_value(stride, part))
        total = part if total is None else ctx.op("add", total, part)
    assert total is not None
    return [ctx.op("gather", ctx.as_value(flat), total, axis=0)]
