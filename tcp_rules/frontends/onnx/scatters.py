"""ONNX's ScatterElements (and the older Scatter), ScatterND and TensorScatter. TCP has no
scatter op, so each output element finds the updates that target it: along the scattered axis,
every update's target is compared with the element's own position (an iota), and the element
takes the last update that hits it (reduction none, as ONNX's reference writes them in order),
or combines with all of them (add, mul, max, min); an element no update hits keeps its data.
That is N x J comparisons per line (N the axis' length, J the updates along it): meant for the
scatters models do (a cache's new positions, a mask's entries), not for millions of updates.
TensorScatter writes contiguous runs, so each cache element reads its update directly.

Constant indices are checked at import; run-time ones are wrapped and clamped into their axis,
as the gathers do (ONNX leaves out-of-range indices undefined).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.context import Context, Tensor, converts, normalize_axis
from tcp_rules.frontends.onnx.gathers import checked_indices, into_axis, linear_index
from tcp_rules.frontends.onnx.movement import shape_of
from tcp_rules.ir import Value
from tcp_rules.ops import OPS, identity_value
from tcp_rules.types import Dim, DType, dims_product

# reduction: (the reduce over the updates, the op that combines the total with the data)
REDUCTIONS = {"none": None, "add": ("reduce_sum", "add"), "mul": ("reduce_prod", "mul"),
              "max": ("reduce_max", "max"), "min": ("reduce_min", "min")}


def _reduction(ctx: Context) -> str:
    r = str(ctx.attr("reduction", "none"))
    if r not in REDUCTIONS:
        raise ctx.error(f"reduction {r!r} is not one of {', '.join(REDUCTIONS)}")
    return r


def _identity(op: str, dt: DType) -> float | int | bool:
    """The op table's identity of ``op`` as a ``dt`` value: what an update that misses adds."""
    identity = OPS[op].traits.identity
    assert identity is not None
    return identity_value(identity, dt)


def scatter_along(ctx: Context, data: Value, target: Value, updates: Value, axis: int,
                  reduction: str) -> Value:
    """``data`` with ``updates`` scattered along ``axis`` to positions ``target`` (i64, of the
    updates' shape, which is data's but for that axis' J; a negative target hits nothing)."""
    dims = list(data.type.dims)
    r = len(dims)
    shape = [*dims[:axis], dims[axis], target.type.dims[axis], *dims[axis + 1:]]
    spread = [*range(axis), axis + 1, *range(axis + 2, r + 1)]  # the updates' axes in shape
    at = ctx.op("broadcast", target, shape=shape, dims=spread)
    hits = ctx.op("eq", at, ctx.op("iota", shape=shape, axis=axis, dtype=DType.I64))
    u = ctx.op("broadcast", updates, shape=shape, dims=spread)
    j = ctx.op("iota", shape=shape, axis=axis + 1, dtype=DType.I64)
    last = ctx.op("reduce_max", ctx.op("select", hits, j, ctx.scalar(-1, j)), axes=[axis + 1],
                  keepdims=False)
    hit = ctx.op("ge", last, ctx.scalar(0, last))
    dt = data.type.dtype
    if reduction == "none":  # the last update that hits, exactly (a max over it alone)
        lowest = _identity("max", dt)
        final = ctx.op("broadcast", last, shape=shape, dims=[*range(axis + 1),
                                                             *range(axis + 2, r + 1)])
        pick = ctx.op("select", hits, ctx.op("eq", j, final), ctx.scalar(False, hits))
        val = ctx.op("reduce_max", ctx.op("select", pick, u, ctx.scalar(lowest, u)),
                     axes=[axis + 1], keepdims=False)
        return ctx.op("select", hit, val, data)
    fold = REDUCTIONS[reduction]
    assert fold is not None
    reduce, combine = fold
    none = ctx.scalar(_identity(combine, dt), u)
    total = ctx.op(reduce, ctx.op("select", hits, u, none), axes=[axis + 1], keepdims=False)
    return ctx.op("select", hit, ctx.op(combine, data, total), data)


@converts("ScatterElements", "Scatter")
def scatter_elements(ctx: Context) -> Sequence[Tensor]:
    """out[p with its ``axis`` entry replaced by indices[p]] = updates[p], for every position
    p of ``indices`` (of data's rank, no longer than data on the other axes)."""
    data = ctx.value(0)
    rank = data.type.rank
    axis = normalize_axis(ctx, ctx.attr("axis", 0), rank)
    t, updates = ctx.tensor(1), ctx.value(2)
    dims, given = list(data.type.dims), shape_of(t)
    if given != list(updates.type.dims) or len(given) != rank or any(
            k != axis and g != d and (g.const is None or d.const is None or g.const > d.const)
            for k, (g, d) in enumerate(zip(given, dims, strict=True))):
        raise ctx.error(f"indices and updates [{', '.join(map(str, given))}] must have one "
                        f"shape, of the data's rank and no axis longer than the data's "
                        f"[{', '.join(map(str, dims))}] but for axis {axis}")
    if isinstance(t, np.ndarray) and dims[axis].const is not None:
        target = ctx.as_value(checked_indices(ctx, t[..., None], [dims[axis]])[..., 0], "indices")
    else:
        target = into_axis(ctx, ctx.cast(ctx.as_value(t, "indices"), DType.I64), dims[axis])
    short = [(0, 0 if k == axis or g == d else int(d.const) - int(g.const))  # type: ignore[arg-type]
             for k, (g, d) in enumerate(zip(given, dims, strict=True))]
    if any(h for _, h in short):  # updates on part of the other axes: the rest hit nothing
        target = ctx.op("pad", target, low=[0] * rank, high=[h for _, h in short],
                        mode="constant", value=-1)
        updates = ctx.op("pad", updates, low=[0] * rank, high=[h for _, h in short],
                         mode="constant", value=0)
    return [scatter_along(ctx, data, target, ctx.cast(updates, data.type.dtype), axis,
                          _reduction(ctx))]


