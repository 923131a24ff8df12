"""ONNX shape and data-movement ops: Shape, Size, Reshape, Flatten, (Un)Squeeze, Transpose,
Expand, Tile, Slice, Concat, Split, Gather, GatherND, ConstantOfShape.

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


def _shape_of(t: Tensor) -> list[Dim]:
    if isinstance(t, np.ndarray):
        return [Dim.of(n) for n in t.shape]
    return list(t.type.dims)


def _reshape_any(ctx: Context, t: Tensor, dims: Sequence[Dim]) -> Tensor:
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
    dims = _shape_of(ctx.tensor(0))
    rank = len(dims)
    start = ctx.attr("start", 0)
    end = ctx.attr("end", rank)
    lo = max(0, min(rank, start + rank if start < 0 else start))
    hi = max(0, min(rank, end + rank if end < 0 else end))
    return [shape_value(dims[lo:hi])]


@converts("Size")
def size(ctx: Context) -> Sequence[Tensor]:
    n = dims_product(_shape_of(ctx.tensor(0)))
    v = shape_value([n])
    return [v.reshape(())]


@converts("Reshape")
def reshape(ctx: Context) -> Sequence[Tensor]:
    t = ctx.tensor(0)
    old = _shape_of(t)
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
    return [_reshape_any(ctx, t, [d for d in dims if d is not None])]


@converts("Flatten")
def flatten(ctx: Context) -> Sequence[Tensor]:
    t = ctx.tensor(0)
    old = _shape_of(t)
    axis = ctx.attr("axis", 1)
    axis = axis + len(old) if axis < 0 else axis
    if not 0 <= axis <= len(old):
        raise ctx.error(f"axis {ctx.attr('axis', 1)} is out of range for rank {len(old)}")
    return [_reshape_any(ctx, t, [dims_product(old[:axis]), dims_product(old[axis:])])]


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
    old = _shape_of(t)
    axes = _axes(ctx, 1, len(old))
    if axes is None:
        axes = [i for i, d in enumerate(old) if d.const == 1]
    for a in axes:
        if old[a].const != 1:
            raise ctx.error(f"cannot squeeze axis {a} of size {old[a]}")
    return [_reshape_any(ctx, t, [d for i, d in enumerate(old) if i not in axes])]


@converts("Unsqueeze")
def unsqueeze(ctx: Context) -> Sequence[Tensor]:
    t = ctx.tensor(0)
    old = _shape_of(t)
    axes = _axes(ctx, 1, len(old) + (len(ctx.ints(1, "axes")) if ctx.has(1)
                                      else len(ctx.attr("axes", []))))
    if axes is None:
        raise ctx.error("Unsqueeze needs axes")
    rest = iter(old)
    dims = [Dim.of(1) if i in axes else next(rest) for i in range(len(old) + len(axes))]
    return [_reshape_any(ctx, t, dims)]


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
    lead = _shape_of(t)
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
        sizes = np.array([d.const for d in indexed], np.int64)
        idx = t.astype(np.int64)
        bad = (idx < -sizes) | (idx >= sizes)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ctx.error(f"index {int(idx[where])} at {list(where)} is out of range for an "
                            f"axis of size {sizes[where[-1]]}")
        idx = np.where(idx < 0, idx + sizes, idx)
        lin = (idx * np.array([s.const for s in strides], np.int64)).sum(axis=-1)
        if offsets is not None:
            lin = lin + offsets * int(sizes.prod())
        linear: Value = ctx.as_value(np.array(lin, np.int64), "indices")  # 0-d stays 0-d
    else:
        linear = _linear_index(ctx, ctx.cast(ctx.as_value(t, "indices"), DType.I64), indexed,
                               strides, out_lead)
        if offsets is not None:
            at = ctx.as_value(np.array(offsets), "batch_offsets")
            linear = ctx.op("add", linear,
                            ctx.op("mul", at, ctx.dim_value(dims_product(indexed), at)))
    flat = _reshape_any(ctx, x, [dims_product(batch + indexed), *rest])
    return [ctx.op("gather", ctx.as_value(flat), linear, axis=0)]


def _linear_index(ctx: Context, idx: Value, sizes: Sequence[Dim], strides: Sequence[Dim],
                  lead: Sequence[Dim]) -> Value:
    """sum_j clamp(wrap(idx[..., j])) * stride_j over the last axis of ``idx``, in TCP ops."""
    q = idx.type.rank
    total: Value | None = None
    for j, (size, stride) in enumerate(zip(sizes, strides, strict=True)):
        part = ctx.op("slice", idx, start=[0] * (q - 1) + [j], size=[*lead, Dim.of(1)],
                      stride=[1] * q)
        part = ctx.op("reshape", part, shape=list(lead))
        part = ctx.wrapped(part, size)
        # each index clamped into its own axis, as gather clamps: not into the next row
        if size.const is not None:
            part = ctx.op("clamp", part, min=0, max=size.const - 1)
        else:
            last = ctx.op("sub", ctx.dim_value(size, part), ctx.scalar(1, part))
            part = ctx.op("max", ctx.op("min", part, last), ctx.scalar(0, part))
        if stride != Dim.of(1):
            part = ctx.op("mul", part, ctx.dim_value(stride, part))
        total = part if total is None else ctx.op("add", total, part)
    assert total is not None
    return total


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
