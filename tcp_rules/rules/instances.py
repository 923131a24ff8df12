"""Enumerating well-typed instances of a rule side, with symbolic dims.

An instance gives every tensor variable a type (rank <= 3, each dim a symbol, 1, or a symbol
already in use, so that equal sizes arise wherever a shape rule needs them) and every attribute
variable a value from its op's attribute space. Each op node is built with make_apply as soon as
its operands are known, so ill-typed partial instances are cut early. Type checking of rules
and the verifier both draw their instances from here.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tcp_rules.build import Literal, Operand, Scalar, make_apply, make_splat
from tcp_rules.ir import Param, Value
from tcp_rules.ops import OpDef, ShapeError
from tcp_rules.rules.functions import EvalError
from tcp_rules.rules.model import (
    ABin,
    AConst,
    AFn,
    AList,
    AVar,
    Guard,
    Pattern,
    PLit,
    POp,
    PVar,
    TRef,
)
from tcp_rules.rules.semantics import Env, holds, splat_value
from tcp_rules.sorts import Sort
from tcp_rules.types import Dim, DType, TensorType

MAX_RANK = 3
DEFAULT_DTYPES = (DType.F32, DType.I32, DType.I1)
# Dtypes whose literals have narrower ranges: a rule whose right side holds a literal an
# unsigned or f16 context cannot hold (-1, 1e5) is a type error there (rules.typecheck).
NARROW_DTYPES = (DType.U8, DType.F16)
CONST_VALUES = (0, 1, -1, 2, 0.5)  # what a splat-constant variable is tried with


def const_vars(guards: Sequence[Guard]) -> frozenset[str]:
    """Tensor variables the guards inspect as constants (value(c), is_const(c))."""
    found: set[str] = set()
    stack: list[object] = [e for g in guards for e in (g.lhs, g.rhs) if e is not None]
    while stack:
        e = stack.pop()
        if isinstance(e, AFn):
            if e.fn in ("value", "is_const") and isinstance(e.args[0], TRef):
                found.add(e.args[0].name)
            stack.extend(e.args)
        elif isinstance(e, AList):
            stack.extend(e.items)
        elif isinstance(e, ABin):
            stack.extend((e.lhs, e.rhs))
    return frozenset(found)


@dataclass
class Instance:
    """A well-typed instance of a side: bindings and the built value."""

    env: Env
    value: Value

    def describe(self) -> str:
        parts = [f"{n}: {v.type}" + (f" = splat {splat_value(v)}" if splat_value(v) is not None
                                     else "") for n, v in self.env.tensors.items()]
        parts += [f"{n} = {_fmt(v)}" for n, v in self.env.attrs.items()]
        return ", ".join(parts)


def _fmt(v: Any) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


@functools.cache
def feasible(op: OpDef, index: int) -> frozenset[tuple[int, DType]]:
    """(rank, dtype) pairs that operand ``index`` of ``op`` can have in some well-typed use.

    Probed once per op from its own shape rule, with every dim one symbol so that shape
    equalities hold; a necessary condition that cuts most candidates for matmul, reductions,
    transcendental ops and the like.
    """
    size = Dim.of("S")
    kinds = [(r, d) for r in range(MAX_RANK + 1) for d in DType]
    arity = max(len(op.operands), index + 1)
    out: set[tuple[int, DType]] = set()
    for combo in itertools.product(kinds, repeat=arity):
        if combo[index] in out:
            continue
        types = [TensorType(d, (size,) * r) for r, d in combo]
        for attrs in op.attr_space(types, lambda: size):
            try:
                op.infer(types, {**{a.name: a.default for a in op.attrs}, **attrs})
            except (ShapeError, KeyError, TypeError):
                continue
            out.add(combo[index])
            break
    return frozenset(out)


class Budget:
    """Counts shape checks so that enumeration of a very general rule stays bounded."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def spend(self) -> bool:
        self.used += 1
        return self.used <= self.limit

    @property
    def exhausted(self) -> bool:
        return self.used > self.limit


