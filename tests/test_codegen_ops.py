"""Differential tests: every op compiled == the reference interpreter (edge values included).

Exact ops must agree bit for bit (NaN payloads aside, signs of zero included); the polynomial
math (f32 exp, log, tanh, sigmoid, erf, atan, sin, cos) must lie within its stated ulp bound of
the true value (or equal the reference where both flush, as sigmoid below -88.7); libm-backed
math (f64, and pow, atan2) within 2 ulps of NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from codegen.support import (  # noqa: F401
    assert_same,
    binary,
    edge_values,
    tcpr_cache,
    ulps,
    unary,
)

from tcp_rules import build as tb
from tcp_rules.codegen import compile_func
from tcp_rules.codegen.mathlib import ULP_BOUNDS
from tcp_rules.interpret import evaluate
from tcp_rules.ops import MATMULS, OPS
from tcp_rules.types import DType

F32, F64, I32, I64, I1 = DType.F32, DType.F64, DType.I32, DType.I64, DType.I1
EXACT_UNARY = ["neg", "abs", "sqrt", "rsqrt", "floor", "ceil", "round", "round_even"]
LIBM = ["sin", "cos"]


def run_both(func, *xs):  # type: ignore[no-untyped-def]
    return compile_func(func)(*xs), evaluate(func, list(xs))


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("op", EXACT_UNARY)
def test_exact_unary_float(op: str, dt: DType) -> None:
    x = edge_values(dt, 200)
    (got,), (ref,) = run_both(unary(op, dt), x)
    assert_same(got, ref, f"{op} {dt}")


@pytest.mark.parametrize("dt", [I32, I64])
@pytest.mark.parametrize("op", ["neg", "abs"])
def test_unary_int(op: str, dt: DType) -> None:
    x = edge_values(dt, 100)
    (got,), (ref,) = run_both(unary(op, dt), x)
    assert_same(got, ref, f"{op} {dt}")


@pytest.mark.parametrize("op", sorted(ULP_BOUNDS))
def test_polynomial_math_f32(op: str) -> None:
    x = np.concatenate([edge_values(F32, 300), np.linspace(-20, 20, 2001, dtype=np.float32)])
    (got,), (ref,) = run_both(unary(op, F32), x)
    (truth,) = evaluate(unary(op, F64), [x.astype(np.float64)])
    with np.errstate(over="ignore"):
        err = ulps(got, truth.astype(np.float32))
    ok = (err <= ULP_BOUNDS[op] + 0.5) | (got == ref)
    assert ok.all(), f"{op}: {x[~ok][:5]} -> {got[~ok][:5]}, reference {ref[~ok][:5]}"
    special = ~np.isfinite(ref) | (ref == 0)
    assert_same(got[special], ref[special], op)


# f32 polynomial math is checked against its ulp bounds above (sin and cos included, whose
# arguments beyond mathtrig.TRIG_BOUND go to libm); f64's is vector code too, checked against
# mpmath in test_codegen_math_f64.py: here, against NumPy's libm on edge values.
LIBM_CASES = [(op, dt) for dt in (F32, F64)
              for op in [*LIBM, "exp", "log", "tanh", "sigmoid", "erf", "atan"]
              if not (dt is F32 and op in ULP_BOUNDS)]


@pytest.mark.parametrize(("op", "dt"), LIBM_CASES)
def test_libm_math(op: str, dt: DType) -> None:
    x = edge_values(dt, 300)
    x = x[np.abs(x) < 1e9] if op in ("sin", "cos") else x
    (got,), (ref,) = run_both(unary(op, dt), x)
    assert (ulps(got, ref) <= 2).all(), op


@pytest.mark.parametrize("dt", [F32, F64, I32, I64])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max", "min"])
def test_binary(op: str, dt: DType) -> None:
    e = edge_values(dt, 40)
    x, y = np.repeat(e, len(e)), np.tile(e, len(e))
    (got,), (ref,) = run_both(binary(op, dt), x, y)
    assert_same(got, ref, f"{op} {dt}")


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("op", ["pow", "atan2"])
def test_binary_libm(op: str, dt: DType) -> None:
    e = edge_values(dt, 30)
    x, y = np.repeat(e, len(e)), np.tile(e, len(e))
    (got,), (ref,) = run_both(binary(op, dt), x, y)
    assert (ulps(got, ref) <= 2).all(), op


@pytest.mark.parametrize("dt", [F32, F64, I32, I64, I1])
@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_compare(op: str, dt: DType) -> None:
    e = edge_values(dt, 30)
    x, y = np.repeat(e, len(e)), np.tile(e, len(e))
    (got,), (ref,) = run_both(binary(op, dt), x, y)
    assert_same(got, ref, f"{op} {dt}")


@pytest.mark.parametrize("dt", [F32, I64, I1])
def test_select(dt: DType) -> None:
    f = tb.FuncBuilder("sel")
    c, x, y = f.param("c", "i1[N]"), f.param("x", f"{dt}[N]"), f.param("y", f"{dt}[N]")
    f.ret(tb.select(c, x, y))
    rng = np.random.default_rng(1)
    xs = [rng.integers(0, 2, 77).astype(bool), edge_values(dt, 77, 1), edge_values(dt, 77, 2)]
    (got,), (ref,) = run_both(f.finish(), *xs)
    assert_same(got, ref, "select")


@pytest.mark.parametrize("src", [F32, F64, I32, I64, I1])
@pytest.mark.parametrize("dst", [F32, F64, I32, I64, I1])
def test_cast(src: DType, dst: DType) -> None:
    x = edge_values(src, 200)
    (got,), (ref,) = run_both(unary("cast", src, to=dst), x)
    assert_same(got, ref, f"cast {src}->{dst}")


@pytest.mark.parametrize(("dt", "bounds"), [
    (F32, {"min": 0.0}), (F32, {"max": 1.5}), (F64, {"min": -1.0, "max": 1.0}),
    (F32, {"min": float("nan")}), (I32, {"min": -5, "max": 5}), (I64, {"max": 0})])
def test_clamp(dt: DType, bounds: dict[str, float]) -> None:
    x = edge_values(dt, 100)
    (got,), (ref,) = run_both(unary("clamp", dt, **bounds), x)
    assert_same(got, ref, f"clamp {bounds}")


def test_every_op_has_a_lowering() -> None:
    from tcp_rules.codegen.llvm_ops import LOWERINGS
    from tcp_rules.codegen.lower import REDUCE_KIND

    structural = {"splat", "dense", "iota", "broadcast", "transpose", "reshape", "slice", "concat",
                  "gather", "pad", "load", "kernel", *MATMULS, *REDUCE_KIND}
    missing = [name for name in OPS if name not in LOWERINGS and name not in structural]
    assert not missing, f"ops without an LLVM lowering: {missing}"


@pytest.mark.parametrize("dt", [I64, I32, DType.U8, F32, F64, DType.F16, DType.BF16])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_iota(dt: DType, axis: int) -> None:
    """Alone (a kernel of its own, symbolic sizes), fused into an elementwise kernel, and
    summed: the same bits as the reference. bf16 and f16 round past 256 and 2048."""
    f = tb.FuncBuilder("iota")
    x = f.param("x", f"{dt}[N, 3, M]")
    n = 300 if dt.is_storage_float else 7
    shape = ["N", 3, "M"]
    io = tb.iota(shape=shape, axis=axis, dtype=str(dt))
    f.ret(tb.iota(shape=shape, axis=axis, dtype=str(dt)), tb.add(x, io),
          tb.reduce_sum(io, axes=[axis]))
    xs = np.ones((n, 3, 5)).astype(dt.np_dtype)
    for got, ref in zip(*run_both(f.finish(), xs), strict=True):
        assert_same(got, ref, f"iota {dt} axis {axis}")
