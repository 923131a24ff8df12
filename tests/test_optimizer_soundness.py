"""Optimizations never change answers: regressions found by fuzzing the optimizer."""

from __future__ import annotations

import numpy as np
import pytest

from tcp_rules.diagnostics import Source
from tcp_rules.egraph.encode import NONE_BOUND, scalar_bits
from tcp_rules.egraph.saturate import Limits
from tcp_rules.elaborate import load_program
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.rules.library import load_standard_library

STDLIB = load_standard_library()
DEFAULT = OptOptions(isolate=False, limits=Limits(iterations=12, nodes=20000, seconds=60))
# The nine standard-library rules whose combination turned clamp(y, min=inf) into y.
CLAMP_CHAIN = ("max-assoc", "max-comm", "clamp-split", "max-const-clamp", "min-comm",
               "clamp-min", "clamp-max", "min-inf", "max-self")
SPECIALS = np.array([1.0, -2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38], dtype=np.float32)


def _func(body: str) -> Func:
    text = f"func f(y: f32[8]) -> f32[8] {{\n  r = {body}\n  return r\n}}\n"
    return load_program(Source("clamp.tcp", text)).funcs[0]


@pytest.mark.parametrize("body", ["clamp(y, min=inf)", "max(y, inf)", "clamp(y, max=-inf)",
                                  "min(y, -inf)", "clamp(y, min=inf, max=inf)"])
@pytest.mark.parametrize("rules", ["chain", "stdlib"])
def test_infinite_clamp_bounds_keep_their_answer(body: str, rules: str) -> None:
    """An optional attribute's pattern variable must not bind the absent-bound sentinel."""
    chosen = ([STDLIB.rule(n) for n in CLAMP_CHAIN] if rules == "chain" else list(STDLIB.rules))
    f = _func(body)
    result = optimize(f, chosen, DEFAULT)
    assert result.report.error is None, result.report.error
    want = evaluate(f, [SPECIALS])[0]
    got = evaluate(result.func, [SPECIALS])[0]
    np.testing.assert_array_equal(got, want)


def test_no_scalar_encodes_as_the_absent_bound() -> None:
    payload = np.frombuffer(np.uint64(NONE_BOUND).tobytes(), dtype=np.float64)[0]
    assert np.isnan(payload)
    assert scalar_bits(float(payload)) != NONE_BOUND
    assert scalar_bits(float("nan")) == scalar_bits(float(payload))
