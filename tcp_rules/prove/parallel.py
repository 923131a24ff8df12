"""Proving rules in worker processes (``--jobs``): rules hold op records with functions that do
not pickle, so workers are forked with the rule list in hand and send back verdicts with the
rule detached; the parent puts it back."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable

from tcp_rules.prove.prover import ProofVerdict, prove_rule
from tcp_rules.rules.model import Rule

_RULES: list[Rule] = []  # the forked workers' copy
_OPTIONS: tuple[float, bool] = (0.0, True)


def _detach(v: ProofVerdict) -> ProofVerdict:
    v.rule = None  # type: ignore[assignment]
    if v.counterexample is not None:
        v.counterexample.rule = None  # type: ignore[assignment]
    if v.tester is not None:
        v.tester.rule = None  # type: ignore[assignment]
        if v.tester.counterexample is not None:
            v.tester.counterexample.rule = None  # type: ignore[assignment]
    return v


def _attach(v: ProofVerdict, rule: Rule) -> ProofVerdict:
    v.rule = rule
    for holder in (v.counterexample, v.tester,
                   v.tester.counterexample if v.tester else None):
        if holder is not None:
            holder.rule = rule
    return v


def _work(i: int) -> tuple[int, ProofVerdict]:
    timeout, tester = _OPTIONS
    return i, _detach(prove_rule(_RULES[i], timeout, tester))


def run_parallel(rules: list[Rule], timeout: float, jobs: int, tester: bool,
                 progress: Callable[[ProofVerdict], None] | None) -> list[ProofVerdict]:
    """Verdicts in rule order; ``progress`` is called as each one arrives."""
    global _RULES, _OPTIONS
    out: list[ProofVerdict | None] = [None] * len(rules)
    if jobs <= 1 or len(rules) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for i, r in enumerate(rules):
            out[i] = prove_rule(r, timeout, tester)
            if progress:
                progress(out[i])  # type: ignore[arg-type]
        return out  # type: ignore[return-value]
    _RULES, _OPTIONS = rules, (timeout, tester)
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for i, v in pool.imap_unordered(_work, range(len(rules))):
            out[i] = _attach(v, rules[i])
            if progress:
                progress(out[i])  # type: ignore[arg-type]
    return out  # type: ignore[return-value]
