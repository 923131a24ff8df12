"""The benchmark cases: programs (the .tcp files in benchmarks/programs), inputs and the
competing implementations (NumPy, and numexpr and Numba where installed).

Programs run as the pipeline runs them: optimized with the standard rule library (fusion rules
included, symbols sized as the benchmark's inputs), then compiled. The ``no-fusion`` engine is
the same program optimized without the rules that form kernels (rules/fusion.tcpr and the other
rules mentioning kernel or load), so every op is a kernel of its own.
"""

from __future__ import annotations

import importlib.util
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import scipy.special

from tcp_rules import build as tb
from tcp_rules.codegen import fused, jit
from tcp_rules.codegen.kernel import Kernel
from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import (
    CompiledFunc,
    compile_func,
    compile_kernel_func,
    kernel_symbols,
    module_ir,
    vectorized,
)
from tcp_rules.ir import Func
from tcp_rules.ops.elementwise import round_half_away, sigmoid
from tcp_rules.pipeline import load_module_file
from tcp_rules.types import DType

PROGRAM_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "programs"
PROGRAMS = ["fma_relu", "gelu", "bias_relu", "softmax", "layernorm", "sum", "colsum",
            "matmul_bias_relu", "transpose"]
UNARY = ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "atan",
         "erf", "floor", "ceil", "round", "round_even"]
UNARY_F64 = ["exp", "log", "tanh", "sigmoid", "sin", "cos", "atan", "erf"]  # codegen/mathf64.py
BINARY_F64 = ["pow", "atan2"]  # codegen/binmath.py
CASES = ["fma_relu", "gelu", "bias_relu", "softmax", "layernorm", "sum", "colsum", "matmul",
         "matmul_half", "transpose",
         *(f"unary_{op}" for op in UNARY), *(f"f64_{op}" for op in UNARY_F64 + BINARY_F64)]
BIG = 1 << 24
ROWS, COLS = 4096, 1024


@dataclass
class Variant:
    """One row of the report: engines to time on the same inputs."""

    label: str
    engines: dict[str, Callable[[], object]] = field(default_factory=dict)
    bytes: float = 0.0
    flops: float = 0.0
    stream: str = "copy"
    interleave: bool = True  # False when an engine leaves spinning threads (OpenBLAS)


def program(name: str) -> Func:
    """The func of benchmark program ``name`` (benchmarks/programs/NAME.tcp)."""
    path = PROGRAM_DIR / f"{name}.tcp"
    if not path.exists():
        raise FileNotFoundError(f"benchmark program {path} is missing (run from a source tree)")
    return load_module_file(path).func()


# The symbol sizes of each program's benchmark inputs (the cost model sizes dims with them).
SIZES: dict[str, dict[str, int]] = {
    "fma_relu": {"N": BIG}, "gelu": {"N": BIG}, "sum": {"N": BIG}, "colsum": {"N": ROWS, "D": COLS},
    "bias_relu": {"N": ROWS, "D": COLS}, "softmax": {"N": ROWS, "D": COLS},
    "layernorm": {"N": ROWS}, "matmul_bias_relu": {"M": 1024, "K": 1024, "N": 1024},
    "transpose": {"N": 4096, "M": 4096}}


@cache
def optimized(name: str, fusion: bool = True) -> Func:
    """A benchmark program optimized with the standard library, with or without fusion."""
    from tcp_rules.extract.cost import RooflineCost, with_sizes
    from tcp_rules.optimize import OptOptions, optimize
    from tcp_rules.rules.library import load_standard_library
    from tcp_rules.rules.sorting import forms_kernels

    rules = [r for r in load_standard_library().rules if fusion or not forms_kernels(r)]
    cost = with_sizes(RooflineCost(), SIZES.get(name, {}))
    return optimize(program(name), rules, OptOptions(cost=cost)).func


def compile_program(name: str, threads: int, fusion: bool = True) -> CompiledFunc:
    """Compile a benchmark program as optimized (from the caches when its kernels were
    compiled before)."""
    return compile_func(optimized(name, fusion), threads=threads)


def compile_kernel_objects(name: str, repeats: int = 3) -> list[float]:
    """Compile each kernel of a program from scratch (IR, O3, codegen) ``repeats`` times and
    store it in the disk cache; returns each kernel's median seconds (the machine is shared)."""
    out = []
    for st in lower_func(optimized(name)).steps:
        key, syms = kernel_symbols(st.kernel)
        secs = []
        for _ in range(repeats):
            t0 = _now()
            obj = jit.optimize_to_object(module_ir(st.kernel, syms[0]),
                                         vectorized(st.kernel))
            secs.append(_now() - t0)
        out.append(statistics.median(secs))
        jit.write_entry(key, obj)
    return out


