"""Syntax trees of programs and rule files, as frozen dataclasses carrying source spans.

The AST is what the parser produces before any name resolution or typing; ``--emit ast`` prints
it with :func:`format_ast`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from tcp_rules.diagnostics import Source, Span

Scalar = int | float | bool


# Attribute expressions -------------------------------------------------------------------------

@dataclass(frozen=True)
class ANum:
    value: Scalar
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class AName:
    name: str
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class AList:
    items: tuple[AExpr, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class ABin:
    op: str  # "+", "-", "*"
    lhs: AExpr
    rhs: AExpr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class ANeg:
    operand: AExpr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class ACall:
    fn: str
    args: tuple[AExpr, ...]
    span: Span = field(compare=False, repr=False)


AExpr = ANum | AName | AList | ABin | ANeg | ACall


# Terms ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Var:
    name: str
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Lit:
    """A scalar literal in tensor position: splatted to the type its context requires."""

    value: Scalar
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Kwarg:
    name: str
    value: AExpr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Call:
    op: str
    args: tuple[Term, ...]
    kwargs: tuple[Kwarg, ...]
    span: Span = field(compare=False, repr=False)
    op_span: Span = field(compare=False, repr=False)


Term = Var | Lit | Call


@dataclass(frozen=True)
class TypeExpr:
    dtype: str
    dims: tuple[AExpr, ...]
    span: Span = field(compare=False, repr=False)


# Programs -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ParamDecl:
    name: str
    type: TypeExpr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Let:
    name: str
    value: Term
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class FuncDecl:
    name: str
    params: tuple[ParamDecl, ...]
    results: tuple[TypeExpr, ...]
    body: tuple[Let, ...]
    returns: tuple[Term, ...]
    span: Span = field(compare=False, repr=False)
    name_span: Span = field(compare=False, repr=False)
    return_span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class ModuleDecl:
    funcs: tuple[FuncDecl, ...]
    source: Source = field(compare=False, repr=False)


def format_ast(node: object, indent: int = 0) -> str:
    """An indented, span-annotated dump of any AST node (the ``--emit ast`` output)."""
    pad = "  " * indent
    if isinstance(node, tuple):
        return "\n".join(format_ast(item, indent) for item in node) if node else f"{pad}()"
    if not dataclasses.is_dataclass(node):
        return f"{pad}{node!r}"
    span = getattr(node, "span", None)
    where = f" @{span.line}:{span.col}" if isinstance(span, Span) else ""
    fields = [f for f in dataclasses.fields(node) if f.repr]
    simple = [f for f in fields if not _nested(getattr(node, f.name))]
    nested = [f for f in fields if _nested(getattr(node, f.name))]
    head = " ".join(f"{f.name}={getattr(node, f.name)!r}" for f in simple)
    lines = [f"{pad}{type(node).__name__}{where}" + (f" {head}" if head else "")]
    for f in nested:
        value = getattr(node, f.name)
        lines.append(f"{pad}  {f.name}:")
        lines.append(format_ast(value, indent + 2))
    return "\n".join(lines)


def _nested(value: object) -> bool:
    return dataclasses.is_dataclass(value) or (
        isinstance(value, tuple) and any(dataclasses.is_dataclass(v) for v in value))


# Rule files -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class GuardDecl:
    """``lhs CMP rhs``, or a predicate call alone (``is_float(x)``) when ``op`` is None."""

    lhs: AExpr
    op: str | None
    rhs: AExpr | None
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class ClassDecl:
    kind: str  # exact | approx | assumes
    condition: tuple[GuardDecl, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class ExampleDecl:
    params: tuple[ParamDecl, ...]
    before: Term
    after: Term
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class FamilyDecl:
    """``for var in ops``: ``ops`` is one op class name (``unary``) or a list of op names."""

    var: str
    ops: tuple[str, ...]
    is_list: bool
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class RuleDecl:
    name: str
    cls: ClassDecl | None
    lhs: Term
    two_way: bool
    rhs: Term
    guards: tuple[GuardDecl, ...]
    examples: tuple[ExampleDecl, ...]
    doc: str
    span: Span = field(compare=False, repr=False)
    name_span: Span = field(compare=False, repr=False)
    family: FamilyDecl | None = None


@dataclass(frozen=True)
class ImportDecl:
    path: str
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class RulesetDecl:
    name: str
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class RuleFileDecl:
    items: tuple[RuleDecl | ImportDecl | RulesetDecl, ...]
    source: Source = field(compare=False, repr=False)
