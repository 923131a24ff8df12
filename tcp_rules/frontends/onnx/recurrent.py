"""ONNX's recurrent layers: RNN, GRU and LSTM (forward, reverse, bidirectional; batch-major or
sequence-major layout; initial states, biases, peepholes, sequence lengths, clip (on the gates'
inputs, as onnxruntime reads it: not on h(C), the LSTM's output activation), every activation
the operators name). TCP has no loop, so the recurrence is unrolled over the
sequence, which must be static (the batch may be symbolic): the input's projection for every
step is one matmul up front, then each step multiplies the state by R and applies the gates.
A batch entry past its sequence length keeps its state, and its outputs there are zeros.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from tcp_rules import build as tb
from tcp_rules.frontends.onnx.composite import matmul_values
from tcp_rules.frontends.onnx.context import Context, Tensor, converts
from tcp_rules.frontends.onnx.elementwise import (
    elu_of,
    hard_sigmoid_of,
    leaky_of,
    relu_of,
    softplus_of,
    softsign_of,
    thresholded_of,
)
from tcp_rules.ir import Value
from tcp_rules.types import Dim, DType, TensorType

Activation = Callable[[Value], Value]
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


Shaped = Callable[[Context, Value, float, float], Value]  # (ctx, x, alpha, beta)
# name (lower case): (default alpha, default beta, f); a None default takes no such parameter
# (the activation_alpha and activation_beta lists run over those that take them, in order)
ACTIVATIONS: dict[str, tuple[float | None, float | None, Shaped]] = {
    "relu": (None, None, lambda ctx, x, a, b: relu_of(ctx, x)),
    "tanh": (None, None, lambda ctx, x, a, b: ctx.op("tanh", x)),
    "sigmoid": (None, None, lambda ctx, x, a, b: ctx.op("sigmoid", x)),
    "affine": (1.0, 0.0, lambda ctx, x, a, b: ctx.op(
        "add", ctx.op("mul", x, ctx.scalar(a, x)), ctx.scalar(b, x))),
    "leakyrelu": (0.01, None, lambda ctx, x, a, b: leaky_of(ctx, x, a)),
    "thresholdedrelu": (1.0, None, lambda ctx, x, a, b: thresholded_of(ctx, x, a)),
    "scaledtanh": (1.0, 1.0, lambda ctx, x, a, b: ctx.op(
        "mul", ctx.scalar(a, x), ctx.op("tanh", ctx.op("mul", x, ctx.scalar(b, x))))),
    "hardsigmoid": (0.2, 0.5, lambda ctx, x, a, b: hard_sigmoid_of(ctx, x, a, b)),
    "elu": (1.0, None, lambda ctx, x, a, b: elu_of(ctx, x, a)),
    "softsign": (None, None, lambda ctx, x, a, b: softsign_of(ctx, x)),
    "softplus": (None, None, lambda ctx, x, a, b: softplus_of(ctx, x)),
}


def _activations(ctx: Context, op: str, directions: int) -> list[list[Activation]]:
    """Each direction's activations (f, g[, h]), with their alphas and betas in order."""
    names = list(ctx.attr("activations", DEFAULTS[op] * directions))
    per = len(DEFAULTS[op])
    if len(names) != per * directions:
        raise ctx.error(f"activations {names} must be {per * directions} names")
    alphas, betas = list(ctx.attr("activation_alpha", [])), list(ctx.attr("activation_beta", []))
    out: list[Activation] = []
    for name in names:
        if name.lower() not in ACTIVATIONS:
            raise ctx.error(f"activation {name!r} is not one of the operators' activations")
        da, db, fn = ACTIVATIONS[name.lower()]
        a = alphas.pop(0) if da is not None and alphas else da
        b = betas.pop(0) if db is not None and betas else db
        out.append(functools.partial(_apply, ctx, fn, a or 0.0, b or 0.0))
    return [out[d * per:(d + 1) * per] for d in range(directions)]


def _apply(ctx: Context, fn: Shaped, a: float, b: float, x: Value) -> Value:
    return fn(ctx, x, a, b)


def _part(ctx: Context, v: Value, axis: int, index: int, count: int) -> Value:
    """Part ``index`` of ``count`` equal parts of ``v`` along the static ``axis``."""
    dims = list(v.type.dims)
    size = dims[axis].const
    assert size is not None and size % count == 0
    step = size // count
    start = [0] * len(dims)
    start[axis] = index * step
    dims[axis] = Dim.of(step)
    return ctx.op("slice", v, start=start, size=dims, stride=[1] * len(dims))


def _sequence(ctx: Context) -> tuple[Value, int, Dim, DType]:
    """X as [seq, batch, input] (layout 1 is batch-major), its static length and batch."""
    x = ctx.widen(ctx.value(0))
    if x.type.rank != 3:
        raise ctx.error(f"X must be of rank 3, got {x.type}")
    if ctx.attr("layout", 0):
        x = ctx.op("transpose", x, perm=[1, 0, 2])
    steps = x.type.dims[0].const
    if steps is None:
        raise ctx.error(f"the sequence length {x.type.dims[0]} must be static: the recurrence "
                        f"is unrolled")
    return x, steps, x.type.dims[1], x.type.dtype


