"""The canonical printer for programs; its output parses back to the same program.

A value gets its own let-binding when the source named it or when it is used more than once;
everything else is printed nested. Splat constants are always printed where they are used: as a
bare literal where the context types it (``max(x, 0.0)``), otherwise as ``splat(...)``.
"""

from __future__ import annotations

import math
from typing import Any

from tcp_rules.build import Scalar
from tcp_rules.build import format_scalar as _format_scalar
from tcp_rules.ir import Apply, Func, Module, Param, Value, iter_attrs, topo_order, use_counts
from tcp_rules.types import DenseData, Dim, DType, TensorType


def format_dim(d: Dim) -> str:
    """A dim as written in source. ``str(Dim)`` may lead with a negative term (``-1*N + 4``),
    which the grammar does not accept as a dim, so positive terms come first: ``4 - N``."""
    text = str(d)
    if not text.startswith("-"):
        return text
    positive = Dim(tuple((m, c) for m, c in d.terms if c > 0))
    negated = [Dim(((m, -c),)) for m, c in d.terms if c < 0]
    return str(positive) + "".join(f" - {t}" for t in negated)


def format_scalar(v: Scalar) -> str:
    """A scalar as written in source; a NaN with its sign bit set prints as -nan, which parses
    back to one (dense data compares bit for bit)."""
    if isinstance(v, float) and math.isnan(v) and math.copysign(1.0, v) < 0:
        return "-nan"
    return _format_scalar(v)


def format_attr(value: Any) -> str:
    """An attribute value as written in source."""
    if isinstance(value, DenseData):
        return _nested(value.array.tolist())
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr(v) for v in value) + "]"
    if isinstance(value, Dim):
        return format_dim(value)
    if isinstance(value, DType | str):  # a dtype or a NAME attribute's word, written bare
        return str(value)
    return format_scalar(value)


def _nested(v: Any) -> str:
    return "[" + ", ".join(_nested(i) for i in v) + "]" if isinstance(v, list) else format_scalar(v)


def format_type(t: TensorType) -> str:
    return f"{t.dtype}[{', '.join(format_dim(d) for d in t.dims)}]"


def _is_splat(v: Value) -> bool:
    return isinstance(v, Apply) and v.op.name == "splat" and v.name is None


def _literal_typed_by_context(user: Apply, index: int) -> bool:
    """Would a bare literal at operand ``index`` of ``user`` re-elaborate to the same type?"""
    if not user.op.traits.elementwise:
        return False
    fixed = dict(user.op.fixed_dtypes)
    if index in fixed:
        return any(not _is_splat(o) for o in user.operands)
    return any(not _is_splat(o) for i, o in enumerate(user.operands) if i not in fixed)


class FuncPrinter:
    def __init__(self, func: Func):
        self.func = func
        self.names: dict[int, str] = {id(p): p.param for p in func.params}
        self.taken = {p.param for p in func.params}

    def fresh(self, hint: str | None) -> str:
        base = hint or "v"
        if base not in self.taken and hint is not None:
            self.taken.add(base)
            return base
        i = 0
        while f"{base}{i}" in self.taken:
            i += 1
        self.taken.add(f"{base}{i}")
        return f"{base}{i}"

    def ref(self, v: Value, bare_literal_ok: bool) -> str:
        """A reference to ``v``: its name, a bare literal where context types it, or its term."""
        if id(v) in self.names:
            return self.names[id(v)]
        assert isinstance(v, Apply)
        if bare_literal_ok and _is_splat(v):
            return format_scalar(v.attr_map["value"])
        return self.expr(v)

    def expr(self, v: Apply) -> str:
        parts = [self.ref(o, _literal_typed_by_context(v, i)) for i, o in enumerate(v.operands)]
        parts += [f"{k}={format_attr(a)}" for k, a in iter_attrs(v)]
        return f"{v.op.name}({', '.join(parts)})"

    def render(self) -> str:
        f = self.func
        counts = use_counts(f.results)
        lines = []
        for v in topo_order(f.results):
            if isinstance(v, Param) or id(v) in self.names:
                continue
            if v.name is not None or (counts.get(id(v), 0) > 1 and not _is_splat(v)):
                assert isinstance(v, Apply)
                text = self.expr(v)
                self.names[id(v)] = self.fresh(v.name)
                lines.append(f"  {self.names[id(v)]} = {text}")
        params = ", ".join(f"{p.param}: {format_type(p.type)}" for p in f.params)
        results = ", ".join(format_type(t) for t in f.result_types)
        if len(f.result_types) > 1:
            results = f"({results})"
        rets = ", ".join(self.ref(r, True) for r in f.results)  # typed by the result type
        return "\n".join([f"func {f.name}({params}) -> {results} {{", *lines,
                          f"  return {rets}", "}"])


def format_value(v: Value) -> str:
    """One value as a nested term over its parameters' names."""
    params = tuple(x for x in topo_order([v]) if isinstance(x, Param))
    return FuncPrinter(Func("_", params, (v,), (v.type,))).ref(v, True)


def print_func(func: Func) -> str:
    """The canonical text of one func."""
    return FuncPrinter(func).render()


def print_module(module: Module) -> str:
    """The canonical text of a module: its funcs separated by blank lines."""
    return "\n\n".join(print_func(f) for f in module.funcs) + "\n"
