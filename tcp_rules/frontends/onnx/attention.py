"""ONNX's Attention (opsets 23 to 25) and RotaryEmbedding (opset 23), as PyTorch exports
``scaled_dot_product_attention`` and rotary position embeddings from opset 23 on.

Attention is scaled dot-product attention over heads, with grouped-query heads, a key/value
cache, masks (boolean or additive, causal, a sliding window, padded keys), a soft cap and the
optional fourth output. It is written as TCP ops so that the rules see every step: the head
split, both matmuls, the masks as selects and the softmax. A single head's attention then runs
as one kernel, as it does for graphs that spell attention out (chain.py).

The order of operations is the reference's (onnx.reference.ops.op_attention): Q and K each
scaled by sqrt(scale), the cap before the additive bias, the bias summed from its parts, rows
that are all -inf softmaxed to zeros, and the rows whose bias is -inf everywhere (every key
disallowed) zeroed before the second matmul. f16 and bf16 inputs compute in f32 and round once
at the end (Context.widen).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.composite import matmul_values, softmax_values
from tcp_rules.frontends.onnx.context import Context, Tensor, converts, onnx_dtype
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType

_INF = float("inf")


@converts("Attention")
def attention(ctx: Context) -> Sequence[Tensor]:
    """Y, present_key, present_value and qk_matmul_output (what qk_matmul_output_mode says)."""
    q0, k0, v0 = ctx.value(0), ctx.value(1), ctx.value(2)
    dt = q0.type.dtype
    q, k, v = _heads(ctx, q0, k0, v0)
    if ctx.has(4) != ctx.has(5):
        raise ctx.error("past_key and past_value must be given together")
    if ctx.has(4) and ctx.has(6):
        raise ctx.error("nonpad_kv_seqlen cannot be combined with past_key and past_value")
    past = ctx.value(4).type.dims[2] if ctx.has(4) else Dim.of(0)
    if ctx.has(4):
        k = ctx.op("concat", ctx.value(4), k, axis=2)
        v = ctx.op("concat", ctx.value(5), v, axis=2)
    present_k, present_v = k, v
    q, k, v = ctx.widen(q), ctx.widen(k), ctx.widen(v)
    batch, q_heads, q_len, head = q.type.dims
    kv_len = k.type.dims[2]

    root = _root_scale(ctx, head, dt)
    q, kt = (ctx.op("mul", t, ctx.scalar(root, t))
             for t in (q, ctx.op("transpose", _repeat(ctx, k, q_heads), perm=[0, 1, 3, 2])))
    scores = matmul_values(ctx, q, kt)
    raw = scores
    cap = float(ctx.attr("softcap", 0.0))
    if cap > 0:
        scores = ctx.op("mul", ctx.op("tanh", ctx.op("div", scores, ctx.scalar(cap, scores))),
                        ctx.scalar(cap, scores))
    capped = scores
    nonpad = ctx.value(6) if ctx.has(6) else None
    bias = _bias(ctx, scores, q_len, kv_len, past, nonpad)
    if bias is not None:
        scores = ctx.op("add", scores, ctx.broadcast_to(bias, scores.type.dims))
    probs = _softmax(ctx, scores)
    # A causal mask alone always leaves key 0 to attend (its offset is not negative): no guard.
    alone = not (ctx.has(3) or nonpad is not None or _window(ctx) != (-1, -1))
    if bias is not None and not alone:  # rows with no key to attend are 0, whatever the logits
        top = ctx.op("reduce_max", bias, axes=[bias.type.rank - 1], keepdims=True)
        masked = ctx.op("eq", top, ctx.scalar(-_INF, top))
        probs = ctx.op("select", ctx.broadcast_to(masked, probs.type.dims),
                       ctx.scalar(0.0, probs), probs)
    y = matmul_values(ctx, probs, _repeat(ctx, v, q_heads))
    if q0.type.rank == 3:
        y = ctx.op("reshape", ctx.op("transpose", y, perm=[0, 2, 1, 3]),
                   shape=[batch, q_len, q_heads * y.type.dims[3]])
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    outputs = {0: raw, 1: capped, 2: scores, 3: probs}
    if mode not in outputs:
        raise ctx.error(f"qk_matmul_output_mode {mode} is not one of 0, 1, 2, 3")
    return [ctx.cast(y, dt), present_k, present_v, ctx.cast(outputs[mode], dt)]


def _heads(ctx: Context, q: Value, k: Value, v: Value) -> tuple[Value, Value, Value]:
    """Q, K and V as [batch, heads, sequence, head size]: 3-D inputs split by the head counts
    the attributes give."""
    rank = q.type.rank
    if rank not in (3, 4) or k.type.rank != rank or v.type.rank != rank:
        raise ctx.error(f"Q, K and V must all be 3-D or all 4-D, got ranks {q.type.rank}, "
                        f"{k.type.rank} and {v.type.rank}")
    q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
    if rank == 4:
        if ctx.opset >= 25 and (q_heads is not None or kv_heads is not None):
            raise ctx.error("q_num_heads and kv_num_heads must not be given for 4-D inputs")
        return q, k, v
    if q_heads is None or kv_heads is None:
        raise ctx.error("3-D Q, K and V need the q_num_heads and kv_num_heads attributes")
    return tuple(ctx.op("transpose", _by_head(ctx, t, n, what), perm=[0, 2, 1, 3])
                 for t, n, what in ((q, q_heads, "Q"), (k, kv_heads, "K"),
                                    (v, kv_heads, "V")))  # type: ignore[return-value]


def _by_head(ctx: Context, x: Value, heads: int, what: str) -> Value:
    """[batch, seq, hidden] as [batch, seq, heads, hidden / heads]."""
    batch, seq, hidden = x.type.dims
    if hidden.const is None or heads <= 0 or hidden.const % heads:
        raise ctx.error(f"{what}'s hidden size {hidden} does not split into {heads} heads")
    return ctx.op("reshape", x, shape=[batch, seq, Dim.of(heads), Dim.of(hidden.const // heads)])


def _root_scale(ctx: Context, head: Dim, dt: DType) -> float:
    """sqrt(scale), rounded to the inputs' type as the reference rounds it; the scale is
    1/sqrt(head size) unless given."""
    scale = ctx.attr("scale")
    if scale is None:
        if head.const is None:
            raise ctx.error(f"the head size {head} is symbolic: give the scale attribute")
        scale = 1.0 / math.sqrt(head.const)
    return float(dt.np_dtype.type(np.sqrt(np.float64(scale))))


def _repeat(ctx: Context, x: Value, q_heads: Dim) -> Value:
    """K or V with each of its heads repeated for the query heads that share it (grouped-query
    attention: query head h reads key head h // (q_heads / kv_heads))."""
    batch, kv_heads, seq, size = x.type.dims
    if kv_heads == q_heads:
        return x
    if q_heads.const is None or kv_heads.const is None or q_heads.const % kv_heads.const:
        raise ctx.error(f"{q_heads} query heads do not share {kv_heads} key/value heads "
                        f"evenly")
    rep = q_heads.const // kv_heads.const
    wide = ctx.op("broadcast", x, shape=[batch, kv_heads, Dim.of(rep), seq, size],
                  dims=[0, 1, 3, 4])
    return ctx.op("reshape", wide, shape=[batch, q_heads, seq, size])


def _softmax(ctx: Context, x: Value) -> Value:
    """The softmax over the last axis, rows that are all -inf giving zeros as the reference's do
    (composite.softmax_values); softmax_precision rounds the scores to its type first and the
    probabilities to it after."""
    work = x.type.dtype
    prec = ctx.attr("softmax_precision")
    if prec is not None:
        x = ctx.cast(x, onnx_dtype(int(prec), "softmax_precision"))
    rounded = x.type.dtype
    p = softmax_values(ctx, ctx.widen(x), x.type.rank - 1, empty_rows=True)
    return ctx.cast(ctx.cast(p, rounded), work)


def _bias(ctx: Context, like: Value, q_len: Dim, kv_len: Dim, past: Dim,
          nonpad: Value | None) -> Value | None:
    """The additive bias of the scores (0 where a key may be attended, -inf where not, or the
    float mask's values), or None without any mask: the mask padded to the keys, the causal
    frontier, the sliding window and the padded keys, summed, each broadcast as NumPy does."""
    parts: list[Value] = []
    if ctx.has(3):
        parts.append(_mask(ctx, ctx.value(3), like, kv_len))
    causal = bool(ctx.attr("is_causal", 0))
    left, right = _window(ctx)
    if causal or left >= 0 or right >= 0:
        # diff = (i + offset) - j: how far key j lies before query i's absolute position
        diff = _frontier(ctx, q_len, kv_len, past, nonpad)
        allowed: list[Value] = []
        if causal:
            allowed.append(ctx.op("ge", diff, ctx.scalar(0, diff)))
        if left >= 0:
            allowed.append(ctx.op("le", diff, ctx.scalar(left, diff)))
        if right >= 0:
            allowed.append(ctx.op("ge", diff, ctx.scalar(-right, diff)))
        for a in allowed:
            parts.append(_additive(ctx, a, like))
    if nonpad is not None:
        j = ctx.op("iota", shape=[nonpad.type.dims[0], kv_len], axis=1, dtype=DType.I64)
        n = ctx.op("broadcast", ctx.cast(nonpad, DType.I64), shape=list(j.type.dims), dims=[0])
        keep = ctx.op("reshape", ctx.op("lt", j, n),
                      shape=[nonpad.type.dims[0], Dim.of(1), Dim.of(1), kv_len])
        parts.append(_additive(ctx, keep, like))
    if not parts:
        return None
    total = parts[0]
    for p in parts[1:]:
        a, b = ctx.broadcast_all([total, p])
        total = ctx.op("add", a, b)
    return total


def _window(ctx: Context) -> tuple[int, int]:
    """The sliding window's left and right sizes (-1: unbounded)."""
    return int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))


