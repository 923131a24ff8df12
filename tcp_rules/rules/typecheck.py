"""Static checks that need instances: type preservation, and every inline example.

Type preservation is checked over the instances of each side (ranks up to 3, symbolic dims
with the patterns of equal sizes and 1s that the shape rules need, representative dtypes and
attribute values), up to a bound of shape checks and instances per direction: under the guards,
the side a rule produces must have the type of the side it replaces. The coverage (instances
checked, and whether the enumeration finished within the bound) is reported per rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tcp_rules.diagnostics import Diagnostic, DiagnosticBag, Span
from tcp_rules.elaborate import elaborate_term
from tcp_rules.ir import Param, Value, same_value
from tcp_rules.ops import ShapeError
from tcp_rules.printer import format_value
from tcp_rules.rules.functions import EvalError
from tcp_rules.rules.instances import DEFAULT_DTYPES, NARROW_DTYPES, Enumerator, Instance
from tcp_rules.rules.model import (
    ABin,
    AConst,
    AFn,
    AList,
    AttrExpr,
    Example,
    Pattern,
    POp,
    Rule,
)
from tcp_rules.rules.semantics import Env, holds, instantiate, match
from tcp_rules.rules.sorting import body_vars
from tcp_rules.types import DType


@dataclass(frozen=True)
class TypeCheckResult:
    """How many instances each direction was checked on, and whether enumeration finished."""

    instances: tuple[int, ...]
    complete: bool


def _dtypes_of(rule: Rule, base: Sequence[DType] = DEFAULT_DTYPES) -> tuple[DType, ...]:
    """The representative dtypes plus any the rule mentions (dtype(x) == f64, to=i64)."""
    found: list[DType] = list(base)

    def visit_expr(e: AttrExpr | None) -> None:
        match e:
            case AConst(value=DType() as d) if d not in found:
                found.append(d)
            case AFn(args=children) | AList(items=children):
                for c in children:
                    visit_expr(c)
            case ABin(lhs=x, rhs=y):
                visit_expr(x)
                visit_expr(y)

    def visit(p: Pattern) -> None:
        if isinstance(p, POp):
            for _, e in p.attrs:
                visit_expr(e)
            for a in p.args:
                visit(a)

    visit(rule.lhs)
    visit(rule.rhs)
    for g in rule.guards:
        visit_expr(g.lhs)
        visit_expr(g.rhs)
    return tuple(found)


def check_types(rule: Rule, bag: DiagnosticBag, budget: int = 10_000,
                limit: int = 500) -> TypeCheckResult:
    """Report into ``bag`` any instance where a direction of ``rule`` changes the type.

    The representative dtypes come first; then, with a budget of their own (so that the first
    pass finds what it always found), u8 and f16, whose literals have narrower ranges."""
    counts: list[int] = []
    complete = True
    for label, frm, to in rule.directions():
        side, other = ("left", "right") if label == "=>" else ("right", "left")
        n, exhausted = 0, False
        for dtypes in (_dtypes_of(rule), _dtypes_of(rule, NARROW_DTYPES)):
            enum = Enumerator(frm, rule.guards, dtypes, budget, limit, bodies=body_vars(rule))
            for inst in enum:
                n += 1
                if not _preserves(rule, label, side, other, to, inst, bag):
                    return TypeCheckResult(tuple(counts), complete)
            exhausted = exhausted or enum.budget.exhausted
            complete = complete and not enum.budget.exhausted and enum.yielded < enum.limit
        if n == 0 and not exhausted:
            bag.error(f"rule {rule.name}: the {side} side is never well-typed (no instance with "
                      f"rank <= 3 satisfies the op shape rules and the guards)", rule.span)
        counts.append(n)
    return TypeCheckResult(tuple(counts), complete)


def _preserves(rule: Rule, label: str, side: str, other: str, to: Pattern, inst: Instance,
               bag: DiagnosticBag) -> bool:
    """Does rewriting ``inst`` keep its type? Reports into ``bag`` and returns False if not."""
    try:
        out = instantiate(to, inst.env, expected=inst.value.type)
    except EvalError:
        return True  # a computed attribute is undefined here: the rewrite does not apply
    except ShapeError as e:
        bag.error(f"rule {rule.name}: the {other} side is ill-typed when the {side} side "
                  f"has type {inst.value.type}: "
                  f"{e.message}", rule.span,
                  notes=[(f"for {inst.describe()}", None)])
        return False
    if out.type != inst.value.type:
        bag.error(f"rule {rule.name} changes the type"
                  f"{' (right to left)' if label == '<=' else ''}: the {side} side "
                  f"has type {inst.value.type} but the {other} side has type {out.type}",
                  rule.span, notes=[(f"for {inst.describe()}", None)],
                  hint="add a guard that excludes this case, or fix the rule")
        return False
    return True


def run_example(rule: Rule, ex: Example) -> Diagnostic | None:
    """Rewrite the example's input at its root with the rule; it must give the expected term."""
    params = {name: Param(t, param=name, index=i, name=name)
              for i, (name, t) in enumerate(ex.params)}
    bag = DiagnosticBag()
    before = elaborate_term(ex.before, params, bag)
    after = elaborate_term(ex.after, params, bag, expected=before.type if before else None)
    if bag.items or before is None or after is None:
        first = bag.items[0]
        return Diagnostic(f"rule {rule.name}: example: {first.message}", first.span,
                          hint=first.hint)
    env = Env()
    where: Span | None = ex.span
    if not match(rule.lhs, before, env):
        return Diagnostic(f"rule {rule.name}: example: the left side does not match "
                          f"{format_value(before)}", where)
    failed = [g for g in rule.guards if not holds(g, env)]
    if failed:
        return Diagnostic(f"rule {rule.name}: example: a guard does not hold for "
                          f"{format_value(before)}", failed[0].span or where)
    try:
        result: Value = instantiate(rule.rhs, env, expected=before.type)
    except (EvalError, ShapeError) as e:
        return Diagnostic(f"rule {rule.name}: example: the right side cannot be built: {e}",
                          where)
    if not same_value(result, after):
        return Diagnostic(f"rule {rule.name}: example: the rule gives {format_value(result)} "
                          f"but the example expects {format_value(after)}", where)
    return None


def check_examples(rule: Rule, bag: DiagnosticBag) -> None:
    for ex in rule.examples:
        d = run_example(rule, ex)
        if d is not None:
            bag.items.append(d)


__all__ = ["TypeCheckResult", "check_examples", "check_types", "run_example"]
