"""Accuracy of the vectorizable f32 polynomial math against a float64 reference.

Re-measures the bounds stated in tcp_rules/codegen/mathlib.py: the error in f32 ulps of the
correctly rounded true value, on random samples over each function's interesting ranges.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
from codegen.support import skip_unless_target_has, tcpr_cache, unary  # noqa: F401
from numerics import assert_close_to_reference

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func, jit
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.mathlib import ULP_BOUNDS
from tcp_rules.codegen.mathtrig import TRIG_BOUND
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.types import DType

F32_MAX = float(np.finfo(np.float32).max)
TRUTH = {"exp": np.exp, "atan": np.arctan, "log": np.log, "tanh": np.tanh, "erf": scipy.special.erf,
         "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "sin": np.sin, "cos": np.cos}
TRIG_RANGES = [(-10, 10), (-1000, 1000), (-TRIG_BOUND, TRIG_BOUND), (-1e6, 1e6), (-3e38, 3e38)]
RANGES = {
    "exp": [(-104, 89), (-1, 1), (-88, -80), (-104, -87)],
    "log": [(0, 10), (0.5, 2), (0, 1e-37), (1, 3e38)],
    "tanh": [(-10, 10), (-1, 1), (0.5, 0.8)],
    "sigmoid": [(-88, 100), (-20, 20), (-3, 3)],
    "erf": [(-5, 5), (-1, 1), (0.85, 0.95), (-1e-3, 1e-3)],
    "atan": [(-10, 10), (0.9, 1.2), (-1e30, 1e30)],
    "sin": TRIG_RANGES,
    "cos": TRIG_RANGES,
}


def ulp_error(got: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """|got - truth| in f32 ulps of truth rounded to f32 (overflow counts as F32_MAX)."""
    truth = np.clip(truth, -F32_MAX, F32_MAX)
    g = np.where(np.isinf(got), np.sign(got) * F32_MAX, got.astype(np.float64))
    t32 = np.abs(truth).astype(np.float32)
    spacing = np.where(t32 < np.finfo(np.float32).tiny, 2.0 ** -149,
                       np.spacing(t32).astype(np.float64))
    return np.abs(g - truth) / spacing


@pytest.mark.parametrize("op", sorted(ULP_BOUNDS))
def test_ulp_bound(op: str) -> None:
    cf = compile_func(unary(op, DType.F32))
    rng = np.random.default_rng(42)
    worst = 0.0
    for lo, hi in RANGES[op]:
        x = rng.uniform(lo, hi, 1 << 19).astype(np.float32)
        (got,) = cf(x)
        with np.errstate(over="ignore"):
            err = ulp_error(got, TRUTH[op](x.astype(np.float64)))
        worst = max(worst, float(err.max()))
    assert worst <= ULP_BOUNDS[op], f"{op}: {worst:.3f} ulp > stated {ULP_BOUNDS[op]}"


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_trig_edges(op: str) -> None:
    """Signed zeros, denormals, infinities, NaN, the worst cases of exhaustive sweeps below
    TRIG_BOUND and arguments far beyond it (libm's lanes), alone and mixed into vectors."""
    tiny = np.float32(1e-45)
    edges = np.array([0.0, -0.0, tiny, -tiny, 1e-40, -3e-39, 1e-20, np.inf, -np.inf, np.nan,
                      TRIG_BOUND, np.nextafter(np.float32(TRIG_BOUND), np.float32(np.inf)),
                      -TRIG_BOUND, 1e5, -1e5, 1e20, -1e20, 3.4e38, -3.4e38, 2.0**24 + 2,
                      3.6474915, 1.3185496, 463098.9, 506498.3, 931878.1, 8.5e37],
                     dtype=np.float32)
    rng = np.random.default_rng(7)
    mixed = rng.uniform(-4, 4, 4096).astype(np.float32)
    at = rng.choice(4096, 40, replace=False)
    mixed[at] = rng.choice(edges, 40)
    x = np.concatenate([edges, mixed])
    (got,) = compile_func(unary(op, DType.F32))(x)
    with np.errstate(invalid="ignore"):
        ref = getattr(np, op)(x)
    nan = np.isnan(ref)
    assert (np.isnan(got) == nan).all(), x[np.isnan(got) != nan]
    assert (np.signbit(got[ref == 0]) == np.signbit(ref[ref == 0])).all()
    err = ulp_error(got[~nan], TRUTH[op](x[~nan].astype(np.float64)))
    assert err.max() <= ULP_BOUNDS[op], f"{op}: {err.max():.3f} ulp at {x[~nan][err.argmax()]!r}"


def test_sigmoid_edges() -> None:
    """Where the reference's exp(-x) overflows the result is its 0; just above, a denormal within
    the bound; beyond 18 exactly 1; NaN stays NaN."""
    x = np.array([-88.72284, -88.72283, -88.5, -87.4, -100.0, -np.inf, 17.3, 18.0, 1e30, np.inf,
                  0.0, -0.0, np.nan], dtype=np.float32)
    (got,) = compile_func(unary("sigmoid", DType.F32))(x)
    assert got[0] == 0 and got[4] == 0 and got[5] == 0
    assert (got[7:10] == 1).all() and got[10] == got[11] == 0.5 and np.isnan(got[12])
    err = ulp_error(got[1:4], TRUTH["sigmoid"](x[1:4].astype(np.float64)))
    assert (got[1:4] > 0).all() and err.max() <= ULP_BOUNDS["sigmoid"], err


@pytest.mark.parametrize("threads", [1, 2])
def test_trig_rerun_in_a_fused_reduction(threads: int) -> None:
    """A fused kernel (rows of sum(sin(x) * cos(x) + x)) whose fast sin/cos flag big arguments
    reruns precisely: rows with and without such arguments, split across threads."""
    f = tb.FuncBuilder("rows")
    x = tb.apply_op("load", f.param("x", "f32[N, D]"))
    body = tb.add(tb.mul(tb.apply_op("sin", x), tb.apply_op("cos", x)), x)
    f.ret(tb.apply_op("kernel", tb.reduce_sum(body, axes=[1])))
    func = f.finish()
    rng = np.random.default_rng(3)
    xs = rng.uniform(-10, 10, (600, 1024)).astype(np.float32)
    xs[5, 7], xs[599, 1023], xs[300, 0] = 3e30, -1e6, np.float32(TRIG_BOUND * 1.5)
    cf = compile_func(func, threads=threads)
    assert len(cf.steps) == 1
    assert_close_to_reference(cf(xs), func, [xs], "rows with a rerun")
    xs[5, 7], xs[599, 1023], xs[300, 0] = 1.0, 2.0, 3.0  # the same kernel, no rerun
    assert_close_to_reference(cf(xs), func, [xs], "rows")


def _kernel_ir(opt: str) -> str:
    """The kernel function @f of optimized module text (helper functions left out)."""
    start = opt.index("define void @f(")
    return opt[start:opt.index("\n}\n", start)]


@pytest.mark.parametrize("op", sorted(ULP_BOUNDS))
def test_polynomials_vectorize(op: str) -> None:
    """No libm call is left in the loop: the optimized kernel works on vectors. (sin and cos:
    the precise rerun calls their own vector functions, which reach libm only for lanes beyond
    TRIG_BOUND.) Only with FMA: without it every llvm.fma of the polynomials is a libm call
    (the same bits as a fused multiply-add, slowly), and the vectorizer may leave them scalar."""
    if jit.target().is_x86:
        skip_unless_target_has("fma")
    opt = jit.optimized_ir(module_ir(lower_func(unary(op, DType.F32)).steps[0].kernel, "f"))
    kernel = _kernel_ir(opt)
    assert "x float>" in kernel
    assert not any(f"@{c}f(" in kernel for c in ("exp", "log", "tanh", "erf", "atan", "sin",
                                                  "cos"))
    if op in ("sin", "cos"):
        assert f"x float> @__tcpr_{op}f_v" in kernel
