"""ONNX ops that count along axes, built on TCP's iota: Range, CumSum, CumProd, Trilu, EyeLike,
OneHot, ArgMax, ArgMin and Hardmax.

Range with constant inputs is folded at import (folding.py); here its limit is a symbolic
dim, as exporters write ``arange(seq)`` for position ids. CumSum has no scan to map to: it is
a masked sum over a second copy of the axis. Trilu keeps a triangle (causal masks). ArgMax and
ArgMin take the least index where the extreme is met. The masks compare iotas, so the lengths
may be symbolic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.context import (
    Context,
    Tensor,
    converts,
    normalize_axis,
    onnx_dtype,
)
from tcp_rules.frontends.onnx.folding import divide_dim
from tcp_rules.ir import Value
from tcp_rules.ops import identity_value
from tcp_rules.types import Dim, DType


def _scalar(ctx: Context, t: np.ndarray, what: str) -> Dim | float:
    """Range's input: a dim (an integer, or symbolic), or a float constant."""
    if t.size != 1:
        raise ctx.error(f"Range's {what} must be a scalar, got shape {list(t.shape)}")
    v = t.reshape(-1)[0]
    if isinstance(v, Dim):
        return v
    if t.dtype.kind in "iu":
        return Dim.of(int(v))
    return float(v)


@converts("Range")
def range_(ctx: Context) -> Sequence[Tensor]:
    """start + delta * iota(n), n = (limit - start) / delta, where the limit or the start is a
    symbolic dim (constant Ranges are folded): n must divide exactly, since its ceiling is no
    dim TCP can name; a symbolic start is added as data (Context.dim_value)."""
    names = ("start", "limit", "delta")
    arrays = [ctx.const(i, what) for i, what in enumerate(names)]
    start, limit, delta = (_scalar(ctx, a, what) for a, what in zip(arrays, names, strict=True))
    if not (isinstance(start, Dim) and isinstance(limit, Dim) and isinstance(delta, Dim)):
        raise ctx.error("a Range over a symbolic length needs integer start, limit and delta")
    step = delta.const
    if step is None or step == 0:
        raise ctx.error(f"Range's delta must be a nonzero constant, got {delta}")
    n = divide_dim(limit - start, Dim.of(step))
    if n is None:
        raise ctx.error(f"Range from {start} to {limit} by {step}: the length must be a whole "
                        f"number of steps for every size of the symbolic dims")
    # shapes flow as object arrays of dims (folding.py), which keep no dtype: ONNX's is int64
    dt = next((DType.from_numpy(a.dtype) for a in arrays if a.dtype != object), None) or DType.I64
    v: Value = ctx.op("iota", shape=[n], axis=0, dtype=dt)
    if step != 1:
        v = ctx.op("mul", v, ctx.scalar(step, v))
    if start != Dim.of(0):
        v = ctx.op("add", v, ctx.dim_value(start, v))
    return [v]


def _positions(ctx: Context, rows: Dim, cols: Dim) -> tuple[Value, Value]:
    """(i, j): each element's row and column index in a [rows, cols] grid, as i64."""
    return (ctx.op("iota", shape=[rows, cols], axis=0, dtype=DType.I64),
            ctx.op("iota", shape=[rows, cols], axis=1, dtype=DType.I64))


@converts("CumSum", "CumProd")
def cumulative(ctx: Context) -> Sequence[Tensor]:
    """y[.., j, ..] = the sum (CumProd: the product) of x[.., i, ..] over the i that
    ``exclusive`` and ``reverse`` keep (i <= j, i < j, i >= j, i > j): x broadcast along a new
    axis j beside i, the other terms replaced by 0 (1), i reduced. n^2 terms a row, for the
    lengths models scan (position ids from a padding mask) a few thousand at most."""
    assert ctx.node is not None
    op = ctx.node.op_type
    x = ctx.value(0)
    rank = x.type.rank
    axes = ctx.ints(1, "axis")
    if rank == 0 or len(axes) != 1:
        raise ctx.error(f"{op} needs a tensor of rank 1 or more and one axis, got rank "
                        f"{rank} and axis {axes}")
    axis = normalize_axis(ctx, axes[0], rank)
    dims = list(x.type.dims)
    n = dims[axis]
    j, i = _positions(ctx, n, n)  # (rows j, columns i)
    cmp = {(0, 0): "le", (1, 0): "lt", (0, 1): "ge", (1, 1): "gt"}[
        (int(bool(ctx.attr("exclusive", 0))), int(bool(ctx.attr("reverse", 0))))]
    shape = [*dims[:axis], n, *dims[axis:]]
    keep = ctx.op("broadcast", ctx.op(cmp, i, j), shape=shape, dims=[axis, axis + 1])
    spread = ctx.op("broadcast", x, shape=shape,
                    dims=[*range(axis), *range(axis + 1, rank + 1)])
    product = op == "CumProd"
    terms = ctx.op("select", keep, spread, ctx.splat(int(product), spread, x.type.dtype))
    return [ctx.op("reduce_prod" if product else "reduce_sum", terms, axes=[axis + 1],
                   keepdims=False)]


