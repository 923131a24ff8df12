"""Concrete cases: a symbolic instance of a rule side with sizes and values chosen, both sides
run on the reference interpreter, and the comparison each soundness class demands.

exact: the same bits (any NaN matches any NaN; -0.0 differs from 0.0; integers wrap).
approx: on finite inputs (see values.finite_values), elementwise: two finite results agree
within k * eps * B, where B is the running error bound of the rewritten side (see sensitivity:
relative where that side's computation is, so also near zero) and k grows with the longest
reduction; NaN must meet NaN and inf the same inf. Over- and underflow are excused only when
both sides over- or underflow alike: both the same infinity (or a finite result within rounding
of the largest float against it), both below the smallest normal. A finite result against inf
or NaN is a failure, whatever an intermediate did (exp(x - y) is 1 at x = y = 100, its rewrite
exp(x) / exp(y) is NaN).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcp_rules.build import make_splat
from tcp_rules.diagnostics import TcpError
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Apply, Func, Param
from tcp_rules.ops import MATMULS, ShapeError
from tcp_rules.rules.functions import EvalError
from tcp_rules.rules.instances import Instance
from tcp_rules.rules.model import Guard, Pattern, Rule
from tcp_rules.rules.semantics import Env, holds, instantiate, splat_value
from tcp_rules.types import Dim, finfo, is_float_array
from tcp_rules.verify.sensitivity import bound

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


def subst_sizes(value: Any, sizes: Mapping[str, int | Dim]) -> Any:
    """An attribute value with size symbols replaced (by numbers or other dims)."""
    if isinstance(value, Dim):
        return value.subst(sizes)
    if isinstance(value, tuple):
        return tuple(subst_sizes(v, sizes) for v in value)
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
    env.attrs = {k: subst_sizes(a, sizes) for k, a in inst.env.attrs.items()}
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
    if is_float_array(a):
        same = ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
    else:
        same = a == b
    return None if same.all() else _describe(a, b, ~same)


def approx_mismatch(a: np.ndarray, b: np.ndarray, slack: np.ndarray, reduced: int
                    ) -> str | None:
    """Differences beyond rounding (see the module docstring); None if within tolerance.
    ``slack`` is the running error bound of ``a``'s side, ``reduced`` the longest reduction."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return exact_mismatch(a, b)
    if not is_float_array(a):
        return exact_mismatch(a, b)  # integer arithmetic is exact (wrapping), no rounding
    fi = finfo(a.dtype)
    k = (64.0 + 8.0 * reduced) * float(fi.eps)
    with np.errstate(all="ignore"):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        mag = np.maximum(np.abs(a64), np.abs(b64))
        fa, fb = np.isfinite(a64), np.isfinite(b64)
        close = np.abs(a64 - b64) <= k * (mag + slack)
        under = mag <= float(fi.tiny) * (1.0 + k)  # both in the subnormals (or zero)
        ok = fa & fb & (close | under)
        # One side overflowed: fine only if the other is within rounding of the largest float,
        # with the same sign (inf is what rounding a value beyond it gives).
        edge = float(fi.max) * (1.0 - k * (1.0 + np.where(fa, slack, 0.0)
                                          / np.maximum(np.abs(np.where(fa, a64, b64)), 1.0)))
        for inf, fin in ((a64, b64), (b64, a64)):
            ok |= np.isinf(inf) & np.isfinite(fin) & (np.abs(fin) >= edge) & (
                np.sign(inf) == np.sign(fin))
        ok |= (np.isnan(a64) & np.isnan(b64)) | (np.isinf(a64) & (a64 == b64))
    return None if ok.all() else _describe(a, b, ~ok)


def _describe(a: np.ndarray, b: np.ndarray, bad: np.ndarray) -> str:
    idx = tuple(int(i) for i in np.argwhere(bad)[0]) if a.ndim else ()
    x, y = a[idx], b[idx]
    where = f" at {list(idx)}" if idx else ""
    text = (f"{int(bad.sum())} of {bad.size} element(s) differ; first{where}: "
            f"left {format_scalar(x)}, right {format_scalar(y)}")
    if is_float_array(a) and np.isfinite(x) and np.isfinite(y):
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
        bits = int(arr.view({2: np.uint16, 4: np.uint32}.get(arr.itemsize, np.uint64)).item())
        sign = 1 << (arr.itemsize * 8 - 1)
        return -(bits & ~sign) if bits & sign else bits

    return abs(ordered(x) - ordered(y))


def judge(setup: Setup, inputs: dict[str, np.ndarray], mode: str
          ) -> tuple[np.ndarray, np.ndarray, str | None] | None:
    """Run both sides and compare them the way ``mode`` demands; None if the case can't run."""
    ran = run_setup(setup, inputs)
    if ran is None:
        return None
    lhs, rhs, trace = ran
    if mode == "exact":
        return lhs, rhs, exact_mismatch(lhs, rhs)
    slack = bound(setup.func, trace, setup.func.results[0])
    return lhs, rhs, approx_mismatch(lhs, rhs, slack, longest_reduction(setup.func, trace))


def longest_reduction(func: Func, trace: dict[int, np.ndarray]) -> int:
    """How many terms the longest sum of either side adds (1 without reductions): rounding
    errors of a sum grow with its length."""
    longest = 1
    for v in func.values():
        if isinstance(v, Apply) and v.op.name in REDUCING and v.operands:
            x, out = trace[id(v.operands[0])], trace[id(v)]
            terms = (x.shape[-1] if x.ndim else 1) if "matmul" in v.op.name else (
                x.size // max(out.size, 1))
            longest = max(longest, terms)
    return longest


REDUCING = frozenset({"reduce_sum", "reduce_prod"}) | MATMULS


def make_case(rule: Rule, direction: str, mode: str, inst: Instance, setup: Setup,
              sizes: dict[str, int], inputs: dict[str, np.ndarray]) -> Case | None:
    judged = judge(setup, inputs, mode)
    if judged is None:
        return None
    lhs, rhs, mismatch = judged
    return Case(rule, direction, mode, inst.describe(), dict(sizes), inputs, setup.consts,
                setup.attrs, lhs, rhs, mismatch)