def _mask(ctx: Context, m: Value, like: Value, kv_len: Dim) -> Value:
    """attn_mask as an additive bias: booleans to 0 (attend) or -inf, floats as they are; a
    last axis shorter than the keys padded with False or -inf."""
    short = m.type.dims[-1]
    if short != kv_len:
        gap = kv_len - short
        if gap.const is None or gap.const < 0:
            raise ctx.error(f"attn_mask's last axis ({short}) must not be longer than the "
                            f"keys ({kv_len})")
        fill = False if m.type.dtype is DType.I1 else -_INF
        m = ctx.op("pad", m, low=[0] * m.type.rank, high=[0] * (m.type.rank - 1) + [gap.const],
                   mode="constant", value=fill)
    if m.type.dtype is DType.I1:
        return _additive(ctx, m, like)
    return ctx.cast(ctx.widen(m), like.type.dtype)


def _additive(ctx: Context, allowed: Value, like: Value) -> Value:
    """0 where ``allowed``, -inf elsewhere, in ``like``'s float type."""
    dt = like.type.dtype
    return ctx.op("select", allowed, ctx.splat(0.0, allowed, dt), ctx.splat(-_INF, allowed, dt))


def _frontier(ctx: Context, q_len: Dim, kv_len: Dim, past: Dim,
              nonpad: Value | None) -> Value:
    """(i + offset) - j over [q_len, kv_len], i64: offset the keys cached before the queries
    (past_key's length), or per batch the valid keys less the queries (nonpad_kv_seqlen,
    [batch, 1, q_len, kv_len])."""
    i = ctx.op("iota", shape=[q_len, kv_len], axis=0, dtype=DType.I64)
    j = ctx.op("iota", shape=[q_len, kv_len], axis=1, dtype=DType.I64)
    diff = ctx.op("sub", i, j)
    if nonpad is None:
        return diff if past == Dim.of(0) else ctx.op("add", diff, ctx.dim_value(past, diff))
    b = nonpad.type.dims[0]
    shape = [b, Dim.of(1), q_len, kv_len]
    valid = ctx.cast(nonpad, DType.I64)
    offset = ctx.op("sub", valid, ctx.dim_value(q_len, valid))
    return ctx.op("add", ctx.op("broadcast", diff, shape=shape, dims=[2, 3]),
                  ctx.op("broadcast", offset, shape=shape, dims=[0]))