@converts("Trilu")
def trilu(ctx: Context) -> Sequence[Tensor]:
    """x where j - i >= k (upper) or j - i <= k (lower) in its last two axes, else 0."""
    x = ctx.value(0)
    if x.type.rank < 2:
        raise ctx.error(f"Trilu needs a tensor of rank 2 or more, got rank {x.type.rank}")
    k = ctx.ints(1, "k")[0] if ctx.has(1) else 0
    *_, rows, cols = x.type.dims
    i, j = _positions(ctx, rows, cols)
    diag = ctx.op("sub", j, i)
    keep = ctx.op("ge" if ctx.attr("upper", 1) else "le", diag, ctx.scalar(k, diag))
    rank = x.type.rank
    keep = ctx.op("broadcast", keep, shape=list(x.type.dims), dims=[rank - 2, rank - 1])
    return [ctx.op("select", keep, x, ctx.splat(0, x, x.type.dtype))]


def _extreme(ctx: Context, x: Value, axis: int, largest: bool, last: bool = False,
             among: Value | None = None) -> tuple[Value, Value]:
    """(the largest or smallest element along ``axis``, the first or last index where it is
    met, int64), both keeping the axis, over the elements ``among`` marks (all by default).
    The extreme is NaN if any candidate is NaN, as TCP's reductions give it, and its index
    then the first (or last) NaN's, as NumPy's argmax finds it."""
    neutral = identity_value(-math.inf if largest else math.inf, x.type.dtype)
    xs = x if among is None else ctx.op("select", among, x, ctx.scalar(neutral, x))
    ext = ctx.op("reduce_max" if largest else "reduce_min", xs, axes=[axis], keepdims=True)
    hit = ctx.op("eq", x, ctx.broadcast_to(ext, x.type.dims))
    if x.type.dtype.is_float:
        hit = ctx.op("select", ctx.op("ne", x, x), ctx.splat(True, x, DType.I1), hit)
    if among is not None:
        hit = ctx.op("select", among, hit, ctx.splat(False, x, DType.I1))
    io = ctx.op("iota", shape=list(x.type.dims), axis=axis, dtype=DType.I64)
    miss = ctx.scalar(-1 if last else (1 << 63) - 1, io)
    index = ctx.op("reduce_max" if last else "reduce_min", ctx.op("select", hit, io, miss),
                   axes=[axis], keepdims=True)
    return ext, index


def _arg_extreme(ctx: Context, x: Value, axis: int, largest: bool, last: bool,
                 keep: bool) -> Value:
    """The index of the first (or last) largest (or smallest) element along ``axis``."""
    index = _extreme(ctx, x, axis, largest, last)[1]
    if keep:
        return index
    return ctx.op("reshape", index, shape=[d for i, d in enumerate(index.type.dims) if i != axis])


