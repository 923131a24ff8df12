"""The f32 tanh through exp (tcp_rules/codegen/mathtanh.py), which mathlib uses on targets
without AVX-512; it runs on every host, so it is tested here whatever the host's default: every
vector width computes the scalar bits, within the stated bound, around the split, the steps of
n and the clamp, with exact special values. The table form is tests/test_codegen_mathtable.py."""

from __future__ import annotations

import numpy as np
from codegen.support import loop_kernels, tcpr_cache, unary  # noqa: F401
from test_codegen_math import ulp_error

from tcp_rules.codegen import jit, mathtable, mathtanh
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.mathlib import ULP_BOUNDS
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.types import DType

WIDTHS = (1, 4, 8, 16)


def _inputs() -> np.ndarray:
    """The split, the clamp and where n = round(2t / ln2) steps (t = (m + 1/2) ln2 / 2), each
    with 64 neighbours either side; specials, denormals and random values of both signs."""
    seams = np.array([mathtanh.SPLIT, mathtable.TANH_TOP, 9.01,
                      *((m + 0.5) * np.log(2) / 2 for m in range(30))], dtype=np.float32)
    near = (seams.view(np.int32)[:, None] + np.arange(-64, 65, dtype=np.int32)).ravel()
    rng = np.random.default_rng(9)
    x = np.concatenate([
        [0.0, -0.0, 1e-45, -1e-45, 1e-40, 1.1754944e-38, 1e-20, 1e30, np.inf, -np.inf, np.nan],
        near.view(np.float32), -near.view(np.float32), rng.uniform(-11, 11, 1 << 15),
        rng.uniform(0.6, 0.9, 1 << 14), np.float32(10.0) ** rng.uniform(-40, 1, 1 << 12)])
    x = x.astype(np.float32)
    return x[: len(x) // 16 * 16]


def test_widths_agree_within_the_bound() -> None:
    t = jit.target().name  # symbols are per process: one set per target
    runs = loop_kernels({f"tanh_exp_{w}_{t}": (w, mathtanh.tanh) for w in WIDTHS})
    x = _inputs()
    want = runs[f"tanh_exp_1_{t}"](x)
    for w in WIDTHS[1:]:
        got = runs[f"tanh_exp_{w}_{t}"](x)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        assert same.all(), f"width {w}: {x[~same][:4]} -> {got[~same][:4]}, want {want[~same][:4]}"
    ok = ~np.isnan(x)
    err = ulp_error(want[ok], np.tanh(x[ok].astype(np.float64)))
    assert err.max() <= ULP_BOUNDS["tanh"], f"{err.max():.3f} ulp at {x[ok][err.argmax()]!r}"
    assert np.isnan(want[~ok]).all()
    big = np.abs(x) >= 9.011  # tanh rounds to 1 from 9.0109 on: +-1 exactly, infinities too
    assert (want[big] == np.sign(x[big])).all()
    tiny = np.abs(x) < 1e-20  # the correction underflows: tanh(x) = x, -0.0 and denormals kept
    assert (want[tiny].view(np.uint32) == x[tiny].view(np.uint32)).all()


def test_default_formula_follows_the_target() -> None:
    """The table where a lookup is one permute (AVX-512), exp elsewhere: kernels hold no call
    to the table function's scalar or vector variants without AVX-512."""
    opt = jit.optimized_ir(module_ir(lower_func(unary("tanh", DType.F32)).steps[0].kernel, "f"))
    kernel = opt[opt.index("define void @f("):]
    table = mathtable.strategy() == "avx512"
    assert ("@__tcpr_tanhf" in kernel) == table
    assert ("fdiv <8 x float>" in kernel or "fdiv <16 x float>" in kernel) != table
