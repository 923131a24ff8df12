"""The ``arith`` and ``tensor`` ops mlir-tcp programs use around tcp ops: index values (constants,
``tensor.dim``, sums and products) that size broadcasts and slices, and the shape ops
``tensor.expand_shape``, ``tensor.collapse_shape`` (our ``reshape``) and ``tensor.concat``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from tcp_rules.build import Literal
from tcp_rules.frontends.mlir.attrs import error, integer, shaped
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.syntax import Group, Number, Op, Punct, Value, Word
from tcp_rules.frontends.mlir.views import view
from tcp_rules.ir import Value as TValue
from tcp_rules.types import Dim


def _arith_constant(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    head = [e for e in op.body if not isinstance(e, Word) or e.text != "attributes"]
    if v.operand_types and isinstance(v.operand_types[0], Word) \
            and v.operand_types[0].text == "index":
        return [Dim.of(integer(head[0] if head else op.body, op.span, "index constant"))]
    raise error("arith.constant is read only for index values (tensor constants: tcp.const)",
                op.span)


def _tensor_dim(ctx: FuncContext, op: Op) -> Sequence[Result]:
    v = view(op)
    if len(v.operands) != 2:
        raise error("tensor.dim takes a tensor and an index", op.span)
    t = ctx.operand(v.operands[0])
    axis = ctx.index(v.operands[1]).const
    if axis is None or not 0 <= axis < t.type.rank:
        raise error(f"tensor.dim: axis must be a constant in [0, {t.type.rank})", op.span)
    return [t.type.dims[axis]]


def _index_binary(fn: Callable[[Dim, Dim], Dim]) -> Handler:
    def read(ctx: FuncContext, op: Op) -> Sequence[Result]:
        v = view(op)
        if len(v.operands) != 2:
            raise error(f"{op.name} takes two index values", op.span)
        return [fn(ctx.index(v.operands[0]), ctx.index(v.operands[1]))]
    return read


def _tensor_concat(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``tensor.concat dim(0) %a, %b : (...) -> t`` is our concat."""
    v = view(op)
    g = v.groups.get("dim")
    axis = integer(g.items if g else [], op.span, "tensor.concat dim")
    args: list[TValue | Literal] = [ctx.operand(e) for e in v.operands]
    return [ctx.apply("concat", args, {"axis": axis}, op,
                      v.result_types[0] if v.result_types else None)]


def _reshape(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``tensor.expand_shape %x [[0, 1]] output_shape [%n, 4] : t into t2`` and
    ``tensor.collapse_shape %x [[0, 1]] : t into t2``: our reshape to the result's shape."""
    v = view(op)
    x = ctx.operand(v.operands[0]) if len(v.operands) == 1 else None
    types = [e for e in op.body if not isinstance(e, Punct)]
    into = next((i for i, e in enumerate(types) if isinstance(e, Word) and e.text == "into"), None)
    if x is None or into is None or into + 1 >= len(types):
        raise error(f"{op.name}: expected %x [[...]] ... : type into type", op.span)
    declared = types[into + 1]
    _, dims = shaped(declared, op.span, "result type")
    groups = next((e for e in op.body if isinstance(e, Group) and e.open == "["), None)
    assoc = [[integer(a, g.span, "reassociation") for a in g.items if not isinstance(a, Punct)]
             for g in (groups.items if groups else ()) if isinstance(g, Group)]
    shape: list[Dim] = []
    if op.name == "tensor.collapse_shape":
        if len(assoc) != len(dims) or sum(len(a) for a in assoc) != x.type.rank:
            raise error("tensor.collapse_shape: the reassociation does not fit the types",
                        op.span)
        for group in assoc:
            total = Dim.of(1)
            for axis in group:
                total = total * x.type.dims[axis]
            shape.append(total)
    else:
        out = _output_shape(ctx, op)
        if out is None or len(out) != len(dims):
            raise error("tensor.expand_shape: expected output_shape [sizes] of the result's "
                        "rank", op.span)
        shape = out
    return [ctx.apply("reshape", [x], {"shape": shape}, op, declared)]


def _output_shape(ctx: FuncContext, op: Op) -> list[Dim] | None:
    body = list(op.body)
    for i, e in enumerate(body[:-1]):
        nxt = body[i + 1]
        if isinstance(e, Word) and e.text == "output_shape" and isinstance(nxt, Group):
            return [Dim.of(int(x.value)) if isinstance(x, Number) else ctx.index(x)
                    for x in nxt.items if isinstance(x, Number | Value)]
    return None


def _index_div(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``arith.divui %d, %c2``: exact division of a dim by a constant (k * s / k)."""
    v = view(op)
    if len(v.operands) != 2:
        raise error(f"{op.name} takes two index values", op.span)
    a, b = ctx.index(v.operands[0]), ctx.index(v.operands[1])
    k = b.const
    if k is None or k <= 0 or any(c % k for _, c in a.terms):
        raise error(f"{op.name}: tcp-rules divides dims only exactly, by a constant "
                    f"({a} / {b})", op.span)
    return [Dim._norm({m: c // k for m, c in a.terms})]


OPS: Mapping[str, Handler] = {
    "arith.constant": _arith_constant, "tensor.dim": _tensor_dim,
    "arith.addi": _index_binary(lambda a, b: a + b),
    "arith.subi": _index_binary(lambda a, b: a - b),
    "arith.muli": _index_binary(lambda a, b: a * b),
    "arith.divui": _index_div, "arith.divsi": _index_div,
    "tensor.concat": _tensor_concat,
    "tensor.expand_shape": _reshape, "tensor.collapse_shape": _reshape,
}
