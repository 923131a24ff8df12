"""The table-driven f32 erf and tanh: every lookup strategy and vector width computes the same bits
as the scalar version, which is within the stated bound, and kernels use the inlined vector
variant."""

from __future__ import annotations

import ctypes
import hashlib
import re

import llvmlite.ir as ir
import numpy as np
import pytest
import scipy.special
from codegen.support import tcpr_cache, unary  # noqa: F401
from test_codegen_math import ulp_error

from tcp_rules.codegen import compile_func, jit, mathtable
from tcp_rules.codegen.irbase import F32, I64, IR, PTR, VOID
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.mathlib import ULP_BOUNDS
from tcp_rules.codegen.runtime import module_ir
from tcp_rules.types import DType

WIDTHS = (1, 4, 8, 16)  # 1: the scalar function's table loads


FNS = {"erf": mathtable.ERF, "tanh": mathtable.TANH}
TRUTH = {"erf": scipy.special.erf, "tanh": np.tanh}


def _module(fn: mathtable.Piecewise) -> str:
    """One function per (strategy, width): fn over x[0:n] into out, n a multiple of 16."""
    module = ir.Module(f"{fn.name}_table")
    for how in mathtable.STRATEGIES:
        for w in WIDTHS:
            f = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64]),
                             f"{fn.name}_{how}_{w}")
            x, out, n = f.args
            entry, body, done = (f.append_basic_block(s) for s in ("entry", "body", "done"))
            e = IR(ir.IRBuilder(entry))
            e.b.branch(body)
            e.b.position_at_end(body)
            i = e.b.phi(I64)
            i.add_incoming(ir.Constant(I64, 0), entry)
            ty = ir.VectorType(F32, w) if w > 1 else F32
            v = e.load(ty, e.gep(F32, x, i), align=4)
            e.b.store(mathtable.evaluate(e, fn, v, how if w > 1 else "load"),
                      e.gep(F32, out, i), align=4)
            nxt = e.b.add(i, ir.Constant(I64, w))
            i.add_incoming(nxt, body)
            e.b.cbranch(e.b.icmp_unsigned("<", nxt, n), body, done)
            e.b.position_at_end(done)
            e.b.ret_void()
    return str(module)


@pytest.fixture(scope="module", params=sorted(FNS))
def fns(request: pytest.FixtureRequest) -> tuple[str, dict[tuple[str, int], ctypes._CFuncPtr]]:
    text = _module(FNS[request.param])
    names = [f"{request.param}_{how}_{w}" for how in mathtable.STRATEGIES for w in WIDTHS]
    addrs = jit.load(hashlib.sha256(text.encode()).hexdigest(), names, lambda: text,
                     use_disk=False, vectorize=False)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return request.param, {(how, w): proto(addrs[f"{request.param}_{how}_{w}"])
                           for how in mathtable.STRATEGIES for w in WIDTHS}


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


def _run(fn: ctypes._CFuncPtr, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    fn(x.ctypes.data, out.ctypes.data, x.size)
    return out


def test_every_strategy_computes_the_scalar_bits(fns: tuple) -> None:  # type: ignore[type-arg]
    name, table = fns
    x = _inputs(name)
    want = _run(table["lanes", 1], x).view(np.uint32)
    nan = np.isnan(x)
    for key, fn in table.items():
        got = _run(fn, x).view(np.uint32)
        assert (np.isnan(got.view(np.float32)) == nan).all(), key
        bad = (got != want) & ~nan
        assert not bad.any(), f"{key}: {x[bad][:4]} -> {got[bad][:4].view(np.float32)}"


def test_scalar_values(fns: tuple) -> None:  # type: ignore[type-arg]
    name, table = fns
    x = _inputs(name)
    got = _run(table["lanes", 1], x)
    ok = ~np.isnan(x)
    err = ulp_error(got[ok], TRUTH[name](x[ok].astype(np.float64)))
    assert err.max() <= ULP_BOUNDS[name], f"{err.max():.3f} ulp at {x[ok][err.argmax()]!r}"
    big = np.abs(x) >= FNS[name].top
    assert (got[big] == np.sign(x[big])).all()  # saturates to exactly +-1, infinities included
    zero = x == 0
    assert (got[zero] == 0).all() and (np.signbit(got[zero]) == np.signbit(x[zero])).all()


@pytest.mark.parametrize("name", sorted(FNS))
def test_kernels_inline_the_vector_variant(name: str) -> None:
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