def _now() -> float:
    import time

    return time.perf_counter()


def compiled(name: str, threads: int) -> CompiledFunc:
    """Small helper funcs for the bandwidth measurement: copy and a*b+c, each one kernel."""
    f = tb.FuncBuilder(name)
    if name == "copy":
        f.ret(f.param("x", "f32[N]"))
    else:
        a, b, c = (tb.apply_op("load", f.param(n, "f32[N]")) for n in "abc")
        f.ret(tb.apply_op("kernel", tb.add(tb.mul(a, b), c)))
    cf = compile_func(f.finish(), threads=threads)
    assert len(cf.steps) == 1, f"{name}: {len(cf.steps)} kernels"
    return cf


def available_engines() -> list[str]:
    """The engines this process can time (numexpr and Numba only when installed)."""
    return ["tcp-rules", "numpy"] + [m for m in ("numexpr", "numba")
                                     if importlib.util.find_spec(m) is not None]


def set_library_threads(n: int) -> None:
    """Give numexpr ``n`` threads (Numba's loops are single-threaded @njit)."""
    if importlib.util.find_spec("numexpr") is not None:
        import numexpr

        numexpr.set_num_threads(n)


def _ne() -> Any:
    if importlib.util.find_spec("numexpr") is None:
        return None
    import numexpr

    return numexpr


@cache
def _nb() -> dict[str, Callable[..., Any]]:
    """Numba versions of the cases (compiled on first call), or none without Numba."""
    if importlib.util.find_spec("numba") is None:
        return {}
    from tcp_rules.codegen import numba_cases

    return numba_cases.kernels()


def _rand(shape: tuple[int, ...], seed: int, bounds: tuple[float, float] | None = None
          ) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) if bounds is None else rng.uniform(*bounds, shape)
    return x.astype(np.float32)


def _add(v: Variant, engine: str, lib: object, fn: Callable[[], object]) -> None:
    """Add an engine when its library is installed."""
    if lib:
        v.engines[engine] = fn


def _no_fusion(v: Variant, name: str, threads: int, *args: Any, **kw: Any) -> None:
    """Add the engine running ``name`` optimized without the kernel-forming rules."""
    v.engines["no-fusion"] = partial(compile_program(name, threads, fusion=False), *args, **kw)


