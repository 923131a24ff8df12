"""Canonical text of rules (``--emit rules``); it parses back to equal Rule objects."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tcp_rules.build import format_scalar
from tcp_rules.grammar import ast
from tcp_rules.printer import format_attr, format_type
from tcp_rules.rules.model import (
    ABin,
    AConst,
    AFn,
    AList,
    AttrExpr,
    AVar,
    Example,
    Guard,
    Pattern,
    PLit,
    POp,
    PVar,
    Rule,
    TRef,
)

_PRECEDENCE = {"+": 1, "-": 1, "*": 2}


def format_expr(e: AttrExpr, parent: int = 0) -> str:
    """An attribute expression; parenthesized only where precedence needs it."""
    match e:
        case AVar(name=n) | TRef(name=n):
            return n
        case AConst(value=v):
            return format_attr(v)
        case AFn(fn=fn, args=args):
            return f"{fn}({', '.join(format_expr(a) for a in args)})"
        case AList(items=items):
            return "[" + ", ".join(format_expr(i) for i in items) + "]"
        case ABin(op=op, lhs=a, rhs=b):
            p = _PRECEDENCE[op]
            text = f"{format_expr(a, p)} {op} {format_expr(b, p + 1)}"
            return f"({text})" if p < parent else text
    raise AssertionError(e)


def format_pattern(p: Pattern) -> str:
    match p:
        case PVar(name=n):
            return n
        case PLit(value=v):
            return format_scalar(v)
        case POp(op=op, args=args, attrs=attrs):
            parts = [format_pattern(a) for a in args]
            for name, e in attrs:
                spec = op.attr(name)
                if e is None or (isinstance(e, AConst) and spec is not None
                                 and spec.default is not None and e.value == spec.default):
                    continue
                parts.append(f"{name}={format_expr(e)}")
            return f"{op.name}({', '.join(parts)})"
    raise AssertionError(p)


def format_guards(guards: Iterable[Guard], sep: str = ", ") -> str:
    return sep.join(format_expr(g.lhs) if g.op is None or g.rhs is None
                    else f"{format_expr(g.lhs)} {g.op} {format_expr(g.rhs)}" for g in guards)


def format_aexpr(e: ast.AExpr) -> str:
    """An attribute expression as the parser read it."""
    match e:
        case ast.ANum(value=v):
            return format_scalar(v)
        case ast.AName(name=n):
            return n
        case ast.AList(items=items):
            return "[" + ", ".join(format_aexpr(i) for i in items) + "]"
        case ast.ABin(op=op, lhs=a, rhs=b):
            return f"({format_aexpr(a)} {op} {format_aexpr(b)})"
        case ast.ANeg(operand=x):
            return f"-{format_aexpr(x)}"
        case ast.ACall(fn=fn, args=args):
            return f"{fn}({', '.join(format_aexpr(a) for a in args)})"
    raise AssertionError(e)


def format_term(t: ast.Term) -> str:
    """A term as the parser read it (rule examples keep their terms unelaborated)."""
    match t:
        case ast.Var(name=n):
            return n
        case ast.Lit(value=v):
            return format_scalar(v)
        case ast.Call(op=op, args=args, kwargs=kwargs):
            parts = [format_term(a) for a in args]
            parts += [f"{k.name}={format_aexpr(k.value)}" for k in kwargs]
            return f"{op}({', '.join(parts)})"
    raise AssertionError(t)


def format_example(ex: Example) -> str:
    params = ", ".join(f"{n}: {format_type(t)}" for n, t in ex.params)
    return f"  example ({params}): {format_term(ex.before)} => {format_term(ex.after)}"


def format_rule(rule: Rule) -> str:
    """One rule: doc comment, head, guards and examples."""
    lines = [f"# {line}".rstrip() for line in rule.doc.splitlines()] if rule.doc else []
    cls = "" if rule.soundness.kind == "exact" and not rule.soundness.precondition else \
        f" {rule.soundness}"
    arrow = "<=>" if rule.two_way else "=>"
    parts = [f"rule {rule.name}{cls}: {format_pattern(rule.lhs)}",
             f"{arrow} {format_pattern(rule.rhs)}"]
    if rule.guards:
        parts.append(f"where {format_guards(rule.guards)}")
    head = " ".join(parts)
    lines.append(head if len(head) <= 100 else "\n    ".join(parts))  # long rules wrap
    lines.extend(format_example(ex) for ex in rule.examples)
    return "\n".join(lines)


def format_rules(rules: Sequence[Rule]) -> str:
    """Rules grouped under their ruleset declarations, in order."""
    out: list[str] = []
    current = None
    for r in rules:
        if r.ruleset != current:
            current = r.ruleset
            out.extend([*([""] if out else []), f"ruleset {current}", ""])
        elif r.doc or r.examples:
            out.append("")  # a documented or exemplified rule stands in its own paragraph
        out.append(format_rule(r))
    return "\n".join(out) + "\n"
