"""The ``stablehlo`` dialect, as JAX writes it (``jax.jit(f).lower(*args)
.as_text()``), in pretty or generic form: the ops that map to TCP ops.

``OPS`` maps each op name to a handler ``(ctx, op) -> results``. Elementwise ops map one to one
(``exponential`` is ``exp``, ``logistic`` is ``sigmoid``, ...); ``compare`` is ``eq``..``ge`` (an
``UNSIGNED`` compare of signed integers compares them cast to unsigned; ``TOTALORDER`` is
refused); ``sign``, ``clamp`` and the ``i1`` ``and``/``or``/``not`` are built from select, eq,
max and min (exactly). A splat ``constant`` is a scalar splat, and a ``broadcast_in_dim`` of one is
the splat of the result shape; other constants are dense ones, a static ``iota`` TCP's. The
data movement ops, ``reduce``, ``dot_general`` and ``gather`` are read by
stablehlo_movement.py and stablehlo_dot.py, JAX's dim arguments and shape tensors by
stablehlo_dynamic.py. Any other op is refused by the importer with an error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tcp_rules.build import Literal
from tcp_rules.frontends.mlir.attrs import dense, error, integer, shaped
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.stablehlo_argmax import ARG_REDUCE
from tcp_rules.frontends.mlir.stablehlo_dot import DOT
from tcp_rules.frontends.mlir.stablehlo_dynamic import DYNAMIC
from tcp_rules.frontends.mlir.stablehlo_movement import (
    MOVEMENT,
    attribute,
    checked,
    declared,
    ints,
    keyword,
    operands,
    result_dtype,
    spread,
    static_shape,
)
from tcp_rules.frontends.mlir.syntax import Group, Op, Str, Word
from tcp_rules.frontends.mlir.views import before, view
from tcp_rules.ir import Value as TValue
from tcp_rules.types import DType

UNARY = {"negate": "neg", "abs": "abs", "exponential": "exp", "log": "log", "sqrt": "sqrt",
         "rsqrt": "rsqrt", "tanh": "tanh", "logistic": "sigmoid", "sine": "sin",
         "cosine": "cos", "floor": "floor", "ceil": "ceil", "round_nearest_even": "round_even",
         "round_nearest_afz": "round"}
BINARY = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div",
          "maximum": "max", "minimum": "min", "power": "pow", "atan2": "atan2"}
COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}
_UNSIGNED = {DType.I8: DType.U8, DType.I16: DType.U16, DType.I32: DType.U32,
             DType.I64: DType.U64}
_SIGNED = {u: s for s, u in _UNSIGNED.items()}


# elementwise -------------------------------------------------------------------------------

def _simple(ours: str, arity: int) -> Handler:
    def read(ctx: FuncContext, op: Op) -> Sequence[Result]:
        v = view(op)
        return [ctx.apply(ours, operands(ctx, v, arity), {}, op, declared(v))]
    return read


def _compare(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``compare LT, %a, %b, SIGNED`` or ``{comparison_direction = #stablehlo<comparison_direction
    LT>, compare_type = ...}``."""
    v = view(op)
    a, b = operands(ctx, v, 2)
    words = [w.text for w in v.words]
    for name in ("comparison_direction", "compare_type"):
        e = attribute(op, name)
        inner = e.value[0] if e is not None and e.value else None
        if isinstance(inner, Word) and inner.args:
            words.extend(w.text for w in inner.args[1:] if isinstance(w, Word))
    direction = next((w for w in words if w in COMPARE), None)
    if direction is None:
        raise error("stablehlo.compare needs a direction (EQ, NE, LT, LE, GT, GE)", op.span)
    kind = next((w for w in words if w in ("FLOAT", "SIGNED", "UNSIGNED", "TOTALORDER")), None)
    if kind == "TOTALORDER":
        raise error("stablehlo.compare TOTALORDER is not supported: tcp-rules' comparisons are "
                    "IEEE's (NaN compares unequal)", op.span)
    dt = a.type.dtype
    flip = _UNSIGNED if kind == "UNSIGNED" else _SIGNED if kind == "SIGNED" else {}
    if dt in flip:  # StableHLO's integers are signless: the compare says how to read them
        a, b = (ctx.apply("cast", [x], {"to": flip[dt]}, op) for x in (a, b))
    return [ctx.apply(COMPARE[direction], [a, b], {}, op, declared(v))]


