"""Typed rules: frozen data with a name, a span, typed sides, guards, examples and a class.

Sides are patterns over the op table; attribute positions hold attribute expressions whose
sorts are checked (a permutation variable is an ``ints``, ``shape(x)`` is a ``dims``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tcp_rules.diagnostics import Span
from tcp_rules.grammar import ast
from tcp_rules.ops import OpDef
from tcp_rules.rules.functions import Sort
from tcp_rules.types import TensorType

Scalar = int | float | bool


# Attribute expressions ------------------------------------------------------------------------

@dataclass(frozen=True)
class AVar:
    """An attribute variable: bound on the left side, used in guards and on the right."""

    name: str
    sort: Sort
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class AConst:
    """A literal attribute value in canonical form (tuple of ints, Dim, DType, scalar...)."""

    value: Any
    sort: Sort
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class TRef:
    """A tensor variable as the argument of an attribute function: shape(x)."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)
    sort: Sort = Sort.TENSOR


@dataclass(frozen=True)
class AFn:
    """An attribute function applied to arguments: compose(p, q), dim(x, 0)."""

    fn: str
    args: tuple[AttrExpr, ...]
    sort: Sort
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class AList:
    items: tuple[AttrExpr, ...]
    sort: Sort
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ABin:
    op: str  # + - *
    lhs: AttrExpr
    rhs: AttrExpr
    sort: Sort
    span: Span | None = field(default=None, compare=False, repr=False)


AttrExpr = AVar | AConst | TRef | AFn | AList | ABin


# Patterns ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PVar:
    """A tensor variable; a second occurrence matches only the same value."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PLit:
    """A scalar literal: a splat constant of the type its context requires."""

    value: Scalar
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class POp:
    """An op with operand patterns and every attribute (defaults filled in)."""

    op: OpDef
    args: tuple[Pattern, ...]
    attrs: tuple[tuple[str, AttrExpr | None], ...]
    span: Span | None = field(default=None, compare=False, repr=False)


Pattern = PVar | PLit | POp


@dataclass(frozen=True)
class Guard:
    """``lhs op rhs`` (op one of == != < <= > >=), or a predicate ``lhs`` when op is None."""

    lhs: AttrExpr
    op: str | None = None
    rhs: AttrExpr | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Soundness:
    """How a rule may differ from the original: exact, approx, or assumes(precondition)."""

    kind: str = "exact"
    precondition: tuple[Guard, ...] = ()

    def __str__(self) -> str:
        from tcp_rules.rules.printer import format_guards  # printer depends on this module

        if self.kind == "assumes":
            return f"assumes({format_guards(self.precondition, ' and ')})"
        return self.kind


CLASSES = ("exact", "approx", "assumes")


@dataclass(frozen=True)
class Example:
    """A concrete instance: typed variables, an input term, and what the rule must give."""

    params: tuple[tuple[str, TensorType], ...]
    before: ast.Term
    after: ast.Term
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Rule:
    """A checked rewrite rule."""

    name: str
    ruleset: str
    soundness: Soundness
    lhs: Pattern
    rhs: Pattern
    two_way: bool
    guards: tuple[Guard, ...]
    examples: tuple[Example, ...]
    doc: str = ""
    tensor_vars: tuple[str, ...] = ()
    attr_vars: tuple[tuple[str, Sort], ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def where(self) -> str:
        return self.span.where if self.span else self.name

    def directions(self) -> list[tuple[str, Pattern, Pattern]]:
        """(label, from, to) for each direction the rule may be used in."""
        out = [("=>", self.lhs, self.rhs)]
        if self.two_way:
            out.append(("<=", self.rhs, self.lhs))
        return out


def pattern_vars(p: Pattern) -> tuple[list[str], list[tuple[str, Sort]]]:
    """Tensor and attribute variables of a pattern, in order of first occurrence."""
    tensors: list[str] = []
    attrs: list[tuple[str, Sort]] = []
    stack: list[Pattern] = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, PVar) and q.name not in tensors:
            tensors.append(q.name)
        elif isinstance(q, POp):
            for _, a in q.attrs:
                if isinstance(a, AVar) and a.name not in [n for n, _ in attrs]:
                    attrs.append((a.name, a.sort))
            stack.extend(reversed(q.args))
    return tensors, attrs
