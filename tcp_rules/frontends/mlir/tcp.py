"""The ``tcp`` dialect (mlir-tcp's ops, in its assembly formats) and ``tcpr``, the ops of our table
that mlir-tcp lacks, written the same way (see export.py and docs/frontends/mlir.md).

``OPS`` maps each op name to a handler ``(ctx, op) -> results``. mlir-tcp's ops map to ours
one to one, except: ``tcp.divf``/``divsi``/``divui`` are ``div`` (signed division truncating);
``tcp.broadcast`` (size-1 axes to the ``new_dim_sizes``) is ``broadcast`` to the result shape,
and a broadcast of a splat constant is that splat of the result shape; ``tcp.group`` is inlined;
``tcp.isolated_group`` is a fused kernel: ``kernel(...)`` of its body, its block arguments read
with ``load``; ``tcp.gather`` (elements along a dim, as ``torch.gather``) is our ``gather``
(``numpy.take``) only for rank 1. ``tcp.custom_op``, ``tcp.gather_nd`` are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tcp_rules.build import Literal
from tcp_rules.diagnostics import Span, TcpError
from tcp_rules.frontends import identifier
from tcp_rules.frontends.mlir.attrs import (
    dense,
    element_type,
    error,
    int_array,
    integer,
    number,
    shaped,
)
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.syntax import Elem, Group, Number, Op, Punct, Str, Value, Word
from tcp_rules.frontends.mlir.views import OpView, render, split, view
from tcp_rules.ir import Apply
from tcp_rules.ir import Value as TValue
from tcp_rules.ops import OPS as TABLE
from tcp_rules.ops import AttrKind
from tcp_rules.types import Dim, DType

# mlir-tcp op -> our op, for the ones that differ only in name (or not at all)
UNARY = ("tanh", "sigmoid", "sqrt", "ceil", "floor", "round", "round_even", "cos", "sin",
         "abs", "log", "neg", "atan")
BINARY = ("add", "sub", "mul", "atan2")
# ops of our table written as tcpr.<name>; those mlir-tcp has are written as tcp.<name>
EXTENSION = tuple(n for n in TABLE if n not in UNARY + BINARY + (
    "clamp", "cast", "splat", "dense", "load", "kernel", "load_matmul", "load_matmul_rows"))
REFUSED = {"custom_op": "a custom op is opaque to tcp-rules",
           "gather_nd": "tcp-rules has no gather over several dims"}


def _one_result(ctx: FuncContext, v: OpView) -> None:
    if len(v.result_types) != 1:
        raise error(f"{v.op.name}: expected one result type after '->'", v.op.span)


def _operands(ctx: FuncContext, v: OpView, n: int) -> list[TValue]:
    if len(v.operands) != n:
        raise error(f"{v.op.name} takes {n} operand(s), given {len(v.operands)}", v.op.span)
    return [ctx.operand(e) for e in v.operands]


def _simple(ours: str, arity: int) -> Handler:
    def read(ctx: FuncContext, op: Op) -> Sequence[Result]:
        v = view(op)
        _one_result(ctx, v)
        return [ctx.apply(ours, _operands(ctx, v, arity), {}, op, v.result_types[0])]
    return read


def _div(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    _one_result(ctx, v)
    a, b = _operands(ctx, v, 2)
    mode = v.attr("rounding_mode")
    if mode is not None and "Trunc" not in render(mode.value):
        raise error(f"{op.name} with rounding {render(mode.value)}: tcp-rules' integer "
                    f"division truncates", mode.span)
    want_float, want_unsigned = op.name == "tcp.divf", op.name == "tcp.divui"
    dt = a.type.dtype
    if want_float != dt.is_float or (not want_float and want_unsigned != dt.is_unsigned):
        raise error(f"{op.name} on {dt}: tcp-rules' integer types carry their sign "
                    f"(divsi on iN/siN, divui on uiN, divf on floats)", op.span)
    return [ctx.apply("div", [a, b], {}, op, v.result_types[0])]


def _clamp(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    _one_result(ctx, v)
    (x,) = _operands(ctx, v, 1)
    attrs: dict[str, object] = {}
    kind = "float" if x.type.dtype.is_float else "int"
    for name, ours in (("min_float", "min"), ("max_float", "max"), ("min_int", "min"),
                       ("max_int", "max")):
        e = v.attr(name)
        if e is not None:
            if not name.endswith(kind):
                raise error(f"tcp.clamp: {name} is for {name.split('_')[1]} tensors, the "
                            f"input is {x.type.dtype}", e.span)
            attrs[ours] = number(e.value, e.span, f"{op.name} {name}")
    return [ctx.apply("clamp", [x], attrs, op, v.result_types[0])]


def _const(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    value = v.attr("value")
    if value is None or not value.value:
        raise error("tcp.const needs a value attribute (value = dense<...> : tensor<...>)",
                    op.span)
    types = v.result_types or v.operand_types  # generic: () -> t; pretty: : t
    declared = types[0] if types else None
    dtype, dims = shaped(declared, op.span, "type of tcp.const")
    if any(d is None for d in dims):
        raise error("tcp.const: a constant's type must be static", op.span)
    shape = [int(d) for d in dims if d is not None]
    lit = value.value[0]
    arr = dense(lit, dtype, shape, lit.span)
    is_splat = isinstance(lit, Word) and lit.args is not None and len(lit.args) == 1 \
        and not isinstance(lit.args[0], Group | Str)
    if is_splat:
        scalar = arr.reshape(-1)[0].item() if arr.size else 0
        return [ctx.apply("splat", [], {"value": scalar, "shape": shape, "dtype": dtype}, op)]
    return [ctx.apply("dense", [], {"value": arr, "dtype": dtype}, op)]


def _broadcast(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``tcp.broadcast %x, %n... {axes}``: x's size-1 axes to the new sizes."""
    v = view(op)
    _one_result(ctx, v)
    x = ctx.operand(v.operands[0]) if v.operands else None
    if x is None:
        raise error("tcp.broadcast takes a tensor and the new sizes", op.span)
    sizes = [ctx.index(e) for e in v.operands[1:]]
    entry = v.attr("axes")
    axes = int_array(entry.value, entry.span, "axes") if entry is not None else ()
    if list(axes) != sorted(set(axes)):
        raise error(f"tcp.broadcast: axes {list(axes)} must be increasing, without repeats",
                    entry.span if entry is not None else op.span)
    if len(axes) != len(sizes):
        raise error(f"tcp.broadcast: {len(axes)} axes but {len(sizes)} new sizes", op.span)
    shape = list(x.type.dims)
    for a, s in zip(axes, sizes, strict=True):
        if not 0 <= a < len(shape):
            raise error(f"tcp.broadcast: axis {a} is out of range for {x.type}", op.span)
        if shape[a] != Dim.of(1):
            raise error(f"tcp.broadcast: axis {a} of {x.type} is not of size 1", op.span)
        shape[a] = s
    if isinstance(x, Apply) and x.op.name == "splat":  # a splat of the result's shape
        splat = x.attr_map
        return [ctx.apply("splat", [], {"value": splat["value"], "shape": shape,
                                        "dtype": splat["dtype"]}, op, v.result_types[0])]
    return [ctx.apply("broadcast", [x], {"shape": shape, "dims": list(range(len(shape)))}, op,
                      v.result_types[0])]