def variants(name: str, threads: int) -> Iterator[Variant]:
    """The rows of case ``name``."""
    ne, nb = _ne(), _nb()
    if name.startswith(("unary_", "f64_")):
        kind, op = name.split("_", 1)
        yield (_binary_f64(op, threads) if op in BINARY_F64
               else _unary(op, threads, ne, "f64" if kind == "f64" else "f32"))
        return
    if name == "fma_relu":
        a, b, c = (_rand((BIG,), i) for i in range(3))
        out = np.empty_like(a)
        cf = compile_program("fma_relu", threads)
        hand = compile_kernel_func(cf.func, fused.fma_relu_kernel(), threads=threads)
        for label, f in (("relu(a*b+c) 16M (.tcp)", cf), ("relu(a*b+c) 16M (hand-fused)", hand)):
            v = Variant(label, bytes=16 * BIG, stream="triad")
            v.engines["tcp-rules"] = partial(f, a, b, c, out=(out,))
            _no_fusion(v, "fma_relu", threads, a, b, c, out=(out,))
            v.engines["numpy"] = lambda: np.maximum(a * b + c, 0)
            _add(v, "numexpr", ne, lambda: ne.evaluate("where(a*b+c > 0, a*b+c, 0)",
                                                       local_dict={"a": a, "b": b, "c": c}))
            _add(v, "numba", nb, lambda: nb["fma_relu"](a, b, c, out))
            yield v
    elif name == "gelu":
        x = _rand((BIG,), 0)
        out = np.empty_like(x)
        cf = compile_program("gelu", threads)
        v = Variant("gelu (tanh) 16M", bytes=8 * BIG)
        v.engines["tcp-rules"] = lambda: cf(x, out=(out,))
        _no_fusion(v, "gelu", threads, x, out=(out,))
        v.engines["numpy"] = lambda: x * 0.5 * (
            np.tanh((x + x * x * x * 0.044715) * 0.7978845608028654) + 1.0)
        _add(v, "numexpr", ne, lambda: ne.evaluate(
            "x*0.5*(tanh((x + x*x*x*0.044715)*0.7978845608028654) + 1)", local_dict={"x": x}))
        _add(v, "numba", nb, lambda: nb["gelu"](x, out))
        yield v
    elif name == "bias_relu":
        x, bias = _rand((ROWS, COLS), 0), _rand((COLS,), 1)
        out = np.empty_like(x)
        cf = compile_program("bias_relu", threads)
        v = Variant("bias+relu 4096x1024", bytes=8 * ROWS * COLS)
        v.engines["tcp-rules"] = lambda: cf(x, bias, out=(out,))
        _no_fusion(v, "bias_relu", threads, x, bias, out=(out,))
        v.engines["numpy"] = lambda: np.maximum(x + bias, 0)
        _add(v, "numexpr", ne, lambda: ne.evaluate("where(x+bias > 0, x+bias, 0)",
                                                       local_dict={"x": x, "bias": bias}))
        _add(v, "numba", nb, lambda: nb["bias_relu"](x, bias, out))
        yield v
    elif name in ("softmax", "layernorm"):
        yield from _rowwise(name, threads, nb)
    elif name == "sum":
        x = _rand((BIG,), 0)
        cf = compile_program("sum", threads)
        v = Variant("sum 16M", bytes=4 * BIG)
        v.engines["tcp-rules"] = lambda: cf(x)
        v.engines["numpy"] = lambda: np.sum(x)
        _add(v, "numexpr", ne, lambda: ne.evaluate("sum(x)", local_dict={"x": x}))
        _add(v, "numba", nb, lambda: nb["sum"](x))
        yield v
    elif name == "colsum":
        x = _rand((ROWS, COLS), 0)
        out = np.empty(COLS, np.float32)
        cf = compile_program("colsum", threads)
        v = Variant("column sums 4096x1024", bytes=4 * ROWS * COLS)
        v.engines["tcp-rules"] = lambda: cf(x, out=(out,))
        v.engines["numpy"] = lambda: np.sum(x, axis=0)
        _add(v, "numexpr", ne, lambda: ne.evaluate("sum(x, axis=0)", local_dict={"x": x}))
        _add(v, "numba", nb, lambda: nb["colsum"](x, out))
        yield v
    elif name == "matmul":
        n = 1024
        a, b, bias = _rand((n, n), 0), _rand((n, n), 1), _rand((n,), 2)
        out = np.empty((n, n), np.float32)
        cf = compile_program("matmul_bias_relu", threads)
        # One BLAS thread leaves no worker spinning: tcp-rules' matmul took as long right after
        # NumPy's as alone (20.9 and 20.9 ms), so it takes turns like the others.
        v = Variant("matmul 1024^3 + bias + relu", flops=2.0 * n ** 3, interleave=threads == 1)
        v.engines["tcp-rules"] = lambda: cf(a, b, bias, out=(out,))
        _no_fusion(v, "matmul_bias_relu", threads, a, b, bias, out=(out,))
        v.engines["numpy"] = lambda: np.maximum(a @ b + bias, 0)
        yield v
    elif name == "matmul_half":
        yield from (_matmul_half(dt, threads) for dt in (DType.F16, DType.BF16))
    elif name == "transpose":
        x = _rand((4096, 4096), 0)
        out = np.empty_like(x)
        cf = compile_program("transpose", threads)
        v = Variant("transpose 4096x4096", bytes=8 * x.size)
        v.engines["tcp-rules"] = lambda: cf(x, out=(out,))
        v.engines["numpy"] = lambda: np.ascontiguousarray(x.T)
        _add(v, "numba", nb, lambda: nb["transpose"](x, out))
        yield v


def _rowwise(name: str, threads: int, nb: dict[str, Callable[..., Any]]) -> Iterator[Variant]:
    x = _rand((ROWS, COLS), 0)
    g, b = _rand((COLS,), 1), _rand((COLS,), 2)
    out = np.empty_like(x)
    cf = compile_program(name, threads)
    kernel: Kernel = fused.softmax_kernel() if name == "softmax" else fused.layernorm_kernel(COLS)
    hand = compile_kernel_func(cf.func, kernel, threads=threads)
    args = (x,) if name == "softmax" else (x, g, b)

    def np_softmax() -> np.ndarray:
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def np_layernorm() -> np.ndarray:
        xc = x - x.mean(axis=1, keepdims=True)
        return xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5) * g + b

    for label, f in ((f"{name} 4096x1024 (.tcp)", cf), (f"{name} 4096x1024 (hand-fused)", hand)):
        v = Variant(label, bytes=8 * x.size)
        v.engines["tcp-rules"] = partial(f, *args, out=(out,))
        if f is cf:
            _no_fusion(v, name, threads, *args, out=(out,))
        v.engines["numpy"] = np_softmax if name == "softmax" else np_layernorm
        _add(v, "numba", nb, lambda: nb[name](*args, out))
        yield v


