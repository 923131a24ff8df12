"""The table-driven f32 erf and tanh: every lookup strategy and vector width computes the same bits
as the scalar version, which is within the stated bound, and kernels use the inlined vector
variant. A strategy runs only where the target (the host, or $TCPR_TARGET) has its features;
tests/test_codegen_targets.py compiles each for every target."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pytest
import scipy.special
from codegen.support import (  # noqa: F401
    Body,
    loop_kernels,
    skip_unless_target_has,
    tcpr_cache,
    unary,
)
from test_codegen_math import ulp_error

from tcp_rules.codegen import compile_func, jit, mathtable
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.mathlib import ULP_BOUNDS
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.types import DType

WIDTHS = (1, 4, 8, 16)  # 1: the scalar function's table loads
Run = Callable[[np.ndarray], np.ndarray]


FNS = {"erf": mathtable.ERF, "tanh": mathtable.TANH}
TRUTH = {"erf": scipy.special.erf, "tanh": np.tanh}


def _body(fn: mathtable.Piecewise, how: str) -> Body:
    return lambda e, v: mathtable.evaluate(e, fn, v, how)


def _usable(how: str) -> bool:
    return all(jit.target().has(f) for f in mathtable.NEEDS[how])


@pytest.fixture(scope="module", params=sorted(FNS))
def fns(request: pytest.FixtureRequest) -> tuple[str, dict[tuple[str, int], Run]]:
    """One runner per (strategy, width) the target can run; width 1 is the scalar function's
    table loads."""
    fn = FNS[request.param]
    bodies = {(how, w): (w, _body(fn, how if w > 1 else "load"))
              for how in mathtable.STRATEGIES if _usable(how) for w in WIDTHS}
    t = jit.target().name  # symbols are per process: one set per target
    runs = loop_kernels({f"{fn.name}_{how}_{w}_{t}": b for (how, w), b in bodies.items()})
    return request.param, {key: runs[f"{fn.name}_{key[0]}_{key[1]}_{t}"] for key in bodies}


def _inputs(name: str) -> np.ndarray:
    """Edges (interval starts and their neighbours, the clamp, specials) and random values."""
    fn = FNS[name]
    starts = np.array(mathtable.TANH_STARTS if name == "tanh" else
                      [k / 4 for k in range(16)], dtype=np.float32)
    near = np.concatenate([starts, np.nextafter(starts, np.float32(0)),
                           np.nextafter(starts, np.float32(np.inf))])
    edges = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, 1.1754944e-38, 1e-20, fn.top,
                      np.nextafter(np.float32(fn.top), np.float32(0)), fn.top * 1.1, 1e30,
                      np.inf, -np.inf, np.nan, -np.nan], dtype=np.float32)
    rng = np.random.default_rng(5)
    x = np.concatenate([edges, near, -near, rng.uniform(-1.1, 1.1, 1 << 16).astype(np.float32)
                        * np.float32(fn.top),
                        np.float32(10.0) ** rng.uniform(-40, 1, 1 << 14).astype(np.float32)])
    return x[: len(x) // 16 * 16]


@pytest.mark.parametrize("how", mathtable.STRATEGIES)
def test_every_strategy_computes_the_scalar_bits(fns: tuple[str, dict[tuple[str, int], Run]],
                                                how: str) -> None:
    skip_unless_target_has(*mathtable.NEEDS[how])
    name, table = fns
    x = _inputs(name)
    want = table["lanes", 1](x).view(np.uint32)
    nan = np.isnan(x)
    for key, fn in table.items():
        if key[0] != how:
            continue
        got = fn(x).view(np.uint32)
        assert (np.isnan(got.view(np.float32)) == nan).all(), key
        bad = (got != want) & ~nan
        assert not bad.any(), f"{key}: {x[bad][:4]} -> {got[bad][:4].view(np.float32)}"


def test_scalar_values(fns: tuple[str, dict[tuple[str, int], Run]]) -> None:
    name, table = fns
    x = _inputs(name)
    got = table["lanes", 1](x)
    ok = ~np.isnan(x)
    err = ulp_error(got[ok], TRUTH[name](x[ok].astype(np.float64)))
    assert err.max() <= ULP_BOUNDS[name], f"{err.max():.3f} ulp at {x[ok][err.argmax()]!r}"
    big = np.abs(x) >= FNS[name].top
    assert (got[big] == np.sign(x[big])).all()  # saturates to exactly +-1, infinities included
    zero = x == 0
    assert (got[zero] == 0).all() and (np.signbit(got[zero]) == np.signbit(x[zero])).all()


@pytest.mark.parametrize("name", sorted(FNS))
def test_kernels_inline_the_vector_variant(name: str) -> None:
    if name == "tanh" and mathtable.strategy() != "avx512":
        pytest.skip("tanh takes its table only with AVX-512 (else test_codegen_mathtanh.py)")
    opt = jit.optimized_ir(module_ir(lower_func(unary(name, DType.F32)).steps[0].kernel, "f"))
    kernel = opt[opt.index("define void @f("):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert f"@__tcpr_{name}f_v" not in kernel  # inlined after vectorization
    if mathtable.strategy() == "avx512":
        assert "@llvm.x86.avx512.permvar.sf.512" in kernel or name == "tanh"
        assert "@llvm.x86.avx512.vpermi2var.ps.512" in kernel or name == "erf"
    assert re.search(rf"call (fastcc )?float @__tcpr_{name}f\(", kernel)  # the remainder loop


@pytest.mark.parametrize("name", sorted(FNS))
def test_remainders_match_the_vector_loop(name: str) -> None:
    """Lengths that leave remainders: every element the same bits as in a long vector run."""
    cf = compile_func(unary(name, DType.F32))
    x = _inputs(name)
    (full,) = cf(x)
    for n in (1, 3, 15, 17, 33, 100):
        (part,) = cf(x[40:40 + n].copy())
        assert (part.view(np.uint32) == full[40:40 + n].view(np.uint32)).all(), n
