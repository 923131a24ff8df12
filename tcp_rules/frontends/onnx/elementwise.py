"""ONNX elementwise ops: math, comparisons, logic, Where, Cast and the activations, written as
TCP ops with NumPy broadcasting made explicit."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tcp_rules.frontends.onnx.context import Context, Tensor, converts, onnx_dtype
from tcp_rules.ir import Value
from tcp_rules.types import DType

_UNARY = {"Abs": "abs", "Neg": "neg", "Exp": "exp", "Log": "log", "Sqrt": "sqrt",
          "Tanh": "tanh", "Sigmoid": "sigmoid", "Sin": "sin", "Cos": "cos", "Atan": "atan",
          "Erf": "erf", "Floor": "floor", "Ceil": "ceil", "Round": "round_even"}
_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow",
           "Equal": "eq", "Less": "lt", "LessOrEqual": "le", "Greater": "gt",
           "GreaterOrEqual": "ge"}
_VARIADIC = {"Max": "max", "Min": "min", "Sum": "add"}


@converts(*_UNARY)
def unary(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    return [ctx.op(_UNARY[ctx.node.op_type], ctx.value(0))]


@converts(*_BINARY)
def binary(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    a, b = ctx.broadcast_all([ctx.value(0), ctx.value(1)])
    if ctx.node.op_type == "Pow" and a.type.dtype != b.type.dtype:
        # ONNX lets the exponent have its own type and gives the base's: computed in the
        # float type of the two (an integer base to a float power rounds afterwards)
        wide = b.type.dtype if b.type.dtype.is_float else a.type.dtype
        y = ctx.op("pow", ctx.cast(a, wide), ctx.cast(b, wide))
        return [ctx.cast(y, a.type.dtype)]
    return [ctx.op(_BINARY[ctx.node.op_type], a, b)]


@converts("Mod")
def mod(ctx: Context) -> Sequence[Tensor]:
    """The integer remainder: with fmod=1, C's (x - trunc(x / y) * y, the dividend's sign),
    else Python's (the divisor's sign: the C remainder plus y where their signs differ). A
    zero divisor, which ONNX leaves undefined, gives x. Floating-point Mod is refused: its
    exact remainder is no composition of TCP's rounded ops."""
    a, b = ctx.broadcast_all([ctx.value(0), ctx.value(1)])
    if a.type.dtype.is_float or b.type.dtype.is_float:
        raise ctx.error(f"Mod of {a.type.dtype} needs an exact floating-point remainder, "
                        f"which TCP has no op for (integers are supported)")
    r = ctx.op("sub", a, ctx.op("mul", ctx.op("div", a, b), b))
    if ctx.attr("fmod", 0) or not a.type.dtype.is_signed:
        return [r]
    zero = ctx.scalar(0, r)
    differ = ctx.op("ne", ctx.op("lt", r, zero), ctx.op("lt", b, zero))
    fix = ctx.op("select", ctx.op("ne", r, zero), differ, ctx.splat(False, r, DType.I1))
    return [ctx.op("select", fix, ctx.op("add", r, b), r)]