class Enumerator:
    """Yields the well-typed instances of ``pattern`` whose guards may hold."""

    def __init__(self, pattern: Pattern, guards: Sequence[Guard] = (),
                 dtypes: Sequence[DType] = DEFAULT_DTYPES, budget: int = 200_000,
                 limit: int = 4000, bodies: frozenset[str] = frozenset(),
                 may_hold: Callable[[Env], bool] | None = None):
        self.pattern, self.guards, self.dtypes = pattern, guards, tuple(dtypes)
        # Whether the guards may hold at some sizes: by default, where they hold or their
        # truth is undecided at symbolic sizes (a proof for every size decides it exactly).
        self.may_hold = may_hold or (
            lambda env: all(holds(g, env, undecided=True) for g in self.guards))
        self.budget = Budget(budget)
        self.limit = limit  # complete instances yielded at most
        self.yielded = 0
        self.bodies = bodies  # variables that stand for kernel bodies (rules.sorting)
        self.env = Env()
        self.consts = const_vars(guards)
        self.symbols: list[Dim] = []  # symbols in use, oldest first
        self.fresh_count = 0

    def fresh(self, stem: str = "K") -> Dim:
        self.fresh_count += 1
        return Dim.of(f"{stem}{self.fresh_count}")

    def __iter__(self) -> Iterator[Instance]:
        for value in self.gen(self.pattern, None, []):
            if isinstance(value, Literal):
                continue
            if self.may_hold(self.env):
                self.yielded += 1
                yield Instance(self.env.copy(), value)
                if self.yielded >= self.limit:
                    return

    # tensor variables -----------------------------------------------------------------------

    def candidates(self, name: str, parent: POp | None, siblings: Sequence[Operand | None],
                   index: int) -> list[TensorType]:
        """Types worth trying for a new tensor variable at operand ``index`` of ``parent``
        (``siblings``: its operands made so far, None where not yet)."""
        hint = self.sibling_hint(parent, index, siblings)
        if hint is not None:
            return hint
        ok = feasible(parent.op, min(index, len(parent.op.operands) - 1)) \
            if parent is not None and parent.op.operands else None
        out: list[TensorType] = []
        stem = name.upper()
        for rank in range(MAX_RANK + 1):
            dtypes = [dt for dt in self.dtypes if ok is None or (rank, dt) in ok]
            if not dtypes:
                continue
            for dims in self.dim_choices(stem, rank, []):
                out.extend(TensorType(dt, tuple(dims)) for dt in dtypes)
        return out

    def dim_choices(self, stem: str, rank: int, prefix: list[Dim]) -> Iterator[list[Dim]]:
        if len(prefix) == rank:
            yield list(prefix)
            return
        known = [*self.symbols[-3:], *(d for d in prefix if d.symbol and d not in self.symbols)]
        options = [Dim.of(f"{stem}{len(prefix)}"), Dim.of(1), *dict.fromkeys(known)]
        for d in options:
            yield from self.dim_choices(stem, rank, [*prefix, d])

    def sibling_hint(self, parent: POp | None, index: int,
                     siblings: Sequence[Operand | None]) -> list[TensorType] | None:
        """Elementwise operands share a shape (and usually a dtype): take a known sibling's."""
        if parent is None or not parent.op.traits.elementwise:
            return None
        fixed = dict(parent.op.fixed_dtypes)
        typed = [(i, s) for i, s in enumerate(siblings) if isinstance(s, Value)]
        if not typed:
            return None
        dims = typed[0][1].type.dims
        if index in fixed:
            return [TensorType(fixed[index], dims)]
        shared = [s.type.dtype for i, s in typed if i not in fixed]
        if shared:
            return [TensorType(shared[0], dims)]
        return [TensorType(dt, dims) for dt in self.dtypes]

    def bind_tensor(self, name: str, t: TensorType, const: Scalar | None = None) -> list[Dim]:
        self.env.tensors[name] = (
            make_splat(const, t) if const is not None
            else Param(t, param=name, index=len(self.env.tensors), name=name,
                       sort=Sort.BODY if name in self.bodies else Sort.TENSOR))
        new = [d for d in t.dims if d.symbol is not None and d not in self.symbols]
        self.symbols.extend(dict.fromkeys(new))
        return new

    def unbind_tensor(self, name: str, new: list[Dim]) -> None:
        del self.env.tensors[name]
        for d in dict.fromkeys(new):
            self.symbols.remove(d)

    # generation -----------------------------------------------------------------------------

    def gen(self, p: Pattern, parent: POp | None, siblings: Sequence[Operand | None],
            index: int = 0) -> Iterator[Operand]:
        match p:
            case PLit(value=v):
                yield Literal(v)
            case PVar(name=n) if n in self.env.tensors:
                yield self.env.tensors[n]
            case PVar(name=n):
                for t in self.candidates(n, parent, siblings, index):
                    for const in (CONST_VALUES if n in self.consts else (None,)):
                        try:
                            new = self.bind_tensor(n, t, const)
                        except ShapeError:
                            continue  # the constant does not fit the dtype
                        try:
                            yield self.env.tensors[n]
                        finally:
                            self.unbind_tensor(n, new)
            case POp():
                yield from self.gen_op(p)

    def gen_args(self, p: POp, done: list[Operand | None]) -> Iterator[list[Operand]]:
        """Every assignment of ``p``'s operands, made in ``_order``: an elementwise op's
        operands that are ops come first, so that its variables take their shape (f(y,
        reshape(x, shape=s)) would otherwise try every y against every reshape)."""
        order = _order(p)
        made = sum(d is not None for d in done)
        if made == len(p.args):
            yield [d for d in done if d is not None]
            return
        i = order[made]
        for v in self.gen(p.args[i], p, done, i):
            yield from self.gen_args(p, [*done[:i], v, *done[i + 1:]])

    def gen_op(self, p: POp) -> Iterator[Value]:
        defaults = {a.name: a.default for a in p.op.attrs}
        for args in self.gen_args(p, [None] * len(p.args)):
            types = None if any(isinstance(a, Literal) for a in args) else [
                a.type for a in args if isinstance(a, Value)]
            for attrs, new in self.attr_choices(p, args):
                try:
                    if not self.budget.spend():
                        return
                    try:
                        if types is not None:  # cheap rejection before building the value
                            p.op.infer(types, {**defaults, **attrs})
                        yield make_apply(p.op, args, attrs)
                    except (ShapeError, EvalError, KeyError, TypeError):
                        continue
                finally:
                    for n in new:
                        del self.env.attrs[n]

    def attr_choices(self, p: POp, args: Sequence[Operand]) -> Iterator[
            tuple[dict[str, Any], list[str]]]:
        """Attribute assignments for ``p``: literals as written, bound variables as bound, new
        variables from the op's attribute space. Yields (attrs, names newly bound)."""
        fixed: dict[str, Any] = {}
        free: list[str] = []
        for name, e in p.attrs:
            if isinstance(e, AConst):
                fixed[name] = e.value
            elif isinstance(e, AVar) and e.name in self.env.attrs:
                fixed[name] = self.env.attrs[e.name]
            elif isinstance(e, AVar):
                free.append(name)
        if not free:
            yield fixed, []
            return
        known = [a.type for a in args if isinstance(a, Value)]
        types = [a.type if isinstance(a, Value) else known[0] for a in args] if known else []
        seen: set[str] = set()
        for space in p.op.attr_space(types, self.fresh):
            attrs = {**{k: v for k, v in space.items() if k in free}, **fixed}
            key = repr(sorted(attrs.items()))
            if key in seen or any(k not in space for k in free):
                continue
            seen.add(key)
            new = []
            consistent = True
            for name, e in p.attrs:
                if name in free and isinstance(e, AVar):
                    if e.name in self.env.attrs:  # bound twice within this op
                        consistent = consistent and self.env.attrs[e.name] == attrs[name]
                    else:
                        self.env.attrs[e.name] = attrs[name]
                        new.append(e.name)
            if consistent:
                yield attrs, new
            else:
                for n in new:
                    del self.env.attrs[n]


def _order(p: POp) -> list[int]:
    """The order ``gen_args`` makes ``p``'s operands in (see there)."""
    n = range(len(p.args))
    if not p.op.traits.elementwise:
        return list(n)
    return [*(i for i in n if isinstance(p.args[i], POp)),
            *(i for i in n if not isinstance(p.args[i], POp))]