@converts("RNN", "GRU", "LSTM")
def recurrent(ctx: Context) -> Sequence[Tensor]:
    """Y [seq, directions, batch, hidden], Y_h and (LSTM) Y_c [directions, batch, hidden]
    (batch-major with layout 1); f16/bf16 computed in f32 and rounded once."""
    assert ctx.node is not None
    op = ctx.node.op_type
    dt0 = ctx.value(0).type.dtype
    x, steps, batch, dt = _sequence(ctx)
    direction = str(ctx.attr("direction", "forward"))
    if direction not in ("forward", "reverse", "bidirectional"):
        raise ctx.error(f"direction {direction!r} is not forward, reverse or bidirectional")
    dirs = 2 if direction == "bidirectional" else 1
    hidden = int(ctx.attr("hidden_size", 0))
    g = GATES[op]
    w, r = ctx.cast(ctx.value(1), dt), ctx.cast(ctx.value(2), dt)
    want = [Dim.of(dirs), Dim.of(g * hidden)]
    if hidden < 1 or list(w.type.dims[:2]) != want or list(r.type.dims) != [*want,
                                                                             Dim.of(hidden)]:
        raise ctx.error(f"W {w.type} and R {r.type} must be [{dirs}, {g * hidden}, input] and "
                        f"[{dirs}, {g * hidden}, {hidden}] for hidden_size {hidden}")
    acts = _activations(ctx, op, dirs)
    lengths = ctx.cast(ctx.value(4), DType.I64) if ctx.has(4) else None
    state_shape = [Dim.of(dirs), batch, Dim.of(hidden)]

    def initial(i: int) -> Value | None:
        if not ctx.has(i):
            return None
        v = ctx.value(i)
        v = ctx.op("transpose", v, perm=[1, 0, 2]) if ctx.attr("layout", 0) else v
        return ctx.cast(v, dt)

    h0, c0 = initial(5), initial(6) if op == "LSTM" else None
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        run = _Direction(ctx, op, x, batch, hidden, d, acts[d], lengths, steps)
        y, h, c = run.go(w, r, h0, c0, reverse)
        ys.append(y)
        hs.append(h)
        cs.append(c)
    y = ys[0] if dirs == 1 else ctx.op("concat", *ys, axis=1)  # [seq, dirs, batch, hidden]
    yh = _stack(ctx, hs, state_shape)
    outs = [y, yh] + ([_stack(ctx, cs, state_shape)] if op == "LSTM" else [])
    if ctx.attr("layout", 0):  # batch-major: Y [batch, seq, dirs, hidden], states [batch, ...]
        outs = [ctx.op("transpose", outs[0], perm=[2, 0, 1, 3]),
                *(ctx.op("transpose", s, perm=[1, 0, 2]) for s in outs[1:])]
    return [ctx.cast(v, dt0) for v in outs]


def _stack(ctx: Context, states: list[Value], shape: list[Dim]) -> Value:
    parts = [ctx.op("reshape", s, shape=[Dim.of(1), *s.type.dims]) for s in states]
    out = parts[0] if len(parts) == 1 else ctx.op("concat", *parts, axis=0)
    assert list(out.type.dims) == shape
    return out


