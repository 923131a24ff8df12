"""Integer pow: exponentiation by squaring with wrap-around, as the op table defines it.

For y >= 0 the result is x**y mod 2**n (LLVM's ``mul`` without nsw/nuw flags wraps). For y < 0
it is 0, except x == 1 gives 1 and x == -1 gives 1 or -1 by the parity of y (ONNX's choice; the
exact result rounded toward zero). A general exponent runs one step per exponent bit below the
sign bit with selects instead of branches, so the loop over elements stays vectorizable; a
literal exponent unrolls only the squarings and multiplies its own bits need.
"""

from __future__ import annotations

import llvmlite.ir as ir

from tcp_rules.codegen.irbase import IR, element


def int_pow(e: IR, x: ir.Value, y: ir.Value) -> ir.Value:
    """``x ** y`` for signed integers (scalars or vectors) of one width."""
    b, ty = e.b, x.type
    width = element(ty).width
    literal = _literal(y)
    if literal is not None:
        return _literal_pow(e, x, literal)
    one, zero = e.const(ty, 1), e.const(ty, 0)
    r, base = one, x
    for k in range(width - 1):  # the sign bit is the negative case below
        bit = b.icmp_unsigned("!=", b.and_(y, e.const(ty, 1 << k)), zero)
        r = b.select(bit, b.mul(r, base), r)
        if k < width - 2:
            base = b.mul(base, base)
    return b.select(b.icmp_signed("<", y, zero), _negative(e, x, y), r)


def _negative(e: IR, x: ir.Value, y: ir.Value) -> ir.Value:
    """The result for y < 0: 1 for x == 1, (-1)**y for x == -1, else 0."""
    b, ty = e.b, x.type
    one, zero = e.const(ty, 1), e.const(ty, 0)
    odd = b.icmp_unsigned("!=", b.and_(y, one), zero)
    minus_one = b.select(odd, e.const(ty, -1), one)
    return b.select(b.icmp_signed("==", x, one), one,
                    b.select(b.icmp_signed("==", x, e.const(ty, -1)), minus_one, zero))


def _literal(y: ir.Value) -> int | None:
    """The exponent when it is a constant (a literal of the program), else None."""
    if not isinstance(y, ir.Constant):
        return None
    c = y.constant
    if isinstance(c, list):  # a splatted vector constant
        vals = {v.constant for v in c}
        return vals.pop() if len(vals) == 1 and isinstance(next(iter(vals), None), int) \
            else None
    return c if isinstance(c, int) else None


def _literal_pow(e: IR, x: ir.Value, y: int) -> ir.Value:
    b, ty = e.b, x.type
    if y < 0:
        return _negative(e, x, e.const(ty, y))
    r: ir.Value | None = None
    base = x
    while y:
        if y & 1:
            r = base if r is None else b.mul(r, base)
        y >>= 1
        if y:
            base = b.mul(base, base)
    return r if r is not None else e.const(ty, 1)
