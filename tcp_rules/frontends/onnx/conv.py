"""ONNX's Conv (1-D, 2-D, 3-D; groups, strides, dilations, explicit or automatic padding) as
one matmul per group over an im2col matrix: the padded input's strided slices, one per kernel
position, stacked beside its channels, times the kernel reshaped to [C * K, M]. Every step is
a TCP op (pad, slice, concat, reshape, transpose, matmul), so the rules see them; the channels
and the spatial sizes must be static, the batch may be symbolic.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from tcp_rules.frontends.onnx.composite import matmul_values
from tcp_rules.frontends.onnx.context import Context, Tensor, converts
from tcp_rules.ir import Value
from tcp_rules.types import Dim


def static_dims(ctx: Context, dims: Sequence[Dim], what: str) -> list[int]:
    out = [d.const for d in dims]
    if any(d is None for d in out):
        raise ctx.error(f"{what} [{', '.join(map(str, dims))}] must be static")
    return [int(d) for d in out]  # type: ignore[arg-type]


def spatial_pads(ctx: Context, sizes: Sequence[int], window: Sequence[int],
                 strides: Sequence[int]) -> tuple[list[int], list[int]]:
    """(begin, end) padding of each spatial axis from ``pads`` or ``auto_pad`` (SAME_UPPER and
    SAME_LOWER: the output is ceil(size / stride) long, the odd pixel at the end or the
    beginning; VALID: none), for windows of ``window`` extent (dilated kernels)."""
    n = len(sizes)
    auto = ctx.attr("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        total = [max((math.ceil(s / st) - 1) * st + w - s, 0)
                 for s, w, st in zip(sizes, window, strides, strict=True)]
        small = [t // 2 for t in total]
        big = [t - h for t, h in zip(total, small, strict=True)]
        return (small, big) if auto == "SAME_UPPER" else (big, small)
    if auto == "VALID":
        return [0] * n, [0] * n
    if auto != "NOTSET":
        raise ctx.error(f"auto_pad {auto!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    pads = list(ctx.attr("pads", [0] * 2 * n))
    if len(pads) != 2 * n or any(p < 0 for p in pads):
        raise ctx.error(f"pads {pads} must be {2 * n} non-negative numbers")
    return pads[:n], pads[n:]


def window_layout(ctx: Context, sizes: Sequence[int], window: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int], ceil: bool = False
                  ) -> tuple[list[int], list[int], list[int]]:
    """(begin, end, out): the padding of each spatial axis (with ceil_mode, the end also pads
    the last, partial window, which must start inside the input or its begin padding) and the
    output's length."""
    extent = [(k - 1) * d + 1 for k, d in zip(window, dilations, strict=True)]
    begin, end = spatial_pads(ctx, sizes, extent, strides)
    out = []
    for i, (s, w, st) in enumerate(zip(sizes, extent, strides, strict=True)):
        span = s + begin[i] + end[i] - w
        o = (-(-span // st) if ceil else span // st) + 1
        if ceil and (o - 1) * st >= s + begin[i]:
            o -= 1
        if o < 1:
            raise ctx.error(f"the window {list(window)} does not fit the padded input "
                            f"{[s + b + e for s, b, e in zip(sizes, begin, end, strict=True)]}")
        end[i] = max(end[i], (o - 1) * st + w - s - begin[i])
        out.append(o)
    return begin, end, out


def windows(ctx: Context, x: Value, window: Sequence[int], strides: Sequence[int],
            dilations: Sequence[int], fill: float, ceil: bool = False
            ) -> tuple[Value, list[int]]:
    """[N, C, *out, K]: for each output position, the K = prod(window) input elements under the
    window (row-major over its positions), the input padded with ``fill``; and ``out``."""
    n = len(window)
    sizes = static_dims(ctx, x.type.dims[2:], "the spatial sizes")
    begin, end, out = window_layout(ctx, sizes, window, strides, dilations, ceil)
    if any(begin) or any(end):
        x = ctx.op("pad", x, low=[0, 0, *begin], high=[0, 0, *end], mode="constant",
                   value=fill)
    shape = [*x.type.dims[:2], *map(Dim.of, out)]
    parts = []
    for at in itertools.product(*(range(k) for k in window)):
        part = ctx.op("slice", x, start=[0, 0, *(a * d for a, d in zip(at, dilations,
                                                                      strict=True))],
                      size=shape, stride=[1, 1, *strides])
        parts.append(ctx.op("reshape", part, shape=[*shape, Dim.of(1)]))
    cols = parts[0] if len(parts) == 1 else ctx.op("concat", *parts, axis=n + 2)
    return cols, out


def spatial_ints(ctx: Context, name: str, n: int, default: int) -> list[int]:
    v = list(ctx.attr(name, [default] * n))
    if len(v) != n or any(s < 1 for s in v):
        raise ctx.error(f"{name} {v} must be {n} positive numbers")
    return v


@converts("Conv")
def conv(ctx: Context) -> Sequence[Tensor]:
    """y[n, m, p] = sum over c, k of x_padded[n, c, p * stride + k * dilation] w[m, c, k] (+ b[m]),
    within each group's channels; f16/bf16 computed in f32 and rounded once."""
    x0, w0 = ctx.value(0), ctx.value(1)
    x, w = ctx.widen(x0), ctx.cast(ctx.widen(w0), ctx.widen(x0).type.dtype)
    rank = x.type.rank
    if rank < 3 or w.type.rank != rank:
        raise ctx.error(f"Conv needs X and W of the same rank, at least 3, got {x.type} and "
                        f"{w.type}")
    n = rank - 2
    m, cg, *kernel = static_dims(ctx, w.type.dims, "the kernel W's shape")
    if ctx.attr("kernel_shape") is not None and list(ctx.attr("kernel_shape")) != kernel:
        raise ctx.error(f"kernel_shape {ctx.attr('kernel_shape')} is not W's {kernel}")
    (c,) = static_dims(ctx, x.type.dims[1:2], "the input channels")
    groups = int(ctx.attr("group", 1))
    if groups < 1 or c != cg * groups or m % groups:
        raise ctx.error(f"{c} input channels and {m} output channels do not split into "
                        f"{groups} groups of W's {cg} input channels")
    strides, dilations = spatial_ints(ctx, "strides", n, 1), spatial_ints(ctx, "dilations", n, 1)
    cols, out = windows(ctx, x, kernel, strides, dilations, 0.0)
    batch = x.type.dims[0]
    k, p, mg = math.prod(kernel), math.prod(out), m // groups
    # rows: (n, output position); columns: (channel within the group, kernel position)
    cols = ctx.op("reshape", cols, shape=[batch, Dim.of(groups), Dim.of(cg), Dim.of(p),
                                          Dim.of(k)])
    cols = ctx.op("transpose", cols, perm=[1, 0, 3, 2, 4])
    cols = ctx.op("reshape", cols, shape=[Dim.of(groups), batch * p, Dim.of(cg * k)])
    wm = ctx.op("transpose", ctx.op("reshape", w, shape=[groups, mg, cg * k]), perm=[0, 2, 1])
    if groups == 1:
        y = matmul_values(ctx, ctx.op("reshape", cols, shape=[batch * p, Dim.of(cg * k)]),
                          ctx.op("reshape", wm, shape=[cg * k, mg]))
        y = ctx.op("reshape", y, shape=[batch, Dim.of(p), Dim.of(m)])
        y = ctx.op("transpose", y, perm=[0, 2, 1])
    else:
        y = matmul_values(ctx, cols, wm)  # [groups, N * P, M / groups]
        y = ctx.op("reshape", y, shape=[Dim.of(groups), batch, Dim.of(p), Dim.of(mg)])
        y = ctx.op("transpose", y, perm=[1, 0, 3, 2])
    y = ctx.op("reshape", y, shape=[batch, Dim.of(m), *map(Dim.of, out)])
    if ctx.has(2):
        b = ctx.cast(ctx.widen(ctx.value(2)), y.type.dtype)
        y = ctx.op("add", y, ctx.op("broadcast", b, shape=list(y.type.dims), dims=[1]))
    return [ctx.cast(y, x0.type.dtype)]