class _Direction:
    """One direction of a recurrent layer, unrolled."""

    def __init__(self, ctx: Context, op: str, x: Value, batch: Dim, hidden: int, d: int,
                 acts: list[Activation], lengths: Value | None, steps: int):
        self.ctx, self.op, self.x, self.batch, self.hidden = ctx, op, x, batch, hidden
        self.d, self.acts, self.lengths, self.steps = d, acts, lengths, steps
        clip = ctx.attr("clip")
        self.clip = None if clip is None else float(clip)

    def _dir(self, v: Value) -> Value:
        """Direction d's slice of a [directions, ...] input, without that axis."""
        part = _part(self.ctx, v, 0, self.d, v.type.dims[0].const or 1)
        return self.ctx.op("reshape", part, shape=list(v.type.dims[1:]))

    def _clip(self, v: Value) -> Value:
        if self.clip is None:
            return v
        return self.ctx.op("clamp", v, min=-self.clip, max=self.clip)

    def go(self, w: Value, r: Value, h0: Value | None, c0: Value | None, reverse: bool
           ) -> tuple[Value, Value, Value]:
        ctx, hidden, g = self.ctx, self.hidden, GATES[self.op]
        wd, rd = self._dir(w), self._dir(r)  # [g*H, I], [g*H, H]
        steps, batch, dt = self.steps, self.batch, self.x.type.dtype
        # every step's input projection at once: [seq, batch, g*H]
        xw = matmul_values(ctx, self.x, ctx.op("transpose", wd, perm=[1, 0]))
        if ctx.has(3):  # Wb and Rb, summed (GRU keeps Rb of h apart with linear_before_reset)
            b = self._dir(ctx.cast(ctx.value(3), dt))
            wb, rb = _part(ctx, b, 0, 0, 2), _part(ctx, b, 0, 1, 2)
        else:
            wb = rb = _zeros([Dim.of(g * hidden)], dt)
        state = [batch, Dim.of(hidden)]
        h = self._dir(h0) if h0 is not None else _zeros(state, dt)
        c = self._dir(c0) if c0 is not None else _zeros(state, dt)
        peep = self._dir(ctx.cast(ctx.value(7), dt)) if self.op == "LSTM" and ctx.has(7) \
            else None
        rt = ctx.op("transpose", rd, perm=[1, 0])  # [H, g*H]
        outs: list[Value | None] = [None] * steps
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        for t in order:
            xt = ctx.op("reshape", _part(ctx, xw, 0, t, steps), shape=[batch, Dim.of(g * hidden)])
            xt = ctx.op("add", xt, ctx.broadcast_to(wb, xt.type.dims))
            h_new, c_new = self._cell(xt, h, c, rt, rb, peep)
            if self.lengths is not None:
                live = ctx.op("broadcast", ctx.op("gt", self.lengths, ctx.scalar(t, self.lengths)),
                              shape=state, dims=[0])
                h = ctx.op("select", live, h_new, h)
                c = ctx.op("select", live, c_new, c)
                outs[t] = ctx.op("select", live, h_new, _zeros(state, dt))
            else:
                h, c = h_new, c_new
                outs[t] = h
        parts = [ctx.op("reshape", o, shape=[Dim.of(1), Dim.of(1), *state]) for o in outs
                 if o is not None]
        y = parts[0] if len(parts) == 1 else ctx.op("concat", *parts, axis=0)
        return y, h, c

    def _cell(self, xt: Value, h: Value, c: Value, rt: Value, rb: Value, peep: Value | None
              ) -> tuple[Value, Value]:
        """One step: the new (H, C) from x W^T + Wb (``xt``) and the previous state."""
        ctx, hidden = self.ctx, self.hidden
        f = self.acts[0]

        def gate(v: Value, i: int, count: int) -> Value:
            return _part(ctx, v, 1, i, count)

        def bias(i: int, count: int) -> Value:
            return ctx.broadcast_to(_part(ctx, rb, 0, i, count), [self.batch, Dim.of(hidden)])

        if self.op == "GRU":
            # z and r from H R^T; h's part too only with linear_before_reset (else it is
            # (r H) Rh^T, and H Rh^T would be a third of each step's product for nothing)
            linear = bool(ctx.attr("linear_before_reset", 0))
            parts = 3 if linear else 2
            zr = rt if linear else ctx.op("slice", rt, start=[0, 0], size=[
                rt.type.dims[0], Dim.of(2 * hidden)], stride=[1, 1])
            hr = matmul_values(ctx, h, zr)  # [B, parts * H]
            z = f(self._clip(ctx.op("add", ctx.op("add", gate(xt, 0, 3), gate(hr, 0, parts)),
                                    bias(0, 3))))
            rr = f(self._clip(ctx.op("add", ctx.op("add", gate(xt, 1, 3), gate(hr, 1, parts)),
                                     bias(1, 3))))
            if linear:
                lin = ctx.op("mul", rr, ctx.op("add", gate(hr, 2, 3), bias(2, 3)))
            else:
                rh = _part(ctx, rt, 1, 2, 3)  # [H, H]
                lin = ctx.op("add", matmul_values(ctx, ctx.op("mul", rr, h), rh), bias(2, 3))
            hh = self.acts[1](self._clip(ctx.op("add", gate(xt, 2, 3), lin)))
            one = ctx.scalar(1.0, z)
            return ctx.op("add", ctx.op("mul", ctx.op("sub", one, z), hh),
                          ctx.op("mul", z, h)), c
        pre = ctx.op("add", ctx.op("add", xt, matmul_values(ctx, h, rt)),
                     ctx.broadcast_to(rb, xt.type.dims))
        if self.op == "RNN":
            return f(self._clip(pre)), c
        gi, go, gf, gc = (gate(pre, k, 4) for k in range(4))  # i, o, f, c

        def peeped(v: Value, k: int, state: Value) -> Value:
            if peep is None:
                return v
            p = ctx.broadcast_to(_part(ctx, peep, 0, k, 3), v.type.dims)
            return ctx.op("add", v, ctx.op("mul", p, state))

        i = f(self._clip(peeped(gi, 0, c)))
        if ctx.attr("input_forget", 0):
            fg = ctx.op("sub", ctx.scalar(1.0, i), i)
        else:
            fg = f(self._clip(peeped(gf, 2, c)))
        cand = self.acts[1](self._clip(gc))
        c_new = ctx.op("add", ctx.op("mul", fg, c), ctx.op("mul", i, cand))
        o = f(self._clip(peeped(go, 1, c_new)))
        return ctx.op("mul", o, self.acts[2](c_new)), c_new


def _zeros(dims: list[Dim], dt: DType) -> Value:
    return tb.make_splat(0.0, TensorType(dt, tuple(dims)))
