"""ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, the loss heads of exported
training graphs: each sample's -input[n, target, d...] (SoftmaxCrossEntropyLoss: of the log
softmax over the classes), picked by comparing the class axis's iota with the target, weighted
by weight[target] (TCP's gather clamps the target into the classes, as the reference's
np.take(mode="clip") does) and by 0 where the target is ignore_index; then kept ("none"),
summed, or summed and divided by the sum of the weights ("mean"), as onnx.reference computes
them. 16-bit floats compute in f32 and round once.
"""

from __future__ import annotations

from collections.abc import Sequence

from tcp_rules.frontends.onnx.composite import mean, softmax_values
from tcp_rules.frontends.onnx.context import Context, Tensor, converts
from tcp_rules.ir import Value
from tcp_rules.types import DType


def _loss(ctx: Context, x: Value, target: Value) -> Value:
    """The reduced loss of log-probabilities ``x`` [N, C, d...] (computed wide) at ``target``
    [N, d...], with the node's weight (input 2), ignore_index and reduction."""
    dims = list(x.type.dims)
    if x.type.rank < 2 or list(target.type.dims) != [dims[0], *dims[2:]]:
        raise ctx.error(f"the target {target.type} must be the input {x.type} without its "
                        f"class axis 1")
    t = ctx.cast(target, DType.I64)
    spread = ctx.op("broadcast", t, shape=dims, dims=[0, *range(2, len(dims))])
    hit = ctx.op("eq", ctx.op("iota", shape=dims, axis=1, dtype=DType.I64), spread)
    picked = ctx.op("reduce_sum", ctx.op("select", hit, x, ctx.scalar(0.0, x)), axes=[1],
                    keepdims=False)
    loss = ctx.op("neg", picked)
    ignore = ctx.attr("ignore_index")
    keep = None if ignore is None else ctx.op("ne", t, ctx.scalar(int(ignore), t))
    w: Value | None = None
    if ctx.has(2):
        w = ctx.op("gather", ctx.cast(ctx.widen(ctx.value(2)), x.type.dtype), t, axis=0)
    elif keep is not None:
        w = ctx.splat(1.0, loss, x.type.dtype)
    if keep is not None:
        assert w is not None
        loss = ctx.op("select", keep, loss, ctx.scalar(0.0, loss))
        w = ctx.op("select", keep, w, ctx.scalar(0.0, w))
    if w is not None:
        loss = ctx.op("mul", loss, w)
    reduction = ctx.attr("reduction", "mean")
    every = list(range(loss.type.rank))
    if reduction == "none":
        return loss
    if reduction == "sum":
        return ctx.op("reduce_sum", loss, axes=every, keepdims=False)
    if reduction != "mean":
        raise ctx.error(f"reduction {reduction!r} is not none, sum or mean")
    if w is None:
        return mean(ctx, loss, every, False)
    return ctx.op("div", ctx.op("reduce_sum", loss, axes=every, keepdims=False),
                  ctx.op("reduce_sum", w, axes=every, keepdims=False))


@converts("NegativeLogLikelihoodLoss")
def nll_loss(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    return [ctx.cast(_loss(ctx, ctx.widen(x), ctx.value(1)), x.type.dtype)]


@converts("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(ctx: Context) -> Sequence[Tensor]:
    """The loss, and the log-probabilities as the optional second output."""
    x = ctx.value(0)
    if x.type.rank < 2:
        raise ctx.error(f"the scores must have a class axis 1, got {x.type}")
    log_prob = softmax_values(ctx, ctx.widen(x), 1, log=True)
    dt = x.type.dtype
    return [ctx.cast(_loss(ctx, log_prob, ctx.value(1)), dt), ctx.cast(log_prob, dt)]
