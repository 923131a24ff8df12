"""The reference interpreter: runs a func on NumPy arrays with each op's table reference.

Symbolic dims are bound from the actual input arrays; every op's shape rule is then re-checked on
the concrete types, so a constraint that could not be decided statically (a slice bound, a
reshape of symbolic sizes) is enforced before the op runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from tcp_rules.diagnostics import Span, TcpError
from tcp_rules.ir import Apply, Func, Param, Value
from tcp_rules.ops import ShapeError
from tcp_rules.types import Dim, DType, TensorType


def _err(message: str, span: Span | None = None) -> TcpError:
    return TcpError.at(message, span, stage="run")


def bind_symbols(func: Func, arrays: Sequence[np.ndarray]) -> dict[str, int]:
    """Check inputs against the parameter types and bind every symbolic dim.

    Refuses a missing or extra input, a wrong dtype or rank, a dim that disagrees with its type,
    and a symbol that two inputs bind to different sizes.
    """
    if len(arrays) != len(func.params):
        raise _err(f"func {func.name} takes {len(func.params)} input(s), got {len(arrays)}")
    env: dict[str, int] = {}
    bound_by: dict[str, str] = {}
    for p, a in zip(func.params, arrays, strict=True):
        where = f"input '{p.param}'"
        if not isinstance(a, np.ndarray):
            raise _err(f"{where} must be a NumPy array, got {type(a).__name__}", p.span)
        if DType.from_numpy(a.dtype) is not p.type.dtype:
            raise _err(f"{where} has dtype {a.dtype} but the parameter is {p.type} "
                       f"(expects {p.type.dtype.np_dtype})", p.span)
        if a.ndim != p.type.rank:
            raise _err(f"{where} has rank {a.ndim} (shape {list(a.shape)}) but the parameter "
                       f"is {p.type}", p.span)
        for axis, (d, n) in enumerate(zip(p.type.dims, a.shape, strict=True)):
            sym = d.symbol
            if sym is None:
                continue
            if sym in env and env[sym] != n:
                raise _err(f"symbol {sym} is bound to {env[sym]} by {bound_by[sym]} but "
                           f"{where} has {n} at axis {axis}", p.span)
            env[sym] = n
            bound_by[sym] = f"{where} (axis {axis})"
    for p, a in zip(func.params, arrays, strict=True):
        concrete = concretize(p.type, env, p.span)
        if concrete.shape != a.shape:
            here = f", which is {concrete} here" if p.type.symbols else ""
            raise _err(f"input '{p.param}' has shape {list(a.shape)} but the parameter is "
                       f"{p.type}{here}", p.span)
    return env


def concretize(t: TensorType, env: Mapping[str, int], span: Span | None = None) -> TensorType:
    """``t`` with every symbol replaced by its bound size."""
    c = t.subst(env)
    if c.shape is None:
        unbound = sorted(c.symbols)
        raise _err(f"cannot determine {', '.join(unbound)} of type {t}: no input has "
                   f"{'that symbol' if len(unbound) == 1 else 'those symbols'} as a dim", span)
    if any(n < 0 for n in c.shape):
        raise _err(f"type {t} has a negative dim here ({c})", span)
    return c


def _concrete_attrs(v: Apply, env: Mapping[str, int]) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, a in v.attrs:
        if isinstance(a, tuple) and a and isinstance(a[0], Dim):
            a = tuple(d.subst(env) for d in a)
        out[k] = a
    return out


def evaluate(func: Func, arrays: Sequence[np.ndarray],
             trace: dict[int, np.ndarray] | None = None) -> tuple[np.ndarray, ...]:
    """Run ``func`` on ``arrays`` (one per parameter) and return its results.

    ``trace``, if given, receives every computed value keyed by the id of its IR value.
    """
    env = bind_symbols(func, arrays)
    vals: dict[int, np.ndarray] = {} if trace is None else trace
    for v in func.values():
        if isinstance(v, Param):
            vals[id(v)] = arrays[v.index]
            continue
        assert isinstance(v, Apply)
        args = [vals[id(o)] for o in v.operands]
        attrs = _concrete_attrs(v, env)
        try:
            out_t = v.op.infer([TensorType.of(o.type.dtype, a.shape)
                                for a, o in zip(args, v.operands, strict=True)], attrs)
        except ShapeError as e:
            raise _err(shape_message(v.op.name, e.message, env), v.span) from None
        if any(n < 0 for n in out_t.shape or ()):
            raise _err(shape_message(v.op.name, f"result type {out_t} has a negative dim", env),
                       v.span)
        with np.errstate(all="ignore"):
            out = v.op.reference(args, attrs, out_t)
        vals[id(v)] = _checked(v, out, out_t)
    return tuple(vals[id(r)] for r in func.results)


def shape_message(op: str, message: str, env: Mapping[str, int]) -> str:
    """A shape rule's refusal at run time, as every engine reports it: the op, the rule's
    message and the sizes the symbols were bound to."""
    msg = message if message.startswith(op) else f"{op}: {message}"
    bound = ", ".join(f"{k}={n}" for k, n in sorted(env.items())) or "no symbols"
    return f"{msg} (with {bound})"


def _checked(v: Value, out: np.ndarray, t: TensorType) -> np.ndarray:
    # A reference that disagrees with its own shape rule is a bug in the op table, not user error.
    if out.shape != t.shape or out.dtype != t.dtype.np_dtype:
        raise AssertionError(f"reference of {getattr(v, 'op', None)} produced "
                             f"{out.dtype}{list(out.shape)}, shape rule says {t}")
    return out
