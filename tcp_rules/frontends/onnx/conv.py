"""ONNX's Conv and ConvTranspose (1-D, 2-D, 3-D; groups, strides, dilations, explicit or
automatic padding) as matmuls over an im2col matrix: per image and group, the kernel
[M / G, Cg * K] times the windows [Cg * K, P] of the padded input (one gather at a constant
table of positions), the product already in the output's layout. ConvTranspose is the
convolution of its input spread out by the strides with the kernel flipped. Every step is a
TCP op (pad, gather, reshape, broadcast, matmul), so the rules see them; the channels and the
spatial sizes must be static, the batch may be symbolic.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from tcp_rules import build as tb
from tcp_rules.frontends.onnx.composite import matmul_values
from tcp_rules.frontends.onnx.context import Context, Tensor, converts
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType, TensorType


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


Pads = tuple[list[int], list[int]]


def window_layout(ctx: Context, sizes: Sequence[int], window: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int], ceil: bool = False,
                  pads: Pads | None = None) -> tuple[list[int], list[int], list[int]]:
    """(begin, end, out): the padding of each spatial axis (the node's, or ``pads``; with
    ceil_mode, the end also pads the last, partial window, which must start inside the input
    or its begin padding) and the output's length."""
    extent = [(k - 1) * d + 1 for k, d in zip(window, dilations, strict=True)]
    begin, end = (list(pads[0]), list(pads[1])) if pads is not None else \
        spatial_pads(ctx, sizes, extent, strides)
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
            dilations: Sequence[int], fill: float, ceil: bool = False,
            pads: Pads | None = None) -> tuple[Value, list[int]]:
    """[N, C, K, P]: for each of the P output positions (row-major over ``out``), the K =
    prod(window) input elements under its window (row-major over the window), the input padded
    with ``fill``; and ``out``. One gather of the padded image, flattened, at the windows'
    positions: a kernel, where a slice per window position and their concatenation were 2 K
    kernels."""
    sizes = static_dims(ctx, x.type.dims[2:], "the spatial sizes")
    begin, end, out = window_layout(ctx, sizes, window, strides, dilations, ceil, pads)
    lead = list(x.type.dims[:2])
    if all(k == 1 for k in window) and not any(begin) and not any(end):
        # one-pixel windows (pointwise convolutions): the image itself, strided if need be
        if any(s != 1 for s in strides):
            x = ctx.op("slice", x, start=[0] * x.type.rank, size=[*lead, *map(Dim.of, out)],
                       stride=[1, 1, *strides])
        return ctx.op("reshape", x, shape=[*lead, Dim.of(1), Dim.of(math.prod(out))]), out
    if any(begin) or any(end):
        x = ctx.op("pad", x, low=[0, 0, *begin], high=[0, 0, *end], mode="constant",
                   value=fill)
    padded = [s + b + e for s, b, e in zip(sizes, begin, end, strict=True)]
    image = ctx.op("reshape", x, shape=[*lead, Dim.of(math.prod(padded))])
    index = window_positions(padded, window, strides, dilations, out)
    cols = ctx.op("gather", image, index, axis=2)  # [N, C, *window, *out]
    return ctx.op("reshape", cols, shape=[*lead, Dim.of(math.prod(window)),
                                          Dim.of(math.prod(out))]), out


def window_positions(padded: Sequence[int], window: Sequence[int], strides: Sequence[int],
                      dilations: Sequence[int], out: Sequence[int]) -> Value:
    """[*window, *out]: where window element k of output p lies in the flattened padded image,
    sum_i (p_i * stride_i + k_i * dilation_i) * (the image's stride along axis i). Built from
    iotas, not as a constant table: the code generator recomputes such an index where the
    gather reads it (lower.py, _from_indices), affine in the loop indices, so LLVM reads each
    window's rows as contiguous vectors, where a table [K, P] was streamed from memory and
    gathered element by element (a 64-channel 56x56 3x3 im2col: 640 us against 118 us, one
    Zen 4 core)."""
    n = len(window)
    t = TensorType(DType.I32 if math.prod(padded) < 2**31 else DType.I64,
                   tuple(Dim.of(v) for v in (*window, *out)))
    terms = [tb.apply_op("mul", tb.apply_op("iota", shape=t.dims, axis=axis, dtype=t.dtype),
                         tb.make_splat(coeff, t))
             for i in range(n)
             for axis, coeff in ((i, dilations[i] * math.prod(padded[i + 1:])),
                                 (n + i, strides[i] * math.prod(padded[i + 1:])))
             if t.dims[axis] != Dim.of(1)]
    if not terms:  # a one-pixel window at one position
        return tb.make_splat(0, t)
    return functools.reduce(lambda a, b: tb.apply_op("add", a, b), terms)


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
    y = convolve(ctx, x, w, groups, strides, dilations)
    return [ctx.cast(_biased(ctx, y), x0.type.dtype)]