@converts(*_VARIADIC, "Mean")
def variadic(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    vals = ctx.broadcast_all([ctx.value(i) for i in range(len(ctx.node.input)) if ctx.has(i)])
    op = _VARIADIC.get(ctx.node.op_type, "add")
    acc = vals[0]
    for v in vals[1:]:
        acc = ctx.op(op, acc, v)
    if ctx.node.op_type == "Mean":
        acc = ctx.op("div", acc, ctx.scalar(len(vals), acc))
    return [acc]


@converts("Not")
def not_(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    return [ctx.op("eq", x, ctx.scalar(False, x))]


@converts("And", "Or", "Xor")
def logic(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    a, b = ctx.broadcast_all([ctx.value(0), ctx.value(1)])
    match ctx.node.op_type:
        case "And":
            return [ctx.op("select", a, b, ctx.scalar(False, b))]
        case "Or":
            return [ctx.op("select", a, ctx.scalar(True, b), b)]
    return [ctx.op("ne", a, b)]


@converts("Where")
def where(ctx: Context) -> Sequence[Tensor]:
    c, x, y = ctx.broadcast_all([ctx.value(0), ctx.value(1), ctx.value(2)])
    return [ctx.op("select", c, x, y)]


@converts("Cast")
def cast(ctx: Context) -> Sequence[Tensor]:
    to = onnx_dtype(ctx.attr("to"), f"{ctx.where()}: the target type")
    return [ctx.cast(ctx.value(0), to)]


@converts("CastLike")
def cast_like(ctx: Context) -> Sequence[Tensor]:
    """Input 0 in input 1's type. A constant stays a constant: only input 1's type is read, so
    a constant cast like a run-time tensor (ONNX's functions cast -inf like the scores) can
    still be a shape argument or Pad's constant_value."""
    x, like = ctx.tensor(0), ctx.value(1)
    if isinstance(x, np.ndarray) and x.dtype != object:
        return [x.astype(like.type.dtype.np_dtype)]
    return [ctx.cast(ctx.value(0), like.type.dtype)]


@converts("Identity", "Dropout")
def identity(ctx: Context) -> Sequence[Tensor]:
    # Dropout in inference (no training_mode input set true) is the identity; its mask, when
    # asked for, is all true.
    assert ctx.node is not None
    if ctx.node.op_type == "Dropout" and ctx.has(2):
        mode = ctx.const(2, "training_mode")
        if bool(mode.ravel()[0]):
            raise ctx.error("Dropout in training mode is random; TCP programs are "
                            "deterministic")
    x = ctx.tensor(0)
    outs: list[Tensor] = [x]
    if ctx.node.op_type == "Dropout" and len(ctx.node.output) > 1 and ctx.node.output[1]:
        outs.append(ctx.splat(True, ctx.as_value(x), DType.I1))
    return outs


@converts("Reciprocal")
def reciprocal(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    return [ctx.op("div", ctx.scalar(1.0, x), x)]


@converts("IsNaN")
def isnan(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    return [ctx.op("ne", x, x)]


@converts("IsInf")
def isinf(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    pos, neg = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    tests = []
    if pos:
        tests.append(ctx.op("eq", x, ctx.scalar(math.inf, x)))
    if neg:
        tests.append(ctx.op("eq", x, ctx.scalar(-math.inf, x)))
    if not tests:
        return [ctx.splat(False, x, DType.I1)]
    return [tests[0] if len(tests) == 1 else ctx.op("select", tests[0], tests[0], tests[1])]


@converts("Sign")
def sign(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    pos = ctx.op("cast", ctx.op("gt", x, ctx.scalar(0, x)), to=x.type.dtype)
    neg = ctx.op("cast", ctx.op("lt", x, ctx.scalar(0, x)), to=x.type.dtype)
    return [ctx.op("sub", pos, neg)]


# activations --------------------------------------------------------------------------------

# The activations as functions of a value, shared with the recurrent layers' (recurrent.py).

def relu_of(ctx: Context, x: Value) -> Value:
    return ctx.op("max", x, ctx.scalar(0, x))


@converts("Relu")
def relu(ctx: Context) -> Sequence[Tensor]:
    return [relu_of(ctx, ctx.value(0))]


def leaky_of(ctx: Context, x: Value, alpha: float) -> Value:
    neg = ctx.op("lt", x, ctx.scalar(0.0, x))
    return ctx.op("select", neg, ctx.op("mul", x, ctx.scalar(alpha, x)), x)


@converts("LeakyRelu")
def leaky_relu(ctx: Context) -> Sequence[Tensor]:
    return [leaky_of(ctx, ctx.value(0), ctx.attr("alpha", 0.01))]


@converts("PRelu")
def prelu(ctx: Context) -> Sequence[Tensor]:
    x, slope = ctx.broadcast_all([ctx.value(0), ctx.value(1)])
    neg = ctx.op("lt", x, ctx.scalar(0.0, x))
    return [ctx.op("select", neg, ctx.op("mul", x, slope), x)]


def _expm1_scaled(ctx: Context, x: Value, alpha: float) -> Value:
    return ctx.op("mul", ctx.scalar(alpha, x), ctx.op("sub", ctx.op("exp", x), ctx.scalar(1.0, x)))


def elu_of(ctx: Context, x: Value, alpha: float) -> Value:
    """alpha (exp(x) - 1) below 0, x elsewhere."""
    return ctx.op("select", ctx.op("lt", x, ctx.scalar(0.0, x)), _expm1_scaled(ctx, x, alpha), x)


@converts("Elu", "Celu", "Selu")
def elu(ctx: Context) -> Sequence[Tensor]:
    assert ctx.node is not None
    kind = ctx.node.op_type
    alpha = ctx.attr("alpha", {"Elu": 1.0, "Celu": 1.0, "Selu": 1.67326319217681884765625}[kind])

    def f(x: Value) -> Value:
        neg = ctx.op("lt", x, ctx.scalar(0.0, x))
        if kind == "Celu":  # max(0,x) + min(0, alpha*(exp(x/alpha)-1))
            scaled = ctx.op("div", x, ctx.scalar(alpha, x))
            return ctx.op("select", neg, _expm1_scaled(ctx, scaled, alpha), x)
        out = elu_of(ctx, x, alpha)
        if kind == "Selu":
            out = ctx.op("mul", out, ctx.scalar(ctx.attr("gamma", 1.05070102214813232421875),
                                                out))
        return out
    return [ctx.in_f32(f)]


@converts("HardSigmoid", "HardSwish")
def hard_sigmoid(ctx: Context) -> Sequence[Tensor]:
    return [ctx.in_f32(lambda x: _hard_sigmoid(ctx, x))]


def _hard_sigmoid(ctx: Context, x: Value) -> Value:
    assert ctx.node is not None
    swish = ctx.node.op_type == "HardSwish"
    alpha = 1 / 6 if swish else ctx.attr("alpha", 0.2)
    beta = 0.5 if swish else ctx.attr("beta", 0.5)
    hs = hard_sigmoid_of(ctx, x, alpha, beta)
    return ctx.op("mul", x, hs) if swish else hs


def hard_sigmoid_of(ctx: Context, x: Value, alpha: float, beta: float) -> Value:
    lin = ctx.op("add", ctx.op("mul", x, ctx.scalar(alpha, x)), ctx.scalar(beta, x))
    return ctx.op("clamp", lin, min=0.0, max=1.0)


def softplus_of(ctx: Context, x: Value) -> Value:
    return ctx.op("log", ctx.op("add", ctx.op("exp", x), ctx.scalar(1.0, x)))


@converts("Softplus")
def softplus(ctx: Context) -> Sequence[Tensor]:
    return [ctx.in_f32(lambda x: softplus_of(ctx, x))]


@converts("Softsign")
def softsign(ctx: Context) -> Sequence[Tensor]:
    return [ctx.in_f32(lambda x: softsign_of(ctx, x))]


def softsign_of(ctx: Context, x: Value) -> Value:
    return ctx.op("div", x, ctx.op("add", ctx.op("abs", x), ctx.scalar(1.0, x)))


@converts("Swish")
def swish(ctx: Context) -> Sequence[Tensor]:
    """x * sigmoid(alpha * x)."""
    alpha = float(ctx.attr("alpha", 1.0))
    return [ctx.in_f32(lambda x: _swish(ctx, x, alpha))]


def _swish(ctx: Context, x: Value, alpha: float) -> Value:
    z = x if alpha == 1.0 else ctx.op("mul", x, ctx.scalar(alpha, x))
    return ctx.op("mul", x, ctx.op("sigmoid", z))


@converts("SwiGLU")
def swiglu(ctx: Context) -> Sequence[Tensor]:
    """Swish(A) * B, A and B of one shape (no broadcasting, as the operator says)."""
    a0, b0 = ctx.value(0), ctx.value(1)
    if a0.type != b0.type:
        raise ctx.error(f"SwiGLU's A and B must have one type and shape, got {a0.type} and "
                        f"{b0.type}")
    alpha = float(ctx.attr("alpha", 1.0))
    y = ctx.op("mul", _swish(ctx, ctx.widen(a0), alpha), ctx.widen(b0))
    return [ctx.cast(y, a0.type.dtype)]


@converts("Mish")
def mish(ctx: Context) -> Sequence[Tensor]:
    return [ctx.in_f32(lambda x: ctx.op("mul", x, ctx.op("tanh", softplus_of(ctx, x))))]


@converts("ThresholdedRelu")
def thresholded_relu(ctx: Context) -> Sequence[Tensor]:
    return [thresholded_of(ctx, ctx.value(0), ctx.attr("alpha", 1.0))]


def thresholded_of(ctx: Context, x: Value, alpha: float) -> Value:
    return ctx.op("select", ctx.op("gt", x, ctx.scalar(alpha, x)), x, ctx.scalar(0.0, x))


@converts("Gelu")
def gelu(ctx: Context) -> Sequence[Tensor]:
    return [ctx.in_f32(lambda x: _gelu(ctx, x, ctx.attr("approximate", "none") == "tanh"))]


def _gelu(ctx: Context, x: Value, tanh: bool) -> Value:
    half = ctx.op("mul", x, ctx.scalar(0.5, x))
    if tanh:
        cube = ctx.op("mul", ctx.op("mul", x, x), x)
        inner = ctx.op("add", x, ctx.op("mul", cube, ctx.scalar(0.044715, x)))
        t = ctx.op("tanh", ctx.op("mul", inner, ctx.scalar(math.sqrt(2 / math.pi), x)))
    else:
        t = ctx.op("erf", ctx.op("mul", x, ctx.scalar(1 / math.sqrt(2), x)))
    return ctx.op("mul", half, ctx.op("add", t, ctx.scalar(1.0, x)))


@converts("Clip")
def clip(ctx: Context) -> Sequence[Tensor]:
    x = ctx.value(0)
    bounds: dict[str, float | int] = {}
    for i, key, attr in ((1, "min", "min"), (2, "max", "max")):
        if ctx.opset < 11:
            if ctx.attr(attr) is not None:
                bounds[key] = ctx.attr(attr)
            continue
        if not ctx.has(i):
            continue
        t = ctx.tensor(i)
        if isinstance(t, Value):  # a bound known only at run time: max/min with it
            b = ctx.broadcast_to(t, x.type.dims)
            x = ctx.op("max" if key == "min" else "min", x, b)
            continue
        v = t.ravel()[0].item()
        bounds[key] = v
    if not bounds:
        return [x]
    if x.type.dtype.is_float and any(isinstance(v, float) and math.isnan(v)
                                      for v in bounds.values()):
        raise ctx.error("a NaN clip bound is not supported")
    if x.type.dtype.is_float:
        bounds = {k: float(v) for k, v in bounds.items()}
    lo, hi = bounds.get("min"), bounds.get("max")
    if lo is not None and hi is not None and lo > hi:  # ONNX: every element becomes max
        return [ctx.scalar(hi, x)]
    return [ctx.op("clamp", x, **bounds)]
