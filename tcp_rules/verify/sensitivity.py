"""How much rounding can move a computed result: a first-order running error bound.

For every value of one side of a case, ``bound`` is an elementwise magnitude B such that
perturbing every input and every intermediate result by a relative u moves the value by at most
about u * B. Inputs and constants contribute their magnitude, every rounded op its result's
magnitude, and each op passes its operands' bounds on through its derivative: B(x + y) =
B(x) + B(y) + |x + y|, B(x * y) = |y| B(x) + |x| B(y) + |x y|, B(exp x) = |exp x| B(x) + |exp x|.
Rounding to integers (floor, ceil, round) passes B on, but where its operand is within rounding
of a step the result may jump by 1, and B there covers the jump.

The approx check allows a difference of k * eps * B on the side being rewritten. Unlike a
tolerance scaled to the largest value computed anywhere, this bound is relative where the
computation is: tanh(x) near 0 is accurate to a few ulps of tanh(x), not of 1, so a rewrite
that cancels there (2 sigmoid(2x) - 1) is caught; a sum whose terms cancel gets the slack of
its terms (reassociation stays approx).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tcp_rules.ir import Apply, Func, Param, Value
from tcp_rules.ops import IDENTITY_OPS, MATMULS, OPS
from tcp_rules.ops.fusion import regrouped_rows
from tcp_rules.types import DType, TensorType, finfo, is_float_array

Arr = np.ndarray

# Ops that move or copy elements without rounding: bounds move with their elements.
LAYOUT = frozenset(n for n, op in OPS.items() if op.category == "movement") | IDENTITY_OPS
# Ops that pick one of their operands' elements: the bound passes through.
PASS = frozenset({"neg", "abs", "clamp", "max", "min", "reduce_max", "reduce_min"})
# Rounding to integers: the bound passes through too, except near a step (see _rounding).
ROUNDING = frozenset({"floor", "ceil", "round", "round_even"})
# "Near a step": within this many eps of the operand's magnitude plus its bound. The approx
# check's own factor is 64 + 8 per reduced term; this covers reductions of ~1000 terms.
_NEAR = 8192.0
COMPARE = frozenset(n for n, op in OPS.items() if op.category == "compare")


def _unary(name: str, x: Arr, out: Arr, b: Arr) -> Arr | None:
    """B(f(x)) without the rounding of f: |f'(x)| * B(x)."""
    rules: dict[str, Callable[[], Arr]] = {
        "exp": lambda: np.abs(out) * b,
        "log": lambda: b / np.abs(x),
        "sqrt": lambda: b / (2 * np.abs(out)),
        "rsqrt": lambda: np.abs(out) * b / (2 * np.abs(x)),
        "tanh": lambda: (1 - out * out) * b,
        "sigmoid": lambda: np.abs(out * (1 - out)) * b,
        "sin": lambda: np.abs(np.cos(x)) * b,
        "cos": lambda: np.abs(np.sin(x)) * b,
        "atan": lambda: b / (1 + x * x),
        "erf": lambda: 2 / np.sqrt(np.pi) * np.exp(-x * x) * b,
    }
    rule = rules.get(name)
    return None if rule is None else rule()


def _binary(name: str, x: Arr, y: Arr, out: Arr, bx: Arr, by: Arr) -> Arr | None:
    """B(f(x, y)) without the rounding of f, through the partial derivatives of f."""
    rules: dict[str, Callable[[], Arr]] = {
        "add": lambda: bx + by,
        "sub": lambda: bx + by,
        "mul": lambda: np.abs(y) * bx + np.abs(x) * by,
        "div": lambda: (bx + np.abs(out) * by) / np.abs(y),
        "pow": lambda: np.abs(y * out / x) * bx + np.abs(out * np.log(np.abs(x))) * by,
        "atan2": lambda: (np.abs(y) * bx + np.abs(x) * by) / (x * x + y * y),
    }
    rule = rules.get(name)
    return None if rule is None else rule()


def _is_float(a: Arr) -> bool:
    return is_float_array(a)


def _magnitude(a: Arr) -> Arr:
    """|a| as a rounding's contribution: 0 for integers and truth values (never rounded), and 0
    at infinities and NaNs, which are not rounded either (an attention mask's -inf is exact, and
    exp of it is exactly 0); counting them as infinite made every bound they reach infinite, and
    those elements were then compared with no slack at all, so a masked softmax's matmul had
    B = 0 where its terms sum to about 1."""
    if not _is_float(a):
        return np.zeros(a.shape)
    m = np.abs(a.astype(np.float64))
    return np.where(np.isfinite(m), m, 0.0)


