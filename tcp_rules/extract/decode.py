"""Decoding an extraction back into a typed program, and the cost of a program."""

from __future__ import annotations

from typing import Any

from tcp_rules.build import make_apply
from tcp_rules.extract.cost import CostModel, kernel_totals
from tcp_rules.extract.snapshot import ENode, Snapshot, scalar_value
from tcp_rules.ir import Apply, Func, Value
from tcp_rules.ops import AttrKind, ShapeError
from tcp_rules.sorts import Sort


class DecodeError(Exception):
    pass


def _attrs(node: ENode, operands: list[Value]) -> dict[str, Any]:
    assert node.op is not None
    out = {}
    for spec, (name, value) in zip(node.op.attrs, node.attrs, strict=True):
        if spec.kind is AttrKind.SCALAR:
            dtype = (dict(node.attrs)["dtype"] if node.op.name == "splat"
                     else operands[0].type.dtype)
            value = scalar_value(value, dtype)
            if value is None:
                continue
        out[name] = value
    return out


def decode(snap: Snapshot, choice: dict[int, ENode], original: Func) -> Func:
    """The program the choice spells, sharing the original's parameters; types re-checked."""
    params = {p.param: p for p in original.params}
    built: dict[int, Value] = {}
    stack: list[tuple[int, bool]] = [(r, False) for r in snap.roots]
    on_path: set[int] = set()
    while stack:
        c, ready = stack.pop()
        if c in built:
            continue
        node = choice[c]
        if not ready:
            if c in on_path:
                raise DecodeError(f"the extraction has a cycle through e-class {c}")
            on_path.add(c)
            stack.append((c, True))
            stack.extend((k, False) for k in node.children if k not in built)
            continue
        on_path.discard(c)
        if node.op is None:
            assert node.param is not None
            built[c] = params[node.param]
            continue
        operands = [built[k] for k in node.children]
        try:
            v = make_apply(node.op, operands, _attrs(node, operands))
        except ShapeError as e:
            raise DecodeError(f"extracted {node.op.name} does not type-check: {e.message}") \
                from None
        want = snap.classes[c].type
        if want is not None and v.type != want:
            raise DecodeError(f"extracted {node.op.name} has type {v.type}, its e-class {want}")
        built[c] = v
    results = tuple(built[r] for r in snap.roots)
    if any(r.sort is Sort.BODY for r in results):
        raise DecodeError("the extraction returns a kernel body, not a tensor")
    return Func(original.name, original.params, results, original.result_types, original.span)


def kernel_costs(func: Func, model: CostModel) -> dict[Value, float]:
    """The cost of each tensor-level value of ``func``: a kernel of its own, or a ``kernel``
    term with its whole body, as the DAG extractor counts them (cost.kernel_totals)."""
    own: dict[Value, float] = {}
    for v in func.values():
        own[v] = 0.0
        if isinstance(v, Apply):
            node = ENode(v.op, (), v.attrs)
            own[v] = model.node_cost(node, v.type, [o.type for o in v.operands], v.sort)
    totals = kernel_totals(func.results, lambda v: v.operands if isinstance(v, Apply) else (),
                           lambda v: v.sort is not Sort.TENSOR, own.__getitem__)
    return {v: c for v, c in totals.items() if isinstance(v, Apply)}


def program_cost(func: Func, model: CostModel) -> float:
    """The cost of a program: every tensor computed once, every body once per kernel."""
    return sum(kernel_costs(func, model).values())