def _cast(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``tcp.cast``; ``in_int_signedness``/``out_int_signedness = Unsigned`` on a signless
    iN read it as, or convert to, uiN: a cast to the unsigned type of the same width (integer
    casts wrap, so that is a reinterpretation of the bits)."""
    v = view(op)
    _one_result(ctx, v)
    (x,) = _operands(ctx, v, 1)
    dtype, _ = shaped(v.result_types[0], op.span, "result type")
    unsigned: dict[str, bool] = {}
    for name, dt in (("in_int_signedness", x.type.dtype), ("out_int_signedness", dtype)):
        e = v.attr(name)
        given = render(e.value) if e is not None else None
        side = name.split("_", 1)[0] + "put"
        if dt.is_float and given is not None:  # mlir-tcp's verifier rules, one by one
            raise error(f"tcp.cast: {name} must not be set when the {side} is a float", op.span)
        if not dt.is_float and given is None:
            raise error(f"tcp.cast: {name} must be set when the {side} is an integer", op.span)
        if dt is DType.I1 and given is not None and "Signless" not in given:
            raise error(f"tcp.cast: {name} must be Signless when the {side} is i1", op.span)
        unsigned[name] = given is not None and "Unsigned" in given
    if unsigned["in_int_signedness"] and x.type.dtype.is_signed:
        x = ctx.apply("cast", [x], {"to": _UNSIGNED[x.type.dtype]}, op)
    if unsigned["out_int_signedness"] and dtype.is_signed and x.type.dtype.is_float:
        x = ctx.apply("cast", [x], {"to": _UNSIGNED[dtype]}, op)  # float to unsigned
    return [ctx.apply("cast", [x], {"to": dtype}, op, v.result_types[0])]


_UNSIGNED = {DType.I8: DType.U8, DType.I16: DType.U16, DType.I32: DType.U32,
             DType.I64: DType.U64}


def _gather(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    _one_result(ctx, v)
    x, idx = _operands(ctx, v, 2)
    entry = v.attr("dim")
    axis = integer(entry.value, entry.span, "dim") if entry is not None else 0
    if x.type.rank != 1:
        raise error("tcp.gather takes elements along a dim (as torch.gather); tcp-rules' gather "
                    "is numpy.take, the same only for rank 1", op.span)
    return [ctx.apply("gather", [x, idx], {"axis": axis}, op, v.result_types[0])]


def _slice(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    _one_result(ctx, v)
    (x,) = _operands(ctx, v, 1)
    parts: dict[str, list[Dim]] = {}
    for key in ("starts", "sizes", "strides"):
        g = v.groups.get(key)
        if g is None:
            raise error(f"tcp.slice needs {key}(...)", op.span)
        parts[key] = [ctx.index(e) for e in g.items if isinstance(e, Value)]
    consts: dict[str, list[int]] = {}
    for key in ("starts", "strides"):
        if any(d.const is None for d in parts[key]):
            raise error(f"tcp.slice: tcp-rules needs constant {key}", v.groups[key].span)
        consts[key] = [int(d.const) for d in parts[key] if d.const is not None]
    return [ctx.apply("slice", [x], {"start": consts["starts"], "size": parts["sizes"],
                                     "stride": consts["strides"]}, op, v.result_types[0])]


def _group(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``tcp.group``: its body inlined (the optimizer decides fusion afresh)."""
    v = view(op)
    if len(v.regions) != 1:
        raise error("tcp.group needs one region", op.span)
    out = ctx.run_block(v.regions[0].blocks[0], {})
    for val, t in zip(out, v.result_types, strict=False):
        ctx.check(val, t, op)
    return out


def _isolated_group(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``tcp.isolated_group``: a fused kernel, ``kernel`` of its body with its block arguments
    read by ``load`` (inlined instead where the body cannot be one loop nest)."""
    v = view(op)
    if len(v.regions) != 1:
        raise error("tcp.isolated_group needs one region", op.span)
    block = v.regions[0].blocks[0]
    ins = [ctx.operand(e) for e in v.operands]
    names = [e.name for e in block.args.items if isinstance(e, Value)] if block.args else []
    if len(names) != len(ins):
        raise error(f"tcp.isolated_group has {len(ins)} input(s) and {len(names)} block "
                    f"argument(s)", op.span)
    saved = dict(ctx.env)
    try:
        loads = {n: ctx.apply("load", [x], {}, op) for n, x in zip(names, ins, strict=True)}
        body = ctx.run_block(block, loads)
        out: list[Result] = [ctx.apply("kernel", [b], {}, op) for b in body]
    except TcpError:  # a body the fusion ops cannot hold (a dense constant): plain ops
        ctx.env = saved
        out = list(ctx.run_block(block, dict(zip(names, ins, strict=True))))
    for val, t in zip(out, v.result_types, strict=False):
        assert isinstance(val, TValue)
        ctx.check(val, t, op)
    return out


def _refused(ctx: FuncContext, op: Op) -> Sequence[Result]:
    name = op.name.split(".", 1)[1]
    if name == "custom_op":
        target = next((e for e in op.body if isinstance(e, Group)), None)
        inner = next((e for e in target.items if isinstance(e, Str)), None) if target else None
        what = f' ("{inner.value}")' if inner is not None else ""
        raise error(f"tcp.custom_op{what} is not supported: {REFUSED[name]}", op.name_span)
    raise error(f"{op.name} is not supported: {REFUSED[name]}", op.name_span)


def _symbolic(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``tcp.symbolic_int "s0"`` is the dim s0; ``tcp.bind_symbolic_shape %x, [%s0, ...],
    affine_map<()[s0, ...] -> (s0, ...)>`` unifies x's dims with those named."""
    v = view(op)
    if op.name == "tcp.symbolic_int":
        name = next((e.value for e in op.body if isinstance(e, Str)), None)
        if name is None:
            raise error("tcp.symbolic_int needs a symbol name", op.span)
        return [Dim.of(identifier(name))]  # a label ("s0 + 1" too): s0___1
    x = ctx.operand(v.operands[0]) if v.operands else None
    amap = next((e for e in op.body if isinstance(e, Word) and e.text == "affine_map"), None)
    syms = next((e for e in op.body if isinstance(e, Group) and e.open == "["), None)
    if x is None or amap is None or amap.args is None or syms is None:
        raise error("tcp.bind_symbolic_shape: expected %x, [%symbols], affine_map<...>",
                    op.span)
    sym_values = [ctx.index(e) for e in syms.items if isinstance(e, Value)]
    names = next((g for g in amap.args if isinstance(g, Group) and g.open == "["), None)
    local = [e.text for e in names.items if isinstance(e, Word)] if names else []
    arrow = next((i for i, e in enumerate(amap.args) if isinstance(e, Punct)
                  and e.text == "->"), None)
    res = amap.args[arrow + 1] if arrow is not None and arrow + 1 < len(amap.args) else None
    exprs = split(res.items) if isinstance(res, Group) else []
    if len(exprs) == x.type.rank and len(local) == len(sym_values):
        env = dict(zip(local, sym_values, strict=True))
        for d, e in zip(x.type.dims, exprs, strict=True):
            value = _affine(e, env)
            if value is not None:  # floordiv, mod, ...: not checked
                ctx.unify(d, value)
    return []


def _affine(items: Sequence[Elem], env: Mapping[str, Dim]) -> Dim | None:
    """An affine expression of symbols, sums of products (``s0 * 2 + 1``), as a dim."""
    total, term, sign = Dim.of(0), Dim.of(1), 1
    for i, e in enumerate(items):
        after_operand = i > 0 and not isinstance(items[i - 1], Punct)
        if isinstance(e, Punct) and e.text in ("+", "-"):
            total, term, sign = total + term * sign, Dim.of(1), 1 if e.text == "+" else -1
        elif isinstance(e, Punct) and e.text == "*":
            continue
        elif isinstance(e, Number) and isinstance(e.value, int) and not e.is_hex:
            if e.value < 0 and after_operand:  # "s0 -1" lexes as s0, -1
                total, term, sign = total + term * sign, Dim.of(-e.value), -1
            else:
                term = term * e.value
        elif isinstance(e, Word) and e.text in env:
            term = term * env[e.text]
        else:
            return None
    return total + term * sign


# tcpr.<op>: our ops, their dims attributes as index groups, the rest as attributes ---------

def _extension(name: str, tensors: tuple[int, ...] = ()) -> Handler:
    """tcpr.<name>; the operands at ``tensors`` are block arguments of a group read as tensors
    (load_matmul_rows' B), not loaded into its body."""
    opdef = TABLE[name]

    def read(ctx: FuncContext, op: Op) -> Sequence[Result]:
        v = view(op)
        _one_result(ctx, v)
        args: list[TValue | Literal] = [ctx.operand(e) for e in v.operands]
        for i in tensors:
            x = args[i] if i < len(args) else None
            if isinstance(x, Apply) and x.op.name == "load":
                args[i] = x.operands[0]
        attrs: dict[str, object] = {}
        for spec in opdef.attrs:
            if spec.kind is AttrKind.DIMS:
                g = v.groups.get(spec.name)
                if g is None:
                    raise error(f"{op.name} needs {spec.name}(...) (index values)", op.span)
                attrs[spec.name] = [ctx.index(e) for e in g.items if isinstance(e, Value)]
                continue
            e = v.attr(spec.name)
            if e is None:
                continue
            attrs[spec.name] = _attr_value(spec.kind, e.value, e.span, f"{op.name} {spec.name}")
        return [ctx.apply(name, args, attrs, op, v.result_types[0])]
    return read


def _attr_value(kind: AttrKind, items: Sequence[Elem], span: Span, what: str) -> object:
    """An attribute of ours, as tcpr.<op> writes it (export.py)."""
    first = items[0] if items else None
    match kind:
        case AttrKind.INT:
            return integer(items, span, what)
        case AttrKind.INTS:
            return list(int_array(items, span, what))
        case AttrKind.BOOL:
            if isinstance(first, Word) and first.text in ("true", "false"):
                return first.text == "true"
        case AttrKind.SCALAR:
            return number(items, span, what)
        case AttrKind.NAME:
            if isinstance(first, Str):
                return first.value
        case AttrKind.DTYPE:
            return element_type(first, span)
    raise error(f"{what}: cannot read {render(items) or 'nothing'}", span)


def _load_matmul(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """Inside an isolated group, a matmul reading its two block arguments from memory."""
    v = view(op)
    a, b = _operands(ctx, v, 2)
    ins = [x.operands[0] if isinstance(x, Apply) and x.op.name == "load" else x for x in (a, b)]
    return [ctx.apply("load_matmul", ins, {}, op, v.result_types[0] if v.result_types else None)]


def _table() -> Mapping[str, Handler]:
    table: dict[str, Handler] = {}
    for n in UNARY:
        table[f"tcp.{n}"] = _simple(n, 1)
    for n in BINARY:
        table[f"tcp.{n}"] = _simple(n, 2)
    table.update({"tcp.divf": _div, "tcp.divsi": _div, "tcp.divui": _div,
                  "tcp.clamp": _clamp, "tcp.const": _const, "tcp.broadcast": _broadcast,
                  "tcp.cast": _cast, "tcp.gather": _gather, "tcp.slice": _slice,
                  "tcp.group": _group, "tcp.isolated_group": _isolated_group})
    for n in REFUSED:
        table[f"tcp.{n}"] = _refused
    table["tcp.symbolic_int"] = table["tcp.bind_symbolic_shape"] = _symbolic
    for n in EXTENSION:
        table[f"tcpr.{n}"] = _extension(n)
    table["tcpr.load_matmul"] = _load_matmul
    table["tcpr.load_matmul_rows"] = _extension("load_matmul_rows", tensors=(1,))
    table["tcp.concat"] = _extension("concat")  # mlir-tcp before its #50 (now tensor.concat)
    return table


OPS: Mapping[str, Handler] = _table()
