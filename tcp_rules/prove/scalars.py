"""The meaning of each elementwise op as a z3 formula over one element of each operand.

Read beside the NumPy references in tcp_rules/ops/elementwise.py, which these follow case by
case: IEEE operations round to nearest even; max/min give NaN if either operand is NaN and
otherwise the first operand only where it is strictly larger (smaller), so max(0.0, -0.0) is
-0.0, as np.maximum; integers wrap; integer division truncates with x / 0 == -1 (unsigned: MAX)
and MIN / -1 == MIN; casts saturate and send NaN to 0.

libm functions (exp, log, tanh, sin, cos, atan, erf, pow, atan2) are uninterpreted functions,
constrained only by facts that hold exactly for NumPy's implementations (docs/prove.md lists
them); sigmoid is 1 / (1 + exp(-x)) as its reference computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import z3

from tcp_rules.prove.domain import FP_SORTS, RNE, Ctx, Unsupported, const
from tcp_rules.types import DType

type E = Any  # a z3 term (z3-solver has no type annotations mypy can use)
ScalarFn = Callable[[Ctx, Sequence[E], Sequence[DType], DType, dict[str, Any]], E]
F32 = z3.FPSort(*FP_SORTS[DType.F32])


def _real(ctx: Ctx, dt: DType) -> bool:
    return dt.is_float and ctx.mode == "real"


def storage(fn: ScalarFn, exact: bool = False) -> ScalarFn:
    """``fn`` computed the way f16/bf16 ops are: operands widened to f32 exactly, the op in
    f32, the result rounded once to storage (the op table's in_f32).

    ``exact`` ops give the same value computed in storage directly, which is far cheaper to
    solve: those whose result is an operand or an integer-valued rounding of one, and the basic
    operations +, -, *, / and sqrt, for which rounding to f32 and then to f16 or bf16 equals
    rounding once (double rounding is innocuous when the wider precision is at least 2p + 2
    bits: 24 >= 2 * 11 + 2; Figueroa 1995). tests/test_prove_formulas.py checks both against
    NumPy bit for bit."""
    def run(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
        if ctx.mode == "real" or exact or not any(d.is_storage_float for d in (*dts, out)):
            return fn(ctx, a, dts, out, at)
        wide = [z3.fpFPToFP(RNE, x, F32) if d.is_storage_float else x
                for x, d in zip(a, dts, strict=True)]
        r = fn(ctx, wide, [d.compute for d in dts], out.compute, at)
        return z3.fpFPToFP(RNE, r, z3.FPSort(*FP_SORTS[out])) if out.is_storage_float else r
    return run


def _div_bv(x: E, y: E, signed: bool) -> E:
    if not signed:
        return z3.If(y == 0, -1, z3.UDiv(x, y))  # -1 is all bits set: MAX
    # bvsdiv truncates toward zero; MIN / -1 wraps to MIN, and -x wraps the same way
    return z3.If(y == 0, -1, z3.If(y == -1, -x, x / y))


def _div(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
    x, y = a
    if _real(ctx, dts[0]):
        # Over the reals x / 0 has no value: a side is defined where its divisors are nonzero.
        ctx.domain.append(y != 0)
        return x / y
    if dts[0].is_float:
        return z3.fpDiv(RNE, x, y)
    return _div_bv(x, y, dts[0].is_signed)


def _lt(x: E, y: E, dt: DType, ctx: Ctx) -> E:
    if dt is DType.I1:
        return z3.And(z3.Not(x), y)
    if dt.is_float:
        return x < y if ctx.mode == "real" else z3.fpLT(x, y)
    return x < y if dt.is_signed else z3.ULT(x, y)


def _extreme(larger: bool) -> ScalarFn:
    def run(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
        x, y = a
        dt = dts[0]
        pick = _lt(y, x, dt, ctx) if larger else _lt(x, y, dt, ctx)
        r = z3.If(pick, x, y)  # ties (±0) give the second operand, as np.maximum/np.minimum
        if dt.is_float and ctx.mode == "fp":
            return z3.If(z3.Or(z3.fpIsNaN(x), z3.fpIsNaN(y)), z3.fpNaN(x.sort()), r)
        return r
    return storage(run, exact=True)


def _compare(name: str) -> ScalarFn:
    def run(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
        x, y = a
        dt = dts[0]
        if dt.is_float and ctx.mode == "fp":
            return {"eq": z3.fpEQ, "ne": z3.fpNEQ, "lt": z3.fpLT, "le": z3.fpLEQ,
                    "gt": z3.fpGT, "ge": z3.fpGEQ}[name](x, y)
        if name in ("eq", "ne"):
            return (x == y) if name == "eq" else (x != y)
        lt = _lt(x, y, dt, ctx) if name in ("lt", "ge") else _lt(y, x, dt, ctx)
        return lt if name in ("lt", "gt") else z3.Not(lt)
    return run


def _neg(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
    return z3.fpNeg(a[0]) if dts[0].is_float and ctx.mode == "fp" else -a[0]


def _abs(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
    x, dt = a[0], dts[0]
    if dt.is_float and ctx.mode == "fp":
        return z3.fpAbs(x)
    if dt.is_unsigned:
        return x
    return z3.If(x < 0, -x, x)  # abs(MIN) wraps to MIN


def _round(mode: z3.FPRMRef, real: Callable[[E], E]) -> ScalarFn:
    def run(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
        return real(a[0]) if ctx.mode == "real" else z3.fpRoundToIntegral(mode, a[0])
    return storage(run, exact=True)


def _floor(x: E) -> E:
    return z3.ToReal(z3.ToInt(x))


def _round_even_real(x: E) -> E:
    f = _floor(x)
    d = x - f
    even = z3.ToInt(f) % 2 == 0
    return z3.If(d < 0.5, f, z3.If(d > 0.5, f + 1, z3.If(even, f, f + 1)))


def _sqrt(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
    x = a[0]
    if ctx.mode == "fp":
        return z3.fpSqrt(RNE, x)  # IEEE square root is correctly rounded, as NumPy's
    s = ctx.func("sqrt", z3.RealSort(), z3.RealSort())(x)
    ctx.facts.append(z3.Implies(x >= 0, z3.And(s >= 0, s * s == x)))
    ctx.domain.append(x >= 0)  # over the reals sqrt(x < 0) has no value
    return s


def _rsqrt(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
    s = _sqrt(ctx, a, dts, out, at)
    if ctx.mode == "fp":
        return z3.fpDiv(RNE, z3.FPVal(1.0, None, s.sort()), s)
    ctx.domain.append(s != 0)
    return 1 / s


# Exact facts about libm results at special points: (name, point test, value). Every entry is
# checked against NumPy by tests/test_prove_formulas.py. NaN in gives NaN out for all of them.
def _special(name: str, x: E) -> list[tuple[E, E]]:
    s = x.sort()
    zero, one = z3.fpIsZero(x), z3.FPVal(1.0, None, s)
    pinf, ninf = z3.fpIsInf(x) & z3.fpIsPositive(x), z3.fpIsInf(x) & z3.fpIsNegative(x)
    table: dict[str, list[tuple[E, E]]] = {
        "exp": [(zero, one), (pinf, z3.fpPlusInfinity(s)), (ninf, z3.fpPlusZero(s))],
        "log": [(zero, z3.fpMinusInfinity(s)), (z3.fpEQ(x, one), z3.fpPlusZero(s)),
                (pinf, z3.fpPlusInfinity(s)), (z3.fpLT(x, z3.fpPlusZero(s)), z3.fpNaN(s))],
        "tanh": [(zero, x), (pinf, one), (ninf, z3.fpNeg(one))],
        "sin": [(zero, x), (z3.fpIsInf(x), z3.fpNaN(s))],
        "cos": [(zero, one), (z3.fpIsInf(x), z3.fpNaN(s))],
        "atan": [(zero, x)],
        "erf": [(zero, x), (pinf, one), (ninf, z3.fpNeg(one))],
    }
    return table[name]


# Symmetries of NumPy's implementations, bit for bit (tests/test_prove_formulas.py checks them
# on 200,000 random values per float dtype): they compute on |x| and restore the sign.
ODD = frozenset({"tanh", "sin", "atan", "erf"})
EVEN = frozenset({"cos"})


def _libm(name: str) -> ScalarFn:
    def run(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
        x = a[0]
        if ctx.mode == "real":
            return _real_libm(ctx, name, x)
        f = ctx.func(name, x.sort(), x.sort())
        r: E = f(x)
        if name in ODD:  # f(-x) == -f(x): the function is only consulted at x >= +0
            r = z3.If(z3.fpIsNegative(x), z3.fpNeg(f(z3.fpNeg(x))), r)
        elif name in EVEN:
            r = f(z3.fpAbs(x))
        elif name == "exp":  # never negative (NaN is neither sign in z3)
            ctx.facts.append(z3.Not(z3.fpIsNegative(r)))
        for test, value in reversed(_special(name, x)):
            r = z3.If(test, value, r)
        return z3.If(z3.fpIsNaN(x), z3.fpNaN(x.sort()), r)
    # In f16/bf16 the op is round(f(widen(x))): itself some function of x, with the same facts
    # (rounding keeps ±0, ±1, ±inf, NaN and signs, and is odd), so the uninterpreted function
    # stands at the storage sort directly.
    return storage(run, exact=True)


def _real_libm(ctx: Ctx, name: str, x: E) -> E:
    """Over the reals the functions are the mathematical ones; the identities rules rely on are
    axioms (instantiated for every use, see axioms.py)."""
    f = ctx.func(name, z3.RealSort(), z3.RealSort())
    return f(x)


def _sigmoid(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]
             ) -> E:
    x = a[0]
    e = _libm("exp")(ctx, [-x if ctx.mode == "real" else z3.fpNeg(x)], dts, out, at)
    if ctx.mode == "real":
        ctx.domain.append(1 + e != 0)
        return 1 / (1 + e)
    one = z3.FPVal(1.0, None, x.sort())
    return z3.fpDiv(RNE, one, z3.fpAdd(RNE, one, e))


def _binary_libm(name: str) -> ScalarFn:
    def run(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
        x, y = a
        if not dts[0].is_float:
            if name == "pow":
                return _int_pow(x, y)
            raise Unsupported(f"{name} on {dts[0]}")
        f = ctx.func(name, x.sort(), y.sort(), x.sort())(x, y)
        if ctx.mode == "real":
            return _real_pow(ctx, x, y, f) if name == "pow" else f
        if name == "pow":  # C99: pow(x, ±0) == 1 and pow(1, y) == 1, even for NaN
            one = z3.FPVal(1.0, None, x.sort())
            nan = z3.Or(z3.fpIsNaN(x), z3.fpIsNaN(y))
            return z3.If(z3.Or(z3.fpIsZero(y), z3.fpEQ(x, one)), one,
                         z3.If(z3.fpEQ(y, one), x,  # pow(x, 1) == x exactly
                               z3.If(nan, z3.fpNaN(x.sort()), f)))
        return z3.If(z3.Or(z3.fpIsNaN(x), z3.fpIsNaN(y)), z3.fpNaN(x.sort()), f)
    return storage(run, exact=True)  # as for _libm: rounding keeps every fact used


def _real_pow(ctx: Ctx, x: E, y: E, f: E) -> E:
    """pow over the reals at a constant exponent: x**n for an integer n (x != 0 if n < 0),
    sqrt(x) for 0.5 (x >= 0); elsewhere the uninterpreted function."""
    c = z3.simplify(y)
    if not z3.is_rational_value(c):
        return f
    n = c.as_fraction()
    if n.denominator == 1 and abs(n.numerator) <= 8:
        p: E = z3.RealVal(1)
        for _ in range(abs(n.numerator)):
            p = p * x
        if n.numerator >= 0:
            return p
        ctx.domain.append(x != 0)
        return 1 / p
    if n == Fraction(1, 2):
        s = _sqrt(ctx, [x], [DType.F64], DType.F64, {})
        return z3.If(x >= 0, s, f)
    return f


def _int_pow(x: E, y: E) -> E:
    """int_power: square and multiply over every bit below the sign bit; y < 0 gives 0,
    except 1 for x == 1 and (-1)**y for x == -1."""
    n = x.size()
    r: E = z3.BitVecVal(1, n)
    base = x
    for k in range(n - 1):
        r = z3.If(z3.Extract(k, k, y) == 1, r * base, r)
        base = base * base
    odd = z3.Extract(0, 0, y) == 1
    one, minus, zero = (z3.BitVecVal(v, n) for v in (1, -1, 0))
    neg = z3.If(x == 1, one, z3.If(x == -1, z3.If(odd, minus, one), zero))
    return z3.If(y < 0, neg, r)


def _select(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]
            ) -> E:
    return z3.If(a[0], a[1], a[2])


def _clamp(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
    x = a[0]
    dt = dts[0].compute if ctx.mode == "fp" else dts[0]
    if at.get("min") is not None:
        x = _extreme(True)(ctx, [x, const(at["min"], dt, ctx.mode)], [dt, dt], dt, {})
    if at.get("max") is not None:
        x = _extreme(False)(ctx, [x, const(at["max"], dt, ctx.mode)], [dt, dt], dt, {})
    return x


def _cast(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
    from tcp_rules.prove.casts import cast

    return cast(ctx, a[0], dts[0], out)


def _fp_only(fn: Callable[..., E], real: Callable[..., E]) -> ScalarFn:
    return _arith(lambda x, y: fn(RNE, x, y), real, lambda x, y: real(x, y))


def _arith(fp: Callable[[E, E], E], real: Callable[[E, E], E], bv: Callable[[E, E], E]
           ) -> ScalarFn:
    def run(ctx: Ctx, a: Sequence[E], dts: Sequence[DType], out: DType, at: dict[str, Any]) -> E:
        x, y = a
        if _real(ctx, dts[0]):
            return real(x, y)
        return fp(x, y) if dts[0].is_float else bv(x, y)
    return storage(run, exact=True)


SCALAR_FORMULAS: dict[str, ScalarFn] = {
    "neg": storage(_neg, exact=True), "abs": storage(_abs, exact=True),
    "exp": _libm("exp"), "log": _libm("log"), "tanh": _libm("tanh"), "sin": _libm("sin"),
    "cos": _libm("cos"), "atan": _libm("atan"), "erf": _libm("erf"),
    "sigmoid": storage(_sigmoid), "sqrt": storage(_sqrt, exact=True), "rsqrt": storage(_rsqrt),
    "floor": _round(z3.RTN(), _floor), "ceil": _round(z3.RTP(), lambda x: -_floor(-x)),
    "round": _round(z3.RNA(), lambda x: z3.If(x >= 0, _floor(x + 0.5), -_floor(0.5 - x))),
    "round_even": _round(z3.RNE(), _round_even_real),
    "clamp": storage(_clamp),
    "add": _fp_only(z3.fpAdd, lambda x, y: x + y),
    "sub": _fp_only(z3.fpSub, lambda x, y: x - y),
    "mul": _fp_only(z3.fpMul, lambda x, y: x * y),
    "div": storage(_div, exact=True),
    "max": _extreme(True), "min": _extreme(False),
    "pow": _binary_libm("pow"), "atan2": _binary_libm("atan2"),
    **{c: _compare(c) for c in ("eq", "ne", "lt", "le", "gt", "ge")},
    "select": _select, "cast": _cast,
}
