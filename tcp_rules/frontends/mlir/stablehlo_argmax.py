"""The variadic ``reduce`` that ``jnp.argmax``/``jnp.argmin`` lower to, read as TCP ops.

JAX reduces the values and an ``iota`` along the axis together, with a body that keeps the
larger (smaller) value, a NaN before anything, and the lower index on ties. That is, for the
values ``m = reduce_max(x)`` and the index ``reduce_min(select(x == m or x != x, iota, n))``:
the first position of the maximum, or of the first NaN (where ``m`` is NaN). The body must be
JAX's, op for op (compared up to renaming); any other variadic reduce is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tcp_rules.build import Literal
from tcp_rules.frontends.mlir.attrs import error
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.stablehlo_movement import MOVEMENT, ints
from tcp_rules.frontends.mlir.syntax import Block, Group, Op, Region, Value, Word
from tcp_rules.frontends.mlir.views import before, view
from tcp_rules.ir import Apply
from tcp_rules.ir import Value as TValue
from tcp_rules.types import DenseData

_COMPARE = ("EQ", "NE", "LT", "LE", "GT", "GE")


def _body(direction: str) -> list[str]:
    """JAX's argmax (GT) / argmin (LT) body; a0, a1 the values, a2, a3 their indices."""
    return [f"compare(a0,a1){direction}", "compare(a0,a0)NE", "or(r0,r1)", "compare(a0,a1)EQ",
            "compare(a2,a3)LT", "and(r3,r4)", "or(r2,r5)", "select(r2,a0,a1)",
            "select(r6,a2,a3)", "return(r7,r8)"]


def _fingerprint(block: Block, args: Sequence[str]) -> list[str]:
    names = {a: f"a{i}" for i, a in enumerate(args)}
    out = []
    for k, o in enumerate(block.ops):
        v = view(o)
        ins = ",".join(names.get(e.name, "?") for e in v.operands)
        words = "".join(w.text for w in v.words if w.text in _COMPARE)
        out.append(f"{o.name.split('.')[-1]}({ins}){words}")
        for r in o.results:
            names[r] = f"r{k}"
    return out


def _reduce(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``reduce``: one operand by stablehlo_movement.py, two as an argmax or argmin."""
    head, _ = before(op.body, ":")
    groups = [e for e in head if isinstance(e, Group) and e.open == "("]
    if op.generic:
        names = [e for e in view(op).operands]
    elif len(groups) == 2:
        names = [e for g in groups for e in g.items if isinstance(e, Value)]
        names = [names[0], names[2], names[1], names[3]] if len(names) == 4 else names
    else:
        return MOVEMENT["stablehlo.reduce"](ctx, op)
    if len(names) != 4:
        return MOVEMENT["stablehlo.reduce"](ctx, op)
    return _arg_reduce(ctx, op, [ctx.operand(e) for e in names])


def _arg_reduce(ctx: FuncContext, op: Op, values: list[TValue]) -> Sequence[Result]:
    x, idx, init, init_idx = values
    refused = error(f"{op.name} of several operands is read only as JAX's argmax or argmin "
                    f"(values and an iota, JAX's body, identity inits)", op.span)
    regions = op.regions()
    if len(regions) != 1 or len(regions[0].blocks) != 1:
        raise refused
    args = _block_args(op, regions[0])
    dims = ints(op, "dimensions", "dimensions")
    if len(dims) != 1 or len(args) != 4 or not 0 <= dims[0] < x.type.rank:
        raise refused
    axis = dims[0]
    print_ = _fingerprint(regions[0].blocks[0], args)
    direction = "GT" if print_ == _body("GT") else "LT" if print_ == _body("LT") else None
    n = x.type.dims[axis].const
    if direction is None or n is None or not _is_iota(idx, axis) \
            or not _is_splat(init, -np.inf if direction == "GT" else np.inf, x) \
            or not _is_splat(init_idx, 0, idx):
        raise refused
    kind = "reduce_max" if direction == "GT" else "reduce_min"
    m = ctx.apply(kind, [x], {"axes": [axis], "keepdims": False}, op)
    wide = ctx.apply("broadcast", [m], {"shape": list(x.type.dims),
                                        "dims": [i for i in range(x.type.rank) if i != axis]}, op)
    hit = ctx.apply("select", [ctx.apply("eq", [x, wide], {}, op), Literal(True),
                               ctx.apply("ne", [x, x], {}, op)], {}, op)
    where = ctx.apply("select", [hit, idx, Literal(n)], {}, op)
    first = ctx.apply("reduce_min", [where], {"axes": [axis], "keepdims": False}, op)
    return [m, first]


def _block_args(op: Op, region: Region) -> list[str]:
    """The body's arguments as (value, value, index, index): generic ``^bb0(%x0, %i0, %x1,
    %i1)``, or pretty ``reducer(%x0, %x1) (%i0, %i1)``."""
    block = region.blocks[0]
    if block.args is not None:
        b = [e.name for e in block.args.items if isinstance(e, Value)]
        return [b[0], b[2], b[1], b[3]] if len(b) == 4 else b
    at = next((i for i, e in enumerate(op.body) if isinstance(e, Word) and e.text == "reducer"),
              None)
    if at is None:
        return []
    groups = [e for e in op.body[at + 1:] if isinstance(e, Group) and e.open == "("]
    return [e.name for g in groups for e in g.items if isinstance(e, Value)]


def _is_iota(v: TValue, axis: int) -> bool:
    if isinstance(v, Apply) and v.op.name == "iota":
        return bool(v.attr_map["axis"] == axis)
    if not (isinstance(v, Apply) and v.op.name == "dense") or v.type.shape is None:
        return False
    shape = v.type.shape
    ramp = np.arange(shape[axis]).reshape([-1 if i == axis else 1 for i in range(len(shape))])
    data: DenseData = v.attr_map["value"]
    return bool(np.array_equal(data.array, np.broadcast_to(ramp, shape)))


def _is_splat(v: TValue, value: float, like: TValue) -> bool:
    if not (isinstance(v, Apply) and v.op.name == "splat"):
        return False
    got = v.attr_map["value"]
    if not like.type.dtype.is_float and np.isinf(value):  # integers: their extremes
        info = np.iinfo(like.type.dtype.np_dtype)
        value = info.min if value < 0 else info.max
    return bool(got == value)


ARG_REDUCE: Mapping[str, Handler] = {"stablehlo.reduce": _reduce}
