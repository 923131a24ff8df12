"""Concrete cases: a symbolic instance of a rule side with sizes and values chosen, both sides
run on the reference interpreter, and the comparison each soundness class demands.

exact: the same bits (any NaN matches any NaN; -0.0 differs from 0.0; integers wrap).
approx: on finite inputs of moderate size (see values.finite_values), where both results are
finite they agree within a tolerance scaled to
the dtype's epsilon, the sizes reduced over and the magnitudes of the values computed; NaN and
infinities must appear in the same places. Where an intermediate value overflowed to inf or
underflowed into the subnormals, the case says nothing about rounding and is not held against
the rule (exp(a + b) == exp(a) * exp(b) is approx although exp(a) may overflow alone).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcp_rules.build import make_splat
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Apply, Func, Param
from tcp_rules.ops import ShapeError
from tcp_rules.rules.functions import EvalError
from tcp_rules.rules.instances import Instance
from tcp_rules.rules.model import Guard, Pattern, Rule
from tcp_rules.rules.semantics import Env, holds, instantiate, splat_value
from tcp_rules.types import Dim

Scalar = int | float | bool


@dataclass
class Case:
    """One concrete run of a rule direction, and what went wrong if anything did."""

    rule: Rule
    direction: str
    mode: str  # "exact" or "approx"
    instance: str
    sizes: dict[str, int]
    inputs: dict[str, np.ndarray]
    consts: dict[str, Scalar]
    attrs: dict[str, Any]
    lhs: np.ndarray
    rhs: np.ndarray
    mismatch: str | None

    @property
    def size(self) -> tuple[int, int]:
        """How big the case is, for choosing the smaller of two counterexamples."""
        return (sum(a.size for a in self.inputs.values()), sum(self.sizes.values()))


def symbols_of(inst: Instance) -> list[str]:
    """The symbolic dims an instance uses, in a stable order."""
    found: dict[str, None] = {}
    for v in inst.env.tensors.values():
        for d in v.type.dims:
            found.update(dict.fromkeys(sorted(d.symbols)))
    for a in inst.env.attrs.values():
        for d in a if isinstance(a, tuple) else (a,):
            if isinstance(d, Dim):
                found.update(dict.fromkeys(sorted(d.symbols)))
    return list(found)


def _subst(value: Any, sizes: dict[str, int]) -> Any:
    if isinstance(value, Dim):
        return value.subst(sizes)
    if isinstance(value, tuple):
        return tuple(_subst(v, sizes) for v in value)
    return value


@dataclass
class Setup:
    """A symbolic instance made concrete: typed parameters and both sides, ready to run."""

    func: Func
    params: list[Param]
    consts: dict[str, Scalar]
    attrs: dict[str, Any]


def concretize(frm: Pattern, to: Pattern, guards: tuple[Guard, ...], inst: Instance,
               sizes: dict[str, int], consts: dict[str, Scalar]) -> Setup | None:
    """Substitute sizes and constants; None if the guards fail or a side cannot be built."""
    env = Env()
    params: list[Param] = []
    for name, v in inst.env.tensors.items():
        t = v.type.subst(sizes)
        if t.shape is None or any(n < 0 for n in t.shape):
            return None
        if splat_value(v) is not None:
            try:
                env.tensors[name] = make_splat(consts[name], t)
            except ShapeError:
                return None
        else:
            p = Param(t, param=name, index=len(params), name=name, sort=v.sort)
            params.append(p)
            env.tensors[name] = p
    env.attrs = {k: _subst(a, sizes) for k, a in inst.env.attrs.items()}
    if not all(holds(g, env) for g in guards):
        return None
    try:
        lhs = instantiate(frm, env)
        rhs = instantiate(to, env, expected=lhs.type)
    except (ShapeError, EvalError):
        return None
    func = Func("case", tuple(params), (lhs, rhs), (lhs.type, rhs.type))
    return Setup(func, params, consts, dict(env.attrs))


def run_setup(setup: Setup, inputs: dict[str, np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray, dict[int, np.ndarray]] | None:
    trace: dict[int, np.ndarray] = {}
    try:
        lhs, rhs = evaluate(setup.func, [inputs[p.param] for p in setup.params], trace)
    except TcpError:
        return None  # a size the shape rules refuse at run time (a slice bound)
    return lhs, rhs, trace


def exact_mismatch(a: np.ndarray, b: np.ndarray) -> str | None:
    """Where two results differ in bits (NaN payloads aside), described; None if they don't."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"results differ in type: {a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}"
    if a.dtype.kind == "f":
        same = ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    return None if same.all() else _describe(a, b, ~same)


