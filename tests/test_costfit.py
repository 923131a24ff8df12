"""The cost model's calibration fit (tcp_rules/costfit.py) on synthetic data: no timing."""

from __future__ import annotations

import numpy as np
import pytest

from tcp_rules.costfit import (
    CONSTANTS,
    Sample,
    fit,
    fusion_ranking,
    kernel_features,
    model_with,
    single_op,
)
from tcp_rules.extract.cost import RooflineCost, with_sizes
from tcp_rules.kernels import kernel_infos

TRUE = {"byte_ns": 0.03, "flop_ns": 0.05, "matmul_flop_ns": 0.012, "op_ns": 4000.0}


def _synthetic(n: int, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernels of 4K to 16M elements: elementwise ones (bytes, flops) and a few matmuls."""
    rng = np.random.default_rng(seed)
    elems = 2.0 ** rng.uniform(12, 24, n)
    is_mm = rng.random(n) < 0.2
    feats = np.stack([elems * rng.uniform(8, 16, n), elems * rng.uniform(1, 20, n),
                      np.where(is_mm, elems * rng.uniform(50, 500, n), 0.0), np.ones(n)], axis=1)
    offset = np.full(n, 1e-3)
    times = offset + feats @ np.array([TRUE[c] for c in CONSTANTS])
    return feats, times * rng.lognormal(0.0, noise, n) if noise else times, offset


def test_fit_recovers_known_constants() -> None:
    feats, times, offset = _synthetic(200, noise=0.0)
    got = fit(feats, times, offset)
    assert list(got) == list(CONSTANTS)
    for c in CONSTANTS:
        assert got[c] == pytest.approx(TRUE[c], rel=1e-6)


def test_fit_is_close_under_noise_and_never_negative() -> None:
    feats, times, offset = _synthetic(400, noise=0.05, seed=1)
    got = fit(feats, times, offset)
    for c in CONSTANTS:
        assert got[c] == pytest.approx(TRUE[c], rel=0.1)
    # a feature nobody has gets 0, and a cost that only falls with a feature is clipped at 0
    feats[:, 2] = 0.0
    times = 3000.0 + feats[:, 0] * 0.03 - feats[:, 1] * 1e-4
    got = fit(feats, times)
    assert got["matmul_flop_ns"] == 0.0 and got["flop_ns"] == 0.0
    assert all(v >= 0 for v in got.values())


def test_sample_estimate_and_fusion_ranking() -> None:
    consts = dict(TRUE)

    def sample(variant: str, ops: list[str], feats: tuple[float, ...], ns: float) -> Sample:
        return Sample("p", variant, {"N": 8}, "k", ops, feats, 0.5, ns)
    fused = sample("fused", ["mul", "add"], (1e6, 2e5, 0.0, 1.0), 40e3)
    unfused = [sample("unfused", ["mul"], (1e6, 1e5, 0.0, 1.0), 30e3),
               sample("unfused", ["add"], (1e6, 1e5, 0.0, 1.0), 30e3)]
    assert fused.estimate(consts) == pytest.approx(0.5 + 1e6 * 0.03 + 2e5 * 0.05 + 4000.0)
    [row] = fusion_ranking([fused, *unfused], consts)
    assert row["agrees"] is True and row["kernels_fused"] == 1 and row["kernels_unfused"] == 2
    slow = sample("fused", ["mul", "add"], (1e6, 2e5, 0.0, 1.0), 90e3)
    assert fusion_ranking([slow, *unfused], consts)[0]["agrees"] is False


def test_features_are_the_models_own_terms() -> None:
    """Bytes, flops, matmul flops and kernels as RooflineCost counts them, without timing."""
    [(feats, offset)] = kernel_features(single_op("add"), {"N": 1000})
    assert feats == pytest.approx((3 * 4000.0, 1000.0, 0.0, 1.0))
    assert 0 <= offset < 1
    # the features reproduce the model's own estimate with its default constants
    model = RooflineCost()
    sample = Sample("add", "op", {"N": 1000}, "k", ["add"], feats, offset, 1.0)
    [info] = kernel_infos(single_op("add"), with_sizes(model, {"N": 1000}))
    assert info.estimated_us is not None
    assert sample.estimate({c: getattr(model, c) for c in CONSTANTS}) == pytest.approx(
        info.estimated_us * 1e3)
    m = model_with(TRUE)
    assert isinstance(m, RooflineCost)
    assert {c: getattr(m, c) for c in CONSTANTS} == TRUE
