"""assumes(P) preconditions as formulas over one element (see verify.values.precondition_mask,
which evaluates the same guards on arrays)."""

from __future__ import annotations

from fractions import Fraction

import z3

from tcp_rules.prove.domain import Unsupported
from tcp_rules.rules.model import AConst, AFn, Guard, TRef
from tcp_rules.types import DType


def element_holds(g: Guard, e: z3.ExprRef, dtype: DType) -> z3.BoolRef:
    """Does guard ``g`` hold at the element ``e`` of its variable?"""
    if isinstance(g.lhs, AFn):
        if z3.is_fp(e):
            return {"finite": z3.Not(z3.Or(z3.fpIsNaN(e), z3.fpIsInf(e))),
                    "not_nan": z3.Not(z3.fpIsNaN(e))}[g.lhs.fn]
        return z3.BoolVal(True)  # reals and integers are finite
    assert isinstance(g.lhs, TRef) and isinstance(g.rhs, AConst) and g.op is not None
    c = g.rhs.value
    # Compared as numbers, as precondition_mask does (1e-18 is not rounded to the dtype).
    if z3.is_fp(e):
        num = z3.fpToReal(e)
        if c != c or c in (float("inf"), float("-inf")):
            raise Unsupported(f"precondition against {c}")
        holds = _cmp(g.op, num, z3.RealVal(Fraction(c)))
        # NaN compares false except !=; an infinity compares like a huge number
        inf = z3.fpIsInf(e)
        big = _cmp(g.op, z3.If(z3.fpIsPositive(e), z3.RealVal(1), z3.RealVal(-1)) * 10**400,
                   z3.RealVal(Fraction(c)))
        return z3.If(z3.fpIsNaN(e), z3.BoolVal(g.op == "!="), z3.If(inf, big, holds))
    if z3.is_real(e):
        return _cmp(g.op, e, z3.RealVal(Fraction(c)))
    if z3.is_bool(e):
        return _cmp(g.op, z3.If(e, z3.RealVal(1), z3.RealVal(0)), z3.RealVal(Fraction(c)))
    return _cmp(g.op, z3.ToReal(z3.BV2Int(e, is_signed=dtype.is_signed)), z3.RealVal(Fraction(c)))


def _cmp(op: str, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b,
            ">=": a >= b}[op]
