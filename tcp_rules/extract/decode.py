"""Decoding an extraction back into a typed program, and the cost of a program."""

from __future__ import annotations

from typing import Any

from tcp_rules.build import make_apply
from tcp_rules.diagnostics import Span
from tcp_rules.extract.cost import CostModel, kernel_totals
from tcp_rules.extract.rows import Node, chained_rows
from tcp_rules.extract.snapshot import ENode, Snapshot, scalar_value
from tcp_rules.ir import Apply, Func, Value
from tcp_rules.ops import IDENTITY_OPS, OPS, AttrKind, ShapeError
from tcp_rules.sorts import Sort


class DecodeError(Exception):
    pass


def node_attrs(node: ENode, operands: list[Value]) -> dict[str, Any]:
    """An e-node's attributes as make_apply takes them: scalars decoded for their dtype, an
    absent clamp bound left out."""
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
            v = make_apply(node.op, operands, node_attrs(node, operands))
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
    return restore_spans(
        Func(original.name, original.params, results, original.result_types, original.span),
        original)


def restore_spans(optimized: Func, original: Func) -> Func:
    """``optimized`` with every op positioned in the user's file, so that a run-time error
    (a slice past the end once symbols are bound, an array too large) points at what the user
    wrote, not at the optimizer's text.

    An op that computes what an op of the original computes (the same op, attributes and
    operands, seeing through load and kernel) takes that op's span; another one takes the span
    of the op that uses it, and a result the span of the original's result in its place.
    """
    keys: dict[int, int] = {}  # value -> the number of what it computes
    interned: dict[object, int] = {}  # flat keys: a nested one would hash its whole subterm

    def key(v: Value) -> int:  # values() is topological: operands are keyed first
        if isinstance(v, Apply) and v.op.name in IDENTITY_OPS:  # added around the user's ops
            return keys[id(v.operands[0])]
        k = ((v.op.name, repr(v.attrs), tuple(keys[id(o)] for o in v.operands))
             if isinstance(v, Apply) else ("param", getattr(v, "param", id(v))))
        return interned.setdefault(k, len(interned))

    before, after = original.values(), optimized.values()
    for v in (*before, *after):
        keys[id(v)] = key(v)
    spans: dict[int, Span | None] = {}
    for v in before:
        if isinstance(v, Apply) and v.span is not None:
            spans.setdefault(keys[id(v)], v.span)
    chosen: dict[int, Span | None] = {}
    for r, o in zip(optimized.results, original.results, strict=False):
        chosen.setdefault(id(r), spans.get(keys[id(r)]) or o.span or original.span)
    for v in reversed(after):  # users before operands
        if not isinstance(v, Apply):
            continue
        own = spans.get(keys[id(v)]) or chosen.get(id(v)) or original.span
        chosen[id(v)] = own
        for o in v.operands:
            chosen.setdefault(id(o), own)
    new: dict[int, Value] = {}
    for v in after:
        if isinstance(v, Apply):
            new[id(v)] = Apply(v.type, op=v.op, operands=tuple(new[id(o)] for o in v.operands),
                               attrs=v.attrs, span=chosen[id(v)], name=v.name, sort=v.sort)
        else:
            new[id(v)] = v
    return Func(optimized.name, optimized.params, tuple(new[id(r)] for r in optimized.results),
                optimized.result_types, original.span)


def kernel_costs(func: Func, model: CostModel) -> dict[Value, float]:
    """The cost of each tensor-level value of ``func``: a kernel of its own, or a ``kernel``
    term with its whole body, as the DAG extractor counts them (cost.kernel_totals)."""
    own: dict[Value, float] = {}
    applied = [v for v in func.values() if isinstance(v, Apply)]
    ok = chained_rows([Node(v, v.op.name, v.op.category, v.attr_map, v.operands)
                       for v in applied], lambda v: v.sort is Sort.BODY, lambda v: v.type.dims,
                      lambda v: isinstance(v, Apply) and v.op.name == "splat")
    for p in func.params:
        own[p] = 0.0
    for i, v in enumerate(applied):
        own[v] = model.node_cost(ENode(v.op, (), v.attrs), v.type,
                                 [o.type for o in v.operands], v.sort)
        if v.op.name == "load_matmul_rows" and i not in ok:  # A is written, then read
            a = v.operands[0]
            own[v] = (model.node_cost(ENode(OPS["load_matmul"], ()), v.type,
                                      [o.type for o in v.operands], v.sort)
                      + model.node_cost(ENode(OPS["kernel"], ()), a.type, [a.type]))
    totals = kernel_totals(func.results, lambda v: v.operands if isinstance(v, Apply) else (),
                           lambda v: v.sort is not Sort.TENSOR, own.__getitem__)
    return {v: c for v, c in totals.items() if isinstance(v, Apply)}


def program_cost(func: Func, model: CostModel) -> float:
    """The cost of a program: every tensor computed once, every body once per kernel."""
    return sum(kernel_costs(func, model).values())