def _select(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    p, a, b = operands(ctx, v, 3)
    return [ctx.apply("select", [spread(ctx, p, a, op), a, b], {}, op, declared(v))]


def _clamp(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``clamp %min, %x, %max``: min(max(x, min), max), the bounds rank 0 or of x's shape."""
    v = view(op)
    lo, x, hi = operands(ctx, v, 3)
    low = ctx.apply("max", [x, spread(ctx, lo, x, op)], {}, op)
    return [ctx.apply("min", [low, spread(ctx, hi, x, op)], {}, op, declared(v))]


def _sign(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """sign(x): 1 above 0, -1 below, else x itself (0, -0.0, NaN), as StableHLO says."""
    v = view(op)
    (x,) = operands(ctx, v, 1)
    neg = ctx.apply("select", [ctx.apply("lt", [x, Literal(0)], {}, op), Literal(-1), x], {}, op)
    return [ctx.apply("select", [ctx.apply("gt", [x, Literal(0)], {}, op), Literal(1), neg], {},
                      op, declared(v))]


def _logical(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``and``/``or`` of i1 tensors as selects, ``not`` as ``eq(x, false)`` (bitwise ops of
    integers are refused)."""
    v = view(op)
    name = op.name.split(".", 1)[1]
    xs = operands(ctx, v, 1 if name == "not" else 2)
    if xs[0].type.dtype is not DType.I1:
        raise error(f"{op.name} on {xs[0].type.dtype} is not supported: tcp-rules has no "
                    f"bitwise ops (only i1 {name} is read)", op.name_span)
    if name == "not":
        return [ctx.apply("eq", [xs[0], Literal(False)], {}, op, declared(v))]
    args: list[TValue | Literal] = [xs[0], xs[1], Literal(False)] if name == "and" \
        else [xs[0], Literal(True), xs[1]]
    return [ctx.apply("select", args, {}, op, declared(v))]


def _is_finite(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """is_finite(x) is ``x - x == 0``: 0 for every finite x, NaN for infinities and NaN."""
    v = view(op)
    (x,) = operands(ctx, v, 1)
    return [ctx.apply("eq", [ctx.apply("sub", [x, x], {}, op), Literal(0)], {}, op,
                      declared(v))]


def _reverse(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``reverse %x, dims = [..]``: a gather of the indices n-1, ..., 0 along each (static) dim."""
    v = view(op)
    (x,) = operands(ctx, v, 1)
    for axis in ints(op, "dims", "dimensions"):
        n = x.type.dims[axis].const if 0 <= axis < x.type.rank else None
        if n is None:
            raise error(f"{op.name}: dim {axis} must be a static axis of {x.type}", op.span)
        idx = ctx.apply("dense", [], {"value": np.arange(n - 1, -1, -1, dtype=np.int64),
                                      "dtype": DType.I64}, op)
        x = ctx.apply("gather", [x, idx], {"axis": axis}, op)
    checked(ctx, x, v)
    return [x]


def _convert(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    (x,) = operands(ctx, v, 1)
    to = result_dtype(v)
    if to is x.type.dtype:
        return [x]
    return [ctx.apply("cast", [x], {"to": to}, op, declared(v))]


# constants ---------------------------------------------------------------------------------

def _constant(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``constant dense<...> : t`` (generic: ``{value = dense<...> : t}``): a splat is a scalar
    splat; other data is a dense constant."""
    v = view(op)
    entry = attribute(op, "value")
    lit = entry.value[0] if entry is not None and entry.value else next(
        (e for e in before(op.body, ":")[0] if isinstance(e, Word) and e.text == "dense"), None)
    if lit is None:
        raise error("stablehlo.constant needs a dense<...> value", op.span)
    dtype, _ = shaped(declared(v), op.span, "type of stablehlo.constant")
    shape = static_shape(v)
    arr = dense(lit, dtype, shape, lit.span)
    is_splat = isinstance(lit, Word) and lit.args is not None and len(lit.args) == 1 \
        and not isinstance(lit.args[0], Group | Str)
    if is_splat or (arr.size == 1 and not shape):
        scalar = arr.reshape(-1)[0].item() if arr.size else 0
        return [ctx.apply("splat", [], {"value": scalar, "shape": shape, "dtype": dtype}, op)]
    return [ctx.apply("dense", [], {"value": arr, "dtype": dtype}, op)]


def _iota(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``iota dim = 0 : tensor<8xf32>``: 0, 1, 2, ... along the dim, TCP's iota."""
    v = view(op)
    entry = attribute(op, "iota_dimension")
    axis = integer(entry.value if entry is not None else keyword(op, "dim") or [], op.span,
                   "iota dim")
    dtype = result_dtype(v)
    shape = static_shape(v)
    if not 0 <= axis < len(shape):
        raise error(f"stablehlo.iota: dim {axis} is out of range for rank {len(shape)}",
                    op.span)
    return [ctx.apply("iota", [], {"shape": shape, "axis": axis, "dtype": dtype}, op)]


def _table() -> Mapping[str, Handler]:
    table: dict[str, Handler] = {}
    for name, ours in UNARY.items():
        table[f"stablehlo.{name}"] = _simple(ours, 1)
    for name, ours in BINARY.items():
        table[f"stablehlo.{name}"] = _simple(ours, 2)
    table.update({"stablehlo.compare": _compare, "stablehlo.select": _select,
                  "stablehlo.clamp": _clamp, "stablehlo.sign": _sign,
                  "stablehlo.and": _logical, "stablehlo.or": _logical,
                  "stablehlo.not": _logical, "stablehlo.convert": _convert,
                  "stablehlo.constant": _constant, "stablehlo.iota": _iota,
                  "stablehlo.is_finite": _is_finite, "stablehlo.reverse": _reverse})
    table.update(MOVEMENT)
    table.update(DOT)
    table.update(DYNAMIC)
    table.update(ARG_REDUCE)  # reduce: argmax/argmin, else the one-operand reduce
    return table


OPS: Mapping[str, Handler] = _table()