def approx_mismatch(a: np.ndarray, b: np.ndarray, scale: float, reduced: int,
                    overflowed: bool, amplification: float = 1.0) -> str | None:
    """Differences beyond rounding (see the module docstring); None if within tolerance."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return exact_mismatch(a, b)
    if a.dtype.kind != "f":
        return exact_mismatch(a, b)  # integer arithmetic is exact (wrapping), no rounding
    if overflowed:
        return None  # out of range: nothing to say about rounding (see the module docstring)
    eps = float(np.finfo(a.dtype).eps)
    k = (64.0 + 8.0 * reduced) * amplification
    fa, fb = np.isfinite(a), np.isfinite(b)
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        tol = k * eps * (np.maximum(np.abs(a64), np.abs(b64)) + scale)
        bad = fa & fb & (np.abs(a64 - b64) > tol)
    same_special = (np.isnan(a) & np.isnan(b)) | (a == b)
    bad |= (fa != fb) | (~fa & ~fb & ~same_special)
    return _describe(a, b, bad) if bad.any() else None


def _describe(a: np.ndarray, b: np.ndarray, bad: np.ndarray) -> str:
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if a.ndim else ()
    x, y = a[idx], b[idx]
    where = f" at {list(idx)}" if idx else ""
    text = (f"{int(bad.sum())} of {bad.size} element(s) differ; first{where}: "
            f"left {format_scalar(x)}, right {format_scalar(y)}")
    if a.dtype.kind == "f" and np.isfinite(x) and np.isfinite(y):
        text += f" (difference {format_scalar(abs(float(x) - float(y)))}, {_ulps(x, y)} ulp)"
    return text


def format_scalar(v: Any) -> str:
    """A value as Python would write it: 0.5, -0.0, nan, inf, 3, True."""
    if isinstance(v, np.floating | float):
        f = float(v)
        return "-0.0" if f == 0 and math.copysign(1, f) < 0 else repr(f)
    return repr(v.item() if isinstance(v, np.generic) else v)


def _ulps(x: Any, y: Any) -> int:
    """Distance in units in the last place between two finite floats of one dtype."""
    def ordered(v: Any) -> int:
        arr = np.array(v)
        bits = int(arr.view(np.uint32 if arr.dtype == np.float32 else np.uint64).item())
        sign = 1 << (arr.itemsize * 8 - 1)
        return -(bits & ~sign) if bits & sign else bits

    return abs(ordered(x) - ordered(y))


def _out_of_range(v: np.ndarray) -> bool:
    """Did a computed value overflow to inf or underflow into the subnormals? Rounding
    equivalence (approx) says nothing there; a NaN from an invalid operation is no excuse."""
    if v.dtype.kind != "f":
        return False
    tiny = np.finfo(v.dtype).tiny
    with np.errstate(all="ignore"):
        return bool(np.isinf(v).any() or ((v != 0) & (np.abs(v) < tiny)).any())


def judge(setup: Setup, inputs: dict[str, np.ndarray], mode: str
          ) -> tuple[np.ndarray, np.ndarray, str | None] | None:
    """Run both sides and compare them the way ``mode`` demands; None if the case can't run."""
    ran = run_setup(setup, inputs)
    if ran is None:
        return None
    lhs, rhs, trace = ran
    if mode == "exact":
        return lhs, rhs, exact_mismatch(lhs, rhs)
    finite = [np.abs(v[np.isfinite(v)]).max(initial=0.0) for v in trace.values()
              if v.dtype.kind == "f"]
    scale = float(max(finite, default=0.0))
    params = {id(p) for p in setup.params}
    overflowed = any(_out_of_range(v) for k, v in trace.items() if k not in params)
    reduced = max((a.size for a in inputs.values()), default=1)
    return lhs, rhs, approx_mismatch(lhs, rhs, scale, reduced, overflowed,
                                     _amplification(setup.func, trace))


# Ops whose relative error grows with the size of the argument (the condition number of exp
# at x is |x|): rounding an argument of 700 by half an ulp moves exp by 700 half-ulps.
AMPLIFYING = frozenset({"exp", "pow", "sin", "cos", "sigmoid", "tanh", "erf"})


def _amplification(func: Func, trace: dict[int, np.ndarray]) -> float:
    worst = 1.0
    for v in func.values():
        if isinstance(v, Apply) and v.op.name in AMPLIFYING:
            for o in v.operands:
                x = trace.get(id(o))
                if x is not None and x.dtype.kind == "f" and x.size:
                    finite = np.abs(x[np.isfinite(x)])
                    worst = max(worst, 1.0 + float(finite.max(initial=0.0)))
    return worst


def make_case(rule: Rule, direction: str, mode: str, inst: Instance, setup: Setup,
              sizes: dict[str, int], inputs: dict[str, np.ndarray]) -> Case | None:
    judged = judge(setup, inputs, mode)
    if judged is None:
        return None
    lhs, rhs, mismatch = judged
    return Case(rule, direction, mode, inst.describe(), dict(sizes), inputs, setup.consts,
                setup.attrs, lhs, rhs, mismatch)
