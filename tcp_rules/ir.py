"""The typed program IR: a DAG of values, each an op applied to operands with attributes.

Values compare by identity; :func:`same_value` and :func:`same_func` compare structure (what a
print -> parse round trip must preserve). Traversals are iterative so that long chains of
let-bindings never hit Python's recursion limit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tcp_rules.diagnostics import Span
from tcp_rules.ops import OpDef
from tcp_rules.sorts import Sort
from tcp_rules.types import TensorType


@dataclass(frozen=True, eq=False)
class Value:
    """A tensor-valued node of a program."""

    type: TensorType
    span: Span | None = field(default=None, kw_only=True)
    name: str | None = field(default=None, kw_only=True)  # the source's let-name, if any
    sort: Sort = field(default=Sort.TENSOR, kw_only=True)  # tensor, kernel body, or constant


@dataclass(frozen=True, eq=False)
class Param(Value):
    """A function parameter, bound to an input array at run time."""

    param: str = field(kw_only=True)
    index: int = field(kw_only=True)


@dataclass(frozen=True, eq=False)
class Apply(Value):
    """An op applied to operands; ``attrs`` holds every attribute of the op, in table order."""

    op: OpDef = field(kw_only=True)
    operands: tuple[Value, ...] = field(kw_only=True)
    attrs: tuple[tuple[str, Any], ...] = field(kw_only=True)

    @property
    def attr_map(self) -> dict[str, Any]:
        return dict(self.attrs)


@dataclass(frozen=True, eq=False)
class Func:
    """A function: typed parameters and one or more result values."""

    name: str
    params: tuple[Param, ...]
    results: tuple[Value, ...]
    result_types: tuple[TensorType, ...]
    span: Span | None = None

    def values(self) -> list[Value]:
        """Every value the results depend on, operands before users."""
        return topo_order(self.results)

    def ops(self) -> list[Apply]:
        return [v for v in self.values() if isinstance(v, Apply)]


@dataclass(frozen=True, eq=False)
class Module:
    """A module: one or more funcs, looked up by name."""

    funcs: tuple[Func, ...]

    def func(self, name: str | None = None) -> Func:
        """The func called ``name``; without a name, the only (or first) func."""
        if name is None:
            return self.funcs[0]
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(name)


def operands(v: Value) -> tuple[Value, ...]:
    return v.operands if isinstance(v, Apply) else ()


def topo_order(roots: Iterable[Value]) -> list[Value]:
    """All values reachable from ``roots``, each after its operands, each once."""
    order: list[Value] = []
    seen: set[int] = set()
    stack: list[tuple[Value, bool]] = [(r, False) for r in reversed(list(roots))]
    while stack:
        v, expanded = stack.pop()
        if expanded:
            order.append(v)
            continue
        if id(v) in seen:
            continue
        seen.add(id(v))
        stack.append((v, True))
        stack.extend((o, False) for o in reversed(operands(v)) if id(o) not in seen)
    return order


def use_counts(roots: Iterable[Value]) -> dict[int, int]:
    """How many times each value (by id) is used as an operand or returned."""
    roots = list(roots)
    counts: dict[int, int] = {}
    for v in topo_order(roots):
        for o in operands(v):
            counts[id(o)] = counts.get(id(o), 0) + 1
    for r in roots:
        counts[id(r)] = counts.get(id(r), 0) + 1
    return counts


def attr_equal(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                     math.copysign(1, b))
    return type(a) is type(b) and a == b


def same_value(a: Value, b: Value, memo: dict[tuple[int, int], bool] | None = None) -> bool:
    """Structural equality of two value DAGs (sharing ignored, names and spans ignored)."""
    memo = {} if memo is None else memo
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        key = (id(x), id(y))
        if x is y or memo.get(key):
            continue
        memo[key] = True  # assume equal while comparing; any mismatch returns False at once
        if x.type != y.type or type(x) is not type(y):
            return False
        if isinstance(x, Param) and isinstance(y, Param):
            if (x.param, x.index) != (y.param, y.index):
                return False
            continue
        assert isinstance(x, Apply) and isinstance(y, Apply)
        if x.op.name != y.op.name or len(x.operands) != len(y.operands):
            return False
        if len(x.attrs) != len(y.attrs) or not all(
                ka == kb and attr_equal(va, vb)
                for (ka, va), (kb, vb) in zip(x.attrs, y.attrs, strict=True)):
            return False
        stack.extend(zip(x.operands, y.operands, strict=True))
    return True


def same_func(f: Func, g: Func) -> bool:
    """Structural equality of two funcs: name, parameter types and result DAGs."""
    return (f.name == g.name and f.result_types == g.result_types
            and [(p.param, p.type) for p in f.params] == [(p.param, p.type) for p in g.params]
            and len(f.results) == len(g.results)
            and all(same_value(a, b) for a, b in zip(f.results, g.results, strict=True)))


def same_module(m: Module, n: Module) -> bool:
    return len(m.funcs) == len(n.funcs) and all(
        same_func(f, g) for f, g in zip(m.funcs, n.funcs, strict=True))


def rebind_params(func: Func, params: tuple[Param, ...]) -> Func:
    """``func`` computed from ``params`` instead of its own (same names and types, in order):
    an optimized program read back from text keeps the user's parameters and their spans."""
    if [(p.param, p.type) for p in params] != [(p.param, p.type) for p in func.params]:
        raise ValueError("parameters differ")
    new: dict[int, Value] = {}
    for v in func.values():
        if isinstance(v, Param):
            new[id(v)] = params[v.index]
        else:
            assert isinstance(v, Apply)
            new[id(v)] = Apply(v.type, op=v.op, operands=tuple(new[id(o)] for o in v.operands),
                               attrs=v.attrs, span=v.span, name=v.name, sort=v.sort)
    return Func(func.name, params, tuple(new[id(r)] for r in func.results), func.result_types,
                func.span)


def iter_attrs(v: Apply) -> Iterator[tuple[str, Any]]:
    """Attributes of ``v`` that are set (optional attributes left out are skipped)."""
    return ((k, a) for k, a in v.attrs if a is not None)


def attrs_with_defaults(op: OpDef, given: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Every attribute of ``op`` in table order, defaults filled in."""
    return tuple((spec.name, given.get(spec.name, spec.default)) for spec in op.attrs)
