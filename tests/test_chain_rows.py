"""Attention's P V as the program says: the rules' load_matmul_rows, taken by extraction only
where the code generator runs it by rows (extract/rows.py, codegen/chain.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from codegen.support import tcpr_cache  # noqa: F401
from numerics import assert_close_to_reference

from tcp_rules.codegen.kernel import MatmulKernel
from tcp_rules.codegen.runtime import compile_func
from tcp_rules.diagnostics import Source
from tcp_rules.elaborate import load_program
from tcp_rules.extract.cost import RooflineCost
from tcp_rules.extract.decode import kernel_costs
from tcp_rules.inputs import random_inputs
from tcp_rules.ir import Apply, Func
from tcp_rules.kernels import kernel_infos
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.printer import print_func
from tcp_rules.rules.library import load_standard_library

ROOT = Path(__file__).parent.parent
STD = load_standard_library().rules
OPTS = OptOptions(isolate=False)


def func(text: str) -> Func:
    return load_program(Source("t.tcp", text)).funcs[0]


def rows_of(f: Func) -> list[Apply]:
    return [v for v in f.ops() if v.op.name == "load_matmul_rows"]


def chained(f: Func) -> list[MatmulKernel]:
    return [s.kernel for s in compile_func(f).steps
            if isinstance(s.kernel, MatmulKernel) and s.kernel.then is not None]


ATTENTION = """func att(q: f32[64, 16], k: f32[48, 16], v: f32[48, {n}]{extra}) -> f32[64, {n}] {{
  s = div(matmul(q, transpose(k, perm=[1, 0])), 4.0)
  e = exp(sub(s, broadcast(reduce_max(s, axes=[1]), shape=[64, 48], dims=[0])))
  p = div(e, broadcast(reduce_sum(e, axes=[1]), shape=[64, 48], dims=[0]))
  return {ret}
}}"""


def test_attention_runs_as_its_program_says() -> None:
    """The example's optimized program holds P V and O W as load_matmul_rows; the code
    generator runs both inside Q K^T's kernel, and every step it runs is a kernel term of the
    program (none materialized behind the cost model's back)."""
    f = load_program(Source("a", (ROOT / "examples" / "attention.tcp").read_text())).funcs[0]
    opt = optimize(f, STD, OPTS).func
    assert len(rows_of(opt)) == 2, print_func(opt)
    infos = kernel_infos(opt, RooflineCost())
    assert len(infos) == 2 and all(i.estimated_us is not None for i in infos)
    (k,) = chained(opt)
    assert k.then is not None and k.then.then is not None
    xs = random_inputs(f, {"S": 37}, seed=1)
    assert_close_to_reference(list(compile_func(opt)(*xs)), f, xs, "attention")


# What the code generator cannot run by rows: the rule fires, extraction declines.
DECLINED = {
    "A is no row pass (an MLP)": """func mlp(x: f32[64, 32], w: f32[32, 32], w2: f32[32, 8])
        -> f32[64, 8] {
      return matmul(max(matmul(x, w), 0.0), w2)
    }""",
    "A's rows read no product": """func sm(x: f32[64, 48], v: f32[48, 8]) -> f32[64, 8] {
      e = exp(sub(x, broadcast(reduce_max(x, axes=[1]), shape=[64, 48], dims=[0])))
      return matmul(div(e, broadcast(reduce_sum(e, axes=[1]), shape=[64, 48], dims=[0])), v)
    }""",
    "the product's epilogue reads a bias": ATTENTION.format(
        n=8, extra=", b: f32[8]", ret="add(matmul(p, v), broadcast(b, shape=[64, 8], dims=[1]))"),
    "the product's N is symbolic": ATTENTION.format(n="D", extra="", ret="matmul(p, v)"),
}


@pytest.mark.parametrize("case", list(DECLINED))
def test_extraction_declines_what_would_be_materialized(case: str) -> None:
    f = func(DECLINED[case])
    opt = optimize(f, STD, OPTS).func
    assert not rows_of(opt), print_func(opt)
    assert all(i.estimated_us is not None for i in kernel_infos(opt, RooflineCost()))


def test_the_control_takes_it() -> None:
    """The declined attention cases without what declines them: P V is taken by rows."""
    f = func(ATTENTION.format(n=8, extra="", ret="matmul(p, v)"))
    opt = optimize(f, STD, OPTS).func
    assert len(rows_of(opt)) == 1 and len(chained(opt)) == 1, print_func(opt)


def test_one_that_cannot_run_by_rows_costs_what_runs() -> None:
    """A program holding a load_matmul_rows the code generator cannot chain (its A reads no
    product) runs it as A's kernel, then the product, and is costed so: as
    load_matmul(kernel(a), b)."""
    held = func("""func f(x: f32[N, 4], w: f32[4, 3]) -> f32[N, 3] {
      return kernel(load_matmul_rows(exp(load(x)), w, shape=[N, 4]))
    }""")
    spelled = func("""func f(x: f32[N, 4], w: f32[4, 3]) -> f32[N, 3] {
      return kernel(load_matmul(kernel(exp(load(x))), w))
    }""")
    model = RooflineCost()
    assert sum(kernel_costs(held, model).values()) == pytest.approx(
        sum(kernel_costs(spelled, model).values()))
    cf = compile_func(held)
    assert len(cf.steps) == 2 and not chained(held)
    x = np.random.default_rng(3).standard_normal((9, 4)).astype(np.float32)
    w = np.random.default_rng(4).standard_normal((4, 3)).astype(np.float32)
    assert_close_to_reference(list(cf(x, w)), held, [x, w], "held")


def test_an_imported_softmax_is_regrouped_into_the_product() -> None:
    """ONNX's attention computes the softmax over [batch, heads, S, S] and folds the heads into
    the batch for P V: chain-rows-regrouped reads it so, and it runs by rows all the same."""
    from tcp_rules.benchmodels import graphs, prepare

    (g,) = [g for g in graphs(small=True) if g.name == "attention"]
    f, xs = prepare(g)
    opt = optimize(f, STD, OPTS).func
    (r,) = rows_of(opt)
    assert tuple(r.attr_map["shape"]) != r.operands[0].type.dims
    assert len(chained(opt)) == 1 and len(compile_func(opt).steps) == 1
    assert_close_to_reference(list(compile_func(opt)(*xs)), f, xs, "onnx attention")


# the same attention as kernel terms, its softmax computing the scores (as the rules make it)
KEPT = ATTENTION.replace("div(matmul(q", "div(load_matmul(q")


def test_the_program_decides_what_runs_inside() -> None:
    """The same attention with P V written as load_matmul(kernel(P), v): two kernels, P
    written and read, as the program says; as load_matmul_rows: one."""
    apart = func(KEPT.format(n=8, extra="", ret="kernel(load_matmul(kernel(p), v))"))
    inside = func(KEPT.format(n=8, extra="", ret="kernel(load_matmul_rows(p, v, shape=[64, 48]))"))
    assert len(compile_func(apart).steps) == 2 and not chained(apart)
    assert len(compile_func(inside).steps) == 1 and len(chained(inside)) == 1
    xs = random_inputs(apart, {}, seed=2)
    assert np.array_equal(compile_func(apart)(*xs)[0], compile_func(inside)(*xs)[0])
