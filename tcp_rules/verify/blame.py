"""Which rules change an answer: the smallest set of fired rules that still does.

When translation validation refuses an optimized program, every rule that fired is a suspect,
and most are innocent. ``minimal_rules`` drops the suspects one at a time, re-optimizing with
the rest and re-running the failing inputs, and keeps a rule only if the difference goes away
without it: what is left is a set of rules each of which the difference needs (a 1-minimal set,
as delta debugging calls it). A fault in how rules combine, or in how one is encoded, shows up as
the rules of that combination, whatever their classes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from tcp_rules.ir import Func
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.rules.model import Rule
from tcp_rules.verify.translation import compare

MAX_RUNS = 60  # optimizer runs one minimization may take
MAX_SECONDS = 60.0


def _differs(func: Func, rules: Sequence[Rule], options: OptOptions,
             inputs: Sequence[np.ndarray], mode: str) -> bool:
    result = optimize(func, rules, options)
    return result.report.error is None and compare(func, result.func, inputs, mode) is not None


def minimal_rules(func: Func, fired: Sequence[Rule], options: OptOptions,
                  inputs: Sequence[np.ndarray], mode: str) -> tuple[list[Rule], bool]:
    """(rules, complete): a subset of ``fired`` that still changes ``func``'s answer on
    ``inputs`` beyond ``mode``; ``complete`` is False when the run or time budget ran out
    before every rule was tried (the rules not tried are kept)."""
    options = dataclasses.replace(options, isolate=False)  # many short runs: no process each
    kept = list(fired)
    deadline = time.perf_counter() + MAX_SECONDS
    for runs, rule in enumerate(list(fired)):
        if runs >= MAX_RUNS or time.perf_counter() > deadline:
            return kept, False
        trial = [r for r in kept if r is not rule]
        if trial and _differs(func, trial, options, inputs, mode):
            kept = trial
    return kept, True
