"""StableHLO's ``dot_general``/``dot`` as ``matmul`` and its simple ``gather`` as ``gather``
(see stablehlo_movement.py for what is read; the table is assembled in stablehlo.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tcp_rules.frontends.mlir.attrs import error, int_array, integer
from tcp_rules.frontends.mlir.importer import FuncContext, Handler, Result
from tcp_rules.frontends.mlir.stablehlo_movement import (
    attribute,
    checked,
    ints,
    keyword,
    operands,
    result_dtype,
)
from tcp_rules.frontends.mlir.syntax import Elem, Group, Op, Word
from tcp_rules.frontends.mlir.views import OpView, named, view
from tcp_rules.ir import Value as TValue
from tcp_rules.types import Dim


def _pair(items: Sequence[Elem], op: Op, what: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``[0] x [1]``: the lhs and rhs dims."""
    groups = [e for e in items if isinstance(e, Group) and e.open == "["]
    if len(groups) != 2:
        raise error(f"{op.name}: expected {what} = [...] x [...]", op.span)
    return (int_array(groups[0], op.span, what), int_array(groups[1], op.span, what))


def _dot_general(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]``, or
    ``{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], ...>}``."""
    v = view(op)
    a, b = operands(ctx, v, 2)
    entry = attribute(op, "dot_dimension_numbers")
    if entry is not None and entry.value and isinstance(entry.value[0], Word) \
            and entry.value[0].args is not None:
        fields = named(entry.value[0].args)

        def get(name: str) -> tuple[int, ...]:
            f = fields.get(name)
            return int_array(f[1], op.span, name) if f is not None else ()
        lb, rb = get("lhs_batching_dimensions"), get("rhs_batching_dimensions")
        lc, rc = get("lhs_contracting_dimensions"), get("rhs_contracting_dimensions")
    else:
        batching = keyword(op, "batching_dims")
        contracting = keyword(op, "contracting_dims")
        lb, rb = _pair(batching, op, "batching_dims") if batching is not None else ((), ())
        lc, rc = _pair(contracting, op, "contracting_dims") if contracting else ((), ())
    return [_contract(ctx, op, v, a, b, (lb, rb), (lc, rc))]


def _dot(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """``dot %a, %b``: vector or matrix products, a's last axis with b's first."""
    v = view(op)
    a, b = operands(ctx, v, 2)
    if not (1 <= a.type.rank <= 2 and 1 <= b.type.rank <= 2):
        raise error(f"{op.name} takes rank 1 or 2 operands", op.span)
    return [_contract(ctx, op, v, a, b, ((), ()), ((a.type.rank - 1,), (0,)))]


def _contract(ctx: FuncContext, op: Op, v: OpView, a: TValue, b: TValue,
              batch: tuple[tuple[int, ...], tuple[int, ...]],
              contract: tuple[tuple[int, ...], tuple[int, ...]]) -> TValue:
    """The contraction as a matmul of [B,] M x K by [B,] K x N, transposed and reshaped into
    that form and back."""
    (lb, rb), (lc, rc) = batch, contract
    af = [i for i in range(a.type.rank) if i not in lb + lc]
    bf = [i for i in range(b.type.rank) if i not in rb + rc]
    if len(lb) != len(rb) or len(lb) > 1 or len(lc) != len(rc) or len(lc) > 1 \
            or len(af) > 1 or len(bf) > 1 or len(set(lb + lc)) != len(lb + lc) \
            or len(set(rb + rc)) != len(rb + rc):
        raise error(f"{op.name} is read only in matmul shape: at most one batching dim, one "
                    f"contracting dim and one free dim per side", op.span)
    one = Dim.of(1)
    bdims = [a.type.dims[i] for i in lb]
    m = a.type.dims[af[0]] if af else one
    n = b.type.dims[bf[0]] if bf else one
    k_a = a.type.dims[lc[0]] if lc else one
    k_b = b.type.dims[rc[0]] if rc else one
    lhs = _arrange(ctx, a, list(lb) + af + list(lc), [*bdims, m, k_a], op)
    rhs = _arrange(ctx, b, list(rb) + list(rc) + bf, [*bdims, k_b, n], op)
    out = ctx.apply("matmul", [lhs, rhs], {}, op)
    shape = list(out.type.dims[:len(bdims)]) + ([out.type.dims[-2]] if af else []) \
        + ([out.type.dims[-1]] if bf else [])
    if tuple(shape) != out.type.dims:
        out = ctx.apply("reshape", [out], {"shape": shape}, op)
    to = result_dtype(v)
    if to is not out.type.dtype:  # preferred_element_type
        out = ctx.apply("cast", [out], {"to": to}, op)
    checked(ctx, out, v)
    return out


def _arrange(ctx: FuncContext, x: TValue, perm: list[int], shape: list[Dim], op: Op) -> TValue:
    if perm != list(range(x.type.rank)):
        x = ctx.apply("transpose", [x], {"perm": perm}, op)
    if tuple(shape) != x.type.dims:
        x = ctx.apply("reshape", [x], {"shape": shape}, op)
    return x


def _gather(ctx: FuncContext, op: Op) -> Sequence[Result]:
    """A gather taking, for each index, the whole slice at that index along one axis: our
    ``gather`` (numpy.take), its result axes moved to where StableHLO's ``offset_dims`` put
    them."""
    v = view(op)
    x, idx = operands(ctx, v, 2)
    entry = attribute(op, "dimension_numbers")
    dn = entry.value[0] if entry is not None and entry.value else None
    if not (isinstance(dn, Word) and dn.args is not None):
        raise error(f"{op.name} needs dimension_numbers = #stablehlo.gather<...>", op.span)
    fields = named(dn.args)

    def get(name: str) -> tuple[int, ...]:
        f = fields.get(name)
        return int_array(f[1], op.span, name) if f is not None else ()
    offset, collapsed, smap = get("offset_dims"), get("collapsed_slice_dims"), \
        get("start_index_map")
    ivd_field = fields.get("index_vector_dim")
    ivd = integer(ivd_field[1], op.span, "index_vector_dim") if ivd_field else 0
    sizes = ints(op, "slice_sizes", "slice_sizes")
    r = x.type.rank
    simple = (len(smap) == 1 and collapsed == smap and not get("operand_batching_dims")
              and len(sizes) == r and len(offset) == r - 1)
    axis = smap[0] if smap else 0
    if simple:
        simple = all(sizes[i] == 1 if i == axis else Dim.of(sizes[i]) == x.type.dims[i]
                     for i in range(r))
    squeeze = ivd == idx.type.rank - 1 and idx.type.rank > 0 and idx.type.dims[-1] == Dim.of(1)
    if not simple or not (squeeze or ivd == idx.type.rank):
        raise error(f"{op.name} is read only as a take along one axis (one index per point, "
                    f"whole slices elsewhere, as jnp.take lowers to)", op.span)
    if squeeze:
        idx = ctx.apply("reshape", [idx], {"shape": list(idx.type.dims[:-1])}, op)
    out = ctx.apply("gather", [x, idx], {"axis": axis}, op)
    nb = idx.type.rank
    ours = [("o", k) for k in range(axis)] + [("b", j) for j in range(nb)] \
        + [("o", k) for k in range(axis, r - 1)]
    theirs: list[tuple[str, int]] = []
    batch = iter(range(nb))
    for p in range(out.type.rank):
        theirs.append(("o", offset.index(p)) if p in offset else ("b", next(batch, -1)))
    if sorted(theirs) != sorted(ours):
        raise error(f"{op.name}: offset_dims {list(offset)} do not fit the result", op.span)
    perm = [ours.index(t) for t in theirs]
    if perm != list(range(len(perm))):
        out = ctx.apply("transpose", [out], {"perm": perm}, op)
    checked(ctx, out, v)
    return [out]


DOT: Mapping[str, Handler] = {"stablehlo.dot_general": _dot_general, "stablehlo.dot": _dot,
                              "stablehlo.gather": _gather}
