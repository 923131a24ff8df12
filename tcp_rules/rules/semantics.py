"""What rules mean on programs: evaluate attribute expressions and guards, match a side against
a typed value, and build the other side as typed IR (through the same make_apply as programs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tcp_rules.build import Literal, Operand, make_apply, make_splat
from tcp_rules.ir import Apply, Value, attr_equal, same_value
from tcp_rules.ops import AttrKind, ShapeError
from tcp_rules.rules.functions import FUNCTIONS, EvalError, TensorInfo, as_int, compare
from tcp_rules.rules.model import (
    ABin,
    AConst,
    AFn,
    AList,
    AttrExpr,
    AVar,
    Guard,
    Pattern,
    PLit,
    POp,
    PVar,
    Rule,
    TRef,
)
from tcp_rules.types import Dim, TensorType


class Undecided(EvalError):
    """A guard's truth depends on the sizes of symbolic dims."""


@dataclass
class Env:
    """Bindings of a rule's variables: tensor values and attribute values."""

    tensors: dict[str, Value] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)

    def copy(self) -> Env:
        return Env(dict(self.tensors), dict(self.attrs))

    def info(self, name: str) -> TensorInfo:
        v = self.tensors[name]
        return TensorInfo(v.type, splat_value(v))


def splat_value(v: Value) -> int | float | bool | None:
    """The scalar of a splat constant, or None for any other value."""
    if isinstance(v, Apply) and v.op.name == "splat":
        return v.attr_map["value"]
    return None


def eval_expr(e: AttrExpr, env: Env) -> Any:
    """The value of an attribute expression under ``env`` (EvalError where undefined)."""
    match e:
        case AVar(name=n):
            return env.attrs[n]
        case AConst(value=v):
            return v
        case TRef(name=n):
            return env.info(n)
        case AFn(fn=fn, args=args):
            return FUNCTIONS[fn].impl(*(eval_expr(a, env) for a in args))
        case AList(items=items):
            return tuple(eval_expr(i, env) for i in items)
        case ABin(op=op, lhs=a, rhs=b):
            x, y = eval_expr(a, env), eval_expr(b, env)
            if isinstance(x, Dim) or isinstance(y, Dim):
                x, y = Dim.of(x), Dim.of(y)
            return x + y if op == "+" else x - y if op == "-" else x * y
    raise AssertionError(e)


def holds(g: Guard, env: Env, undecided: bool = False) -> bool:
    """Does guard ``g`` hold? Undefined guards do not; ``undecided`` is the answer where the
    truth depends on symbolic sizes."""
    try:
        a = eval_expr(g.lhs, env)
        if g.op is None:
            return bool(a)
        assert g.rhs is not None
        try:
            return compare(g.op, a, eval_expr(g.rhs, env))
        except EvalError as e:
            if "cannot order" in str(e):
                raise Undecided(str(e)) from None
            raise
    except Undecided:
        return undecided
    except EvalError:
        return False


def _attr_value(kind: AttrKind, e: AttrExpr, env: Env) -> Any:
    v = eval_expr(e, env)
    if kind is AttrKind.INT:
        return as_int(v)
    if kind is AttrKind.INTS:
        return tuple(as_int(x) for x in v)
    return v


def instantiate(p: Pattern, env: Env, expected: TensorType | None = None) -> Value:
    """Build pattern ``p`` as typed IR under ``env``; ShapeError if it is ill-typed, EvalError if
    a computed attribute is undefined. ``expected`` types a literal at the root."""
    if isinstance(p, PLit):
        if expected is None:
            raise ShapeError(f"cannot tell the type of literal {p.value}")
        return make_splat(p.value, expected)
    if isinstance(p, PVar):
        return env.tensors[p.name]
    args: list[Operand] = [Literal(a.value) if isinstance(a, PLit) else instantiate(a, env)
                           for a in p.args]
    attrs = {}
    for name, e in p.attrs:
        spec = p.op.attr(name)
        assert spec is not None
        if e is not None:
            attrs[name] = _attr_value(spec.kind, e, env)
    return make_apply(p.op, args, attrs, expected=expected)


def literal_matches(lit: int | float | bool, v: Value) -> bool:
    """Is ``v`` a splat of exactly this literal in its dtype (bit for bit: 0 is not -0.0)?"""
    value = splat_value(v)
    if value is None:
        return False
    dt = v.type.dtype.np_dtype
    try:
        with np.errstate(all="ignore"):
            return bool(np.array(lit).astype(dt).tobytes() == np.array(value).astype(dt).tobytes())
    except (OverflowError, ValueError):
        return False


def match(p: Pattern, v: Value, env: Env) -> bool:
    """Match ``p`` against ``v``, extending ``env``; on False, ``env`` may be partly extended."""
    match p:
        case PVar(name=n):
            if n in env.tensors:
                return same_value(env.tensors[n], v)
            env.tensors[n] = v
            return True
        case PLit(value=lit):
            return literal_matches(lit, v)
        case POp(op=op, args=args, attrs=attrs):
            if not isinstance(v, Apply) or v.op.name != op.name or len(v.operands) != len(args):
                return False
            given = v.attr_map
            for name, e in attrs:
                if not _match_attr(e, given.get(name), env):
                    return False
            return all(match(a, o, env) for a, o in zip(args, v.operands, strict=True))
    raise AssertionError(p)


def _match_attr(e: AttrExpr | None, value: Any, env: Env) -> bool:
    if e is None or value is None:
        return e is None and value is None
    if isinstance(e, AVar):
        if e.name in env.attrs:
            return _same_attr(env.attrs[e.name], value)
        env.attrs[e.name] = value
        return True
    if isinstance(e, AConst):
        return _same_attr(e.value, value)
    raise AssertionError(f"computed attribute in a pattern: {e}")


def _same_attr(a: Any, b: Any) -> bool:
    """Attribute equality; numbers compare by value and sign (0 matches 0.0, not -0.0)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_attr(x, y) for x, y in zip(a, b, strict=True))
    numbers = (int, float)
    if (isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool)
            and not isinstance(b, bool)):
        return attr_equal(float(a), float(b))
    return attr_equal(a, b)


def rewrite(rule: Rule, v: Value, direction: int = 0) -> Value | None:
    """Apply one direction of ``rule`` at the root of ``v``; None if it does not apply."""
    _, frm, to = rule.directions()[direction]
    env = Env()
    if not match(frm, v, env) or not all(holds(g, env) for g in rule.guards):
        return None
    try:
        return instantiate(to, env, expected=v.type)
    except EvalError:
        return None
