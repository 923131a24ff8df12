"""The host-dependent paths of f32 exp and log compute the same bits as the portable ones: exp's
2**n by ldexp (vscalefps on a float n with AVX-512) or by two normal powers of two, log's split by
vgetexpps/vgetmantps or by integer arithmetic on the bits, at every vector width. The AVX-512
paths run only where the target (the host, or $TCPR_TARGET) has AVX-512; llvm.ldexp is generic
(a libm call per lane without AVX-512), so both scalings run everywhere."""

from __future__ import annotations

import re

import numpy as np
import pytest
from codegen.support import (  # noqa: F401
    loop_kernels,
    skip_unless_target_has,
    tcpr_cache,
    unary,
)

from tcp_rules.codegen import jit, mathlib
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.types import DType

TARGET = jit.target().name  # symbols are per process: one set per target


def _f32(*parts: np.ndarray | list[float]) -> np.ndarray:
    x = np.concatenate([np.asarray(p, dtype=np.float32) for p in parts])
    return x[: len(x) // 16 * 16]


def _same_bits(got: np.ndarray, want: np.ndarray, x: np.ndarray, what: str) -> None:
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), f"{what}: NaN at {x[np.isnan(got) != nan][:4]}"
    bad = (got.view(np.uint32) != want.view(np.uint32)) & ~nan
    assert not bad.any(), f"{what}: {x[bad][:4]} -> {got[bad][:4]}, want {want[bad][:4]}"


def test_exp_scalings_agree() -> None:
    """Overflow, denormal results down to the last one, the clamps, NaN and infinities."""
    rng = np.random.default_rng(11)
    edges = [0.0, -0.0, 1.0, 88.72283, 88.72284, 89.0, 1e30, np.inf, -np.inf, np.nan, -87.33655,
             -87.33654, -103.27893, -103.97208, -104.0, -1e30, 2e-45, -2e-45]
    x = _f32(edges, rng.uniform(-110, 95, 1 << 16), rng.uniform(-104, -86, 1 << 14))
    runs = loop_kernels({f"exp_{how}_{w}_{TARGET}": (w, lambda e, v, how=how: mathlib.exp(
        e, v, how)) for how in ("ldexp", "split") for w in (1, 4, 8, 16)})
    want = runs[f"exp_split_1_{TARGET}"](x)
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
    assert (want[ref > 3.5e38] == np.inf).all() and (want[x < -104] == 0).all()
    assert (want[(ref < 1.4e-45) & (ref > 1e-45)] > 0).all()  # the last denormal rounds up
    for name, run in runs.items():
        _same_bits(run(x), want, x, name)


def test_exp_fast_path_agrees_within_its_bound() -> None:
    """exp_fast (no clamps, 2**n added to the exponent bits) gives exp's bits up to the bound."""
    rng = np.random.default_rng(13)
    b = mathlib.EXP_FAST_BOUND
    edges = [0.0, -0.0, b, -b, np.nextafter(b, 0), 1e-45, -1e-45, 0.34657359, -0.34657359]
    x = _f32(edges, rng.uniform(-b, b, 1 << 16), rng.uniform(-1, 1, 1 << 12))
    runs = loop_kernels({f"exp_fast_{w}_{TARGET}": (w, lambda e, v: mathlib.exp_fast(e, v))
                         for w in (1, 8, 16)})
    want = loop_kernels({f"exp_split_ref_{TARGET}": (1, lambda e, v: mathlib.exp(e, v, "split"))}
                        )[f"exp_split_ref_{TARGET}"](x)
    for name, run in runs.items():
        _same_bits(run(x), want, x, name)


def test_exp_kernels_rerun_beyond_the_fast_path() -> None:
    """A compiled exp kernel takes the fast path and runs its loop again with the clamped one
    when an argument is beyond the bound (NaN, infinities, overflow, denormal results): the
    same bits as the scalar function either way."""
    from tcp_rules.codegen import compile_func

    rng = np.random.default_rng(14)
    inside = _f32(rng.uniform(-80, 80, 4099 // 16 * 16 + 16))
    cf = compile_func(unary("exp", DType.F32), threads=1)
    ref = loop_kernels({f"exp_split_rr_{TARGET}": (1, lambda e, v: mathlib.exp(e, v, "split"))}
                       )[f"exp_split_rr_{TARGET}"]
    _same_bits(cf(inside)[0], ref(inside), inside, "in range")
    for special in (np.nan, np.inf, -np.inf, 88.72, 100.0, -87.5, -103.9, -200.0):
        x = inside.copy()
        x[rng.integers(0, x.size, 3)] = special
        _same_bits(cf(x)[0], ref(x), x, f"with {special}")


def _log_inputs() -> np.ndarray:
    rng = np.random.default_rng(12)
    binades = np.float32(2.0) ** np.arange(-149, 128, dtype=np.float64).astype(np.float32)
    seams = np.concatenate([b * np.array([2 / 3, 4 / 3, 1.0], np.float32) for b in binades])
    seams = seams[np.isfinite(seams) & (seams > 0)]
    near = (seams.view(np.int32)[:, None] + np.arange(-64, 65, dtype=np.int32)).ravel()
    bits = rng.integers(0, 0x7F800000, 1 << 16, dtype=np.uint32).view(np.float32)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -1e-45, 1e-45, 1.1754942e-38, 3.4e38]
    return _f32(specials, near.view(np.float32), bits, -bits[:256], rng.uniform(0, 4, 4096))


@pytest.mark.parametrize("how", ["bits", "avx512"])
def test_log_splits_agree(how: str) -> None:
    """Each split at every width gives the scalar function's bits, special values included."""
    if how == "avx512":
        skip_unless_target_has("avx512f", "avx512vl")
    bodies = {f"log_bits_1_{TARGET}_{how}": (1, lambda e, v: mathlib._log(e, v, "bits"))}
    bodies |= {f"log_{how}_{w}_{TARGET}": (w, lambda e, v: mathlib._log(e, v, how))
               for w in (4, 8, 16)}
    runs = loop_kernels(bodies)
    x = _log_inputs()
    want = runs[f"log_bits_1_{TARGET}_{how}"](x)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log(x)
    special = ~np.isfinite(ref)
    _same_bits(want[special], ref[special], x[special], "special values")
    for name, run in runs.items():
        _same_bits(run(x), want, x, name)


def test_kernels_use_the_avx512_paths() -> None:
    """The vectorized loops scale by vscalefps on a float n (exp) and split by vgetmantps (log),
    inlined, 512 bits wide (where LLVM's tuning would stop at 256). Only optimized, not run: on
    any host."""
    for op, needle in (("exp", "@llvm.x86.avx512.mask.scalef.ps.512"),
                       ("log", "@llvm.x86.avx512.mask.getmant.ps.512")):
        with jit.targeting("x86-64-v4"):
            opt = jit.optimized_ir(module_ir(lower_func(unary(op, DType.F32)).steps[0].kernel,
                                             f"strategy_{op}"))
        kernel = opt[opt.index(f"define void @strategy_{op}("):]
        kernel = kernel[:kernel.index("\n}\n")]
        # The vector variants inlined (the scalar remainder may call its function).
        assert needle in kernel and not re.search(r"@__tcpr_\w+_v\d", kernel), op
