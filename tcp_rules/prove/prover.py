"""Proving a rule: every obligation checked by z3 under the rule's soundness class; a model is
a counterexample only once NumPy confirms it (the references of both sides, run by the
verifier's case machinery, must differ the way the class forbids).

exact: both sides bitwise equal (any NaN equals any NaN) for all inputs, in IEEE arithmetic.
approx: equal over the reals, floats read as reals (finite inputs); if a side has no reading
over the reals (a float to integer cast), an exact proof is tried instead, which implies it.
assumes(P): approx under P, which is what the library's assumes rules promise
(tcp_rules/data/rules/math.tcpr) and what the random tester checks; where the reals cannot
decide it, exact under P (which implies it) is tried.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import z3

from tcp_rules.prove.axioms import real_axioms
from tcp_rules.prove.domain import Ctx, Unsupported, to_numpy
from tcp_rules.prove.obligation import (
    Obligation,
    Plan,
    at_sizes,
    equal,
    inputs_of,
    plan,
    symbolic,
)
from tcp_rules.rules.model import Guard, Rule
from tcp_rules.verify.cases import Case, make_case
from tcp_rules.verify.checker import Verdict
from tcp_rules.verify.values import precondition_mask

DEFAULT_TIMEOUT = 10.0  # seconds per solver query
RULE_BUDGET = 6  # a rule gives up (unknown) after this many times the query timeout
# An instance tried for every size gets at most this long: where it does not prove quickly, the
# bounded sizes (where a counterexample can be confirmed) are the better use of the budget.
GENERAL_TIMEOUT = 2.0


@dataclass
class ProofVerdict:
    """proved (for all shapes when ``bound`` is None, else up to it), refuted (with a
    counterexample NumPy confirmed), or unknown (with the reason and the tester's verdict)."""

    rule: Rule
    status: str  # proved | refuted | unknown
    bound: str | None = None
    how: str = ""  # exact | approx | exact under P | approx under P
    obligations: int = 0
    reason: str = ""
    counterexample: Case | None = None
    tester: Verdict | None = None
    seconds: float = 0.0
    uninterpreted: list[str] = field(default_factory=list)
    general: bool = False  # proved for every size (at the ranks, dtypes and attributes tried)

    @property
    def extent(self) -> str:
        """How far a proof reaches: "all shapes", "every size" or "bounded" ("" if none)."""
        if self.status != "proved":
            return ""
        if self.bound is None:
            return "all shapes"
        return "every size" if self.general else "bounded"


@dataclass
class Outcome:
    status: str  # proved | refuted | unknown
    reason: str = ""
    case: Case | None = None
    general: bool = False  # proved for every size


def _precondition(pre: tuple[Guard, ...], inputs: dict[str, np.ndarray], ob: Obligation
                  ) -> list[z3.BoolRef]:
    """assumes(P) as hypotheses: P holds at every element of its variable."""
    from tcp_rules.prove.preconditions import element_holds

    out = []
    dtypes = {p.param: p.type.dtype for p in ob.setup.params}
    for g in pre:
        name = getattr(g.lhs, "name", None) or g.lhs.args[0].name  # type: ignore[union-attr]
        if name not in inputs:
            continue  # a variable this direction does not read
        out += [element_holds(g, e, dtypes[name]) for e in inputs[name].reshape(-1)]
    return out


def check(ob: Obligation, rule: Rule, mode: str, pre: tuple[Guard, ...], judge: str,
          timeout: float, ctx: Ctx) -> Outcome:
    """Prove one obligation in ``mode`` (fp or real) under ``pre``; a model is confirmed with
    the verifier's ``judge`` (exact or approx) before it counts as a counterexample."""
    inputs = inputs_of(ob.setup, mode)
    try:
        lhs, rhs, defined_l, defined_r = symbolic(ob.setup, inputs, ctx)
    except Unsupported as e:
        return Outcome("unknown", str(e))
    except z3.Z3Exception as e:  # a formula bug: shown as the reason, never a proof
        return Outcome("unknown", f"formula error: {e}")
    if lhs.shape != rhs.shape:
        return Outcome("unknown", f"sides differ in shape: {lhs.shape} vs {rhs.shape}")
    pairs = [(a, b) for a, b in zip(lhs.reshape(-1), rhs.reshape(-1), strict=True)
             if not _trivially_equal(a, b)]
    if not pairs and not defined_r:
        return Outcome("proved")
    solver = z3.Solver()
    solver.set(timeout=max(1, int(timeout * 1000)))
    solver.add(*ctx.facts, *_precondition(pre, inputs, ob))
    if judge == "approx" and mode == "fp":  # approx speaks of finite inputs only
        solver.add(*[z3.Not(z3.Or(z3.fpIsNaN(e), z3.fpIsInf(e)))
                     for a in inputs.values() for e in a.reshape(-1) if z3.is_fp(e)])
    if mode == "real":
        solver.add(*real_axioms(ctx))
    # Where the rewritten side is defined, the new side must be too, and equal to it.
    solver.add(*defined_l)
    solver.add(z3.Not(z3.And(*defined_r, *[equal(a, b) for a, b in pairs])))
    answer = solver.check()
    if answer == z3.unsat:
        return Outcome("proved")
    if answer == z3.unknown:
        return Outcome("unknown", f"solver: {solver.reason_unknown()}")
    return _confirm(ob, rule, solver.model(), inputs, pre, judge, ctx)


def _trivially_equal(a: z3.ExprRef, b: z3.ExprRef) -> bool:
    """Equal by z3's rewriter alone (most structural rules), tried for a moment only: on large
    terms (wrapping integer powers) rewriting can take longer than solving."""
    if a.eq(b):
        return True
    goal = z3.Goal()
    goal.add(equal(a, b))
    try:
        done = z3.TryFor(z3.Tactic("simplify"), 200)(goal)
    except z3.Z3Exception:
        return False
    return len(done) == 1 and len(done[0]) == 0  # one subgoal with nothing left to show


def _confirm(ob: Obligation, rule: Rule, model: z3.ModelRef, inputs: dict[str, np.ndarray],
             pre: tuple[Guard, ...], judge: str, ctx: Ctx) -> Outcome:
    arrays: dict[str, np.ndarray] = {}
    for p in ob.setup.params:
        dt = p.type.dtype
        sym = inputs[p.param]
        arr = np.empty(sym.shape, dtype=dt.np_dtype)
        for i, e in np.ndenumerate(sym):
            arr[i] = to_numpy(model.eval(e, model_completion=True), dt)
        arrays[p.param] = arr
    for g in pre:
        name, ok = precondition_mask(g, arrays) if _reads(g, arrays) else ("", np.ones(1, bool))
        if not ok.all():
            return Outcome("unknown", f"the model breaks the precondition on {name} once "
                           "rounded to its dtype")
    case = make_case(rule, ob.direction, judge, ob.inst, ob.setup, ob.sizes, arrays)
    if case is not None and case.mismatch is not None:
        return Outcome("refuted", case=case)
    why = (f"the solver's model relies on {', '.join(sorted(ctx.uninterpreted))}"
           if ctx.uninterpreted else "the solver's model is not a counterexample in NumPy")
    return Outcome("unknown", why + " (not confirmed)")


def _reads(g: Guard, arrays: dict[str, np.ndarray]) -> bool:
    name = getattr(g.lhs, "name", None) or g.lhs.args[0].name  # type: ignore[union-attr]
    return name in arrays


def _general(p: Plan, mode: str, pre: tuple[Guard, ...], judge: str, timeout: float,
             deadline: float, rule: Rule) -> Outcome | None:
    """Proved if every instance is proved for every size in this reading; refuted if the
    solver found sizes where one may fail and NumPy confirms a counterexample there (bounded
    sizes miss a rule that fails only at size 3); None: prove at bounded sizes. Stops at the
    first instance that is not proved. Preconditions are hypotheses about every element,
    which these proofs do not state: such rules are proved at bounded sizes only."""
    from tcp_rules.prove.allsizes import prove_instance

    if pre or not p.instances:
        return None
    for label, frm, to, inst in p.instances:
        if time.perf_counter() > deadline:
            return None
        a = prove_instance(frm, to, rule.guards, inst, mode, min(timeout, GENERAL_TIMEOUT))
        if a.proved:
            continue
        if a.sizes is not None:
            ob = at_sizes(label, frm, to, rule, inst, a.sizes)
            if ob is not None:
                out = check(ob, rule, mode, pre, judge, timeout, Ctx(mode))
                if out.status == "refuted":
                    return out
        return None
    return Outcome("proved", general=True)


def _attempt(rule: Rule, p: Plan, mode: str, pre: tuple[Guard, ...], judge: str,
             timeout: float, deadline: float, used: set[str]) -> Outcome:
    """All obligations in one reading: proved for every size if each instance is (allsizes.py);
    else at bounded sizes, refuted at the first confirmed counterexample, proved if every
    obligation is, else unknown with the first reason."""
    general = _general(p, mode, pre, judge, timeout, deadline, rule)
    if general is not None:
        return general
    obligations = p.obligations
    if not obligations:
        return Outcome("unknown", "not proved for every size, and no instance of the rule "
                       "could be built at bounded sizes")
    unknown: Outcome | None = None
    timed_out: list[str] = []
    proved = 0
    for ob in obligations:
        if time.perf_counter() > deadline:
            return Outcome("unknown", "time budget for the rule spent")
        ctx = Ctx(mode)
        out = check(ob, rule, mode, pre, judge, timeout, ctx)
        used |= ctx.uninterpreted
        if out.status == "refuted":
            return out
        if out.status == "proved":
            proved += 1
        elif out.reason.startswith(("solver: timeout", "solver: canceled")):
            timed_out.append(ob.inst.describe())
        elif unknown is None:
            unknown = Outcome("unknown", f"{out.reason} [{ob.inst.describe()}]")
        if not proved and (len(timed_out) >= 2 or (unknown is not None and timed_out)):
            break  # nothing settles in this reading: leave the budget to the next one
    if unknown is not None:
        return unknown
    if timed_out and not proved:
        return Outcome("unknown", f"solver: timeout [{timed_out[0]}]")
    if timed_out:  # proved where the solver finished: a proof up to a smaller bound, said so
        shown = "; ".join(dict.fromkeys(timed_out[:3])) + (" ..." if len(timed_out) > 3 else "")
        return Outcome("proved", f"except {len(timed_out)} instance(s) the solver did not "
                       f"finish ({shown})")
    return Outcome("proved")


def prove_rule(rule: Rule, timeout: float = DEFAULT_TIMEOUT, tester: bool = True
               ) -> ProofVerdict:
    """Prove ``rule`` against its declared class; with ``tester``, an unknown verdict carries
    the random tester's verdict beside it."""
    start = time.perf_counter()
    deadline = start + RULE_BUDGET * timeout
    p = plan(rule)
    kind, pre = rule.soundness.kind, rule.soundness.precondition
    used: set[str] = set()
    v = ProofVerdict(rule, "unknown", p.bound, obligations=len(p.obligations))
    if not p.obligations and not p.instances:
        v.reason = "no instance of the rule could be built (check its guards)"
    else:
        # (reading, hypotheses, the tester's judge for a model, what a proof shows, may a
        # model refute): an exact proof implies approx, but a bitwise failure does not refute
        # approx, which speaks of the reals
        table: dict[str, list[tuple[str, tuple[Guard, ...], str, str, bool]]] = {
            "exact": [("fp", (), "exact", "exact", True)],
            "approx": [("real", (), "approx", "approx", True),
                       ("fp", (), "approx", "exact", False)],
            "assumes": [("real", pre, "approx", "approx under P", True),
                        ("fp", pre, "approx", "exact under P", False)]}
        attempts = table[kind]
        first: Outcome | None = None
        for mode, hyp, judge, how, refutes in attempts:
            out = _attempt(rule, p, mode, hyp, judge, timeout, deadline, used)
            if out.status == "refuted" and not refutes:
                out = Outcome("unknown", "exact in IEEE arithmetic fails, which does not "
                              "refute approx")
            if out.status == "proved":
                v.status, v.how, v.general = "proved", how, out.general
                v.bound = p.scope(out.general)
                if out.reason:
                    v.bound = f"{v.bound}; {out.reason}" if v.bound else out.reason
                break
            if out.status == "refuted":
                v.status, v.counterexample, v.how = "refuted", out.case, how
                break
            first = first or out
        if v.status == "unknown" and first is not None:
            v.reason = first.reason
    v.uninterpreted = sorted(used)
    if v.status == "unknown" and tester:
        from tcp_rules.verify.checker import verify_rule

        v.tester = verify_rule(rule)
    v.seconds = time.perf_counter() - start
    return v
