"""``tcpr bench --suite jit``: what ``@tcp_rules.jit`` costs on the first call of a signature
(trace, optimize, compile) and on later calls, against the compiled program called directly.

For each workload (softmax, layernorm and an MLP layer written with tcp_rules.numpy, at a small
and a large size): the first call of a fresh jitted function, split into its steps, with how
many kernels were compiled and how many came from the disk cache (an empty one; the rule
library and the parser are loaded before, as in any process past its first call); then the
per-call time of the jitted function and of its CompiledFunc on the same arrays, in interleaved
batches (so that both see the same machine load; the fastest batch of each counts, since other
load only adds time), and the difference: the jit's own overhead per call (signature, cache
lookup, argument checks). That work is also timed alone, with the native call stubbed out
(``wrapper``): the difference of two noisy timings only estimates it. NumPy's time for the same
function is there for scale. A benchmark, not a test: numbers are reported, never asserted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

import tcp_rules.numpy as tnp
from tcp_rules.codegen import jit as kernel_jit
from tcp_rules.diagnostics import Source
from tcp_rules.elaborate import load_program
from tcp_rules.rules.library import load_standard_library
from tcp_rules.tracing.jitted import Jitted, jit


def softmax(x: Any) -> Any:
    e = tnp.exp(x - tnp.max(x, axis=-1, keepdims=True))
    return e / tnp.sum(e, axis=-1, keepdims=True)


def layernorm(x: Any, g: Any, b: Any) -> Any:
    mu = tnp.mean(x, axis=-1, keepdims=True)
    d = x - mu
    var = tnp.mean(d * d, axis=-1, keepdims=True)
    return d / tnp.sqrt(var + 1e-5) * g + b


def mlp(x: Any, w: Any, b: Any) -> Any:
    return tnp.maximum(x @ w + b, 0.0)


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable[..., Any]
    shapes: tuple[tuple[int, ...], ...]


def workloads() -> list[Workload]:
    """Each function at a size where the call's overhead shows and one where it does not."""
    out = []
    for size, (n, d) in (("small", (8, 64)), ("large", (256, 1024))):
        out.append(Workload(f"softmax-{size}", softmax, ((n, d),)))
        out.append(Workload(f"layernorm-{size}", layernorm, ((n, d), (d,), (d,))))
        out.append(Workload(f"mlp-{size}", mlp, ((n, d), (d, d // 2), (d // 2,))))
    return out


def _batch(fn: Callable[[], Any], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def _calls_for(fn: Callable[[], Any]) -> int:
    """Calls per batch: about 20 ms of them."""
    once = _batch(fn, 3)
    return max(3, min(20_000, int(0.02 / max(once, 1e-7))))


def measure(w: Workload, repeats: int, threads: int) -> dict[str, Any]:
    """One workload's row (module docstring)."""
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(np.float32) for s in w.shapes]
    f: Jitted = jit(w.fn, threads=threads)
    stats = kernel_jit.STATS
    compiled0, disk0 = stats.compiled, stats.disk_hits
    t0 = time.perf_counter()
    f(*args)
    first = time.perf_counter() - t0
    spec = f.specialization(*args)
    cf = spec.compiled
    call_jit: Callable[[], Any] = lambda: f(*args)  # noqa: E731
    call_cf: Callable[[], Any] = lambda: cf(*args)  # noqa: E731
    reference = _numpy(w.name)
    call_np: Callable[[], Any] = lambda: reference(*args)  # noqa: E731
    calls = _calls_for(call_cf)
    jit_s: list[float] = []
    cf_s: list[float] = []
    for r in range(repeats):  # interleaved, in turns: both see the same load
        for fn, times in ((call_jit, jit_s), (call_cf, cf_s))[::1 if r % 2 else -1]:
            times.append(_batch(fn, calls))
    wrapper = _wrapper_seconds(f, args, repeats)
    # NumPy afterwards: its BLAS threads keep spinning after a matmul, slowing what follows
    np_s = [_batch(call_np, calls) for _ in range(repeats)]
    # the fastest batch of each: the machine's other load only ever adds time
    later, direct = min(jit_s), min(cf_s)
    return {"workload": w.name, "shapes": [list(s) for s in w.shapes],
            "first_call_ms": round(first * 1e3, 1),
            "trace_ms": round(spec.seconds["trace"] * 1e3, 2),
            "optimize_ms": round(spec.seconds["optimize"] * 1e3, 1),
            "compile_ms": round(spec.seconds["compile"] * 1e3, 1),
            "kernels_compiled": stats.compiled - compiled0,
            "kernels_from_disk": stats.disk_hits - disk0,
            "later_call_us": round(later * 1e6, 2), "compiled_call_us": round(direct * 1e6, 2),
            "overhead_us": round((later - direct) * 1e6, 2),
            "wrapper_us": round(wrapper * 1e6, 2),
            "numpy_us": round(min(np_s) * 1e6, 2), "calls_per_batch": calls}


def _wrapper_seconds(f: Jitted, args: list[np.ndarray], repeats: int) -> float:
    """The jit's own work per call, measured alone: the call with the compiled program
    replaced by a stub that returns its results (the stub's call included, ~0.05 us); free of
    the kernels' run-time noise that the difference of two timings carries."""
    key = f._signature(args, {})
    spec = f._specs[key]
    results = spec.compiled(*args)
    f._specs[key] = dataclasses.replace(spec, compiled=cast(Any, lambda *a: results))
    try:
        call: Callable[[], Any] = lambda: f(*args)  # noqa: E731
        return min(_batch(call, 20_000) for _ in range(repeats))
    finally:
        f._specs[key] = spec


def _numpy(name: str) -> Callable[..., Any]:
    """The workload written with NumPy itself."""
    def softmax_np(x: np.ndarray) -> np.ndarray:
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

    def layernorm_np(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = np.mean(x, axis=-1, keepdims=True)
        d = x - mu
        return d / np.sqrt(np.mean(d * d, axis=-1, keepdims=True) + 1e-5) * g + b

    def mlp_np(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.maximum(x @ w + b, 0.0)

    table: dict[str, Callable[..., Any]] = {"softmax": softmax_np, "layernorm": layernorm_np,
                                            "mlp": mlp_np}
    return table[name.split("-")[0]]


def jit_suite(as_json: bool = False, repeats: int = 7, threads: int = 1) -> str:
    """The suite's table (or JSON): one row per workload."""
    # Once, before any timing, as every process past its first call has them: the rule
    # library and the program parser's tables.
    load_standard_library()
    load_program(Source("warm-up.tcp", "func f(x: f32[2]) -> f32[2] {\n  return x\n}\n"))
    # First calls compile every kernel: an empty kernel cache (a process whose kernels are on
    # disk already skips most of the compile column)
    saved = os.environ.get("TCPR_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="tcpr-bench-jit-") as empty:
        os.environ["TCPR_CACHE_DIR"] = empty
        try:
            rows = [measure(w, repeats, threads) for w in workloads()]
        finally:
            if saved is None:
                del os.environ["TCPR_CACHE_DIR"]
            else:
                os.environ["TCPR_CACHE_DIR"] = saved
    if as_json:
        return json.dumps(rows, indent=2)
    head = (f"{'workload':<16}{'first ms':>9}{'trace':>7}{'opt':>7}{'compile':>8}"
            f"{'kernels':>9}{'later us':>10}{'compiled us':>12}{'overhead us':>12}"
            f"{'wrapper us':>11}{'numpy us':>10}")
    out = [head]
    for r in rows:
        kernels = f"{r['kernels_compiled']}+{r['kernels_from_disk']}d"
        out.append(f"{r['workload']:<16}{r['first_call_ms']:>9.1f}{r['trace_ms']:>7.2f}"
                   f"{r['optimize_ms']:>7.0f}{r['compile_ms']:>8.1f}{kernels:>9}"
                   f"{r['later_call_us']:>10.2f}{r['compiled_call_us']:>12.2f}"
                   f"{r['overhead_us']:>12.2f}{r['wrapper_us']:>11.2f}{r['numpy_us']:>10.2f}")
    out.append(f"\nfirst: trace + optimize + compile of a fresh @jit function with an empty "
               f"kernel cache (ms; kernels: compiled + read from the disk cache); later, "
               f"compiled, numpy: per call, the fastest of {repeats} interleaved batches, "
               f"{threads} thread(s); overhead = later - compiled; wrapper: the jit's own "
               f"work per call, timed with the native call stubbed out")
    return "\n".join(out)
