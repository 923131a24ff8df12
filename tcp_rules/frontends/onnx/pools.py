"""ONNX's pooling: MaxPool, AveragePool and LpPool (1-D to 3-D; strides, dilations, explicit
or automatic padding, ceil_mode, count_include_pad), GlobalAveragePool and GlobalMaxPool. The
windows are conv.py's: a gather of the padded input at each window's positions, reduced by a
max or a sum. An average divides by each window's count of pixels, a constant computed at
import (the spatial sizes are static).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.composite import mean
from tcp_rules.frontends.onnx.context import Context, Tensor, converts
from tcp_rules.frontends.onnx.conv import (
    spatial_ints,
    spatial_pads,
    static_dims,
    window_layout,
    windows,
)
from tcp_rules.ir import Value
from tcp_rules.ops import identity_value
from tcp_rules.types import Dim


def _window(ctx: Context, rank: int) -> tuple[list[int], list[int], list[int], bool]:
    """(kernel_shape, strides, dilations, ceil_mode) of a pooling node on a rank-``rank`` X."""
    n = rank - 2
    if n < 1:
        raise ctx.error(f"pooling needs an input of rank 3 or more, got rank {rank}")
    kernel = ctx.attr("kernel_shape")
    if kernel is None or len(kernel) != n or any(k < 1 for k in kernel):
        raise ctx.error(f"kernel_shape {kernel} must be {n} positive numbers")
    return (list(kernel), spatial_ints(ctx, "strides", n, 1),
            spatial_ints(ctx, "dilations", n, 1), bool(ctx.attr("ceil_mode", 0)))


@converts("MaxPool")
def max_pool(ctx: Context) -> Sequence[Tensor]:
    """The largest element under each window (padding never wins: it is -inf), NaN where the
    window holds one, as TCP's reduce_max gives it."""
    assert ctx.node is not None
    if len(ctx.node.output) > 1 and ctx.node.output[1]:
        raise ctx.error("MaxPool's Indices output is not supported")
    x = ctx.value(0)
    kernel, strides, dilations, ceil = _window(ctx, x.type.rank)
    fill = identity_value(-math.inf, x.type.dtype)  # reduce_max's identity
    cols, out = windows(ctx, x, kernel, strides, dilations, fill, ceil)
    return [_unflatten(ctx, ctx.op("reduce_max", cols, axes=[2], keepdims=False), out)]


@converts("AveragePool")
def average_pool(ctx: Context) -> Sequence[Tensor]:
    """Each window's sum over its count of pixels: of the input's own pixels, or with
    count_include_pad of the explicit padding's too (never of the pixels ceil_mode adds past
    the padding). f16/bf16 computed in f32 and rounded once."""
    x0 = ctx.value(0)
    x = ctx.widen(x0)
    kernel, strides, dilations, ceil = _window(ctx, x.type.rank)
    cols, out = windows(ctx, x, kernel, strides, dilations, 0.0, ceil)
    total = _unflatten(ctx, ctx.op("reduce_sum", cols, axes=[2], keepdims=False), out)
    counts = _counts(ctx, static_dims(ctx, x.type.dims[2:], "the spatial sizes"), kernel,
                     strides, dilations, ceil, bool(ctx.attr("count_include_pad", 0)))
    assert list(counts.shape) == out
    count = ctx.as_value(counts.astype(x.type.dtype.np_dtype), "pool_counts")
    y = ctx.op("div", total, ctx.op("broadcast", count, shape=list(total.type.dims),
                                    dims=list(range(2, x.type.rank))))
    return [ctx.cast(y, x0.type.dtype)]


def _unflatten(ctx: Context, y: Value, out: list[int]) -> Value:
    """[N, C, P] as [N, C, *out]."""
    return ctx.op("reshape", y, shape=[*y.type.dims[:2], *map(Dim.of, out)])


def _counts(ctx: Context, sizes: list[int], kernel: list[int], strides: list[int],
            dilations: list[int], ceil: bool, include_pad: bool) -> np.ndarray:
    """How many pixels each window averages, by the windows' own slicing of a ones array."""
    begin, end, out = window_layout(ctx, sizes, kernel, strides, dilations, ceil)
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    _, explicit_end = spatial_pads(ctx, sizes, extent, strides)
    ones = np.ones(sizes, np.int64)
    pad_fill = 1 if include_pad else 0
    grid = np.pad(ones, list(zip(begin, explicit_end, strict=True)), constant_values=pad_fill)
    grid = np.pad(grid, [(0, e - x) for e, x in zip(end, explicit_end, strict=True)])
    counts = np.zeros(out, np.int64)
    for at in itertools.product(*(range(k) for k in kernel)):
        index = tuple(slice(a * d, a * d + (o - 1) * s + 1, s)
                      for a, d, o, s in zip(at, dilations, out, strides, strict=True))
        counts += grid[index]
    return counts


@converts("LpPool")
def lp_pool(ctx: Context) -> Sequence[Tensor]:
    """(sum over the window of |x|^p)^(1/p), the padding 0. f16/bf16 computed in f32."""
    x0 = ctx.value(0)
    x = ctx.widen(x0)
    kernel, strides, dilations, ceil = _window(ctx, x.type.rank)
    p = float(ctx.attr("p", 2))
    if p <= 0:
        raise ctx.error(f"LpPool's p must be positive, got {p}")
    cols, out = windows(ctx, x, kernel, strides, dilations, 0.0, ceil)
    a = ctx.op("abs", cols)
    powered = ctx.op("mul", a, a) if p == 2 else ctx.op("pow", a, ctx.scalar(p, a))
    total = _unflatten(ctx, ctx.op("reduce_sum", powered, axes=[2], keepdims=False), out)
    root = ctx.op("sqrt", total) if p == 2 else ctx.op("pow", total, ctx.scalar(1 / p, total))
    return [ctx.cast(root, x0.type.dtype)]


@converts("GlobalAveragePool", "GlobalMaxPool")
def global_pool(ctx: Context) -> Sequence[Tensor]:
    """The mean or the max over all spatial axes, kept as size-1 axes."""
    assert ctx.node is not None
    x = ctx.value(0)
    if x.type.rank < 3:
        raise ctx.error(f"pooling needs an input of rank 3 or more, got rank {x.type.rank}")
    axes = list(range(2, x.type.rank))
    if ctx.node.op_type == "GlobalMaxPool":
        return [ctx.op("reduce_max", x, axes=axes, keepdims=True)]
    return [ctx.in_f32(lambda v: mean(ctx, v, axes, True))]
