"""Transposed reads through registers (codegen/transpose.py): which loads qualify, the same
values as NumPy's transposes for every dtype, edges and thread splits, and no gathers."""

from __future__ import annotations

import numpy as np
import pytest
from codegen.support import assert_same, tcpr_cache  # noqa: F401

from tcp_rules.codegen import compile_func, jit
from tcp_rules.codegen.kernel import Kernel
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import kernel_symbols, module_ir
from tcp_rules.codegen.transpose import W, transposed_loads
from tcp_rules.grammar.parser import source_from_bytes
from tcp_rules.ir import Func
from tcp_rules.pipeline import load_module
from tcp_rules.types import DType


def program(text: str) -> Func:
    return load_module(source_from_bytes("transpose.tcp", text.encode())).funcs[0]


def transpose(dtype: str, shape: str, perm: str, out: str) -> Func:
    return program(f"func t(x: {dtype}{shape}) -> {dtype}{out} {{\n"
                   f"  return transpose(x, perm={perm})\n}}\n")


def kernel_of(func: Func) -> Kernel:
    (st,) = lower_func(func).steps
    assert isinstance(st.kernel, Kernel)
    return st.kernel


def test_which_loads_go_through_registers() -> None:
    assert len(transposed_loads(kernel_of(transpose("f32", "[R, C]", "[1, 0]", "[C, R]")))) == 1
    assert len(transposed_loads(kernel_of(
        transpose("f32", "[A, B, C]", "[0, 2, 1]", "[A, C, B]")))) == 1
    # the output's last axis is the input's first: its tiles' rows are not the input's rows
    assert transposed_loads(kernel_of(
        transpose("f32", "[A, B, C]", "[2, 1, 0]", "[C, B, A]"))) == []
    added = program("func t(x: f32[R, C], y: f32[C, R]) -> f32[C, R] {\n"
                    "  return add(transpose(x, perm=[1, 0]), y)\n}\n")
    (ld,) = transposed_loads(kernel_of(added))
    assert ld.buf == 0  # x, not y


def _values(dtype: DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype is DType.I1:
        return rng.random(shape) < 0.5
    if dtype.is_float:
        return (rng.standard_normal(shape) * 100).astype(dtype.np_dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype.np_dtype)


@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.I32, DType.I64, DType.F16,
                                   DType.BF16, DType.I1])
@pytest.mark.parametrize("shape", [(W, W), (37, 29), (300, 256), (1000, 3), (3, 1000)])
@pytest.mark.parametrize("threads", [1, 3])
def test_transposes_match_numpy(dtype: DType, shape: tuple[int, int], threads: int) -> None:
    """Full tiles, partial ones at both edges, thread chunks that cut through tiles, and bands
    too narrow or too short for a full tile (run in wide blocks instead)."""
    func = transpose(dtype.value, "[R, C]", "[1, 0]", "[C, R]")
    x = _values(dtype, shape)
    (got,) = compile_func(func, threads=threads)(x)
    assert_same(got, np.ascontiguousarray(x.T), f"{dtype.value} {shape}")


@pytest.mark.parametrize("threads", [1, 2])
def test_a_batch_of_transposes_and_a_body(threads: int) -> None:
    func = program("func t(x: f32[A, B, C], y: f32[A, C, B]) -> f32[A, C, B] {\n"
                   "  return mul(add(transpose(x, perm=[0, 2, 1]), y), 3.0)\n}\n")
    x, y = _values(DType.F32, (5, 131, 97), 1), _values(DType.F32, (5, 97, 131), 2)
    (got,) = compile_func(func, threads=threads)(x, y)
    want = (np.transpose(x, (0, 2, 1)) + y) * np.float32(3.0)  # one rounding each, as here
    assert_same(got, want.astype(np.float32), "(x^T + y) * 3")


def test_offset_reads() -> None:
    """A transposed read of a slice: its indices carry constants."""
    func = program("func t(x: f32[70, 90]) -> f32[80, 60] {\n"
                   "  return transpose(slice(x, start=[7, 5], size=[60, 80], stride=[1, 1]),"
                   " perm=[1, 0])\n}\n")
    assert len(transposed_loads(kernel_of(func))) == 1
    x = _values(DType.F32, (70, 90), 4)
    (got,) = compile_func(func, threads=1)(x)
    assert_same(got, np.ascontiguousarray(x[7:67, 5:85].T), "slice, then transposed")


X86_SHUFFLES = {"vunpcklps", "vunpckhps", "vpermt2ps", "vpermi2ps", "vshufps", "vpermps"}


@pytest.mark.parametrize(("target", "shuffles"), [
    ("x86-64-v3", X86_SHUFFLES), ("x86-64-v4", X86_SHUFFLES),
    ("aarch64", {"zip1", "zip2", "uzp1", "uzp2", "trn1", "trn2"})])
def test_full_tiles_shuffle_whole_rows(target: str, shuffles: set[str]) -> None:
    """The loop vectorizer read a transposed input with gathers (x86's vgatherqps), one
    element of each of 8 or 16 rows a vector; full tiles now read whole rows and shuffle them."""
    k = kernel_of(transpose("f32", "[R, C]", "[1, 0]", "[C, R]"))
    _, syms = kernel_symbols(k)
    asm = jit.compile_for(module_ir(k, syms[0]), target, assembly=True)
    assert isinstance(asm, str)
    ops = {ln.split()[0] for ln in asm.splitlines()
           if ln.startswith("\t") and not ln.startswith("\t.")}
    assert not {op for op in ops if "gather" in op}
    assert ops & shuffles
