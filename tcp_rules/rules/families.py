"""Rule families: ``rule NAME for f in CLASS: ...`` stands for one rule per op of CLASS.

CLASS is an op category of the op table (``unary``, ``binary``, ``compare``, ``reduce``...),
``elementwise``, or a bracketed list of op names and classes (``[unary, cast]``). Each member
becomes an ordinary rule named ``NAME.op`` with every call of ``f`` replaced by the op;
attributes of the op that the call does not write become variables ``f_ATTR`` shared by all
calls of ``f`` in the rule, so they are matched on the left and carried over unchanged to the
right. Examples are instantiated
the same way for members whose attributes all have defaults (an example is concrete: it has no
variables to carry, so clamp's bounds or cast's target could not be filled in); the other
members are still type-checked and verified like every rule.
"""

from __future__ import annotations

import dataclasses

from tcp_rules.diagnostics import DiagnosticBag
from tcp_rules.elaborate import did_you_mean
from tcp_rules.grammar import ast
from tcp_rules.ops import OPS, OpDef


def op_classes() -> dict[str, list[OpDef]]:
    """Every class name a family may range over, with its ops in table order."""
    classes: dict[str, list[OpDef]] = {"elementwise": [o for o in OPS.values()
                                                       if o.traits.elementwise]}
    for op in OPS.values():
        classes.setdefault(op.category, []).append(op)
    return classes


def _members(fam: ast.FamilyDecl, bag: DiagnosticBag, rule: str) -> list[OpDef] | None:
    classes = op_classes()
    ops: list[OpDef] = []
    for name in fam.ops:
        if name in classes and not (fam.is_list and name in OPS):
            ops.extend(classes[name])
        elif name in OPS and fam.is_list:
            ops.append(OPS[name])
        else:
            known = sorted(classes) + (sorted(OPS) if fam.is_list else [])
            bag.error(f"rule {rule}: '{name}' is neither an op class ({', '.join(sorted(classes))})"
                      f"{' nor an op' if fam.is_list else ''}", fam.span,
                      hint=did_you_mean(name, known))
            return None
    return list(dict.fromkeys(ops))


def _calls(t: ast.Term, var: str) -> bool:
    return isinstance(t, ast.Call) and (t.op == var or any(_calls(a, var) for a in t.args))


def _subst(t: ast.Term, var: str, op: OpDef, carry: bool) -> ast.Term:
    if not isinstance(t, ast.Call):
        return t
    args = tuple(_subst(a, var, op, carry) for a in t.args)
    if t.op != var:
        return dataclasses.replace(t, args=args)
    kwargs = t.kwargs
    if carry:
        given = {k.name for k in kwargs}
        kwargs += tuple(ast.Kwarg(a.name, ast.AName(f"{var}_{a.name}", t.op_span), t.op_span)
                        for a in op.attrs if a.name not in given)
    return dataclasses.replace(t, op=op.name, args=args, kwargs=kwargs)


def expand(decl: ast.RuleDecl, bag: DiagnosticBag) -> list[ast.RuleDecl]:
    """The rules ``decl`` stands for: itself, or one per member of its family."""
    fam = decl.family
    if fam is None:
        return [decl]
    if not _calls(decl.lhs, fam.var):
        bag.error(f"rule {decl.name}: the left side never calls the family's op '{fam.var}'",
                  decl.lhs.span, hint=f"write {fam.var}(...) where the op goes")
        return []
    members = _members(fam, bag, decl.name)
    if members is None:
        return []
    out = []
    for op in members:
        concrete = all(a.default is not None for a in op.attrs)
        examples = () if not concrete else tuple(
            dataclasses.replace(x, before=_subst(x.before, fam.var, op, False),
                                after=_subst(x.after, fam.var, op, False))
            for x in decl.examples)
        out.append(dataclasses.replace(
            decl, name=f"{decl.name}.{op.name}", family=None, examples=examples,
            lhs=_subst(decl.lhs, fam.var, op, True), rhs=_subst(decl.rhs, fam.var, op, True)))
    return out
