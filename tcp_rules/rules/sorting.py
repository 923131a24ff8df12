"""Sorts of rule variables: which tensor variables stand for kernel bodies (tcp_rules.sorts).

Sorts are inferred by unification over both sides of a rule: ``load`` and ``load_matmul`` take
tensors and give a body, ``kernel`` the reverse, ``load_matmul_rows`` a body and a tensor; every
other op shares one sort among its operands and result, and a literal fits either. A variable
the rule does not constrain is a tensor; since every other op treats bodies and tensors alike,
such a rule holds for bodies too.
"""

from __future__ import annotations

from collections.abc import Iterable

from tcp_rules.diagnostics import Span
from tcp_rules.rules.model import Pattern, PLit, POp, PVar, Rule
from tcp_rules.sorts import BOUNDARY, Sort


class SortError(Exception):
    def __init__(self, message: str, span: Span | None):
        super().__init__(message)
        self.message, self.span = message, span


class _Unifier:
    def __init__(self) -> None:
        self.parent: dict[object, object] = {}
        self.fixed: dict[object, Sort] = {}

    def find(self, k: object) -> object:
        while self.parent.get(k, k) != k:
            k = self.parent[k]
        return k

    def sort(self, k: object) -> Sort | None:
        return self.fixed.get(self.find(k))

    def unify(self, a: object, b: object, span: Span | None, what: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        sa, sb = self.fixed.get(ra), self.fixed.get(rb)
        if sa is not None and sb is not None and sa is not sb:
            raise SortError(f"{what} is {sa.article} here but {sb.article} elsewhere", span)
        self.parent[ra] = rb
        if sa is not None:
            self.fixed[rb] = sa

    def fix(self, k: object, s: Sort, span: Span | None, what: str) -> None:
        fresh = ("fixed", s)
        self.fixed[fresh] = s
        self.unify(k, fresh, span, what)


def _walk(p: Pattern, u: _Unifier) -> object | None:
    """Constrain ``p``; the unification key of its sort (None: a literal, fits either)."""
    match p:
        case PVar(name=n):
            return ("var", n)
        case PLit():
            return None
        case POp(op=op, args=args):
            key = ("node", id(p))
            kids = [_walk(a, u) for a in args]
            if op.name in BOUNDARY:
                wants, result = BOUNDARY[op.name]
                for k, a, want in zip(kids, args, wants, strict=True):
                    if k is not None:
                        u.fix(k, want, a.span, f"an operand of {op.name}")
                u.fix(key, result, p.span, f"{op.name}(...)")
                return key
            for k, a in zip(kids, args, strict=True):
                if k is not None:
                    u.unify(k, key, a.span, f"an operand of {op.name}")
            return key
    raise AssertionError(p)


def var_sorts(*sides: Pattern) -> dict[str, Sort]:
    """The sort of every tensor variable of ``sides`` (the sides of one rule must have one sort).

    Raises SortError at the offending subterm when no assignment fits.
    """
    u = _Unifier()
    roots = [_walk(s, u) for s in sides]
    keyed = [(r, s) for r, s in zip(roots, sides, strict=True) if r is not None]
    for (r, s) in keyed[1:]:
        mine, first = u.sort(r), u.sort(keyed[0][0])
        if mine is not None and first is not None and mine is not first:
            raise SortError(f"the right side is {mine.article} but the left side is "
                            f"{first.article}: a rule must keep the sort", s.span)
        u.unify(r, keyed[0][0], s.span, "the right side")
    return {n: u.sort(("var", n)) or Sort.TENSOR for n in _vars(sides)}


def _vars(sides: Iterable[Pattern]) -> list[str]:
    out: list[str] = []
    stack = list(sides)
    while stack:
        p = stack.pop()
        if isinstance(p, PVar):
            out.append(p.name)
        elif isinstance(p, POp):
            stack.extend(p.args)
    return out


def body_vars(rule: Rule) -> frozenset[str]:
    """The tensor variables of ``rule`` that stand for kernel bodies."""
    return frozenset(n for n, s in var_sorts(rule.lhs, rule.rhs).items() if s is Sort.BODY)


KERNEL_OPS = frozenset(BOUNDARY)


def forms_kernels(rule: Rule) -> bool:
    """Whether ``rule`` mentions kernel, load or a load_matmul: it is sort-sensitive (egglog
    checks its variables' sorts) and runs in the default schedule's last phase."""
    stack: list[Pattern] = [rule.lhs, rule.rhs]
    while stack:
        p = stack.pop()
        if isinstance(p, POp):
            if p.op.name in KERNEL_OPS:
                return True
            stack.extend(p.args)
    return False