def _apply(v: Apply, args: list[Arr], bounds: list[Arr], out: Arr) -> Arr:
    """The bound of one op's result from its operands' values and bounds."""
    name, attrs = v.op.name, v.attr_map
    f64 = TensorType.of(DType.F64, out.shape)
    if not _is_float(out) or name in COMPARE:
        return np.zeros(out.shape)  # integers and truth values are compared exactly
    mag = _magnitude(out)
    if name in ("splat", "dense"):
        return mag
    if name in LAYOUT:  # gather's indices are real indices, not bounds
        moved = [bounds[0], *args[1:]] if name == "gather" else bounds
        return np.asarray(v.op.reference(moved, attrs, f64), dtype=np.float64)
    if name == "cast":
        return bounds[0] + mag if _is_float(args[0]) else mag
    if name == "select":
        return np.where(args[0], bounds[1], bounds[2])
    if name in ROUNDING:
        return _rounding(name, args[0].astype(np.float64), bounds[0], out)
    if name in PASS:
        if len(bounds) == 2:
            return np.maximum(bounds[0], bounds[1])
        ref = v.op.reference(bounds, attrs, f64) if name.startswith("reduce") else bounds[0]
        return np.asarray(ref, dtype=np.float64)
    if name == "reduce_sum":
        return np.asarray(v.op.reference(bounds, attrs, f64), dtype=np.float64) + mag
    x64 = [a.astype(np.float64) for a in args]
    if name in MATMULS:
        a, ea = x64[0], bounds[0]
        if name == "load_matmul_rows":  # A regrouped: its last two axes kept
            a, ea = (regrouped_rows(t, out.shape) for t in (a, ea))
        return np.abs(a) @ bounds[1] + ea @ np.abs(x64[1]) + mag
    if name == "reduce_prod":
        rel = np.divide(bounds[0], np.abs(x64[0]), out=np.zeros_like(bounds[0]),
                        where=x64[0] != 0)
        return mag * np.asarray(v.op.reference([rel], attrs, f64), dtype=np.float64) + mag
    o64 = out.astype(np.float64)
    got = (_unary(name, x64[0], o64, bounds[0]) if len(args) == 1 else
           _binary(name, x64[0], x64[1], o64, bounds[0], bounds[1]) if len(args) == 2 else None)
    if got is None:  # an op without a rule here: the loosest bound, never a false alarm
        worst = max((float(b.max(initial=0.0)) for b in bounds), default=0.0)
        return np.full(out.shape, worst) + mag
    return got + mag


def _rounding(name: str, x: Arr, b: Arr, out: Arr) -> Arr:
    """B of floor, ceil, round or round_even of ``x``: B(x), but where x lies within its own
    rounding error of a step (an integer; for the roundings a half), the other side's x may
    fall past it and its result be 1 apart. There the bound covers that jump: 1 / (64 eps), so
    that the approx check's k eps B (k >= 64) is at least 1. Found by the differential fuzz
    test: floor(x - (x - y)) rewritten to floor(y) is 1 apart where x - (x - y) rounds to just
    below an integer y."""
    eps = float(finfo(out.dtype).eps)
    step = np.round(x) if name in ("floor", "ceil") else np.floor(x) + 0.5
    near = np.abs(x - step) <= _NEAR * eps * (np.abs(x) + b)
    return np.where(near, np.maximum(b, 1.0 / (64.0 * eps)), b)


def bound(func: Func, trace: dict[int, Arr], result: Value) -> Arr:
    """The running error bound B of ``result`` (see the module docstring), elementwise; 0 where
    it is not finite (an intermediate overflowed: then no slack is owed for rounding)."""
    bounds: dict[int, Arr] = {}
    with np.errstate(all="ignore"):
        for v in func.values():
            out = trace[id(v)]
            if isinstance(v, Param):
                bounds[id(v)] = _magnitude(out)
                continue
            assert isinstance(v, Apply)
            args = [trace[id(o)] for o in v.operands]
            b = _apply(v, args, [bounds[id(o)] for o in v.operands], out)
            bounds[id(v)] = np.broadcast_to(b, out.shape)
            if v is result:
                break
        b = bounds[id(result)]
        return np.where(np.isfinite(b), b, 0.0)