@converts("ArgMax", "ArgMin")
def arg_extreme(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    x = ctx.value(0)
    if x.type.rank == 0:
        raise ctx.error("ArgMax and ArgMin need a tensor of rank 1 or more")
    axis = normalize_axis(ctx, ctx.attr("axis", 0), x.type.rank)
    if x.type.dims[axis].const == 0:
        raise ctx.error(f"{ctx.node.op_type} along an empty axis has no answer")
    return [_arg_extreme(ctx, x, axis, ctx.node.op_type == "ArgMax",
                         bool(ctx.attr("select_last_index", 0)), bool(ctx.attr("keepdims", 1)))]


@converts("Hardmax")
def hardmax(ctx: Context) -> Sequence[Tensor]:
    """1 at the first largest element along the axis (opset 13's; the older opsets' coerce to
    2-D first), 0 elsewhere."""
    x = ctx.value(0)
    if ctx.opset < 13:
        raise ctx.error("Hardmax before opset 13 (which flattens to 2-D) is not supported")
    axis = normalize_axis(ctx, ctx.attr("axis", -1), x.type.rank)
    first = _arg_extreme(ctx, x, axis, largest=True, last=False, keep=True)
    io = ctx.op("iota", shape=list(x.type.dims), axis=axis, dtype=DType.I64)
    on = ctx.op("eq", io, ctx.broadcast_to(first, x.type.dims))
    return [ctx.cast(on, x.type.dtype)]


TOPK_LIMIT = 128  # k rounds of a reduction: beyond this, the program grows too large


@converts("TopK")
def top_k(ctx: Context) -> Sequence[Tensor]:
    """The k largest (or smallest) elements along the axis and their indices, in order, equal
    elements by their index (ONNX's rule): k rounds, each taking the extreme of the elements
    not yet taken (a NaN counts as the most extreme, as ArgMax's). ``sorted=0`` allows any
    order; this one is sorted too. K must be a constant, at most TOPK_LIMIT."""
    x = ctx.value(0)
    if x.type.rank == 0:
        raise ctx.error("TopK needs a tensor of rank 1 or more")
    axis = normalize_axis(ctx, ctx.attr("axis", -1), x.type.rank)
    k = ctx.ints(1, "K")[0] if ctx.opset >= 10 else int(ctx.attr("k"))
    n = x.type.dims[axis]
    if not 1 <= k <= TOPK_LIMIT or (n.const is not None and k > n.const):
        raise ctx.error(f"K = {k} must be between 1 and the axis' size {n}, and at most "
                        f"{TOPK_LIMIT} (TopK runs a reduction per element taken)")
    largest = bool(ctx.attr("largest", 1))
    io = ctx.op("iota", shape=list(x.type.dims), axis=axis, dtype=DType.I64)
    values, indices = [], []
    taken: Value | None = None
    for _ in range(k):
        among = None if taken is None else ctx.op("eq", taken, ctx.scalar(False, taken))
        ext, index = _extreme(ctx, x, axis, largest, among=among)
        values.append(ext)
        indices.append(index)
        now = ctx.op("eq", io, ctx.broadcast_to(index, x.type.dims))
        taken = now if taken is None else ctx.op("select", taken, taken, now)
    if k == 1:
        return [values[0], indices[0]]
    return [ctx.op("concat", *values, axis=axis), ctx.op("concat", *indices, axis=axis)]


@converts("EyeLike")
def eye_like(ctx: Context) -> Sequence[Tensor]:
    """Ones where j - i == k in a 2-D tensor of the input's shape, in ``dtype`` (default: the
    input's)."""
    x = ctx.value(0)
    if x.type.rank != 2:
        raise ctx.error(f"EyeLike needs a 2-D input, got rank {x.type.rank}")
    dt = onnx_dtype(ctx.attr("dtype"), "EyeLike's dtype") if ctx.attr("dtype") is not None \
        else x.type.dtype
    i, j = _positions(ctx, *x.type.dims)
    diag = ctx.op("sub", j, i)
    return [ctx.cast(ctx.op("eq", diag, ctx.scalar(int(ctx.attr("k", 0)), diag)), dt)]


@converts("OneHot")
def one_hot(ctx: Context) -> Sequence[Tensor]:
    """values[1] where the new axis' index equals the (wrapped) index, values[0] elsewhere; an
    index outside [-depth, depth) matches nowhere. ``depth`` must be a constant."""
    idx = ctx.cast(ctx.value(0), DType.I64)
    depth = ctx.const(1, "depth").reshape(-1)
    if depth.size != 1 or not float(depth[0]).is_integer() or float(depth[0]) < 1:
        raise ctx.error(f"OneHot's depth must be one positive integer, got {depth.tolist()}")
    n = int(depth[0])
    values = ctx.value(2)
    if values.type.rank != 1 or values.type.dims[0] != Dim.of(2):
        raise ctx.error(f"OneHot's values must be [off, on], got {values.type}")
    rank = idx.type.rank + 1
    axis = normalize_axis(ctx, ctx.attr("axis", -1), rank)
    shape = [*idx.type.dims[:axis], Dim.of(n), *idx.type.dims[axis:]]
    spread = ctx.op("broadcast", ctx.wrapped(idx, Dim.of(n)), shape=shape,
                    dims=[d for d in range(rank) if d != axis])
    hit = ctx.op("eq", spread, ctx.op("iota", shape=shape, axis=axis, dtype=DType.I64))

    def pick(k: int) -> Value:
        v = ctx.op("slice", values, start=[k], size=[Dim.of(1)], stride=[1])
        return ctx.op("broadcast", v, shape=shape, dims=[axis])
    return [ctx.op("select", hit, pick(1), pick(0))]