def _biased(ctx: Context, y: Value) -> Value:
    """``y`` plus the node's bias B (input 2), if any, along the channels."""
    if not ctx.has(2):
        return y
    b = ctx.cast(ctx.widen(ctx.value(2)), y.type.dtype)
    return ctx.op("add", y, ctx.op("broadcast", b, shape=list(y.type.dims), dims=[1]))


def convolve(ctx: Context, x: Value, w: Value, groups: int, strides: Sequence[int],
             dilations: Sequence[int], pads: Pads | None = None) -> Value:
    """[N, M, *out]: the convolution of ``x`` [N, C, *sizes] with ``w`` [M, C / groups, *k]
    (the node's padding, or ``pads``): per image and group, the kernel [M / G, Cg * K] times
    the windows [Cg * K, P], the product already in the output's layout."""
    m, cg, *kernel = static_dims(ctx, w.type.dims, "the kernel W's shape")
    cols, out = windows(ctx, x, kernel, strides, dilations, 0.0, pads=pads)
    batch = x.type.dims[0]
    k, p, mg = math.prod(kernel), math.prod(out), m // groups
    if cg == 1 and groups > 1:
        # depthwise: each output channel weighs one input channel's windows, a product summed
        # over the window in one kernel (as matmuls, thousands of K x 1 products)
        shape = [batch, *map(Dim.of, (groups, mg, k, p))]
        spread = ctx.op("broadcast", cols, shape=shape, dims=[0, 1, 3, 4])
        weights = ctx.op("broadcast", ctx.op("reshape", w, shape=[groups, mg, k]), shape=shape,
                         dims=[1, 2, 3])
        y = ctx.op("reduce_sum", ctx.op("mul", spread, weights), axes=[3], keepdims=False)
        return ctx.op("reshape", y, shape=[batch, Dim.of(m), *map(Dim.of, out)])
    cols = ctx.op("reshape", cols, shape=[batch, Dim.of(groups), Dim.of(cg * k), Dim.of(p)])
    wm = ctx.op("reshape", w, shape=[groups, mg, cg * k])
    wide = ctx.op("broadcast", wm, shape=[batch, *map(Dim.of, (groups, mg, cg * k))],
                  dims=[1, 2, 3])
    y = matmul_values(ctx, wide, cols)
    return ctx.op("reshape", y, shape=[batch, Dim.of(m), *map(Dim.of, out)])


@converts("ConvTranspose")
def conv_transpose(ctx: Context) -> Sequence[Tensor]:
    """The transpose of Conv (its gradient with respect to the input): the input spread out by
    the strides (zeros between its elements), padded by dilation * (k - 1) less the node's
    pads (cropped where those are larger) and by output_padding at the end, convolved at stride
    1 with the kernel flipped along its spatial axes and its channel axes swapped in each
    group. f16/bf16 computed in f32 and rounded once."""
    x0 = ctx.value(0)
    x = ctx.widen(x0)
    rank = x.type.rank
    n = rank - 2
    t = ctx.tensor(1)
    wdims = [Dim.of(d) for d in t.shape] if isinstance(t, np.ndarray) else list(t.type.dims)
    if rank < 3 or len(wdims) != rank:
        raise ctx.error(f"ConvTranspose needs X and W of the same rank, at least 3, got "
                        f"{x.type} and W of rank {len(wdims)}")
    c, mg, *kernel = static_dims(ctx, wdims, "the kernel W's shape")
    groups = int(ctx.attr("group", 1))
    sizes = static_dims(ctx, x.type.dims[1:], "the channels and spatial sizes")[1:]
    if groups < 1 or x.type.dims[1] != Dim.of(c) or c % groups:
        raise ctx.error(f"X's {x.type.dims[1]} channels and W's {c} input channels do not "
                        f"split into {groups} groups")
    strides, dilations = spatial_ints(ctx, "strides", n, 1), spatial_ints(ctx, "dilations", n, 1)
    extra = list(ctx.attr("output_padding", [0] * n))
    begin, end = _transpose_pads(ctx, sizes, kernel, strides, dilations, extra)
    spread = _spread(ctx, x, sizes, strides)
    lo = [d * (k - 1) - b for d, k, b in zip(dilations, kernel, begin, strict=True)]
    hi = [d * (k - 1) - e + o for d, k, e, o in zip(dilations, kernel, end, extra, strict=True)]
    if any(v < 0 for v in lo + hi):  # pads beyond the kernel's reach crop the spread input
        dims = spread.type.dims
        size = [*dims[:2], *(Dim.of(d.const + min(a, 0) + min(b, 0))  # type: ignore[operator]
                             for d, a, b in zip(dims[2:], lo, hi, strict=True))]
        spread = ctx.op("slice", spread, start=[0, 0, *(max(-a, 0) for a in lo)], size=size,
                        stride=[1] * rank)
        lo, hi = [max(a, 0) for a in lo], [max(b, 0) for b in hi]
    cg = c // groups
    flipped = _flipped_kernel(ctx, t, groups, cg, mg, kernel, x.type.dtype)
    y = convolve(ctx, spread, flipped, groups, [1] * n, dilations, pads=(lo, hi))
    return [ctx.cast(_biased(ctx, y), x0.type.dtype)]


