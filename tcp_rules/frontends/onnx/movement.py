"""ONNX shape and data-movement ops: Shape, Size, Reshape, Flatten, (Un)Squeeze, Transpose,
Expand, Tile, Slice, Concat, Split, ConstantOfShape, Pad, DepthToSpace, SpaceToDepth,
CenterCropPad (the gathers: gathers.py).

Shape arguments must be known at import time (TCP shapes are static or symbolic); a shape that
depends on symbolic dims flows through as an object array of dims (see folding.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx

from tcp_rules import build as tb
from tcp_rules.frontends.onnx.context import Context, Tensor, converts, normalize_axis
from tcp_rules.frontends.onnx.folding import divide_dim, shape_value
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType, TensorType, dims_product

_MAX = 1 << 62  # ONNX writes "to the end" as INT64_MAX (or close to it)


def shape_of(t: Tensor) -> list[Dim]:
    if isinstance(t, np.ndarray):
        return [Dim.of(n) for n in t.shape]
    return list(t.type.dims)


def reshape_any(ctx: Context, t: Tensor, dims: Sequence[Dim]) -> Tensor:
    """Reshape a value, or a constant without materializing it."""
    if isinstance(t, np.ndarray):
        shape = [d.const for d in dims]
        if any(s is None for s in shape):
            t = ctx.as_value(t)
        else:
            return t.reshape([int(s) for s in shape if s is not None])
    assert isinstance(t, Value)
    if tuple(t.type.dims) == tuple(dims):
        return t
    return ctx.op("reshape", t, shape=list(dims))


@converts("Shape")
def shape(ctx: Context) -> Sequence[Tensor]:
    dims = shape_of(ctx.tensor(0))
    rank = len(dims)
    start = ctx.attr("start", 0)
    end = ctx.attr("end", rank)
    lo = max(0, min(rank, start + rank if start < 0 else start))
    hi = max(0, min(rank, end + rank if end < 0 else end))
    return [shape_value(dims[lo:hi])]


@converts("Size")
def size(ctx: Context) -> Sequence[Tensor]:
    n = dims_product(shape_of(ctx.tensor(0)))
    v = shape_value([n])
    return [v.reshape(())]


@converts("Reshape")
def reshape(ctx: Context) -> Sequence[Tensor]:
    t = ctx.tensor(0)
    old = shape_of(t)
    want = ctx.dims(1, "the target shape") if ctx.opset >= 5 else \
        [Dim.of(d) for d in ctx.attr("shape")]
    allow_zero = ctx.attr("allowzero", 0)
    dims: list[Dim | None] = []
    for i, d in enumerate(want):
        if d.const == 0 and not allow_zero:
            if i >= len(old):
                raise ctx.error(f"shape entry {i} is 0 (copy) but the input has rank {len(old)}")
            dims.append(old[i])
        elif d.const == -1:
            dims.append(None)
        else:
            dims.append(d)
    if dims.count(None) > 1:
        raise ctx.error("the target shape has more than one -1")
    if None in dims:
        known = dims_product(d for d in dims if d is not None)
        inferred = divide_dim(dims_product(old), known) if known.const != 0 else None
        if inferred is None:
            raise ctx.error(f"cannot infer the -1 entry: {dims_product(old)} elements do not "
                            f"divide by {known}")
        dims[dims.index(None)] = inferred
    return [reshape_any(ctx, t, [d for d in dims if d is not None])]


@converts("Flatten")
def flatten(ctx: Context) -> Sequence[Tensor]:
    t = ctx.tensor(0)
    old = shape_of(t)
    axis = ctx.attr("axis", 1)
    axis = axis + len(old) if axis < 0 else axis
    if not 0 <= axis <= len(old):
        raise ctx.error(f"axis {ctx.attr('axis', 1)} is out of range for rank {len(old)}")
    return [reshape_any(ctx, t, [dims_product(old[:axis]), dims_product(old[axis:])])]


def _axes(ctx: Context, i: int, rank: int) -> list[int] | None:
    """Axes from input ``i`` (newer opsets) or the ``axes`` attribute (older)."""
    if ctx.has(i):
        raw = ctx.ints(i, "axes")
    elif ctx.attr("axes") is not None:
        raw = list(ctx.attr("axes"))
    else:
        return None
    axes = [normalize_axis(ctx, a, rank) for a in raw]
    if len(set(axes)) != len(axes):
        raise ctx.error(f"axes {raw} repeat an axis")
    return axes


@converts("Squeeze")
def squeeze(ctx: Context) -> Sequence[Tensor]:
    t = ctx.tensor(0)
    old = shape_of(t)
    axes = _axes(ctx, 1, len(old))
    if axes is None:
        axes = [i for i, d in enumerate(old) if d.const == 1]
    for a in axes:
        if old[a].const != 1:
            raise ctx.error(f"cannot squeeze axis {a} of size {old[a]}")
    return [reshape_any(ctx, t, [d for i, d in enumerate(old) if i not in axes])]


@converts("Unsqueeze")
def unsqueeze(ctx: Context) -> Sequence[Tensor]:
    t = ctx.tensor(0)
    old = shape_of(t)
    axes = _axes(ctx, 1, len(old) + (len(ctx.ints(1, "axes")) if ctx.has(1)
                                      else len(ctx.attr("axes", []))))
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    rest = iter(old)
    dims = [Dim.of(1) if i in axes else next(rest) for i in range(len(old) + len(axes))]
    return [reshape_any(ctx, t, dims)]


@converts("Transpose")
def transpose(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    perm = ctx.attr("perm") or list(range(x.type.rank))[::-1]
    if list(perm) == list(range(x.type.rank)):
        return [x]
    return [ctx.op("transpose", x, perm=list(perm))]


@converts("Expand")
def expand(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    target = ctx.broadcast_dims([x.type.dims, ctx.dims(1, "the shape")])
    return [ctx.broadcast_to(x, target)]


@converts("Tile")
def tile(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    reps = ctx.ints(1, "repeats")
    if len(reps) != x.type.rank:
        raise ctx.error(f"repeats has {len(reps)} entries for a rank-{x.type.rank} input")
    if all(r == 1 for r in reps):
        return [x]
    wide = [d for r, n in zip(reps, x.type.dims, strict=True) for d in (Dim.of(r), n)]
    b = ctx.op("broadcast", x, shape=wide, dims=[2 * i + 1 for i in range(x.type.rank)])
    return [ctx.op("reshape", b, shape=[Dim.of(r) * n
                                        for r, n in zip(reps, x.type.dims, strict=True)])]


@converts("Concat")
def concat(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    vals = [ctx.value(i) for i in range(len(ctx.node.input)) if ctx.has(i)]
    axis = normalize_axis(ctx, ctx.attr("axis"), vals[0].type.rank)
    vals = [v for v in vals if v.type.dims[axis].const != 0] or vals[:1]
    return [vals[0] if len(vals) == 1 else ctx.op("concat", *vals, axis=axis)]


@converts("Split")
def split(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    x = ctx.value(0)
    axis = normalize_axis(ctx, ctx.attr("axis", 0), x.type.rank)
    n_out = len(ctx.node.output)
    if ctx.has(1):
        sizes = [Dim.of(s) for s in ctx.ints(1, "split")]
    elif ctx.attr("split") is not None:
        sizes = [Dim.of(s) for s in ctx.attr("split")]
    else:
        total = x.type.dims[axis].const
        if total is None:
            raise ctx.error(f"cannot split the symbolic axis {x.type.dims[axis]} evenly")
        parts = ctx.attr("num_outputs", n_out)
        chunk = math.ceil(total / parts)  # ONNX: the last chunk may be smaller
        sizes = [Dim.of(min(chunk, total - k * chunk)) for k in range(parts)]
    outs: list[Tensor] = []
    start = 0
    for s in sizes:
        n = s.const
        if n is None:
            raise ctx.error("split sizes must be integers")
        begin = [0] * x.type.rank
        begin[axis] = start
        size = list(x.type.dims)
        size[axis] = s
        outs.append(ctx.op("slice", x, start=begin, size=size, stride=[1] * x.type.rank))
        start += n
    return outs


def _slice_args(ctx: Context, rank: int) -> list[tuple[int, int, int | Dim, int]]:
    """(axis, start, end, step) per sliced axis, from inputs (opset >= 10) or attributes; an
    end may be a symbolic dim (``x[:, :seq]``, as exporters slice position buffers)."""
    if ctx.opset >= 10:
        starts = ctx.ints(1, "starts")
        ends: list[int | Dim] = [d.const if d.const is not None else d
                                 for d in ctx.dims(2, "ends")]
        axes = ctx.ints(3, "axes") if ctx.has(3) else list(range(len(starts)))
        steps = ctx.ints(4, "steps") if ctx.has(4) else [1] * len(starts)
    else:
        starts, ends = ctx.attr("starts"), ctx.attr("ends")
        axes = ctx.attr("axes") or list(range(len(starts)))
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.error("starts, ends, axes and steps differ in length")
    if 0 in steps:
        raise ctx.error("a slice step of 0 is invalid")
    return [(normalize_axis(ctx, a, rank), s, e, st)
            for a, s, e, st in zip(axes, starts, ends, steps, strict=True)]


@converts("Slice")
def slice_(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    rank = x.type.rank
    start, size, stride = [0] * rank, list(x.type.dims), [1] * rank
    reverse: list[tuple[int, list[int]]] = []
    for axis, s, e, step in _slice_args(ctx, rank):
        n = x.type.dims[axis].const
        if isinstance(e, Dim):  # a symbolic end: ONNX's clamping to the axis is not
            # expressible, so a run whose end passes the axis fails the slice's shape check
            if step != 1 or s < 0:
                raise ctx.error(f"a slice up to the symbolic end {e} must start at a "
                                f"non-negative index and have step 1")
            start[axis], size[axis] = s, e - s
            continue
        if n is None:  # symbolic axis: only non-negative starts and "to the end"
            if step != 1 or s < 0 or not (e >= _MAX or e < 0):
                raise ctx.error(f"slice of the symbolic axis {x.type.dims[axis]} must start "
                                f"at a non-negative index, run to (end - k) and have step 1")
            start[axis] = s
            size[axis] = x.type.dims[axis] - s + (e if e < 0 else 0)
            continue
        idx = range(n)[slice(s, e, step)]  # Python's clamping is ONNX's (a range: O(1))
        if step > 0 or len(idx) <= 1:
            start[axis] = idx[0] if idx else 0
            size[axis] = Dim.of(len(idx))
            stride[axis] = step if len(idx) > 1 else 1
        else:
            reverse.append((axis, list(idx)))
    v = x
    if any(st != 1 for st in stride) or start != [0] * rank or size != list(x.type.dims):
        v = ctx.op("slice", x, start=start, size=size, stride=stride)
    for axis, order in reverse:  # negative steps: a gather of the indices in order
        v = ctx.op("gather", v, ctx.as_value(np.array(order, dtype=np.int64), "slice_indices"),
                   axis=axis)
    return [v]


@converts("ConstantOfShape")
def constant_of_shape(ctx: Context) -> Sequence[Tensor]:
    dims = ctx.dims(0, "the shape")
    value = ctx.attr("value")
    arr = np.zeros(1, np.float32) if value is None else np.asarray(
        onnx.numpy_helper.to_array(value)).ravel()
    dt = DType.from_numpy(arr.dtype)
    if dt is None:
        raise ctx.error(f"value of dtype {arr.dtype} is not supported")
    return [tb.make_splat(arr[0].item(), TensorType(dt, tuple(dims)))]


@converts("Pad")
def pad(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    rank = x.type.rank
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect"):
        raise ctx.error(f"Pad mode '{mode}' is not supported (constant, edge and reflect are)")
    if ctx.opset >= 11:
        pads = ctx.ints(1, "pads")
        value = ctx.const(2, "constant_value").ravel()[0].item() if ctx.has(2) else 0
        axes = [normalize_axis(ctx, a, rank) for a in ctx.ints(3, "axes")] if ctx.has(3) \
            else list(range(rank))
    else:
        pads, value, axes = list(ctx.attr("pads")), ctx.attr("value", 0.0), list(range(rank))
    if len(pads) != 2 * len(axes):
        raise ctx.error(f"pads has {len(pads)} entries for {len(axes)} axes")
    low, high = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        low[a], high[a] = pads[k], pads[k + len(axes)]
    if any(p < 0 for p in low + high):  # negative pads crop: a slice first
        start = [max(-p, 0) for p in low]
        size = [d - start[i] - max(-high[i], 0) for i, d in enumerate(x.type.dims)]
        x = ctx.op("slice", x, start=start, size=size, stride=[1] * rank)
        low, high = [max(p, 0) for p in low], [max(p, 0) for p in high]
    if not any(low + high):
        return [x]
    if x.type.dtype.is_float:
        value = float(value)
    attrs = {"value": value} if mode == "constant" else {}
    return [ctx.op("pad", x, low=low, high=high, mode=mode, **attrs)]


@converts("DepthToSpace", "SpaceToDepth")
def depth_space(ctx: Context) -> Sequence[Tensor]:
    """Blocks of blocksize x blocksize pixels moved between the channels and the image of an
    NCHW tensor: a reshape, a transpose and a reshape, in the operator's DCR (depth, column,
    row) or CRD order."""
    assert ctx.node is not None
    x = ctx.value(0)
    if x.type.rank != 4:
        raise ctx.error(f"{ctx.node.op_type} needs a 4-D NCHW tensor, got {x.type}")
    bs, mode = int(ctx.attr("blocksize", 0)), ctx.attr("mode", "DCR")
    n, c, h, w = x.type.dims
    k = Dim.of(bs)
    if bs < 1 or mode not in ("DCR", "CRD"):
        raise ctx.error(f"blocksize {bs} must be positive and mode {mode!r} DCR or CRD")
    if ctx.node.op_type == "DepthToSpace":
        depth = divide_dim(c, k * k)
        if depth is None:
            raise ctx.error(f"{c} channels do not divide by blocksize^2 = {bs * bs}")
        split, perm = ([n, k, k, depth, h, w], [0, 3, 4, 1, 5, 2]) if mode == "DCR" else \
            ([n, depth, k, k, h, w], [0, 1, 4, 2, 5, 3])
        out = [n, depth, h * k, w * k]
    else:
        rows, cols = divide_dim(h, k), divide_dim(w, k)
        if rows is None or cols is None:
            raise ctx.error(f"the image {h}x{w} does not divide into blocks of {bs}")
        split = [n, c, rows, k, cols, k]
        perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
        out = [n, c * k * k, rows, cols]
    y = ctx.op("transpose", ctx.op("reshape", x, shape=split), perm=perm)
    return [ctx.op("reshape", y, shape=out)]


@converts("CenterCropPad")
def center_crop_pad(ctx: Context) -> Sequence[Tensor]:
    """Each of the given axes cut or zero-padded to its target length around the centre: a crop
    starts at (size - target) // 2, a pad puts its odd pixel at the end."""
    x = ctx.value(0)
    rank = x.type.rank
    target = ctx.ints(1, "the target shape")
    axes = [normalize_axis(ctx, a, rank) for a in ctx.attr("axes", list(range(rank)))]
    if len(axes) != len(target) or len(set(axes)) != len(axes):
        raise ctx.error(f"shape {target} must give one length for each of the axes {axes}")
    start, size = [0] * rank, list(x.type.dims)
    low, high = [0] * rank, [0] * rank
    for a, t in zip(axes, target, strict=True):
        n = x.type.dims[a].const
        if n is None:
            raise ctx.error(f"axis {a} ({x.type.dims[a]}) must be static to be cropped or padded")
        if n > t:
            start[a], size[a] = (n - t) // 2, Dim.of(t)
        elif n < t:
            low[a], high[a] = (t - n) // 2, t - n - (t - n) // 2
    if size != list(x.type.dims):
        x = ctx.op("slice", x, start=start, size=size, stride=[1] * rank)
    if any(low) or any(high):
        x = ctx.op("pad", x, low=low, high=high, mode="constant", value=0)
    return [x]