_NUMPY_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "neg": np.negative, "abs": np.abs, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: np.float32(1) / np.sqrt(x), "tanh": np.tanh, "sigmoid": sigmoid,
    "sin": np.sin, "cos": np.cos, "atan": np.arctan, "erf": scipy.special.erf,
    "floor": np.floor, "ceil": np.ceil, "round": round_half_away, "round_even": np.rint}
_NUMEXPR_UNARY = {"neg": "-x", "abs": "abs(x)", "exp": "exp(x)", "log": "log(x)",
                  "sqrt": "sqrt(x)", "rsqrt": "1/sqrt(x)", "tanh": "tanh(x)",
                  "sigmoid": "1/(1+exp(-x))", "sin": "sin(x)", "cos": "cos(x)",
                  "atan": "arctan(x)"}


def _unary(op: str, threads: int, ne: Any, dtype: str = "f32") -> Variant:
    """``op`` over 16M f32 (or 8M f64: as many bytes)."""
    positive = op in ("log", "sqrt", "rsqrt")
    x = _rand((BIG,), 0, (0.1, 10.0)) if positive else _rand((BIG,), 0) * np.float32(3)
    if dtype == "f64":
        x = x[: BIG // 2].astype(np.float64)
    out = np.empty_like(x)
    f = tb.FuncBuilder(op)
    f.ret(tb.apply_op(op, f.param("x", f"{dtype}[N]")))
    cf = compile_func(f.finish(), threads=threads)
    v = Variant(f"{op} 16M" if dtype == "f32" else f"{op} 8M f64", bytes=8 * BIG)
    v.engines["tcp-rules"] = lambda: cf(x, out=(out,))
    v.engines["numpy"] = lambda: _NUMPY_UNARY[op](x)
    if ne is not None and op in _NUMEXPR_UNARY:
        v.engines["numexpr"] = lambda: ne.evaluate(_NUMEXPR_UNARY[op], local_dict={"x": x})
    return v


def _matmul_half(dt: DType, threads: int) -> Variant:
    """A 1024^3 product of ``dt`` (f16 or bf16), against NumPy's way: converted to f32 for BLAS
    and back (NumPy's own f16 matmul is a plain loop, some 100 times slower)."""
    n, ty = 1024, dt.np_dtype
    a, b = _rand((n, n), 0).astype(ty), _rand((n, n), 1).astype(ty)
    out = np.empty((n, n), ty)
    f = tb.FuncBuilder("mm")
    f.ret(tb.matmul(f.param("a", f"{dt}[M, K]"), f.param("b", f"{dt}[K, N]")))
    cf = compile_func(f.finish(), threads=threads)
    v = Variant(f"matmul 1024^3 {dt}", flops=2.0 * n ** 3, interleave=threads == 1)
    v.engines["tcp-rules"] = lambda: cf(a, b, out=(out,))
    v.engines["numpy"] = lambda: (a.astype(np.float32) @ b.astype(np.float32)).astype(ty)
    return v


def _binary_f64(op: str, threads: int) -> Variant:
    """``op`` over two arrays of 8M f64: x in [0.1, 5], y in [-5, 5]."""
    x = _rand((BIG // 2,), 0, (0.1, 5.0)).astype(np.float64)
    y = _rand((BIG // 2,), 1, (-5.0, 5.0)).astype(np.float64)
    out = np.empty_like(x)
    f = tb.FuncBuilder(op)
    f.ret(tb.apply_op(op, f.param("x", "f64[N]"), f.param("y", "f64[N]")))
    cf = compile_func(f.finish(), threads=threads)
    v = Variant(f"{op} 8M f64", bytes=24 * (BIG // 2), stream="triad")
    v.engines["tcp-rules"] = lambda: cf(x, y, out=(out,))
    v.engines["numpy"] = lambda: (np.power if op == "pow" else np.arctan2)(x, y)
    return v
