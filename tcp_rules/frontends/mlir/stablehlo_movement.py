"""StableHLO's data movement, reductions, ``dot_general`` and ``gather``, read as TCP ops (the
table is assembled in stablehlo.py), and the helpers both modules read ops with.

- ``broadcast_in_dim`` is ``broadcast`` (the same ``dims`` meaning); ``transpose``, ``reshape``,
  ``slice`` (``[start:limit:stride, ...]``) and ``concatenate`` map one to one;
- ``reduce`` whose body is one ``add``/``multiply``/``maximum``/``minimum`` of its two block
  arguments (written ``applies stablehlo.add``, or as a region) is ``reduce_sum``/``prod``/
  ``max``/``min``, combined with the init value unless that is the op's identity; ``and``/``or``
  bodies on i1 reduce the 0/1 values with min/max; any other body or a variadic reduce is refused;
- ``dot_general`` with at most one batching dim, at most one contracting dim and at most one
  free dim per side is ``matmul``, the operands transposed and reshaped into [B,] M x K and
  K x N (``dot`` is the unbatched case);
- ``gather`` of one index per point along one axis, whole slices elsewhere (what
  ``jnp.take(x, i, axis)`` lowers to) is our ``gather`` (indices clamp into range, as StableHLO
  clamps its start indices), transposed to StableHLO's result layout;
- ``pad`` with a constant value and no interior padding is ``pad`` (mode constant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tcp_rules.diagnostics import Span
from tcp_rules.frontends.mlir.attrs import error, int_array, integer, shaped
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.syntax import (
    Dict,
    Elem,
    Entry,
    Group,
    Op,
    Punct,
    Region,
    Value,
    Word,
)
from tcp_rules.frontends.mlir.views import OpView, before, named, render, split, view
from tcp_rules.ir import Apply
from tcp_rules.ir import Value as TValue
from tcp_rules.types import Dim, DType, dims_product

# reading an op's parts ---------------------------------------------------------------------

def declared(v: OpView) -> Elem | None:
    """The op's result type: after ``->``, or the last of a pretty form's one type list
    (``stablehlo.add %a, %b : tensor<4xf32>``; ``select``'s ``: tensor<4xi1>, tensor<4xf32>``)."""
    if v.result_types:
        return v.result_types[-1]
    return v.operand_types[-1] if v.operand_types else None


def attribute(op: Op, name: str) -> Entry | None:
    """An attribute from the op's dictionary or its properties ``<{...}>`` (either may hold it)."""
    for e in op.body:
        if isinstance(e, Dict) and e.get(name) is not None:
            return e.get(name)
    return None


def keyword(op: Op, name: str) -> list[Elem] | None:
    """A pretty form's ``name = value`` before the types (``dims = [0]``), or None."""
    head, _ = before(op.body, ":")
    found = named(head).get(name)
    return found[1] if found is not None else None


def operands(ctx: FuncContext, v: OpView, n: int) -> list[TValue]:
    """The op's ``n`` tensor operands."""
    if len(v.operands) != n:
        raise error(f"{v.op.name} takes {n} operand(s), given {len(v.operands)}", v.op.span)
    return [ctx.operand(e) for e in v.operands]


def result_dtype(v: OpView) -> DType:
    """The element type of the op's declared result."""
    t = declared(v)
    if t is None:
        raise error(f"{v.op.name}: expected its type after ':'", v.op.span)
    return shaped(t, v.op.span, "result type")[0]


def static_shape(v: OpView) -> list[int]:
    """The op's declared result shape, which must be static (constants, iota)."""
    _, dims = shaped(declared(v), v.op.span, "result type")
    if any(d is None for d in dims):
        raise error(f"{v.op.name}: its type must be static, not {render(declared(v) or [])}",
                    v.op.span)
    return [int(d) for d in dims if d is not None]


def checked(ctx: FuncContext, out: TValue, v: OpView) -> None:
    """``out`` agrees with the op's declared result type (when it declares one)."""
    t = declared(v)
    if t is not None:
        ctx.check(out, t, v.op)


def splat_to(ctx: FuncContext, x: TValue, shape: Sequence[Dim], op: Op) -> TValue | None:
    """``x`` spread to ``shape`` when ``x`` is a splat constant (else None): the splat of the
    new shape, so the optimizer sees a scalar literal."""
    if isinstance(x, Apply) and x.op.name == "splat":
        a = x.attr_map
        return ctx.apply("splat", [], {"value": a["value"], "shape": list(shape),
                                       "dtype": a["dtype"]}, op)
    return None


def spread(ctx: FuncContext, x: TValue, like: TValue, op: Op) -> TValue:
    """A rank-0 ``x`` broadcast to ``like``'s shape (``select``'s and ``clamp``'s scalars)."""
    if x.type.rank != 0 or like.type.rank == 0:
        return x
    return splat_to(ctx, x, like.type.dims, op) or ctx.apply(
        "broadcast", [x], {"shape": list(like.type.dims), "dims": []}, op)


def ints(op: Op, pretty: str, generic: str, default: tuple[int, ...] | None = None
         ) -> tuple[int, ...]:
    """An integer array written ``pretty = [1, 0]`` or as the attribute ``generic``."""
    items = keyword(op, pretty)
    if items is None:
        entry = attribute(op, generic)
        items = list(entry.value) if entry is not None else None
    if items is None:
        if default is not None:
            return default
        raise error(f"{op.name} needs {pretty} = [...] ({generic})", op.span)
    return int_array(items, op.span, f"{op.name} {pretty}")


def declared_dims(v: OpView) -> tuple[int | None, ...]:
    """The declared result's dims (None for ``?``)."""
    return shaped(declared(v), v.op.span, "result type")[1]


# data movement -----------------------------------------------------------------------------

def _broadcast_in_dim(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    (x,) = operands(ctx, v, 1)
    return [broadcast_in_dim(ctx, op, v, x, None)]


def broadcast_in_dim(ctx: FuncContext, op: Op, v: OpView, x: TValue,
                     sizes: Sequence[Dim] | None) -> TValue:
    """``x`` broadcast to the declared result type, its ``?`` dims from ``sizes`` (the shape
    operand of ``dynamic_broadcast_in_dim``) or else from the operand axis mapped there."""
    dims = ints(op, "dims", "broadcast_dimensions")
    want = declared_dims(v)
    if len(dims) != x.type.rank or any(not 0 <= d < len(want) for d in dims) \
            or (sizes is not None and len(sizes) != len(want)):
        raise error(f"{op.name}: dims {list(dims)} do not map the axes of {x.type} into rank "
                    f"{len(want)}", op.span)
    shape: list[Dim] = []
    for i, d in enumerate(want):
        src = x.type.dims[dims.index(i)] if i in dims else None
        given = sizes[i] if sizes is not None else None
        if given is not None and d is not None:
            ctx.unify(given, Dim.of(d))
        if d is None and given is None and (src is None or src == Dim.of(1)):
            raise error(f"{op.name}: result axis {i} is dynamic (?) and the operand does not "
                        f"size it", op.span)
        size = Dim.of(d) if d is not None else given if given is not None else src
        assert size is not None
        if src is not None and src != Dim.of(1) and src != size:
            ctx.unify(src, size)  # a symbolic operand dim is the result's size
        shape.append(size)
    if tuple(shape) == x.type.dims and list(dims) == list(range(x.type.rank)):
        return x
    out = splat_to(ctx, x, shape, op) or ctx.apply(
        "broadcast", [x], {"shape": shape, "dims": list(dims)}, op)
    checked(ctx, out, v)
    return out


def _transpose(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    (x,) = operands(ctx, v, 1)
    perm = ints(op, "dims", "permutation")
    return [ctx.apply("transpose", [x], {"perm": list(perm)}, op, declared(v))]


def _reshape(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    (x,) = operands(ctx, v, 1)
    want = declared_dims(v)
    shape = [Dim.of(d) if d is not None else _missing(x.type.dims, want, op) for d in want]
    if tuple(shape) == x.type.dims:
        return [x]
    return [ctx.apply("reshape", [x], {"shape": shape}, op, declared(v))]


def _missing(dims: Sequence[Dim], want: Sequence[int | None], op: Op) -> Dim:
    """The one ``?`` of a reshape's result: the operand's element count (a polynomial in its
    symbols) over the product of the result's static dims, where that divides it."""
    total = dims_product(dims)
    known = 1
    for w in want:
        known *= w if w is not None else 1
    if sum(w is None for w in want) == 1 and known and all(c % known == 0
                                                          for _, c in total.terms):
        out = Dim.of(0)
        for monomial, c in total.terms:
            term = Dim.of(c // known)
            for sym in monomial:
                term = term * Dim.of(sym)
            out = out + term
        return out
    raise error(f"{op.name}: cannot tell the dynamic (?) size of the result from the operand's "
                f"dims {[str(d) for d in dims]}", op.span)


def _slice(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``slice %x [1:3, 0:8:2]``, or ``start_indices``/``limit_indices``/``strides``."""
    v = view(op)
    (x,) = operands(ctx, v, 1)
    head, _ = before(op.body, ":")
    ranges = next((e for e in head if isinstance(e, Group) and e.open == "["), None)
    if ranges is not None:
        start, limit, stride = [], [], []
        for part in split(ranges.items):
            nums = [integer(e, e.span, "slice bound") for e in part
                    if not (isinstance(e, Punct) and e.text == ":")]
            if len(nums) not in (2, 3):
                raise error("stablehlo.slice: expected start:limit or start:limit:stride",
                            ranges.span)
            start.append(nums[0])
            limit.append(nums[1])
            stride.append(nums[2] if len(nums) == 3 else 1)
    else:
        start = list(ints(op, "start_indices", "start_indices"))
        limit = list(ints(op, "limit_indices", "limit_indices"))
        stride = list(ints(op, "strides", "strides", (1,) * len(start)))
    if not len(start) == len(limit) == len(stride) == x.type.rank or min(stride, default=1) < 1:
        raise error(f"{op.name}: expected {x.type.rank} ranges with positive strides", op.span)
    size = [Dim.of(max(0, -(-(hi - lo) // st))) for lo, hi, st in zip(start, limit, stride,
                                                                        strict=True)]
    return [ctx.apply("slice", [x], {"start": start, "size": size, "stride": stride}, op,
                      declared(v))]


def _concatenate(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    items = keyword(op, "dim")
    entry = attribute(op, "dimension")
    if items is None and entry is not None:
        items = list(entry.value)
    axis = integer(items or [], op.span, f"{op.name} dim")
    args: list[TValue] = [ctx.operand(e) for e in v.operands]
    return [ctx.apply("concat", list(args), {"axis": axis}, op, declared(v))]


def _pad(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``pad %x, %v, low = [..], high = [..], interior = [..]``: our ``pad`` with mode constant,
    when the padding value is a constant and there is no interior padding or cropping."""
    v = view(op)
    x, value = operands(ctx, v, 2)
    low = ints(op, "low", "edge_padding_low")
    high = ints(op, "high", "edge_padding_high")
    interior = ints(op, "interior", "interior_padding", (0,) * len(low))
    if any(interior) or min(low + high, default=0) < 0:
        raise error(f"{op.name} with interior padding or negative edges (cropping) is not "
                    f"supported", op.span)
    if not (isinstance(value, Apply) and value.op.name == "splat"):
        raise error(f"{op.name}: the padding value must be a constant", op.span)
    return [ctx.apply("pad", [x], {"low": list(low), "high": list(high), "mode": "constant",
                                   "value": value.attr_map["value"]}, op, declared(v))]


# reduce ------------------------------------------------------------------------------------

# the body's op -> our reduction (and/or of i1 reduce the 0/1 values)
_REDUCERS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
             "and": "min", "or": "max"}


def _reduce(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    x, init = _reduce_operands(ctx, op, v)
    body = _reduce_body(op, v)
    kind = _REDUCERS[body]
    if body in ("and", "or") and x.type.dtype is not DType.I1:
        raise error(f"{op.name}: a reduce with stablehlo.{body} is read only on i1", op.span)
    dims = ints(op, "dimensions", "dimensions")
    if len(set(dims)) != len(dims) or any(not 0 <= d < x.type.rank for d in dims):
        raise error(f"{op.name}: dimensions {list(dims)} are not distinct axes of {x.type}",
                    op.span)
    if x.type.dtype is DType.I1:  # reduce the 0/1 values, then read them back as i1
        x = ctx.apply("cast", [x], {"to": DType.I8}, op)
    out = ctx.apply(f"reduce_{kind}", [x], {"axes": sorted(dims), "keepdims": False}, op) \
        if dims else x
    if not _is_identity(init, kind):
        ours = {"sum": "add", "prod": "mul", "max": "max", "min": "min"}[kind]
        start = init if init.type.dtype is out.type.dtype else ctx.apply(
            "cast", [init], {"to": out.type.dtype}, op)
        out = ctx.apply(ours, [out, spread(ctx, start, out, op)], {}, op)
    if out.type.dtype is not init.type.dtype:  # i1, read back from the 0/1 values
        out = ctx.apply("cast", [out], {"to": init.type.dtype}, op)
    checked(ctx, out, v)
    return [out]


def _reduce_operands(ctx: FuncContext, op: Op, v: OpView) -> tuple[TValue, TValue]:
    """``reduce(%x init: %c)`` (pretty) or ``"stablehlo.reduce"(%x, %c)`` (generic)."""
    if op.generic:
        names = list(v.operands)
    else:
        groups = [e for e in before(op.body, ":")[0] if isinstance(e, Group) and e.open == "("]
        if len(groups) > 1:
            raise error(f"{op.name} of several operands (a variadic reduce, as argmax lowers "
                        f"to) is not supported", op.span)
        names = [e for e in groups[0].items if isinstance(e, Value)] if groups else []
    if len(names) != 2:
        raise error(f"{op.name} needs one operand and its init value, given {len(names)} "
                    f"value(s)", op.span)
    x, init = (ctx.operand(e) for e in names)
    if init.type.rank != 0:
        raise error(f"{op.name}: the init value must be a rank-0 tensor, not {init.type}",
                    op.span)
    return x, init


def _reduce_body(op: Op, v: OpView) -> str:
    """The body's one op (``add``, ...) applied to its two block arguments."""
    head, _ = before(op.body, ":")
    applies = [i for i, e in enumerate(head) if isinstance(e, Word) and e.text == "applies"]
    if applies and applies[0] + 1 < len(head):
        w = head[applies[0] + 1]
        name = w.text if isinstance(w, Word) else render(w)
        return _reducer_name(name, op, w.span)
    regions = [e for e in op.body if isinstance(e, Region)] or list(v.regions)
    if len(regions) != 1 or len(regions[0].blocks) != 1:
        raise error(f"{op.name} needs a body: 'applies stablehlo.add' or one region", op.span)
    block = regions[0].blocks[0]
    args = block.args
    if args is None:  # pretty: reducer(%a: tensor<f32>, %b: tensor<f32>) {...}
        args = next((e for i, e in enumerate(op.body) if isinstance(e, Group) and i > 0
                     and isinstance(op.body[i - 1], Word)
                     and op.body[i - 1].text == "reducer"), None)  # type: ignore[union-attr]
    names = [e.name for e in args.items if isinstance(e, Value)] if args else []
    ops = block.ops
    ok = (len(names) == 2 and len(ops) == 2 and len(ops[0].results) == 1
          and ops[1].name in ("stablehlo.return", "return"))
    if ok:
        inner, ret = view(ops[0]), view(ops[1])
        ok = (sorted(e.name for e in inner.operands) == sorted(names)
              and [e.name for e in ret.operands] == [ops[0].results[0]])
    if not ok:
        raise error(f"{op.name}: only a body of one add, multiply, maximum or minimum of its "
                    f"two arguments is supported", regions[0].span)
    return _reducer_name(ops[0].name, op, ops[0].name_span)


def _reducer_name(name: str, op: Op, span: Span | None) -> str:
    short = name.split(".", 1)[1] if name.startswith("stablehlo.") else ""
    if short not in _REDUCERS:
        raise error(f"{op.name} with {name} is not supported (add, multiply, maximum, "
                    f"minimum; and/or on i1)", span)
    return short


def _is_identity(init: TValue, kind: str) -> bool:
    """``init`` is a splat of the reduction's identity, so the reduction alone is the result."""
    if not (isinstance(init, Apply) and init.op.name == "splat"):
        return False
    value = init.attr_map["value"]
    dt = init.type.dtype
    if dt is DType.I1:
        return bool(value) == (kind == "min")
    ident: dict[str, object] = {"sum": 0, "prod": 1}
    if dt.is_float:
        ident.update(max=float("-inf"), min=float("inf"))
    else:
        info = np.iinfo(dt.np_dtype)
        ident.update(max=int(info.min), min=int(info.max))
    return value == ident[kind]


MOVEMENT: Mapping[str, Handler] = {
    "stablehlo.broadcast_in_dim": _broadcast_in_dim, "stablehlo.transpose": _transpose,
    "stablehlo.reshape": _reshape, "stablehlo.slice": _slice,
    "stablehlo.concatenate": _concatenate, "stablehlo.pad": _pad, "stablehlo.reduce": _reduce,
}
