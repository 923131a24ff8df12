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
from dataclasses import dataclass

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
# The clamp chain needs ~12 iterations and stays under 50 e-nodes.
LIMITS = Limits(iterations=16, nodes=3000, seconds=10)


@dataclass(frozen=True)
class Dialect:
    """The ops, literals and input values of random programs of one dtype."""

    dtype: DType
    unary: tuple[str, ...]
    literals: tuple[str, ...]  # literals and clamp bounds: special in every leg


BINARY = ("add", "sub", "mul", "div", "max", "min")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
DIALECTS = {
    "f32": Dialect(DType.F32, ("neg", "abs", "floor", "ceil", "sqrt", "round", "round_even"),
                   ("0.0", "-0.0", "1.0", "-1.5", "inf", "-inf", "nan", "0.1")),
    # wrap-around, division by zero and MIN / -1 as the semantics table defines them
    "i32": Dialect(DType.I32, ("neg", "abs"),
                   ("0", "1", "-1", "7", "2147483647", "-2147483648")),
}
SHAPE = "N, 4"


def _header(d: Dialect) -> str:
    t = f"{d.dtype}[{SHAPE}]"
    return f"func f(x: {t}, y: {t}) -> {t}"


@st.composite
def programs(draw: st.DrawFn, d: Dialect) -> str:
    """A random program over x, y of exactly defined ops of ``d``."""
    terms = ["x", "y"]
    lit = st.sampled_from(d.literals)
    for _ in range(draw(st.integers(1, 6))):
        a, b = draw(st.sampled_from(terms)), draw(st.sampled_from(terms))
        kind = draw(st.sampled_from(["unary", "binary", "literal", "clamp", "select",
                                     "reduce", "layout"]))
        if kind == "unary":
            terms.append(f"{draw(st.sampled_from(d.unary))}({a})")
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
    return f"{_header(d)} {{ return {terms[-1]} }}"


def _func(text: str) -> Func:
    return load_program(Source("random.tcp", text)).funcs[0]


def _inputs(seed: int, finite: bool, dtype: DType = DType.F32) -> list[np.ndarray]:
    """Two arrays of 9x4 mixing ordinary values with the verifier's pools: every edge case for
    the exact legs, the finite values of moderate size the approx contract speaks of for the
    approx leg (reassociating x * y * 2 may overflow near the largest float: approx allows it)."""
    rng = np.random.default_rng(seed)
    pool = np.array(finite_values(dtype) if finite else special_values(dtype))
    pool = pool.astype(dtype.np_dtype)
    out = []
    for _ in range(2):
        if dtype.is_float:
            a = rng.standard_normal((9, 4)) * 10.0 ** rng.uniform(-3, 3, (9, 4))
        else:
            a = rng.integers(-1000, 1000, (9, 4))
        a = a.astype(dtype.np_dtype)
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


def _check(text: str, seed: int, dtype: DType) -> None:
    f = _func(text)
    ins = _inputs(seed, False, dtype)
    want = evaluate(f, ins)
    _same_bits(run_func(f, ins, "compiled"), want, "compiled, unoptimized", text)
    exact = _optimized(f, ("exact",))
    _same_bits(run_func(exact, ins, "compiled"), want, "compiled, optimized --allow exact",
               f"{text}\noptimized: {print_func(exact)}")
    default = _optimized(f, ("exact", "approx"))
    found = compare(f, default, _inputs(seed + 1, True, dtype), "approx")
    assert found is None, f"optimized (default classes): {found[1]}\n{text}\n" \
                          f"optimized: {print_func(default)}"


F32 = DIALECTS["f32"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=programs(F32), seed=st.integers(0, 2**16))
@example(text=f"{_header(F32)} {{ return clamp(y, min=inf) }}", seed=0)
@example(text=f"{_header(F32)} {{ return max(y, inf) }}", seed=1)
@example(text=f"{_header(F32)} {{ return clamp(x, max=-inf) }}", seed=2)
# found by this test: a fused kernel merged the literals 0.0 and -0.0 (0.0 == -0.0 in Python)
@example(text=f"{_header(F32)} {{ return sub(-0.0, add(0.0, x)) }}", seed=6)
# found by this test: an approx rewrite inside floor moves its operand across an integer, and
# the results are 1 apart (verify/sensitivity.py's bound now covers the jump there)
@example(text=f"{_header(F32)} {{ return floor(sub(x, sub(x, y))) }}", seed=0)
def test_engines_and_optimizer_agree_on_specials(text: str, seed: int) -> None:
    _check(text, seed, DType.F32)


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None,
          suppress_health_check=list(HealthCheck))
@given(text=programs(DIALECTS["i32"]), seed=st.integers(0, 2**16))
def test_engines_and_optimizer_agree_on_integer_extremes(text: str, seed: int) -> None:
    _check(text, seed, DType.I32)


@pytest.mark.parametrize("body", ["clamp(y, min=inf)", "max(y, inf)", "clamp(y, max=-inf)"])
def test_the_fuzzing_finds_compiled_optimized(body: str) -> None:
    """The regression programs of the clamp/inf miscompilation, compiled after optimization
    under the default classes, give the reference's answers on every input."""
    f = _func(f"{_header(F32)} {{ return {body} }}")
    ins = _inputs(7, finite=False)
    _same_bits(run_func(_optimized(f, ("exact", "approx")), ins, "compiled"), evaluate(f, ins),
               "compiled, optimized", body)
