"""The table-driven f32 erf: every lookup strategy and vector width computes the same bits as the
scalar version, which is within the stated bound, and kernels use the inlined vector variant."""

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


def _erf_module() -> str:
    """One function per (strategy, width): erf over x[0:n] into out, n a multiple of 16."""
    module = ir.Module("erf_table")
    for how in mathtable.STRATEGIES:
        for w in WIDTHS:
            fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64]), f"erf_{how}_{w}")
            x, out, n = fn.args
            entry, body, done = (fn.append_basic_block(s) for s in ("entry", "body", "done"))
            e = IR(ir.IRBuilder(entry))
            e.b.branch(body)
            e.b.position_at_end(body)
            i = e.b.phi(I64)
            i.add_incoming(ir.Constant(I64, 0), entry)
            ty = ir.VectorType(F32, w) if w > 1 else F32
            v = e.load(ty, e.gep(F32, x, i), align=4)
            e.b.store(mathtable.erf_f32(e, v, how if w > 1 else "load"), e.gep(F32, out, i),
                      align=4)
            nxt = e.b.add(i, ir.Constant(I64, w))
            i.add_incoming(nxt, body)
            e.b.cbranch(e.b.icmp_unsigned("<", nxt, n), body, done)
            e.b.position_at_end(done)
            e.b.ret_void()
    return str(module)


@pytest.fixture(scope="module")
def erf_fns() -> dict[tuple[str, int], ctypes._CFuncPtr]:
    text = _erf_module()
    names = [f"erf_{how}_{w}" for how in mathtable.STRATEGIES for w in WIDTHS]
    addrs = jit.load(hashlib.sha256(text.encode()).hexdigest(), names, lambda: text,
                     use_disk=False, vectorize=False)
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    return {(how, w): proto(addrs[f"erf_{how}_{w}"])
            for how in mathtable.STRATEGIES for w in WIDTHS}


def _inputs() -> np.ndarray:
    edges = np.array([0.0, -0.0, 1e-45, -1e-45, 1e-40, 1.1754944e-38, 1e-20, 0.25, 0.2499999,
                      3.9375, 3.92, 3.9999998, 4.0, 5.0, 1e30, np.inf, -np.inf, np.nan, -np.nan,
                      *(k / 4 for k in range(-17, 17))], dtype=np.float32)
    rng = np.random.default_rng(5)
    x = np.concatenate([edges, rng.uniform(-4.5, 4.5, 1 << 16).astype(np.float32),
                        np.float32(10.0) ** rng.uniform(-40, 1, 1 << 14).astype(np.float32)])
    return x[: len(x) // 16 * 16]


def _run(fn: ctypes._CFuncPtr, x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    fn(x.ctypes.data, out.ctypes.data, x.size)
    return out


def test_every_strategy_computes_the_scalar_bits(erf_fns: dict) -> None:  # type: ignore[type-arg]
    x = _inputs()
    want = _run(erf_fns["lanes", 1], x).view(np.uint32)
    nan = np.isnan(x)
    for key, fn in erf_fns.items():
        got = _run(fn, x).view(np.uint32)
        assert (np.isnan(got.view(np.float32)) == nan).all(), key
        bad = (got != want) & ~nan
        assert not bad.any(), f"{key}: {x[bad][:4]} -> {got[bad][:4].view(np.float32)}"


def test_scalar_erf_values(erf_fns: dict) -> None:  # type: ignore[type-arg]
    x = _inputs()
    got = _run(erf_fns["lanes", 1], x)
    ok = ~np.isnan(x)
    err = ulp_error(got[ok], scipy.special.erf(x[ok].astype(np.float64)))
    assert err.max() <= ULP_BOUNDS["erf"], f"{err.max():.3f} ulp at {x[ok][err.argmax()]!r}"
    big = np.abs(x) >= mathtable.ERF_TOP
    assert (got[big] == np.sign(x[big])).all()  # saturates to exactly +-1, infinities included
    zero = x == 0
    assert (got[zero] == 0).all() and (np.signbit(got[zero]) == np.signbit(x[zero])).all()


def test_kernels_inline_the_vector_variant() -> None:
    opt = jit.optimized_ir(module_ir(lower_func(unary("erf", DType.F32)).steps[0].kernel, "f"))
    kernel = opt[opt.index("define void @f("):]
    kernel = kernel[:kernel.index("\n}\n")]
    assert "call <16 x float> @__tcpr_erff_v" not in kernel  # inlined after vectorization
    if mathtable.strategy() == "avx512":
        assert "@llvm.x86.avx512.permvar.sf.512" in kernel
    assert re.search(r"call (fastcc )?float @__tcpr_erff\(", kernel)  # the remainder loop


def test_remainders_match_the_vector_loop() -> None:
    """Lengths that leave remainders: every element the same bits as in a long vector run."""
    cf = compile_func(unary("erf", DType.F32))
    x = _inputs()
    (full,) = cf(x)
    for n in (1, 3, 15, 17, 33, 100):
        (part,) = cf(x[40:40 + n].copy())
        assert (part.view(np.uint32) == full[40:40 + n].view(np.uint32)).all(), n
