"""ONNX's Conv (1-D, 2-D, 3-D; groups, strides, dilations, explicit or automatic padding) as
matmuls over an im2col matrix: per image and group, the kernel [M / G, Cg * K] times the
windows [Cg * K, P] of the padded input (one gather at a constant table of positions), the
product already in the output's layout. Every step is a TCP op (pad, gather, reshape,
broadcast, matmul), so the rules see them; the channels and the spatial sizes must be static,
the batch may be symbolic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

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
    """[N, C, K, P]: for each of the P output positions (row-major over ``out``), the K =
    prod(window) input elements under its window (row-major over the window), the input padded
    with ``fill``; and ``out``. One gather of the padded image, flattened, at a constant table
    of positions: a kernel, where a slice per window position and their concatenation were
    2 K kernels."""
    sizes = static_dims(ctx, x.type.dims[2:], "the spatial sizes")
    begin, end, out = window_layout(ctx, sizes, window, strides, dilations, ceil)
    if any(begin) or any(end):
        x = ctx.op("pad", x, low=[0, 0, *begin], high=[0, 0, *end], mode="constant",
                   value=fill)
    padded = [s + b + e for s, b, e in zip(sizes, begin, end, strict=True)]
    # position of window element k at output p: sum_i (p_i * stride_i + k_i * dilation_i)
    # times the padded image's stride along spatial axis i
    at_k, at_p = np.indices(window).reshape(len(window), -1), np.indices(out).reshape(len(out), -1)
    flat = sum((at_p[i][None, :] * strides[i] + at_k[i][:, None] * dilations[i])
               * math.prod(padded[i + 1:]) for i in range(len(window)))
    index = np.asarray(flat, np.int32 if math.prod(padded) < 2**31 else np.int64)
    lead = list(x.type.dims[:2])
    image = ctx.op("reshape", x, shape=[*lead, Dim.of(math.prod(padded))])
    cols = ctx.op("gather", image, ctx.as_value(index, "window_positions"), axis=2)
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
    # per image and group: W [M/G, Cg * K] @ cols [Cg * K, P], the output already NC(HW)
    cols = ctx.op("reshape", cols, shape=[batch, Dim.of(groups), Dim.of(cg * k), Dim.of(p)])
    wm = ctx.op("reshape", w, shape=[groups, mg, cg * k])
    y = matmul_values(ctx, ctx.op("broadcast", wm, shape=[batch, *map(Dim.of, (groups, mg,
                                                                            cg * k))],
                                  dims=[1, 2, 3]), cols)
    y = ctx.op("reshape", y, shape=[batch, Dim.of(m), *map(Dim.of, out)])
    if ctx.has(2):
        b = ctx.cast(ctx.widen(ctx.value(2)), y.type.dtype)
        y = ctx.op("add", y, ctx.op("broadcast", b, shape=list(y.type.dims), dims=[1]))
    return [ctx.cast(y, x0.type.dtype)]
