"""Proving one instance of a rule for every size: the instance's dims stay symbolic (z3
integers >= 0), both sides are tensors of symbolic size (indexmaps.py), and the claim is that at
every index of the result both sides are equal, wherever the sizes make the left side well
typed and the guards hold.

Guards speak of sizes through shape(x), dim(x, a) and attributes that hold dims; they are
evaluated as far as they do not depend on sizes, and their comparisons of dims become
hypotheses over the size symbols. The right side's own conditions (a slice reading in range) are
part of what is proved. The instance's ranks, dtypes and attributes are those the enumerator
gave: what this proves is "for every size", at the instance's rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from tcp_rules.build import make_splat
from tcp_rules.ir import Apply, Func, Param, Value, topo_order
from tcp_rules.ops import ShapeError
from tcp_rules.prove.axioms import real_axioms
from tcp_rules.prove.domain import Ctx, Unsupported
from tcp_rules.prove.indexmaps import INDEX_FORMULAS, Sized, STensor, in_range, input_tensor
from tcp_rules.rules.functions import EvalError, SymbolicSize, compare
from tcp_rules.rules.instances import Instance
from tcp_rules.rules.model import Guard, Pattern
from tcp_rules.rules.semantics import Env, eval_expr, instantiate, splat_value
from tcp_rules.types import Dim
from tcp_rules.verify.cases import subst_sizes

type E = Any
# Bounds tried in turn on the sizes where the sides may differ, each within the last: sizes to
# check with concrete values (larger ones make too big a concrete query).
SMALL_SIZES = (8, 3)


def guard_formula(g: Guard, env: Env, sz: Sized) -> E:
    """Guard ``g`` as a z3 formula over the size symbols (True or False where no size
    matters); Unsupported where its value depends on sizes in a way it cannot say."""
    try:
        a = eval_expr(g.lhs, env)
        if g.op is None:
            return z3.BoolVal(bool(a))
        assert g.rhs is not None
        b = eval_expr(g.rhs, env)
    except SymbolicSize as e:
        raise Unsupported(f"a guard needs a size as a number: {e}") from None
    except EvalError:
        return z3.BoolVal(False)  # undefined for a reason no size changes (not a constant)
    return _compare(g.op, a, b, sz)


def guards_may_hold(guards: tuple[Guard, ...], env: Env) -> bool:
    """Whether the guards hold at some sizes (every size >= 0) of a symbolic instance: the
    enumerator keeps exactly those instances for a proof for every size (where a guard cannot
    be read as a formula, the instance is kept, and its proof then fails)."""
    sz = Sized(Ctx("fp"), {})
    try:
        hyps = [z3.simplify(guard_formula(g, env, sz)) for g in guards]
    except Unsupported:
        return True
    if any(z3.is_false(h) for h in hyps):
        return False
    if all(z3.is_true(h) for h in hyps):
        return True
    solver = z3.Solver()
    solver.set(timeout=1000)
    solver.add(*[s >= 0 for s in sz.symbols.values()], *hyps)
    return solver.check() != z3.unsat


def _compare(op: str, a: Any, b: Any, sz: Sized) -> E:
    if isinstance(a, tuple) or isinstance(b, tuple):
        xs, ys = tuple(a), tuple(b)
        if op not in ("==", "!=") or len(xs) != len(ys):
            return z3.BoolVal(compare(op, a, b))  # an error or a difference of ranks
        same = z3.And(*[_compare("==", x, y, sz) for x, y in zip(xs, ys, strict=True)])
        return same if op == "==" else z3.Not(same)
    if (isinstance(a, Dim) or isinstance(b, Dim)) and _sized(a) and _sized(b):
        x, y = sz.dim(Dim.of(a)), sz.dim(Dim.of(b))
        return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y,
                ">=": x >= y}[op]
    return z3.BoolVal(compare(op, a, b))


def _sized(v: Any) -> bool:
    return isinstance(v, Dim) or (isinstance(v, int) and not isinstance(v, bool))


def implied(hyps: list[E], sz: Sized) -> dict[str, Dim]:
    """Sizes the hypotheses fix: a symbol that must be 0 or 1, or equal to an earlier one."""
    names = list(sz.symbols)
    solver = z3.Solver()
    solver.set(timeout=1000)
    solver.add(*[sz.symbols[n] >= 0 for n in names], *hyps)
    out: dict[str, Dim] = {}
    for k, n in enumerate(names):
        for other in [Dim.of(0), Dim.of(1), *(Dim.of(m) for m in names[:k] if m not in out)]:
            if solver.check(sz.symbols[n] != sz.dim(other)) == z3.unsat:
                out[n] = other
                break
    return out


def specialize(env: Env, sizes: dict[str, Dim]) -> Env:
    """The instance's bindings with symbols replaced by the dims the guards fix."""
    out = Env()
    for name, v in env.tensors.items():
        t = v.type.subst(sizes)
        c = splat_value(v)
        out.tensors[name] = make_splat(c, t) if c is not None else Param(
            t, param=name, index=len(out.tensors), name=name, sort=v.sort)
    out.attrs = {k: subst_sizes(a, sizes) for k, a in env.attrs.items()}
    return out


