"""Facts about the libm functions over the reals (approx obligations), as quantified axioms.

Over the reals the functions are the mathematical ones, so these identities hold exactly; only
those of the functions a query uses are added. Floating-point (exact) queries get no quantified
axioms: there the functions are constrained only at special points (scalars.py), because
identities such as exp(a + b) == exp(a) * exp(b) fail bit for bit.
"""

from __future__ import annotations

import z3

from tcp_rules.prove.domain import Ctx


def real_axioms(ctx: Ctx) -> list[z3.BoolRef]:
    """The axioms of every real-valued uninterpreted function in ``ctx``."""
    r = z3.RealSort()
    f = {name.split("/")[0]: fn for name, fn in ctx.funcs.items()
         if all(fn.domain(i) == r for i in range(fn.arity())) and fn.range() == r}
    a, b = z3.Reals("a b")
    out: list[z3.BoolRef] = []
    exp, log, sqrt = f.get("exp"), f.get("log"), f.get("sqrt")
    if exp is not None:
        out += [z3.ForAll([a], exp(a) > 0, patterns=[exp(a)]), exp(z3.RealVal(0)) == 1,
                z3.ForAll([a, b], exp(a + b) == exp(a) * exp(b), patterns=[exp(a + b)]),
                z3.ForAll([a, b], exp(a - b) * exp(b) == exp(a), patterns=[exp(a - b)]),
                z3.ForAll([a], exp(-a) * exp(a) == 1, patterns=[exp(-a)])]
    if log is not None:
        out += [log(z3.RealVal(1)) == 0,
                z3.ForAll([a, b], z3.Implies(z3.And(a > 0, b > 0),
                                             log(a * b) == log(a) + log(b)),
                          patterns=[log(a * b)]),
                z3.ForAll([a, b], z3.Implies(z3.And(a > 0, b > 0),
                                             log(a / b) == log(a) - log(b)),
                          patterns=[log(a / b)])]
    if exp is not None and log is not None:
        out += [z3.ForAll([a], log(exp(a)) == a, patterns=[log(exp(a))]),
                z3.ForAll([a], z3.Implies(a > 0, exp(log(a)) == a), patterns=[exp(log(a))])]
    if sqrt is not None and log is not None:
        out.append(z3.ForAll([a], z3.Implies(a > 0, log(sqrt(a)) == log(a) / 2),
                             patterns=[log(sqrt(a))]))
    if sqrt is not None:
        out += [z3.ForAll([a, b], z3.Implies(z3.And(a >= 0, b >= 0),
                                             sqrt(a * b) == sqrt(a) * sqrt(b)),
                          patterns=[sqrt(a * b)])]
    for odd in ("tanh", "sin", "atan", "erf"):
        if odd in f:
            g = f[odd]
            out.append(z3.ForAll([a], g(-a) == -g(a), patterns=[g(-a)]))
    if "cos" in f:
        out.append(z3.ForAll([a], f["cos"](-a) == f["cos"](a), patterns=[f["cos"](-a)]))
    return out
