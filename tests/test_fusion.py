"""Fusion as rules: kernel terms, sorts, rule families, fusion-aware cost, kernels end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from codegen.support import tcpr_cache  # noqa: F401
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerics import assert_close_to_reference, error_bounds
from test_codegen_structure import programs

from tcp_rules.codegen.runtime import compile_func
from tcp_rules.diagnostics import Source
from tcp_rules.egraph.saturate import Limits
from tcp_rules.elaborate import load_program
from tcp_rules.extract.cost import RooflineCost
from tcp_rules.extract.decode import kernel_costs, program_cost
from tcp_rules.inputs import random_inputs
from tcp_rules.interpret import evaluate
from tcp_rules.ir import Func
from tcp_rules.kernels import format_kernels, kernel_infos
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.printer import print_func
from tcp_rules.rules.library import load_rules, load_standard_library
from tcp_rules.rules.sorting import forms_kernels
from tcp_rules.sorts import Sort
from tcp_rules.verify import verify_files
from tcp_rules.verify.checker import verify_rule

ROOT = Path(__file__).parent.parent
EXAMPLES = ["gelu", "softmax", "layernorm", "mlp", "attention"]
STD = load_standard_library().rules
OPTS = OptOptions(isolate=False)


def func(text: str) -> Func:
    return load_program(Source("t.tcp", text)).funcs[0]


def tcpr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tcp_rules", *args], capture_output=True,
                          text=True, timeout=600)


def n_ops(f: Func) -> int:
    return sum(1 for v in f.ops() if v.op.category not in ("constant", "fusion"))


# End to end ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_run_as_fewer_kernels_with_reference_results(name: str, tmp_path: Path) -> None:
    prog = ROOT / "examples" / f"{name}.tcp"
    sizes = ["--size", "N=37", "--size", "S=19"]
    out = tcpr("opt", str(prog), "--json", *sizes)
    assert out.returncode == 0, out.stderr
    (entry,) = json.loads(out.stdout)["funcs"]
    original = load_program(Source(str(prog), prog.read_text())).funcs[0]
    assert 1 <= len(entry["kernels"]) < n_ops(original), entry["kernels"]
    results = {}
    for engine in ("compiled", "reference"):
        path = tmp_path / f"{engine}.npz"
        run = tcpr("run", str(prog), "--random", *sizes, "--engine", engine, "--out", str(path))
        assert run.returncode == 0, run.stderr
        results[engine] = np.load(path)["result0"]
    # Both engines ran the optimized program on `run --random`'s inputs (seed 0): the rounding
    # bound of that program on those inputs (tests/numerics.py), and the reference's result.
    # (`run` optimizes for the inputs' sizes, `opt --size` only runs at them: the program `run`
    # ran may differ from `opt`'s, as attention's does at S=19.)
    emitted = tcpr("run", str(prog), "--random", *sizes, "--emit", "optimized")
    assert emitted.returncode == 0, emitted.stderr
    optimized = load_program(Source("opt.tcp", emitted.stdout)).funcs[0]
    inputs = random_inputs(original, {"N": 37, "S": 19}, seed=0)
    assert_close_to_reference([results["compiled"]], optimized, inputs, name)
    np.testing.assert_array_equal(results["reference"], evaluate(optimized, inputs)[0])


@pytest.mark.parametrize("name", ["softmax", "layernorm", "gelu", "mlp"])
def test_single_kernel_examples(name: str) -> None:
    original = load_program(Source(name, (ROOT / "examples" / f"{name}.tcp").read_text()))
    fused = optimize(original.funcs[0], STD, OPTS).func
    assert len(kernel_infos(fused, RooflineCost())) == 1, print_func(fused)


def test_fusion_rules_are_exact_and_verified() -> None:
    verdicts = verify_files([ROOT / "rules" / "fusion.tcpr"])
    assert verdicts and all(v.ok for v in verdicts), [v.rule.name for v in verdicts if not v.ok]
    assert all(v.declared == "exact" for v in verdicts)


def test_fused_program_is_never_costlier_than_unfused() -> None:
    unfused_rules = [r for r in STD if not forms_kernels(r)]
    for name in EXAMPLES:
        f = load_program(Source(name, (ROOT / "examples" / f"{name}.tcp").read_text())).funcs[0]
        with_fusion = optimize(f, STD, OPTS).report.cost_after
        without = optimize(f, unfused_rules, OPTS).report.cost_after
        assert with_fusion <= without + 1e-6, name


# Kernel terms, sorts and the cost model ----------------------------------------------------------

SOFTMAX_FUSED = """\
func softmax(x: f32[N, D]) -> f32[N, D] {
  v0 = load(x)
  v1 = exp(sub(v0, broadcast(reduce_max(v0, axes=[1]), shape=[N, D], dims=[0])))
  return kernel(div(v1, broadcast(reduce_sum(v1, axes=[1]), shape=[N, D], dims=[0])))
}
"""


def test_kernel_terms_round_trip_and_carry_sorts() -> None:
    f = func(SOFTMAX_FUSED)
    assert print_func(func(print_func(f))) == print_func(f)
    sorts = {v.op.name: v.sort for v in f.ops()}
    assert sorts["load"] is Sort.BODY and sorts["exp"] is Sort.BODY
    assert sorts["kernel"] is Sort.TENSOR


def test_emit_kernels_golden(golden: Callable[[str, str], None]) -> None:
    text = format_kernels(func(SOFTMAX_FUSED), kernel_infos(func(SOFTMAX_FUSED), RooflineCost()))
    golden("programs/softmax.kernels", text + "\n")


def test_a_body_used_by_two_kernels_is_paid_by_each() -> None:
    model = RooflineCost()
    shared = func("""func f(x: f32[N]) -> (f32[N], f32[N]) {
      e = exp(load(x))
      return kernel(add(e, 1.0)), kernel(mul(e, 2.0))
    }""")
    once = func("""func f(x: f32[N]) -> f32[N] {
      return kernel(add(exp(load(x)), 1.0))
    }""")
    per_kernel = sorted(kernel_costs(shared, model).values())
    (single,) = kernel_costs(once, model).values()
    assert per_kernel[0] == pytest.approx(single, rel=1e-6)  # exp counted in each kernel
    assert program_cost(shared, model) == pytest.approx(sum(per_kernel))


def test_a_body_used_twice_in_one_kernel_is_paid_once() -> None:
    model = RooflineCost()
    twice = func("func f(x: f32[N]) -> f32[N] { e = exp(load(x)) return kernel(mul(e, e)) }")
    once = func("func f(x: f32[N]) -> f32[N] { return kernel(mul(exp(load(x)), 2.0)) }")
    assert program_cost(twice, model) == pytest.approx(program_cost(once, model))


def test_a_materialized_intermediate_costs_memory_traffic() -> None:
    model = RooflineCost()
    fused = func("func f(x: f32[N]) -> f32[N] { return kernel(neg(exp(load(x)))) }")
    split = func("func f(x: f32[N]) -> f32[N] { return kernel(neg(load(kernel(exp(load(x)))))) }")
    extra = program_cost(split, model) - program_cost(fused, model)
    assert extra == pytest.approx(model.op_ns + 2 * 64 * 4 * model.byte_ns, rel=1e-3)


def test_sort_relations_keep_kernel_rules_off_bodies() -> None:
    # without the sort guard the entry rules would wrap bodies again and never saturate
    softmax = (ROOT / "examples" / "softmax.tcp").read_text()
    result = optimize(load_program(Source("s", softmax)).funcs[0], STD, OPTS)
    phases = result.report.phases()
    assert [n for n, _ in phases] == ["simplify", "explore", "fusion"]
    assert phases[0][1] == "saturated" and phases[2][1] == "saturated", phases
    assert phases[1][1] in ("saturated", "fixpoint"), phases


def test_default_schedule_runs_kernel_rules_last() -> None:
    f = func("func f(x: f32[N]) -> f32[N] { return neg(neg(exp(mul(x, x)))) }")
    result = optimize(f, STD, OPTS)
    phases = [it["phase"] for it in result.report.iterations]
    assert result.report.phase_names[phases[-1]] == "fusion" and phases == sorted(phases)
    out = print_func(result.func)  # neg-neg folded first, then exp and mul fused
    assert "neg" not in out and out.count("kernel(") == 1, out


# Rule families -----------------------------------------------------------------------------------

def test_family_expands_per_op_and_carries_attributes(tmp_path: Path) -> None:
    path = tmp_path / "fam.tcpr"
    path.write_text("rule k for f in [exp, clamp]: f(x) => kernel(f(load(x)))\n"
                    "  example (x: f32[2]): f(x) => kernel(f(load(x)))\n")
    rules = {r.name: r for r in load_rules([path]).rules}
    assert set(rules) == {"k.exp", "k.clamp"}
    assert rules["k.exp"].examples and not rules["k.clamp"].examples  # clamp needs its bounds
    assert dict(rules["k.clamp"].attr_vars).keys() == {"f_min", "f_max"}
    verdict = verify_rule(rules["k.clamp"])  # the bounds are carried over, or this fails
    assert verdict.satisfies == "exact" and verdict.checked > 0


def test_family_over_an_op_class(tmp_path: Path) -> None:
    path = tmp_path / "fam.tcpr"
    path.write_text("rule k for f in compare: f(x, y) => kernel(f(load(x), load(y)))\n")
    names = sorted(r.name for r in load_rules([path]).rules)
    assert names == [f"k.{op}" for op in sorted(["eq", "ne", "lt", "le", "gt", "ge"])]


# Random programs: fused by the rules, compiled, equal to the reference -------------------------

@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(1, 5), st.integers(1, 6))
def test_random_programs_fused_by_rules_keep_their_meaning(f: Func, n: int, m: int) -> None:
    fused = optimize(f, STD, OptOptions(isolate=False, limits=Limits(seconds=20))).func
    rng = np.random.default_rng(n * 7 + m)
    xs = [(rng.standard_normal(s) * 3).astype(np.float32) for s in ((n, m), (m,), (n,))]
    got = compile_func(fused)(*xs)
    for g, r in zip(got, evaluate(f, xs), strict=True):
        np.testing.assert_array_equal(g, r)  # exact ops only: the same values (+-0 aside)


def test_pow_and_atan2_fuse_as_vector_code() -> None:
    # pow and atan2 are vector code in f32 and f64 (codegen/binmath.py) and fuse into a body, as
    # exp does: fused, f64 pow ran at 7.3 ns an element (split 7.0), f64 atan2 at 3.9 (3.1),
    # where their libm calls had taken 37-40 fused and 26-29 split (docs/optimizer.md, "Never
    # slower"). At 1M elements, where the per-kernel cost no longer decides.
    model = RooflineCost()
    body = "mul(load(x), add(1.0, tanh(mul(add(load(x), mul({}, 0.044715)), 0.79788))))"

    def fused_and_split(op: str, dt: str = "f32") -> tuple[float, float]:
        head = f"func f(x: {dt}[1048576]) -> {dt}[1048576] {{"
        # split: the op at tensor level (a kernel of its own, as extraction can choose)
        fused = func(f"{head} return kernel({body.format(op.format('load(x)'))}) }}")
        split = func(f"{head} p = {op.format('x')} return kernel({body.format('load(p)')}) }}")
        return program_cost(fused, model), program_cost(split, model)

    for op in ("pow({}, 2.7)", "atan2({}, 2.7)", "exp({})"):
        for dt in ("f32", "f64"):
            fused, split = fused_and_split(op, dt)
            assert fused < split, (op, dt)


def test_an_imported_linear_layers_bias_runs_in_its_matmul_epilogue() -> None:
    """ONNX's MatMul on [batch, seq, features] imports as reshape(matmul(reshape(x), w)), and
    its bias add and a residual add (h + ff(h)) follow the reshape: binary-reshape(-right)
    move them to the matmul's side of it, where reshape-broadcast makes the bias a plain
    broadcast (no copy); each layer is one matmul kernel with its epilogue, and the last
    reshape writes the result array."""
    text = """func ff(x: f32[2, 8, 16], w: f32[16, 32], b: f32[32], w2: f32[32, 16])
      -> f32[2, 8, 16] {
      h = add(reshape(matmul(reshape(x, shape=[16, 16]), w), shape=[2, 8, 32]),
              broadcast(b, shape=[2, 8, 32], dims=[2]))
      r = max(h, 0.0)
      return add(x, reshape(matmul(reshape(r, shape=[16, 32]), w2), shape=[2, 8, 16]))
    }"""
    f = func(text)
    new = {"reshape-broadcast", "binary-reshape", "binary-reshape-right"}
    without = [r for r in STD if r.name.split(".")[0] not in new]
    assert len(without) < len(STD)
    counts = []
    for rules in (STD, without):
        opt = optimize(f, rules, OPTS).func
        counts.append(len(kernel_infos(opt, RooflineCost())))
        xs = random_inputs(f, {}, seed=3)
        assert_close_to_reference(list(compile_func(opt)(*xs)), f, xs, "linear layers")
    assert counts[0] == 2 and counts[1] > 2, counts


def _zoo_encoder(layers: int) -> Func:
    from tcp_rules.benchmodels import encoder, import_graph

    return import_graph(encoder(layers, small=True)).module.funcs[0]


@pytest.mark.parametrize("layers", [1, 3])
def test_every_layer_of_the_zoo_encoder_fuses_alike(layers: int) -> None:
    """A transformer encoder (frontends/onnx/zoo.py, small sizes) optimizes to 5 plan steps a
    layer, its last one and the lone layer included: the 3 projections (one kernel of sibling
    products), Q K^T with its softmax and P V writing the heads merged, the output projection
    with its residual and layernorm, the first feed-forward matmul with its GELU, the second
    with its residual and layernorm. The greedy extraction let residuals recompute a layernorm
    that the program also materialized (a tie within rounding), and they stayed kernels of
    their own: 10 steps a layer then."""
    from tcp_rules.benchmodels import kernel_count

    result = optimize(_zoo_encoder(layers), STD, OptOptions(isolate=False, algebra=False))
    assert result.report.stop_reason == "saturated"
    count = kernel_count(result.func)  # (a failing assert would print the whole func)
    assert count == 5 * layers, count


def test_the_fused_zoo_encoder_layer_computes_the_layer() -> None:
    """The 7 kernels of an encoder layer within the reference's error bound, on tokens N(0, 1)
    and weights N(0, 1/4), as initialized for 16 inputs (with random_inputs' wider weights the
    softmax logits grow so large that the bound overflows; through more layers it does too)."""
    func = _zoo_encoder(1)
    result = optimize(func, STD, OptOptions(isolate=False, algebra=False))
    rng = np.random.default_rng(1)
    ins = [(rng.standard_normal(a.shape) * (0.25 if i else 1.0)).astype(a.dtype)
           for i, a in enumerate(random_inputs(func, seed=1))]
    want, bounds = error_bounds(func, ins)
    assert np.max(bounds[0]) < 0.05 * np.max(np.abs(want[0]))  # a bound that can fail
    assert_close_to_reference(compile_func(result.func)(*ins), func, ins, "zoo encoder")
