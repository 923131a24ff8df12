"""``tcpr bench --suite jit``: what ``@tcp_rules.jit`` costs on the first call of a signature
(trace, optimize, compile) and on later calls, against the compiled program called directly.

For each workload (softmax, layernorm and an MLP layer written with tcp_rules.numpy, at a small
and a large size): the first call of a fresh jitted function, split into its steps, with how
many kernels were compiled and how many came from the disk cache; then the per-call time
of the jitted function and of its CompiledFunc on the same arrays, in interleaved batches (so
that both see the same machine load; the fastest batch of each counts, since other load only
adds time), and the difference: the jit's own overhead per call
(signature, cache lookup, argument checks). NumPy's time for the same function is there for
scale. A benchmark, not a test: numbers are reported, never asserted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tcp_rules.numpy as tnp
from tcp_rules.codegen import jit as kernel_jit
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
    jit_s, cf_s, np_s = [], [], []
    for _ in range(repeats):  # interleaved: both see the same load
        jit_s.append(_batch(call_jit, calls))
        cf_s.append(_batch(call_cf, calls))
        np_s.append(_batch(call_np, calls))
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
            "numpy_us": round(min(np_s) * 1e6, 2), "calls_per_batch": calls}


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
    load_standard_library()  # once, before any timing: every first call then shares it
    rows = [measure(w, repeats, threads) for w in workloads()]
    if as_json:
        return json.dumps(rows, indent=2)
    head = (f"{'workload':<16}{'first ms':>9}{'trace':>7}{'opt':>7}{'compile':>8}"
            f"{'kernels':>9}{'later us':>10}{'compiled us':>12}{'overhead us':>12}"
            f"{'numpy us':>10}")
    out = [head]
    for r in rows:
        kernels = f"{r['kernels_compiled']}+{r['kernels_from_disk']}d"
        out.append(f"{r['workload']:<16}{r['first_call_ms']:>9.1f}{r['trace_ms']:>7.2f}"
                   f"{r['optimize_ms']:>7.0f}{r['compile_ms']:>8.1f}{kernels:>9}"
                   f"{r['later_call_us']:>10.2f}{r['compiled_call_us']:>12.2f}"
                   f"{r['overhead_us']:>12.2f}{r['numpy_us']:>10.2f}")
    out.append(f"\nfirst: trace + optimize + compile of a fresh @jit function (ms; kernels: "
               f"compiled + read from the disk cache); later, compiled, numpy: per call, the "
               f"fastest of {repeats} interleaved batches, {threads} thread(s); overhead = "
               f"later - compiled")
    return "\n".join(out)
