"""Reductions down the columns (codegen/columns.py): which reductions qualify, that they match
the reference (NaN, signed zeros and integer wrap-around included), that a column's result does
not depend on the column blocks or the threads, and that the column loop is vectorized."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from codegen.support import assert_same, edge_values, tcpr_cache  # noqa: F401
from numerics import assert_close_to_reference

from tcp_rules.codegen import columns, compile_func, compile_kernel_func, jit
from tcp_rules.codegen.kernel import Affine, Buffer, Const, Kernel, Load, Op, Reduce
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import kernel_symbols, module_ir
from tcp_rules.codegen.scopes import compute_scopes
from tcp_rules.grammar.parser import source_from_bytes
from tcp_rules.ir import Func
from tcp_rules.pipeline import load_module
from tcp_rules.types import DType

F32 = DType.F32


def program(text: str) -> Func:
    return load_module(source_from_bytes("columns.tcp", text.encode())).funcs[0]


def reduction(kind: str, dtype: str, axes: str = "[0]", shape: str = "[R, C]",
              out: str = "[C]") -> Func:
    """``reduce_<kind>`` of x: ``<dtype><shape>`` over ``axes``."""
    return program(f"func colred(x: {dtype}{shape}) -> {dtype}{out} {{\n"
                   f"  return reduce_{kind}(x, axes={axes}, keepdims=false)\n}}\n")


def found(func: Func) -> list[list[str]]:
    """Per kernel of ``func``, the kinds of its column reductions."""
    out = []
    for st in lower_func(func).steps:
        k = st.kernel
        assert isinstance(k, Kernel)
        sc = compute_scopes(k.value, [f"d{i}" for i in range(len(k.domain))])
        out.append([r.kind for r in columns.find_columns(k, sc)])
    return out


def test_which_reductions_run_down_columns() -> None:
    assert found(reduction("sum", "f32")) == [["sum"]]
    assert found(reduction("max", "f32", "[0, 1]", "[A, B, C]")) == [["max"]]
    assert found(reduction("sum", "f32", "[1]", "[A, B, C]", "[A, C]")) == [["sum"]]
    # along the rows: the reduced axis is the contiguous one
    assert found(reduction("sum", "f32", "[1]", "[R, C]", "[R]")) == [[]]
    assert found(reduction("sum", "f32", "[0, 2]", "[A, B, C]", "[B]")) == [[]]


def _inputs(dtype: DType, shape: tuple[int, ...], kind: str, seed: int = 0) -> np.ndarray:
    """Edge values scattered among ordinary ones (for products: values near 1, so that the
    products stay finite and are not all zero)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if kind == "prod" and dtype.is_float:
        x = (1 + 0.01 * rng.standard_normal(n)).astype(dtype.np_dtype)
    else:
        x = edge_values(dtype, n, seed)
        rng.shuffle(x)
        if dtype.is_float and kind == "sum":
            x[np.abs(x.astype(np.float64)) > 1e20] = 1.0  # keep most columns finite
    return x.reshape(shape)


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.I32, DType.F16])
@pytest.mark.parametrize("block", [columns.COLUMN_BLOCK, 8])
def test_column_reductions_match_the_reference(kind: str, dtype: DType, block: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """1100 rows (two f32 sum blocks of 512 and a part), 37 columns (no whole vector count);
    blocks of 8 columns: several blocks and a part one."""
    monkeypatch.setattr(columns, "COLUMN_BLOCK", block)
    func = reduction(kind, dtype.value)
    x = _inputs(dtype, (1100, 37), kind)
    got = compile_func(func, threads=1)(x)
    assert_close_to_reference(got, func, [x], f"reduce_{kind} {dtype.value}")
    if kind in ("max", "min") or not dtype.is_float:  # exact: the same bits as NumPy's
        want = getattr(np, "amax" if kind == "max" else "amin" if kind == "min" else kind)(
            x, axis=0)
        assert_same(got[0], want.astype(dtype.np_dtype), f"reduce_{kind} {dtype.value}")


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_a_few_columns_keep_the_reduction_inside(kind: str) -> None:
    """Below MIN_COLUMNS columns the reduction stays in the column loop: decided when compiling
    for a static count, at run time for a symbolic one (both branches are compiled)."""
    narrow = reduction(kind, "f32", shape=f"[R, {columns.MIN_COLUMNS - 1}]",
                       out=f"[{columns.MIN_COLUMNS - 1}]")
    assert found(narrow) == [[]]
    func = reduction(kind, "f32")
    assert found(func) == [[kind]]
    for cols in (1, 3, columns.MIN_COLUMNS - 1, columns.MIN_COLUMNS, 40):
        x = _inputs(DType.F32, (700, cols), kind, seed=cols)
        assert_close_to_reference(compile_func(func, threads=2)(x), func, [x], f"{cols} columns")


@pytest.mark.parametrize(("axes", "shape", "out"), [
    ("[0, 1]", (9, 130, 21), "[C]"),  # two reduced axes outside the column loop
    ("[1]", (5, 700, 19), "[A, C]"),  # a column loop inside a loop over A
])
def test_column_reductions_of_rank_three(axes: str, shape: tuple[int, ...], out: str) -> None:
    func = reduction("sum", "f32", axes, "[A, B, C]", out)
    x = _inputs(DType.F32, shape, "sum", seed=3)
    assert_close_to_reference(compile_func(func, threads=2)(x), func, [x], axes)


def variance_kernel(dt: DType = F32) -> Kernel:
    """var over axis 0 of x: ``dt``[R, C] in one kernel: its body uses the mean, itself a column
    reduction, which the variance's accumulation reads from its accumulators."""
    d0 = Affine.var("d0")
    rows = Const(dt, 1100.0)
    mean = Op(dt, "div", (Reduce(dt, "sum", (("r0", "R"),), Load(dt, 0, (Affine.var("r0"),
                                                                        d0))), rows))
    dev = Op(dt, "sub", (Load(dt, 0, (Affine.var("r1"), d0)), mean))
    var = Op(dt, "div", (Reduce(dt, "sum", (("r1", "R"),), Op(dt, "mul", (dev, dev))), rows))
    return Kernel("var0", (Buffer("x", dt, ("R", "C")), Buffer("out", dt, ("C",))),
                  ("R", "C"), ("C",), var)


def variance_program(dt: DType = F32) -> Func:
    """The func that :func:`variance_kernel` implements."""
    return program(f"""func var0(x: {dt.value}[R, C]) -> {dt.value}[C] {{
  m = div(reduce_sum(x, axes=[0], keepdims=false), 1100.0)
  d = sub(x, broadcast(m, shape=[R, C], dims=[1]))
  return div(reduce_sum(mul(d, d), axes=[0], keepdims=false), 1100.0)
}}
""")


VARIANCE = variance_program()


def test_a_column_reduction_using_another() -> None:
    k = variance_kernel()
    sc = compute_scopes(k.value, ["d0"])
    assert [r.vars[0][0] for r in columns.find_columns(k, sc)] == ["r0", "r1"]
    x = (np.random.default_rng(5).standard_normal((1100, 300)) * 3 + 10).astype(np.float32)
    got = compile_kernel_func(VARIANCE, k, threads=2)(x)
    assert_close_to_reference(got, VARIANCE, [x], "variance over axis 0")


def test_columns_do_not_depend_on_blocks_or_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each column combines its terms in one order whatever the block of columns and the
    thread that owns it: the same bits from 1, 2 and 3 threads and blocks of 4096 or 8 (the
    threads' chunks then start at multiples of 8 columns: chunk_columns)."""
    func = reduction("sum", "f32")
    x = (np.random.default_rng(11).standard_normal((3000, 203)) * 100).astype(np.float32)
    want = compile_func(func, threads=1)(x)[0]
    for block in (columns.COLUMN_BLOCK, 8):
        monkeypatch.setattr(columns, "COLUMN_BLOCK", block)
        for threads in (1, 2, 3):
            assert_same(compile_func(func, threads=threads)(x)[0], want,
                        f"blocks of {block}, {threads} threads")
    var = compile_kernel_func(VARIANCE, variance_kernel(), threads=1)(x)[0]
    assert_same(compile_kernel_func(VARIANCE, variance_kernel(), threads=3)(x)[0], var,
                "variance, 3 threads")


def test_threads_split_whole_column_blocks() -> None:
    k_cols = lower_func(reduction("sum", "f32")).steps[0].kernel
    k_rows = lower_func(reduction("sum", "f32", "[1]", "[R, C]", "[R]")).steps[0].kernel
    k_inner = lower_func(reduction("sum", "f32", "[1]", "[A, B, C]", "[A, C]")).steps[0].kernel
    assert isinstance(k_cols, Kernel) and isinstance(k_rows, Kernel)
    assert isinstance(k_inner, Kernel)
    assert columns.chunk_columns(k_cols) == columns.COLUMN_BLOCK
    assert columns.chunk_columns(k_rows) == 1
    assert columns.chunk_columns(k_inner) == 1  # the threads split A, not the columns


def test_each_worker_gets_scratch_for_its_accumulators() -> None:
    """Per column reduction, COLUMN_BLOCK accumulators and block partials, each array on a
    cache line: an f32 sum keeps an f64 sum and an f32 partial a column, an f64 sum two f64s, a
    max one value. A kernel without column reductions takes no scratch and no argument for it."""
    block = columns.COLUMN_BLOCK

    def scratch(func: Func) -> int:
        (st,) = lower_func(func).steps
        assert isinstance(st.kernel, Kernel)
        return columns.column_scratch(st.kernel)
    assert scratch(reduction("sum", "f32")) == block * (8 + 4)
    assert scratch(reduction("sum", "f64")) == block * (8 + 8)
    assert scratch(reduction("max", "f32")) == block * 4
    assert scratch(reduction("sum", "f32", "[1]", "[R, C]", "[R]")) == 0
    assert columns.column_scratch(variance_kernel(DType.F64)) == 2 * block * 16
    for k, pointers in [(variance_kernel(), 3), (lower_func(reduction(
            "sum", "f32", "[1]", "[R, C]", "[R]")).steps[0].kernel, 2)]:
        text = module_ir(k, kernel_symbols(k)[1][0])
        # the buffers, then the scratch where there is one, then sizes, lo and hi
        assert text.split("define void")[1].split(")")[0].count("ptr noalias") == pointers + 1


# A thread with musl's default stack (128 KB) runs a variance over axis 0 in f64: two column
# reductions, whose accumulators took 128 KB of the stack before they moved to the scratch.
SMALL_STACK = """
import sys, threading
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_codegen_columns import variance_kernel, variance_program
from tcp_rules.codegen import compile_kernel_func
from tcp_rules.types import DType
f = compile_kernel_func(variance_program(DType.F64), variance_kernel(DType.F64), threads=1)
x = np.random.default_rng(3).standard_normal((1100, 300)) * 3 + 10
want = f(x)[0]
got = []
threading.stack_size(128 * 1024)
t = threading.Thread(target=lambda: got.append(f(x)[0]))
t.start()
t.join()
print("same" if np.array_equal(got[0], want) else "different")
"""


def test_column_accumulators_need_no_stack(tmp_path: Path) -> None:
    """The kernel's frame holds no accumulator arrays (the optimized IR has no array alloca),
    and a thread with a 128 KB stack computes the variance's bits; run in a child process,
    where the old code's stack overflow killed it (SIGSEGV) instead of failing a test."""
    k = variance_kernel(DType.F64)
    assert "alloca [" not in jit.optimized_ir(module_ir(k, kernel_symbols(k)[1][0]))
    env = {**os.environ, "TCPR_CACHE_DIR": str(tmp_path)}
    run = subprocess.run([sys.executable, "-c", SMALL_STACK, str(Path(__file__).parent)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, f"exit status {run.returncode}: {run.stderr[-2000:]}"
    assert run.stdout.strip() == "same"


@pytest.mark.parametrize(("target", "width"), [("x86-64-v3", 8), ("x86-64-v4", 16)])
@pytest.mark.parametrize("kind", ["sum", "max"])
def test_the_column_loop_reads_whole_vectors(target: str, width: int, kind: str) -> None:
    """The terms come from full-width vector loads along a row. Emitted inside the column loop,
    the reduction read down a column, one scalar at a time (40x slower than NumPy on
    4096x1024): over 64 known columns, not one vector load of x."""
    with jit.targeting(target):
        (st,) = lower_func(reduction(kind, "f32", shape="[R, 64]", out="[64]")).steps
        _, syms = kernel_symbols(st.kernel)
        ir = jit.optimized_ir(module_ir(st.kernel, syms[0]))
    assert f"load <{width} x float>" in ir


@pytest.mark.parametrize(("m", "n", "batch"), [(1, 300, ()), (300, 1, ()), (1, 70, (4,)),
                                               (33, 1, (3,))])
@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.I32])
def test_vector_products_run_as_loops(m: int, n: int, batch: tuple[int, ...],
                                      dtype: DType) -> None:
    """A product with one row of A or one column of B is a sum over k in a loop kernel, not the
    microkernel (lower._vector_product), with the bias and the relu fused after it as the
    optimizer writes them. A row times B reads B down its columns."""
    b_ = "".join(f"{d}, " for d in batch)
    dt = dtype.value
    func = program(f"func vp(a: {dt}[{b_}{m}, 515], w: {dt}[{b_}515, {n}], c: {dt}[{n}]) -> "
                   f"{dt}[{b_}{m}, {n}] {{\n"
                   f"  return kernel(max(add(load_matmul(a, w), broadcast(load(c), "
                   f"shape=[{b_}{m}, {n}], dims=[{len(batch) + 1}])), 0))\n}}\n")
    (st,) = lower_func(func).steps
    assert isinstance(st.kernel, Kernel)
    sc = compute_scopes(st.kernel.value, [f"d{i}" for i in range(len(st.kernel.domain))])
    assert len(columns.find_columns(st.kernel, sc)) == (m == 1)
    rng = np.random.default_rng(m * n)
    if dtype.is_float:
        a, w, c = (rng.standard_normal(s).astype(dtype.np_dtype)
                   for s in ((*batch, m, 515), (*batch, 515, n), (n,)))
    else:
        a, w, c = (rng.integers(-2**20, 2**20, s).astype(dtype.np_dtype)
                   for s in ((*batch, m, 515), (*batch, 515, n), (n,)))
    got = compile_func(func, threads=2)(a, w, c)
    assert_close_to_reference(got, func, [a, w, c], f"{m}x{n} {dt}")
