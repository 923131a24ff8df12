"""Reduction bodies that the output recomputes, kept in the output row instead.

A row softmax computes exp(x - m) twice per element: once summed by a reduction over the row,
once more divided by that sum at every output element. When a reduction runs over the output's
last axis, once per output row, its loop can store each body value in the output row, and the
output loop load it back instead of computing it again: the row is still in L1, and an exp costs
far more than a store and a load. The same scalar code computes the stored value, so the results
are the same bits. Each thread owns whole rows (the runtime splits the outermost loop, and the
reduction sits inside it), so a row's stores and loads never race.
"""

from __future__ import annotations

from dataclasses import dataclass

from tcp_rules.codegen.kernel import (
    Affine,
    ClampIndex,
    Inside,
    Kernel,
    Load,
    Node,
    Op,
    PadIndex,
    Reduce,
    children,
    walk,
)
from tcp_rules.codegen.scopes import Scopes
from tcp_rules.ops import get_op
from tcp_rules.types import DType

STASH_MIN_FLOPS = 8  # op-table flops per element from which a store and a load are cheaper


@dataclass(frozen=True)
class Stash:
    """``reduce``'s loop (variable ``var``) stores ``body``; the output loop loads ``twin``."""

    reduce: Reduce
    var: str
    body: Node
    twin: Node


def find_stash(k: Kernel, scopes: Scopes) -> Stash | None:
    """The costliest node of a row reduction's body that the output also computes, if any."""
    rank = len(k.domain)
    if rank < 2 or k.out_index is not None or k.output.dtype is DType.I1:
        return None
    last, row = f"d{rank - 1}", f"d{rank - 2}"
    outside = _outside_reductions(k.value)
    for r in outside:
        if not (isinstance(r, Reduce) and len(r.vars) == 1 and r.vars[0][1] == k.domain[-1]
                and scopes.innermost(scopes.deps[r]) == row):
            continue
        var = r.vars[0][0]
        for n in reversed(list(walk(r.body))):  # users first: the largest candidate wins
            if (var in scopes.deps[n] and n.dtype is k.output.dtype
                    and flops(n) >= STASH_MIN_FLOPS):
                twin = rename(n, var, Affine.var(last))
                if twin in outside:
                    return Stash(r, var, n, twin)
    return None


def flops(n: Node) -> float:
    """The op table's flops per element of the ops computing ``n`` (reductions it uses are
    computed once, outside: their bodies do not count)."""
    total = 0.0
    for m in _outside_reductions(n):
        if isinstance(m, Op):
            op = get_op(m.op)
            total += op.cost.flops_per_element if op is not None else 1.0
    return total


def rename(n: Node, var: str, to: Affine) -> Node:
    """``n`` with loop variable ``var`` replaced by ``to`` in every load index."""
    match n:
        case Load(index=index, mask=m, other=o):
            idx = tuple(_rename_ix(i, var, to) for i in index)
            return Load(n.dtype, n.buf, idx, None if m is None else rename(m, var, to),
                        None if o is None else rename(o, var, to))
        case PadIndex(index=i):
            return PadIndex(n.dtype, _rename_ix(i, var, to), n.low, n.extent, n.mode)
        case Inside(axes=axes):
            return Inside(n.dtype, tuple((_rename_ix(i, var, to), lo, e) for i, lo, e in axes))
        case Op(args=args):
            return Op(n.dtype, n.op, tuple(rename(a, var, to) for a in args), n.attrs)
        case ClampIndex(value=v):
            return ClampIndex(n.dtype, rename(v, var, to), n.extent)
    return n


def _rename_ix(i: Affine | Node, var: str, to: Affine) -> Affine | Node:
    return i.subst({var: to}) if isinstance(i, Affine) else rename(i, var, to)


def _outside_reductions(root: Node) -> dict[Node, None]:
    """The nodes computed at the output's loops: reachable from ``root`` without entering a
    reduction's body (the reductions themselves included)."""
    seen: dict[Node, None] = {}
    stack = [root]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen[n] = None
            if not isinstance(n, Reduce):
                stack.extend(children(n))
    return seen
