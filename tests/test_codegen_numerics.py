"""The rounding bounds of tests/numerics.py: they hold against an exact (float64) evaluation, and
they are tight enough that real mistakes (a lost term, a lost bias) fail them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from numerics import assert_within, dot_bound, error_bounds, gamma

from tcp_rules import build as tb
from tcp_rules.pipeline import load_module_file

ROOT = Path(__file__).parent.parent


def _sequential_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b summed k = 0, 1, ... in the dtype, products rounded: another valid order."""
    out = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    for k in range(a.shape[1]):
        out = out + a[:, k:k + 1] * b[k:k + 1, :]
    return out


@pytest.mark.parametrize("k", [1, 7, 64, 700])
def test_dot_bound_holds_for_every_order_and_catches_a_lost_term(k: int) -> None:
    rng = np.random.default_rng(k)
    a = rng.standard_normal((9, k)).astype(np.float32)
    b = rng.standard_normal((k, 11)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bound = dot_bound(a, b)
    for got in (a @ b, _sequential_dot(a, b)):
        assert (np.abs(got - exact) <= bound).all()
    assert_within(_sequential_dot(a, b), a @ b, 2 * bound, "two orders")
    if k > 1:  # a product left out is far beyond the bound
        with pytest.raises(AssertionError, match="beyond the bound"):
            assert_within(_sequential_dot(a[:, 1:], b[1:]), a @ b, 2 * bound)


def test_gamma() -> None:
    u = 2.0 ** -24
    assert gamma(1, np.dtype(np.float32)) == pytest.approx(u / (1 - u))
    assert gamma(1 << 25, np.dtype(np.float32)) == np.inf  # n u >= 1: no bound


def test_program_bounds_hold_against_float64() -> None:
    """relu(x @ w + b) and a softmax-like chain (exp, sum, div) evaluated in float32 by the
    reference stay within E of the same program evaluated in float64."""
    f = tb.FuncBuilder("chain")
    x, w, bias = f.param("x", "f32[N, K]"), f.param("w", "f32[K, M]"), f.param("b", "f32[M]")
    h = tb.max(tb.add(tb.matmul(x, w), tb.broadcast(bias, shape=["N", "M"], dims=[1])), 0.0)
    e = tb.exp(tb.div(h, 4.0))
    f.ret(tb.div(e, tb.broadcast(tb.reduce_sum(e, axes=[1]), shape=["N", "M"], dims=[0])))
    func = f.finish()
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((6, 300), (300, 40), (40,))]
    xs[1] /= np.float32(np.sqrt(300))  # fan-in scaling: h of order 1
    (got,), (bound,) = error_bounds(func, xs)
    x64, w64, b64 = (v.astype(np.float64) for v in xs)
    e64 = np.exp(np.maximum(x64 @ w64 + b64, 0) / 4)
    exact = e64 / e64.sum(axis=1, keepdims=True)
    assert (np.abs(got - exact) <= bound).all()
    assert (bound < 1e-3 * np.abs(exact)).all()  # and not vacuous: within 0.1%


def test_a_lost_bias_or_a_special_fails() -> None:
    func = load_module_file(ROOT / "examples" / "mlp.tcp").func()
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 784), (784, 128), (128,)))
    w /= np.float32(28)  # fan-in scaling: activations of order 1
    (want,), (bound,) = error_bounds(func, [x, w, b])
    assert_within(np.nextafter(want, np.float32(np.inf)), want, 2 * bound)  # one ulp is fine
    with pytest.raises(AssertionError, match="beyond the bound"):
        assert_within(np.maximum(x @ w, np.float32(0)), want, 2 * bound)
    inf = want.copy()
    inf[0, 0] = np.inf
    with pytest.raises(AssertionError, match="beyond the bound"):
        assert_within(inf, want, 2 * bound)
    assert_within(inf, inf, 2 * bound)  # the same special where the reference has one