def build(frm: Pattern, to: Pattern, env: Env) -> Func:
    """Both sides at the instance's symbolic types; Unsupported where the right side does not
    type without knowing the sizes."""
    params = [v for v in env.tensors.values() if isinstance(v, Param)]
    try:
        lhs = instantiate(frm, env)
        rhs = instantiate(to, env, expected=lhs.type)
    except (ShapeError, EvalError) as e:
        raise Unsupported(f"the sides do not type at symbolic sizes: {e}") from None
    return Func("case", tuple(params), (lhs, rhs), (lhs.type, rhs.type))


def _tensors(func: Func, sz: Sized) -> tuple[dict[int, STensor], dict[int, list[E]]]:
    """Every value as a tensor of symbolic size, and the conditions each op adds."""
    vals: dict[int, STensor] = {}
    own: dict[int, list[E]] = {}
    for v in func.values():
        nonneg = [sz.dim(d) >= 0 for d in v.type.dims]
        if isinstance(v, Param):
            vals[id(v)] = input_tensor(v.param, v.type, sz)
            own[id(v)] = nonneg
            continue
        assert isinstance(v, Apply)
        fn = INDEX_FORMULAS.get(v.op.name)
        if fn is None:
            raise Unsupported(f"{v.op.name} has no formula at symbolic sizes")
        before = len(sz.valid)
        types = [o.type for o in v.operands]
        vals[id(v)] = fn(sz, v.op.name, [vals[id(o)] for o in v.operands], types, v.type,
                         dict(v.attrs))
        own[id(v)] = nonneg + sz.valid[before:]
    return vals, own


def _conditions(root: Value, own: dict[int, list[E]]) -> list[E]:
    return [c for u in topo_order([root]) for c in own.get(id(u), [])]


@dataclass
class Attempt:
    """The outcome of a proof for every size: proved, or why not; where the solver found sizes
    at which the sides may differ, those sizes (to be tried with concrete values)."""

    proved: bool
    reason: str = ""
    sizes: dict[str, int] | None = None


def prove_instance(frm: Pattern, to: Pattern, guards: tuple[Guard, ...], inst: Instance,
                   mode: str, timeout: float) -> Attempt:
    """Prove the instance for every size; the caller proves it at bounded sizes (or at the
    sizes found) otherwise, where counterexamples are confirmed by NumPy."""
    try:
        return _prove(frm, to, guards, inst, mode, timeout)
    except Unsupported as e:
        return Attempt(False, str(e))
    except z3.Z3Exception as e:  # a formula bug: never a proof
        return Attempt(False, f"formula error: {e}")


def _prove(frm: Pattern, to: Pattern, guards: tuple[Guard, ...], inst: Instance, mode: str,
           timeout: float) -> Attempt:
    ctx = Ctx(mode)
    sz = Sized(ctx, {})
    env = inst.env
    hyps = [guard_formula(g, env, sz) for g in guards]
    try:
        func = build(frm, to, env)
    except Unsupported:
        # The guards may fix sizes the right side needs equal (shape(x) == shape(y) with
        # x: [X0] and y: [1] means X0 = 1): rebuilt with those sizes substituted.
        fixed = implied(hyps, sz)
        if not fixed:
            raise
        env = specialize(env, fixed)
        sz = Sized(ctx, {})
        hyps = [guard_formula(g, env, sz) for g in guards]
        func = build(frm, to, env)
    vals, own = _tensors(func, sz)
    lhs_v, rhs_v = func.results
    lhs, rhs = vals[id(lhs_v)], vals[id(rhs_v)]
    valid_l, valid_r = _conditions(lhs_v, own), _conditions(rhs_v, own)
    if len(lhs.dims) != len(rhs.dims):
        return Attempt(False, "the sides differ in rank")
    index = tuple(z3.Int(f"index!{k}") for k in range(len(lhs.dims)))
    before = len(ctx.domain)
    left = lhs.at(index)
    defined_l = ctx.domain[before:]
    before = len(ctx.domain)
    right = rhs.at(index)
    defined_r = ctx.domain[before:]
    solver = z3.Solver()
    solver.set(timeout=max(1, int(timeout * 1000)))
    solver.add(*[s >= 0 for s in sz.symbols.values()], *hyps, *valid_l, *defined_l,
               in_range(index, lhs.dims), *ctx.facts)
    if mode == "real":
        solver.add(*real_axioms(ctx))
    same_dims = [x == y for x, y in zip(lhs.dims, rhs.dims, strict=True)]
    # The same term on both sides (most fusion rules) is not asserted: z3 can overflow its
    # stack on a deep one (an integer pow by squaring), and there is nothing to solve.
    same = [] if left.eq(right) else [left == right]
    solver.add(z3.Not(z3.And(*valid_r, *same_dims, *defined_r, *same)))
    answer = solver.check()
    if answer == z3.unsat:
        return Attempt(True)
    if answer == z3.unknown:
        return Attempt(False, f"solver: {solver.reason_unknown()}")
    found: dict[str, int] | None = None
    for largest in SMALL_SIZES:  # each bound within the last: the smallest sizes that show it
        solver.add(*[s <= largest for s in sz.symbols.values()])
        if solver.check() != z3.sat:
            break
        model = solver.model()
        found = {name: model.eval(s, model_completion=True).as_long()
                 for name, s in sz.symbols.items()}
    if found is None:
        return Attempt(False, f"the sides may differ at sizes above {SMALL_SIZES[0]}")
    return Attempt(False, "the sides may differ at sizes " + ", ".join(
        f"{k}={v}" for k, v in found.items()), found)
