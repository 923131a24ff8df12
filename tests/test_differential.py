"""Differential testing of the engines and the optimizer on random programs full of IEEE specials.

Random well-typed programs whose ops the semantics define bit for bit (no libm functions, no
float sums, whose order the engines may choose), with ±inf, NaN, -0.0 and the largest and
smallest floats as inputs, and ±inf, NaN and ±0.0 as literals and clamp bounds:

- the reference interpreter and the compiled unoptimized program agree bit for bit;
- the program optimized with exact rules only (``--allow exact``) agrees bit for bit, compiled;
- the program optimized under the default classes agrees with the original as approx demands on
  finite inputs (the literals stay special): translation validation's comparison.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tcp_rules.diagnostics import Source
from tcp_rules.egraph.saturate import Limits
from tcp_rules.elaborate import load_program
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.pipeline import run_func
from tcp_rules.printer import print_func
from tcp_rules.rules.library import load_standard_library
from tcp_rules.types import DType
from tcp_rules.verify.cases import exact_mismatch
from tcp_rules.verify.translation import compare
from tcp_rules.verify.values import finite_values, special_values

STDLIB = load_standard_library().rules
LIMITS = Limits(iterations=16, nodes=20000, seconds=30)  # the clamp chain needs ~12
# Inputs come from the verifier's pools: every IEEE edge case for the exact legs, the finite
# values of moderate size the approx contract speaks of for the approx leg (reassociating
# x * y * 2 may overflow near the largest float: that is what approx allows).
SPECIAL = special_values(DType.F32)
FINITE = finite_values(DType.F32)
# Literals and clamp bounds stay special in every leg, the infinities above all.
LITERALS = ["0.0", "-0.0", "1.0", "-1.5", "inf", "-inf", "nan", "0.1"]
UNARY = ["neg", "abs", "floor", "ceil", "sqrt", "round", "round_even"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]
COMPARE = ["lt", "le", "gt", "ge", "eq", "ne"]
SHAPE = "N, 4"


@st.composite
def programs(draw: st.DrawFn) -> str:
    """A random program over x, y: f32[N, 4] of exactly defined ops."""
    terms = ["x", "y"]
    lit = st.sampled_from(LITERALS)
    for _ in range(draw(st.integers(1, 6))):
        a, b = draw(st.sampled_from(terms)), draw(st.sampled_from(terms))
        kind = draw(st.sampled_from(["unary", "binary", "literal", "clamp", "select",
                                     "reduce", "layout"]))
        if kind == "unary":
            terms.append(f"{draw(st.sampled_from(UNARY))}({a})")
        elif kind == "binary":
            terms.append(f"{draw(st.sampled_from(BINARY))}({a}, {b})")
        elif kind == "literal":
            op = draw(st.sampled_from(BINARY))
            terms.append(f"{op}({a}, {draw(lit)})" if draw(st.booleans())
                         else f"{op}({draw(lit)}, {a})")
        elif kind == "clamp":
            bounds = draw(st.sampled_from([["min"], ["max"], ["min", "max"]]))
            attrs = ", ".join(f"{k}={draw(lit)}" for k in bounds)
            terms.append(f"clamp({a}, {attrs})")
        elif kind == "select":
            cmp = draw(st.sampled_from(COMPARE))
            terms.append(f"select({cmp}({a}, {b}), {b}, {a})")
        elif kind == "reduce":
            red = draw(st.sampled_from(["reduce_max", "reduce_min"]))
            terms.append(f"broadcast({red}({a}, axes=[1]), shape=[{SHAPE}], dims=[0])")
        else:
            terms.append(f"transpose(transpose({a}, perm=[1, 0]), perm=[1, 0])")
    return f"func f(x: f32[{SHAPE}], y: f32[{SHAPE}]) -> f32[{SHAPE}] {{ return {terms[-1]} }}"


def _func(text: str) -> Func:
    return load_program(Source("random.tcp", text)).funcs[0]


def _inputs(seed: int, finite: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    pool = np.array(FINITE if finite else SPECIAL, dtype=np.float32)
    out = []
    for _ in range(2):
        a = (rng.standard_normal((9, 4)) * 10.0 ** rng.uniform(-3, 3, (9, 4))).astype(np.float32)
        mask = rng.random(a.shape) < 0.5
        a[mask] = pool[rng.integers(len(pool), size=int(mask.sum()))]
        out.append(a)
    return out


def _same_bits(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...], what: str,
               text: str) -> None:
    for g, w in zip(got, want, strict=True):
        bad = exact_mismatch(g, w)
        assert bad is None, f"{what}: {bad}\n{text}"


def _optimized(f: Func, allow: tuple[str, ...]) -> Func:
    result = optimize(f, STDLIB, OptOptions(allow=allow, isolate=False, limits=LIMITS))
    assert result.report.error is None, result.report.error
    return result.func


# CI samples; a fuzzing campaign sets TCPR_FUZZ_EXAMPLES (say 2000) and runs this file alone.
EXAMPLES = int(os.environ.get("TCPR_FUZZ_EXAMPLES", "30"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=programs(), seed=st.integers(0, 2**16))
@example(text="func f(x: f32[N, 4], y: f32[N, 4]) -> f32[N, 4] { return clamp(y, min=inf) }",
         seed=0)
@example(text="func f(x: f32[N, 4], y: f32[N, 4]) -> f32[N, 4] { return max(y, inf) }", seed=1)
@example(text="func f(x: f32[N, 4], y: f32[N, 4]) -> f32[N, 4] { return clamp(x, max=-inf) }",
         seed=2)
def test_engines_and_optimizer_agree_on_specials(text: str, seed: int) -> None:
    f = _func(text)
    ins = _inputs(seed, finite=False)
    want = evaluate(f, ins)
    _same_bits(run_func(f, ins, "compiled"), want, "compiled, unoptimized", text)
    exact = _optimized(f, ("exact",))
    _same_bits(run_func(exact, ins, "compiled"), want, "compiled, optimized --allow exact",
               f"{text}\noptimized: {print_func(exact)}")
    default = _optimized(f, ("exact", "approx"))
    finite = _inputs(seed + 1, finite=True)
    found = compare(f, default, finite, "approx")
    assert found is None, f"optimized (default classes): {found[1]}\n{text}\n" \
                          f"optimized: {print_func(default)}"


@pytest.mark.parametrize("body", ["clamp(y, min=inf)", "max(y, inf)", "clamp(y, max=-inf)"])
def test_the_fuzzing_finds_compiled_optimized(body: str) -> None:
    """The regression programs of the clamp/inf miscompilation, compiled after optimization
    under the default classes, give the reference's answers on every input."""
    f = _func(f"func f(x: f32[{SHAPE}], y: f32[{SHAPE}]) -> f32[{SHAPE}] {{ return {body} }}")
    ins = _inputs(7, finite=False)
    _same_bits(run_func(_optimized(f, ("exact", "approx")), ins, "compiled"), evaluate(f, ins),
               "compiled, optimized", body)
