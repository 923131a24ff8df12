"""The benchmark suite: tcp-rules compiled kernels against NumPy, numexpr and Numba, in one run.

Every case is timed in the same process and run (medians of ``repeats`` after a warm-up), the
engines taking turns. A STREAM-like loop (copy, best of NumPy's and a compiled loop, or a*b+c
triad) takes its turns as well, and a memory-bound case's roofline fraction divides its bandwidth
by that loop's in the same round (the median over rounds of these paired ratios): both see the
same load from other processes. Compiled kernels write into
preallocated outputs (``out=``), as a caller in a loop would; NumPy runs its natural expression.
Compile time per kernel is measured against an empty cache, and the time to load the cached
kernels of a program in a fresh process is measured by running one.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tcp_rules.codegen import cases as C
from tcp_rules.codegen import jit
from tcp_rules.diagnostics import TcpError
from tcp_rules.printer import print_func


@dataclass
class Row:
    """One benchmark case: seconds per engine, bytes moved, flops."""

    name: str
    times: dict[str, float] = field(default_factory=dict)
    bytes: float = 0.0
    flops: float = 0.0
    stream: str = "copy"
    roofline: float | None = None  # median of paired ratios to the stream loop, round by round


def _median(fn: Callable[[], object], repeats: int) -> float:
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def set_blas_threads(n: int) -> bool:
    """Set OpenBLAS's thread count in this process (NumPy's bundled build or a system one)."""
    import ctypes

    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return False
    libs = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    for lib in libs:
        handle = ctypes.CDLL(lib)
        for sym in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                    "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(handle, sym, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                return True
    return False


@dataclass
class Stream:
    """The STREAM-like loops (copy and a*b+c triad at 16M f32): callables and bytes moved."""

    loops: dict[str, list[Callable[[], object]]]
    bytes: dict[str, float]

    def gbs(self, kind: str, seconds: float) -> float:
        """Bandwidth in GB/s of loop ``kind`` taking ``seconds``."""
        return self.bytes[kind] / seconds / 1e9


def stream_loops(threads: int) -> Stream:
    """Copy (NumPy's and a compiled loop, the faster counts) and a compiled triad."""
    n = 1 << 24
    a, b, c = (np.random.default_rng(i).standard_normal(n).astype(np.float32) for i in range(3))
    out = np.empty_like(a)
    copy_f = C.compiled("copy", threads)
    triad_f = C.compiled("fma", threads)
    return Stream({"copy": [lambda: np.copyto(out, a), lambda: copy_f(a, out=(out,))],
                   "triad": [lambda: triad_f(a, b, c, out=(out,))]},
                  {"copy": 2 * 4 * n, "triad": 4 * 4 * n})


def stream(loops: Stream, repeats: int) -> dict[str, float]:
    """Copy and triad bandwidth in GB/s, measured once."""
    return {kind: loops.gbs(kind, min(_median(fn, repeats) for fn in fns))
            for kind, fns in loops.loops.items()}


def run_case(name: str, repeats: int, threads: int, loops: Stream | None = None) -> list[Row]:
    """Time one case with every engine; a case may yield several rows.

    Engines take turns run by run, so load from other processes hits all of them alike --
    except after multithreaded OpenBLAS, whose idle worker threads keep spinning for a while and
    would slow whatever runs next: then BLAS cases time each engine in a block, tcp-rules
    first. The stream loops of a memory-bound case take their turns too (given ``loops``), so
    that its roofline fraction compares with the bandwidth of the same moments (they run just
    before it).
    """
    rows = []
    for variant in C.variants(name, threads):
        row = Row(variant.label, bytes=variant.bytes, flops=variant.flops, stream=variant.stream)
        if not variant.interleave:
            row.times = {e: _median(fn, repeats) for e, fn in variant.engines.items()}
            rows.append(row)
            continue
        refs = loops.loops[variant.stream] if loops is not None and variant.bytes else []
        # The stream loops run right before tcp-rules in each round, so that a paired ratio
        # compares moments a few milliseconds apart, not a round of slower engines apart.
        engines = {**{f"_stream{i}": fn for i, fn in enumerate(refs)}, **variant.engines}
        times: dict[str, list[float]] = {e: [] for e in engines}
        for fn in engines.values():
            fn()  # warm-up: first-call compilation, page faults
        for _ in range(repeats):
            for engine, fn in engines.items():
                t0 = time.perf_counter()
                fn()
                times[engine].append(time.perf_counter() - t0)
        row.times = {e: statistics.median(ts) for e, ts in times.items()
                     if not e.startswith("_stream")}
        if loops is not None and refs and "tcp-rules" in times:
            # Per round: bandwidth over the best stream loop's in that round. Slow swings in
            # the load from other processes cancel in each ratio.
            best = [min(ts) for ts in zip(*(times[f"_stream{i}"] for i in range(len(refs))),
                                          strict=True)]
            row.roofline = statistics.median(
                variant.bytes / t / 1e9 / loops.gbs(variant.stream, s)
                for s, t in zip(best, times["tcp-rules"], strict=True))
        rows.append(row)
    return rows


def compile_times(threads: int) -> dict[str, Any]:
    """Compile every program's kernels from scratch into an empty cache, then load the cached
    kernels in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("TCPR_CACHE_DIR")
        os.environ["TCPR_CACHE_DIR"] = tmp
        try:
            secs = [s for prog in C.PROGRAMS for s in C.compile_kernel_objects(prog)]
            for prog in C.PROGRAMS:  # the optimized programs, as the new process will read them
                Path(tmp, f"{prog}.tcp").write_text(print_func(C.optimized(prog)))
            loads = _load_in_new_process(tmp)
        finally:
            if old is None:
                os.environ.pop("TCPR_CACHE_DIR", None)
            else:
                os.environ["TCPR_CACHE_DIR"] = old
    return {"kernels": len(secs), "median_ms": 1e3 * statistics.median(secs) if secs else 0,
            "max_ms": 1e3 * max(secs, default=0), "cached_load": loads}


_LOADER = """
import json, sys, time
t0 = time.perf_counter()
from tcp_rules.codegen import jit
from tcp_rules.codegen.runtime import compile_func
from tcp_rules.pipeline import load_module_file
jit.host(); jit.fingerprint()
funcs = {p: load_module_file(f"{sys.argv[1]}/{p}.tcp").func()  # parsing is not loading
         for p in sys.argv[2:]}
out = {"import_ms": 1e3 * (time.perf_counter() - t0)}
for prog, func in funcs.items():
    t0 = time.perf_counter()
    cf = compile_func(func, threads=1)
    dt = time.perf_counter() - t0
    out[prog] = {"kernels": len(cf.steps), "ms": 1e3 * dt, "compiled": jit.STATS.compiled}
print(json.dumps(out))
"""


def _load_in_new_process(cache: str) -> dict[str, Any]:
    env = {**os.environ, "TCPR_CACHE_DIR": cache}
    res = subprocess.run([sys.executable, "-c", _LOADER, cache, *C.PROGRAMS],
                         capture_output=True,
                         text=True, env=env, timeout=300, check=False)
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-1:] or ["failed"]}
    data: dict[str, Any] = json.loads(res.stdout)
    return data


def run_benchmarks(cases: list[str] | None = None, repeats: int = 5, threads: int = 1,
                   as_json: bool = False) -> str:
    """Run the suite (all cases, or those named) and return the report as a table or JSON.

    TcpError for an unknown case name. Export OPENBLAS_NUM_THREADS before NumPy loads for a
    fair single-threaded matmul comparison (see benchmarks/codegen_bench.py).
    """
    names = cases or list(C.CASES)
    unknown = [n for n in names if n not in C.CASES]
    if unknown:
        raise TcpError.at(f"unknown benchmark case(s) {', '.join(unknown)} (known: "
                          f"{', '.join(C.CASES)})")
    blas = set_blas_threads(threads)
    C.set_library_threads(threads)
    loops = stream_loops(threads)
    bw = stream(loops, repeats)
    rows = [r for n in names for r in run_case(n, repeats, threads, loops)]
    comp = compile_times(threads)
    t = jit.target()
    report = {"machine": {"cpu": t.cpu, "triple": t.triple, "target": t.name, "threads": threads,
                          "blas_threads_set": blas, "engines": C.available_engines(),
                          "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
              "stream_gbs": bw, "repeats": repeats,
              "cases": [_row_json(r, bw) for r in rows], "compile": comp}
    return json.dumps(report, indent=2) if as_json else _table(report)


def _row_json(r: Row, bw: dict[str, float]) -> dict[str, Any]:
    t = r.times.get("tcp-rules")
    out: dict[str, Any] = {"case": r.name, "ms": {k: 1e3 * v for k, v in r.times.items()}}
    if t:
        out["vs_numpy"] = r.times["numpy"] / t if "numpy" in r.times else None
        for other in ("no-fusion", "numba"):
            if other in r.times:
                out[f"vs_{other.replace('-', '_')}"] = r.times[other] / t
        if r.bytes:
            out["gbs"] = r.bytes / t / 1e9
            out["roofline"] = r.roofline if r.roofline is not None else out["gbs"] / bw[r.stream]
            out["roofline_vs_start"] = out["gbs"] / bw[r.stream]
        if r.flops:
            out["gflops"] = r.flops / t / 1e9
    return out


def _table(rep: dict[str, Any]) -> str:
    engines = ["tcp-rules", "no-fusion", "numpy", "numexpr", "numba"]
    m, bw = rep["machine"], rep["stream_gbs"]
    lines = [f"machine: {m['cpu']} ({m['triple']}), threads={m['threads']}, engines: "
             f"{', '.join(m['engines'])}; medians of {rep['repeats']} runs; "
             f"OPENBLAS_NUM_THREADS={m['OPENBLAS_NUM_THREADS']}",
             f"STREAM-like bandwidth at the start: copy {bw['copy']:.1f} GB/s, triad "
             f"{bw['triad']:.1f} GB/s; roofline: against the stream loop timed in the same "
             "round as the case, median over rounds (@start: against the bandwidth at the start)",
             "", f"{'case':<34}" + "".join(f"{e:>11}" for e in engines)
             + f"{'vs numpy':>10}{'vs nofuse':>10}{'vs numba':>10}{'roofline':>10}{'@start':>8}"
             + f"{'GFLOP/s':>9}"]
    for c in rep["cases"]:
        cells = "".join(f"{c['ms'][e]:>8.2f} ms" if e in c["ms"] else f"{'-':>11}"
                        for e in engines)
        ratio = "".join(f"{c[k]:>9.2f}x" if c.get(k) else f"{'-':>10}"
                        for k in ("vs_numpy", "vs_no_fusion", "vs_numba"))
        roof = "".join(f"{100 * c[k]:.0f}%".rjust(w) if k in c else "-".rjust(w)
                       for k, w in (("roofline", 10), ("roofline_vs_start", 8)))
        gf = f"{c['gflops']:.1f}" if "gflops" in c else "-"
        lines.append(f"{c['case']:<34}{cells}{ratio}{roof}{gf:>9}")
    comp = rep["compile"]
    lines += ["", f"compile: {comp['kernels']} kernels, median {comp['median_ms']:.1f} ms, "
              f"max {comp['max_ms']:.1f} ms per kernel (empty cache)"]
    loads = comp["cached_load"]
    if "error" in loads:
        lines.append(f"cached load in a new process failed: {loads['error']}")
    else:
        lines.append(f"cached kernels loaded by a new process (lowering + loading objects; "
                     f"imports and parsing took {loads['import_ms']:.0f} ms before):")
        for prog, d in loads.items():
            if isinstance(d, dict):
                lines.append(f"  {prog:<22} {d['kernels']} kernel(s) in {d['ms']:.2f} ms "
                             f"({d['ms'] / max(d['kernels'], 1):.2f} ms per kernel, "
                             f"{d['compiled']} recompiled)")
    return "\n".join(lines)