def _transpose_pads(ctx: Context, sizes: list[int], kernel: list[int], strides: list[int],
                    dilations: list[int], extra: list[int]) -> Pads:
    """ConvTranspose's (begin, end) pads: the node's, or those that make the output
    output_shape (or, with SAME_*, the input times the strides), split as the operator says."""
    n = len(sizes)
    full = [s * (i - 1) + o + (k - 1) * d + 1
            for s, i, o, k, d in zip(strides, sizes, extra, kernel, dilations, strict=True)]
    auto = ctx.attr("auto_pad", "NOTSET")
    target = ctx.attr("output_shape")
    if target is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [i * s for i, s in zip(sizes, strides, strict=True)]
    if target is not None:
        # an output_shape beyond the full one pads (negative pads: zeros, plus the bias)
        total = [f - t for f, t in zip(full, list(target)[-n:], strict=True)]
        if auto == "SAME_UPPER":
            return [v // 2 for v in total], [v - v // 2 for v in total]
        return [v - v // 2 for v in total], [v // 2 for v in total]
    if auto == "VALID":
        return [0] * n, [0] * n
    return spatial_pads(ctx, sizes, [1] * n, [1] * n)


def _spread(ctx: Context, x: Value, sizes: list[int], strides: list[int]) -> Value:
    """x with strides - 1 zeros between neighbours along each spatial axis: a size-1 axis after
    each, padded to the stride, merged back, the trailing zeros cut."""
    if all(s == 1 for s in strides):
        return x
    lead = list(x.type.dims[:2])
    split = [*lead, *(Dim.of(v) for i in sizes for v in (i, 1))]
    x = ctx.op("reshape", x, shape=split)
    x = ctx.op("pad", x, low=[0] * len(split),
               high=[0, 0, *(v for s in strides for v in (0, s - 1))], mode="constant",
               value=0.0)
    x = ctx.op("reshape", x, shape=[*lead, *(Dim.of(i * s) for i, s in zip(sizes, strides,
                                                                           strict=True))])
    return ctx.op("slice", x, start=[0] * len(x.type.dims),
                  size=[*lead, *(Dim.of((i - 1) * s + 1) for i, s in zip(sizes, strides,
                                                                         strict=True))],
                  stride=[1] * len(x.type.dims))


def _flipped_kernel(ctx: Context, t: Tensor, groups: int, cg: int, mg: int,
                    kernel: list[int], dt: DType) -> Value:
    """W [C, M / G, *k] as a Conv kernel [M, C / G, *k]: channel axes swapped within each
    group, every spatial axis reversed. Computed at import for a constant W."""
    n = len(kernel)
    if isinstance(t, np.ndarray):
        a = t.reshape(groups, cg, mg, *kernel).swapaxes(1, 2).reshape(groups * mg, cg, *kernel)
        a = np.ascontiguousarray(a[(slice(None), slice(None), *[slice(None, None, -1)] * n)])
        return ctx.cast(ctx.as_value(a, "kernel_flipped"), dt)
    w = ctx.cast(ctx.widen(t), dt)
    w = ctx.op("reshape", w, shape=[Dim.of(v) for v in (groups, cg, mg, *kernel)])
    w = ctx.op("transpose", w, perm=[0, 2, 1, *range(3, n + 3)])
    w = ctx.op("reshape", w, shape=[Dim.of(v) for v in (groups * mg, cg, *kernel)])
    for axis, k in enumerate(kernel, start=2):
        if k > 1:
            back = ctx.as_value(np.arange(k - 1, -1, -1, dtype=np.int64), "kernel_reversed")
            w = ctx.op("gather", w, back, axis=axis)
    return w
