"""ONNX ops that are compositions in TCP: MatMul of any rank, Gemm, the reductions, Softmax and
LogSoftmax, LayerNormalization, RMSNormalization, BatchNormalization, InstanceNormalization,
GroupNormalization and LpNormalization.

They are expanded into TCP ops on purpose: the rules then see (and can fuse or simplify) every
step, where a monolithic op would hide them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.context import Context, Tensor, converts, normalize_axis
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType, dims_product

# linear algebra ----------------------------------------------------------------------------


def matmul_values(ctx: Context, a: Value, b: Value) -> Value:
    """NumPy matmul of any ranks as TCP's rank-2 and batched rank-3 matmul."""
    squeeze_m, squeeze_n = a.type.rank == 1, b.type.rank == 1
    if squeeze_m:
        a = ctx.op("reshape", a, shape=[1, a.type.dims[0]])
    if squeeze_n:
        b = ctx.op("reshape", b, shape=[b.type.dims[0], 1])
    (m, k), (_, n) = a.type.dims[-2:], b.type.dims[-2:]
    if b.type.rank == 2:  # weights without batch dims: fold a's batch into its rows
        batch = list(a.type.dims[:-2])
        flat = ctx.op("reshape", a, shape=[dims_product(batch) * m, k]) if batch else a
        out = ctx.op("matmul", flat, b)
    else:
        batch = ctx.broadcast_dims([a.type.dims[:-2], b.type.dims[:-2]])
        a = ctx.broadcast_to(a, [*batch, m, k])
        b = ctx.broadcast_to(b, [*batch, k, n])
        count = dims_product(batch)
        if len(batch) != 1:
            a = ctx.op("reshape", a, shape=[count, m, k])
            b = ctx.op("reshape", b, shape=[count, k, n])
        out = ctx.op("matmul", a, b)
    dims = [*batch, *([] if squeeze_m else [m]), *([] if squeeze_n else [n])]
    return out if list(out.type.dims) == dims else ctx.op("reshape", out, shape=dims)


@converts("MatMul")
def matmul(ctx: Context) -> Sequence[Tensor]:
    return [matmul_values(ctx, ctx.value(0), ctx.value(1))]


@converts("Gemm")
def gemm(ctx: Context) -> Sequence[Tensor]:
    a, b = ctx.value(0), ctx.value(1)
    if ctx.attr("transA", 0):
        a = ctx.op("transpose", a, perm=[1, 0])
    if ctx.attr("transB", 0):
        b = ctx.op("transpose", b, perm=[1, 0])
    y = ctx.op("matmul", a, b)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if alpha != 1.0:
        y = ctx.op("mul", y, ctx.scalar(alpha, y))
    if ctx.has(2) and beta != 0.0:
        c = ctx.broadcast_to(ctx.value(2), y.type.dims)
        if beta != 1.0:
            c = ctx.op("mul", c, ctx.scalar(beta, c))
        y = ctx.op("add", y, c)
    return [y]


# reductions --------------------------------------------------------------------------------

def _reduce_axes(ctx: Context, rank: int) -> list[int] | None:
    """The reduced axes, or None for "no reduction" (noop_with_empty_axes)."""
    assert ctx.node is not None
    raw = ctx.ints(1, "axes") if ctx.has(1) else list(ctx.attr("axes", []) or [])
    if not raw:
        return None if ctx.attr("noop_with_empty_axes", 0) else list(range(rank))
    axes = sorted({normalize_axis(ctx, a, rank) for a in raw})
    if len(axes) != len(raw):
        raise ctx.error(f"axes {raw} repeat an axis")
    return axes


def reduce(ctx: Context, op: str, x: Value, axes: list[int], keep: bool) -> Value:
    return ctx.op(op, x, axes=axes, keepdims=keep)


def mean(ctx: Context, x: Value, axes: list[int], keep: bool) -> Value:
    """The sum over ``axes`` divided by their size (over symbolic axes, the size as data)."""
    s = reduce(ctx, "reduce_sum", x, axes, keep)
    return ctx.op("div", s, ctx.dim_value(dims_product(x.type.dims[a] for a in axes), s))


def _log_sum_exp(ctx: Context, x: Value, axes: list[int], keep: bool) -> Value:
    m = reduce(ctx, "reduce_max", x, axes, True)
    # a max of +-inf would make x - m NaN: shift by 0 there (the plain formula is then exact)
    finite = ctx.op("eq", ctx.op("sub", m, m), ctx.scalar(0.0, m))
    m = ctx.op("select", finite, m, ctx.scalar(0.0, m))
    e = ctx.op("exp", ctx.op("sub", x, ctx.broadcast_to(m, x.type.dims)))
    s = ctx.op("log", reduce(ctx, "reduce_sum", e, axes, keep))
    mk = m if keep else ctx.op("reshape", m, shape=list(s.type.dims))
    return ctx.op("add", s, mk)


@converts("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean", "ReduceL1",
          "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")
