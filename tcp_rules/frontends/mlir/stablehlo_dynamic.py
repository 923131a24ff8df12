"""JAX's shape-polymorphic StableHLO (``jax.export.symbolic_args_specs``): dims as values.

JAX passes each symbolic dim as a ``tensor<i32>`` argument marked ``{jax.global_constant = "b"}``
and builds shapes from it (``reshape``, ``concatenate``, ``multiply`` of such scalars and
constants). Here those values are read back as dims: the argument is the symbol ``b`` (unified
with the ``?`` dims of the tensors it sizes), a shape tensor is the list of its elements' dims,
and ``dynamic_broadcast_in_dim`` / ``dynamic_reshape`` / ``dynamic_iota`` are ``broadcast`` /
``reshape`` / ``iota`` to those dims. The argument stays a parameter of the function (an i32
scalar nothing reads)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tcp_rules.frontends import identifier
from tcp_rules.frontends.mlir.attrs import error, integer
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.stablehlo_movement import (
    attribute,
    broadcast_in_dim,
    declared,
    declared_dims,
    keyword,
    operands,
    result_dtype,
)
from tcp_rules.frontends.mlir.syntax import Op, Str
from tcp_rules.frontends.mlir.views import OpView, view
from tcp_rules.ir import Apply, Param
from tcp_rules.ir import Value as TValue
from tcp_rules.types import DenseData, Dim, dims_product

_ARITH = {"add": Dim.__add__, "sub": Dim.__sub__, "mul": Dim.__mul__}


def shape_dims(ctx: FuncContext, v: TValue, op: Op) -> list[Dim]:
    """The dims a rank-0 or rank-1 integer tensor holds, element by element."""
    if v.type.rank > 1 or not v.type.dtype.is_int:
        raise error(f"{op.name}: a shape must be an integer vector, not {v.type}", op.span)
    if isinstance(v, Param) and v.type.rank == 0:
        return [ctx.dim(Dim.of(_dim_name(ctx, v)))]
    if isinstance(v, Apply):
        name, a = v.op.name, v.attr_map
        n = v.type.dims[0].const if v.type.rank else 1
        if name == "splat" and n is not None:
            return [Dim.of(int(a["value"]))] * n
        if name == "dense":
            data: DenseData = a["value"]
            return [Dim.of(int(x)) for x in data.array.reshape(-1)]
        if name in ("reshape", "cast"):
            return shape_dims(ctx, v.operands[0], op)
        if name == "concat":
            return [d for x in v.operands for d in shape_dims(ctx, x, op)]
        if name in _ARITH:
            xs, ys = (shape_dims(ctx, x, op) for x in v.operands)
            return [ctx.dim(_ARITH[name](x, y)) for x, y in zip(xs, ys, strict=True)]
    raise error(f"{op.name}: cannot read its shape operand as dims (JAX's dim arguments, "
                f"constants, reshape, concatenate, add, subtract, multiply)", op.span)


def _dim_name(ctx: FuncContext, p: Param) -> str:
    """The name JAX gave a dim argument (``jax.global_constant``), else the parameter's."""
    for fn in ctx.funcs.values():
        for arg in fn.args:
            entry = arg.attrs.get("jax.global_constant") if arg.attrs is not None else None
            if identifier(arg.name) == p.param and entry is not None and entry.value \
                    and isinstance(entry.value[0], Str):
                return identifier(entry.value[0].value)
    return p.param


def _dynamic_broadcast_in_dim(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    x, shape = operands(ctx, v, 2)
    return [broadcast_in_dim(ctx, op, v, x, shape_dims(ctx, shape, op))]


def _result_dims(ctx: FuncContext, op: Op, v: OpView, shape: TValue) -> list[Dim]:
    """The dims of ``shape``, unified with the static ones of the declared result type."""
    sizes = shape_dims(ctx, shape, op)
    want = declared_dims(v)
    if len(sizes) != len(want):
        raise error(f"{op.name}: the shape has {len(sizes)} dims, the result type "
                    f"{len(want)}", op.span)
    for s, w in zip(sizes, want, strict=True):
        if w is not None:
            ctx.unify(s, Dim.of(w))
    return sizes


def _dynamic_reshape(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    x, shape = operands(ctx, v, 2)
    sizes = _result_dims(ctx, op, v, shape)
    have, get = dims_product(x.type.dims), dims_product(sizes)
    if have != get and len(have.terms) == len(get.terms) == 1:
        (m1, c1), (m2, c2) = have.terms[0], get.terms[0]
        if c1 == c2 and len(m1) == len(m2) == 1:  # c*s1 elements as c*s2: s1 is s2
            ctx.unify(Dim.of(m1[0]), Dim.of(m2[0]))
    return [ctx.apply("reshape", [x], {"shape": sizes}, op, declared(v))]


def _dynamic_iota(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``dynamic_iota %shape, dim = 0`` (``jnp.arange(x.shape[0])``): TCP's iota over the
    shape's dims."""
    v = view(op)
    (shape,) = operands(ctx, v, 1)
    sizes = _result_dims(ctx, op, v, shape)
    entry = attribute(op, "iota_dimension")
    axis = integer(entry.value if entry is not None else keyword(op, "dim") or [], op.span,
                   "iota dim")
    if not 0 <= axis < len(sizes):
        raise error(f"{op.name}: dim {axis} is out of range for rank {len(sizes)}", op.span)
    return [ctx.apply("iota", [], {"shape": sizes, "axis": axis, "dtype": result_dtype(v)},
                      op, declared(v))]


DYNAMIC: Mapping[str, Handler] = {
    "stablehlo.dynamic_broadcast_in_dim": _dynamic_broadcast_in_dim,
    "stablehlo.dynamic_reshape": _dynamic_reshape,
    "stablehlo.dynamic_iota": _dynamic_iota,
}