@converts("ScatterND")
def scatter_nd(ctx: Context) -> Sequence[Tensor]:
    """out[indices[i]] = updates[i] for each index tuple i (a slice of the data where the
    tuple is shorter than its rank): the indexed axes flattened into one, each tuple's linear
    position scattered along it."""
    data, t, updates = ctx.value(0), ctx.tensor(1), ctx.value(2)
    lead = shape_of(t)
    k = lead[-1].const if lead else None
    dims = list(data.type.dims)
    if k is None or not 1 <= k <= len(dims):
        raise ctx.error(f"ScatterND needs indices whose last axis is static and at most the "
                        f"data's rank {len(dims)}, got [{', '.join(map(str, lead))}]")
    indexed, rest, tuples = dims[:k], dims[k:], lead[:-1]
    if list(updates.type.dims) != [*tuples, *rest]:
        raise ctx.error(f"updates {updates.type} must be [{', '.join(map(str, tuples + rest))}]"
                        f" for indices [{', '.join(map(str, lead))}] into data {data.type}")
    strides = [dims_product(indexed[j + 1:]) for j in range(k)]
    count = dims_product(tuples)
    if isinstance(t, np.ndarray) and all(d.const is not None for d in indexed):
        steps = np.array([s.const for s in strides], np.int64)
        lin = (checked_indices(ctx, t, indexed) * steps).sum(-1)
        linear = ctx.as_value(np.asarray(lin, np.int64).reshape(-1), "indices")
    else:
        idx = ctx.cast(ctx.as_value(t, "indices"), DType.I64)
        linear = ctx.op("reshape", linear_index(ctx, idx, indexed, strides, tuples),
                        shape=[count])
    flat = ctx.op("reshape", data, shape=[dims_product(indexed), *rest])
    spread = ctx.op("broadcast", linear, shape=[count, *rest], dims=[0])
    upd = ctx.op("reshape", ctx.cast(updates, data.type.dtype), shape=[count, *rest])
    y = scatter_along(ctx, flat, spread, upd, 0, _reduction(ctx))
    return [ctx.op("reshape", y, shape=dims)]


@converts("TensorScatter")
def tensor_scatter(ctx: Context) -> Sequence[Tensor]:
    """A cache [B, ..., S, ...] with ``update`` [B, ..., s, ...] written along ``axis`` from
    each batch's write index (0 if not given; modulo S in circular mode): cache element n of
    batch b reads update element n - w[b] where that lies in 0..s-1, a gather at linear
    positions, and keeps its value elsewhere."""
    cache, update = ctx.value(0), ctx.value(1)
    rank = cache.type.rank
    axis = normalize_axis(ctx, ctx.attr("axis", -2), rank)
    mode = str(ctx.attr("mode", "linear"))
    dims, udims = list(cache.type.dims), list(update.type.dims)
    if axis == 0 or mode not in ("linear", "circular") or len(udims) != rank or any(
            u != d for k, (u, d) in enumerate(zip(udims, dims, strict=True)) if k != axis):
        raise ctx.error(f"TensorScatter needs an update {update.type} shaped as the cache "
                        f"{cache.type} but for axis {axis} (not the batch), mode linear or "
                        f"circular, got mode {mode!r}")
    n = ctx.op("iota", shape=dims, axis=axis, dtype=DType.I64)
    at = n
    if ctx.has(2):
        w = ctx.cast(ctx.value(2), DType.I64)
        at = ctx.op("sub", n, ctx.op("broadcast", w, shape=dims, dims=[0]))
        if mode == "circular":  # n - (w mod S), in 0..S-1 modulo S
            size = ctx.dim_value(dims[axis], at)
            w_size = ctx.dim_value(dims[axis], w)
            w = ctx.op("sub", w, ctx.op("mul", ctx.op("div", w, w_size), w_size))
            at = ctx.op("sub", n, ctx.op("broadcast", w, shape=dims, dims=[0]))
            at = ctx.op("select", ctx.op("lt", at, ctx.scalar(0, at)), ctx.op("add", at, size),
                        at)
    s = ctx.dim_value(udims[axis], at)
    ge = ctx.op("ge", at, ctx.scalar(0, at))
    inside = ctx.op("select", ge, ctx.op("lt", at, s), ctx.scalar(False, ge))
    # the update's linear position: its strides times the cache position, axis entry at
    total: Value | None = None
    for k in range(rank):
        part = into_axis(ctx, at, udims[axis]) if k == axis else \
            ctx.op("iota", shape=dims, axis=k, dtype=DType.I64)
        stride = dims_product(udims[k + 1:])
        if stride != Dim.of(1):
            part = ctx.op("mul", part, ctx.dim_value(stride, part))
        total = part if total is None else ctx.op("add", total, part)
    assert total is not None
    flat = ctx.op("reshape", ctx.cast(update, cache.type.dtype), shape=[dims_product(udims)])
    return [ctx.op("select", inside, ctx.op("gather", flat, total, axis=0), cache)]