def reductions(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    x, kind = ctx.value(0), ctx.node.op_type
    axes = _reduce_axes(ctx, x.type.rank)
    keep = bool(ctx.attr("keepdims", 1))
    if axes is None:
        return [x]
    simple = {"ReduceSum": "reduce_sum", "ReduceMax": "reduce_max", "ReduceMin": "reduce_min",
              "ReduceProd": "reduce_prod"}
    if kind in simple:
        return [reduce(ctx, simple[kind], x, axes, keep)]
    if kind == "ReduceMean":
        return [mean(ctx, x, axes, keep)]
    if kind == "ReduceLogSumExp":
        return [_log_sum_exp(ctx, x, axes, keep)]
    if kind == "ReduceL1":
        return [reduce(ctx, "reduce_sum", ctx.op("abs", x), axes, keep)]
    sq = reduce(ctx, "reduce_sum", ctx.op("mul", x, x), axes, keep)
    if kind == "ReduceL2":
        return [ctx.op("sqrt", sq)]
    if kind == "ReduceLogSum":
        return [ctx.op("log", reduce(ctx, "reduce_sum", x, axes, keep))]
    return [sq]


# softmax and normalization -----------------------------------------------------------------

def _softmax_axis(ctx: Context, x: Value) -> tuple[Value, int, list[Dim] | None]:
    """The value, its softmax axis, and the shape to restore (opsets < 13 flatten to 2-D)."""
    if ctx.opset >= 13:
        return x, normalize_axis(ctx, ctx.attr("axis", -1), x.type.rank), None
    axis = normalize_axis(ctx, ctx.attr("axis", 1), x.type.rank)
    dims = list(x.type.dims)
    flat = ctx.op("reshape", x, shape=[dims_product(dims[:axis]), dims_product(dims[axis:])])
    return flat, 1, dims


def softmax_values(ctx: Context, x: Value, axis: int, log: bool = False,
                   empty_rows: bool = False) -> Value:
    """The (log-)softmax along ``axis``. With ``empty_rows``, a row that is all -inf gives
    zeros (Attention's rule) where ONNX's Softmax gives NaN: its max is raised to the lowest
    float (exp(-inf - lowest) = 0) and its sum to the least normal (0 / that = 0), which
    changes no other row (a finite max makes the sum at least 1); maxes, not selects, so the
    softmax still fuses into one row kernel."""
    info = np.finfo(x.type.dtype.np_dtype) if empty_rows else None
    m = reduce(ctx, "reduce_max", x, [axis], True)
    if info is not None:
        m = ctx.op("max", m, ctx.scalar(float(info.min), m))
    shifted = ctx.op("sub", x, ctx.broadcast_to(m, x.type.dims))
    e = ctx.op("exp", shifted)
    s = reduce(ctx, "reduce_sum", e, [axis], True)
    if info is not None:
        s = ctx.op("max", s, ctx.scalar(float(info.tiny), s))
    s = ctx.broadcast_to(s, x.type.dims)
    if log:
        return ctx.op("sub", shifted, ctx.op("log", s))
    return ctx.op("div", e, s)


@converts("Softmax", "LogSoftmax")
def softmax(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    x0 = ctx.value(0)
    x, axis, restore = _softmax_axis(ctx, ctx.widen(x0))
    y = ctx.cast(softmax_values(ctx, x, axis, log=ctx.node.op_type == "LogSoftmax"),
                 x0.type.dtype)
    return [y if restore is None else ctx.op("reshape", y, shape=restore)]


def _stash(ctx: Context, x: Value) -> Value:
    """Normalizations compute in f32 (stash_type 1) when the input is a narrower float."""
    return ctx.widen(x) if ctx.attr("stash_type", 1) == 1 else x


def _affine(ctx: Context, y: Value, dtype: DType, scale: int, bias: int | None) -> Value:
    y = ctx.cast(y, dtype)
    y = ctx.op("mul", y, ctx.broadcast_to(ctx.value(scale), y.type.dims))
    if bias is not None and ctx.has(bias):
        y = ctx.op("add", y, ctx.broadcast_to(ctx.value(bias), y.type.dims))
    return y


def _standardize(ctx: Context, x: Value, axes: list[int]) -> tuple[Value, Value, Value]:
    """((x - mean) / sqrt(var + epsilon) over ``axes``, the mean, 1 / sqrt(var + epsilon)),
    the last two with ``axes`` kept as size 1."""
    mu = mean(ctx, x, axes, True)
    d = ctx.op("sub", x, ctx.broadcast_to(mu, x.type.dims))
    var = mean(ctx, ctx.op("mul", d, d), axes, True)
    inv = ctx.op("rsqrt", ctx.op("add", var, ctx.scalar(ctx.attr("epsilon", 1e-5), var)))
    return ctx.op("mul", d, ctx.broadcast_to(inv, x.type.dims)), mu, inv


@converts("LayerNormalization")
def layer_norm(ctx: Context) -> Sequence[Tensor]:
    x0 = ctx.value(0)
    x = _stash(ctx, x0)
    axis = normalize_axis(ctx, ctx.attr("axis", -1), x.type.rank)
    y, mu, inv = _standardize(ctx, x, list(range(axis, x.type.rank)))
    return [_affine(ctx, y, x0.type.dtype, 1, 2), mu, inv]


@converts("RMSNormalization")
def rms_norm(ctx: Context) -> Sequence[Tensor]:
    x0 = ctx.value(0)
    x = _stash(ctx, x0)
    axis = normalize_axis(ctx, ctx.attr("axis", -1), x.type.rank)
    axes = list(range(axis, x.type.rank))
    ms = mean(ctx, ctx.op("mul", x, x), axes, True)
    inv = ctx.op("rsqrt", ctx.op("add", ms, ctx.scalar(ctx.attr("epsilon", 1e-5), ms)))
    y = ctx.op("mul", x, ctx.broadcast_to(inv, x.type.dims))
    return [_affine(ctx, y, x0.type.dtype, 1, None)]


def _per_channel(ctx: Context, i: int, like: Value) -> Value:
    """Input ``i``, one value per channel (axis 1), broadcast to ``like``'s shape."""
    v = ctx.cast(ctx.value(i), like.type.dtype)
    if v.type.rank != 1 or v.type.dims[0] != like.type.dims[1]:
        raise ctx.error(f"input {i} must be [{like.type.dims[1]}], one value per channel, got "
                        f"{v.type}")
    return ctx.op("broadcast", v, shape=list(like.type.dims), dims=[1])


@converts("InstanceNormalization")
def instance_norm(ctx: Context) -> Sequence[Tensor]:
    """Each image's channels standardized over their pixels, then scaled and shifted per
    channel; f16/bf16 computed in f32 and rounded once."""
    x0 = ctx.value(0)
    x = ctx.widen(x0)
    if x.type.rank < 3:
        raise ctx.error(f"InstanceNormalization needs an input of rank 3 or more, got {x.type}")
    y, _, _ = _standardize(ctx, x, list(range(2, x.type.rank)))
    y = ctx.op("add", ctx.op("mul", y, _per_channel(ctx, 1, y)), _per_channel(ctx, 2, y))
    return [ctx.cast(y, x0.type.dtype)]


@converts("GroupNormalization")
def group_norm(ctx: Context) -> Sequence[Tensor]:
    """Each image's groups of channels standardized together (in f32 with stash_type 1, the
    default), then scaled and shifted per channel (opset 21; ONNX's checker refuses the
    per-group form of opset 18 as deprecated)."""
    x0 = ctx.value(0)
    x = _stash(ctx, x0)
    groups = int(ctx.attr("num_groups", 0))
    c = x.type.dims[1].const if x.type.rank >= 2 else None
    if c is None or groups < 1 or c % groups:
        raise ctx.error(f"GroupNormalization needs static channels that num_groups={groups} "
                        f"divides, got {x.type}")
    n, rest = x.type.dims[0], dims_product(x.type.dims[2:])
    grouped = ctx.op("reshape", x, shape=[n, Dim.of(groups), Dim.of(c // groups) * rest])
    y, _, _ = _standardize(ctx, grouped, [2])
    y = ctx.cast(ctx.op("reshape", y, shape=list(x.type.dims)), x0.type.dtype)
    return [ctx.op("add", ctx.op("mul", y, _per_channel(ctx, 1, y)), _per_channel(ctx, 2, y))]


@converts("BatchNormalization")
def batch_norm(ctx: Context) -> Sequence[Tensor]:
    if ctx.attr("training_mode", 0):
        raise ctx.error("BatchNormalization in training mode is not supported (inference only)")
    x = ctx.value(0)
    if x.type.rank < 2:
        raise ctx.error("BatchNormalization needs an input of rank 2 or more")
    eps = ctx.attr("epsilon", 1e-5)
    var = _per_channel(ctx, 4, x)
    inv = ctx.op("rsqrt", ctx.op("add", var, ctx.scalar(eps, var)))
    y = ctx.op("mul", ctx.op("sub", x, _per_channel(ctx, 3, x)), inv)
    return [ctx.op("add", ctx.op("mul", y, _per_channel(ctx, 1, x)), _per_channel(ctx, 2, x))]


@converts("LpNormalization")
def lp_normalization(ctx: Context) -> Sequence[Tensor]:
    """x / ||x||_p along the axis (p 1 or 2), 0 where the norm is 0 (the operator's rule)."""
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.error(f"LpNormalization's p must be 1 or 2, got {p}")

    def normalized(x: Value) -> Value:
        axis = normalize_axis(ctx, ctx.attr("axis", -1), x.type.rank)
        norm = reduce(ctx, "reduce_sum", ctx.op("abs", x) if p == 1 else ctx.op("mul", x, x),
                      [axis], True)
        if p == 2:
            norm = ctx.op("sqrt", norm)
        norm = ctx.broadcast_to(norm, x.type.dims)
        zero = ctx.op("eq", norm, ctx.scalar(0.0, norm))
        return ctx.op("select", zero, ctx.scalar(0.0, x), ctx.op("div", x, norm))
    return [ctx.in_f32(normalized)]