@converts("RotaryEmbedding")
def rotary_embedding(ctx: Context) -> Sequence[Tensor]:
    """Rotary position embeddings (opset 23): each pair (x1, x2) of the first
    rotary_embedding_dim entries of a head -- its two halves, or neighbours when interleaved --
    turned by the angle whose cosine and sine the caches hold for its position (looked up by
    position_ids, or given per batch and position). Computed in f32 for 16-bit inputs."""
    x0 = ctx.value(0)
    x = ctx.widen(x0)
    rank = x.type.rank
    if rank == 4:
        x = ctx.op("transpose", x, perm=[0, 2, 1, 3])  # [batch, seq, heads, head size]
    elif rank == 3:
        heads = ctx.attr("num_heads")
        if not heads:
            raise ctx.error("a 3-D input needs the num_heads attribute")
        x = _by_head(ctx, x, int(heads), "the input")
    else:
        raise ctx.error(f"the input must be 3-D or 4-D, got rank {rank}")
    batch, seq, heads_dim, head = x.type.dims
    if head.const is None:
        raise ctx.error(f"the head size {head} must be static")
    rot = int(ctx.attr("rotary_embedding_dim", 0) or head.const)
    if rot % 2 or not 0 < rot <= head.const:
        raise ctx.error(f"rotary_embedding_dim {rot} must be even and at most the head size "
                        f"{head.const}")
    half = rot // 2
    cos, sin = ctx.widen(ctx.value(1)), ctx.widen(ctx.value(2))
    if ctx.has(3):  # caches by position: look each token's row up
        pos = ctx.value(3)
        cos, sin = (ctx.op("gather", c, pos, axis=0) for c in (cos, sin))
    for c in (cos, sin):
        if c.type.rank != 3 or c.type.dims[-1] != Dim.of(half):
            raise ctx.error(f"the caches must give [batch, seq, {half}] after the lookup, got "
                            f"{c.type}")
    lead = [batch, seq, heads_dim]
    cos, sin = (ctx.op("broadcast", c, shape=[*lead, Dim.of(half)], dims=[0, 1, 3])
                for c in (cos, sin))

    def part(start: int, size: int, stride: int) -> Value:
        return ctx.op("slice", x, start=[0, 0, 0, start], size=[*lead, Dim.of(size)],
                      stride=[1, 1, 1, stride])
    interleaved = bool(ctx.attr("interleaved", 0))
    x1, x2 = (part(0, half, 2), part(1, half, 2)) if interleaved else \
        (part(0, half, 1), part(half, half, 1))
    real = ctx.op("sub", ctx.op("mul", cos, x1), ctx.op("mul", sin, x2))
    imag = ctx.op("add", ctx.op("mul", sin, x1), ctx.op("mul", cos, x2))
    if interleaved:  # real and imaginary parts back to alternate places
        pairs = [ctx.op("reshape", t, shape=[*lead, Dim.of(half), Dim.of(1)]) for t in (real, imag)]
        turned = ctx.op("reshape", ctx.op("concat", *pairs, axis=4), shape=[*lead, Dim.of(rot)])
    else:
        turned = ctx.op("concat", real, imag, axis=3)
    y = turned if rot == head.const else \
        ctx.op("concat", turned, part(rot, head.const - rot, 1), axis=3)
    y = ctx.op("transpose", y, perm=[0, 2, 1, 3]) if rank == 4 else \
        ctx.op("reshape", y, shape=list(x0.type.dims))
    return [ctx.cast(y, x0.type.dtype)]
