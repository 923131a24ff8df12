"""The peers suite (``tcpr bench --suite peers``): tcp-rules against what users would pick
instead, the same workloads, interleaved in one run, the same thread count for every engine.

Each workload (tcp_rules/peerworkloads.py) is one ONNX graph: tcp-rules imports it and optimizes
it once with the standard library, onnxruntime runs the graph itself, and NumPy, JAX and PyTorch
(tcp_rules/peerengines.py) run the same computation written over their own ops. Every engine's
result is checked against NumPy in float64. Each thread count is measured in a fresh process
pinned to that many CPUs, with the BLAS and OpenMP thread counts set before they load (JAX can
only be limited that way); the optimized programs and the references are computed once, in the
calling process, and handed over in a temporary directory.

Benchmarks, not tests: numbers are reported, never asserted; a mismatch is printed, not raised.

``--json`` prints (schema 1)::

    {"schema": 1, "suite": "peers", "repeats": int, "quick": bool, "cpu": str, "cpus": int,
     "versions": {engine: str | null},            # null: not installed, not measured
     "tolerance": str,                            # how results are checked
     "programs": {"dir": str, "saved_by": str} | null,  # optimized elsewhere (--programs)
     "workloads": [{"workload": str, "title": str, "shape": str, "ops": int | null,
                    "optimizer": {"seconds": float, "stop_reason": str, "error": str | null},
                    "skipped": str | null}],      # why it was not measured (import failed)
     "runs": [{"threads": int, "pinned_cpus": int | null, "isolated": bool,
               "error": str | null,               # the measuring process failed
               "rows": [{"workload": str,
                         "ms": {engine: float},   # medians; engines that ran
                         "min_ms": {engine: float},      # the fastest round's
                         "errors": {engine: str}, # engines that failed to build or run
                         "check": {engine: str | null},  # null: within tolerance
                         "best_peer": str | null, # the fastest peer whose result checked ok
                         "ratio": float | null,   # best peer ms / tcp-rules ms (fresh output)
                         "ratio_out": float | null,      # ... / tcp-rules out= ms
                         # the middle half of the rounds' paired ratios (the best peer's
                         # seconds in a round over tcp-rules' in the same round), [q1, q3]:
                         "ratio_iqr": [float, float] | null, "ratio_out_iqr": ... | null,
                         "kernels": int | null, "kernel_ms": float | null,
                         "host_us_per_kernel": float | null,
                         # tcp-rules out='s throughput (null where it does not apply):
                         "gbs": float | null,     # Workload.traffic() bytes / median s
                         "stream_gbs": float | null,     # the STREAM-like loop's, same rounds
                         "roofline": float | null,       # median of the rounds' gbs ratios
                         "gflops": float | null}]}]}

Engines: "tcp-rules" (fresh outputs), "tcp-rules out=" (preallocated outputs), then
peerengines.PEERS that are installed.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcp_rules import __version__
from tcp_rules.diagnostics import Source, TcpError
from tcp_rules.ir import Func
from tcp_rules.peerengines import NUMPY, PEERS, Runner, installed, runner
from tcp_rules.peerworkloads import NAMES, Workload, workloads
from tcp_rules.programstore import ProgramStore, optimized, save_programs

if TYPE_CHECKING:
    from tcp_rules.codegen.bench import Stream

SCHEMA = 1
TCPR, TCPR_OUT = "tcp-rules", "tcp-rules out="
VARIANT = "optimized"  # the suite's one optimizer variant, as --save-programs names it
TOLERANCE = ("|result - ref| <= (64 + 8 L) eps_f32 (max(|result|, |ref|) + B), ref the "
             "computation in float64 (NumPy, SciPy's erf) rounded to f32, B the running error "
             "bound of the imported program on these inputs, L its longest reduction")


@dataclass
class Prepared:
    """A workload made ready to measure: the optimized program, the ONNX name of each of its
    parameters, and the reference its results are checked against (want, slack B, L)."""

    workload: Workload
    info: dict[str, Any]
    func: Func | None = None
    params: list[str] = field(default_factory=list)
    want: np.ndarray | None = None
    slack: np.ndarray | None = None
    longest: int = 1


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return (text[0] if text else type(e).__name__).removeprefix("error: ")


def prepare(w: Workload, rules: Sequence[Any], store: ProgramStore | None = None) -> Prepared:
    """Import ``w``'s graph, optimize it with ``rules`` (or take its program from ``store``,
    optimized elsewhere) and compute its reference; a graph the importer cannot read is marked
    skipped."""
    from tcp_rules.frontends.onnx import import_model

    info: dict[str, Any] = {"workload": w.name, "title": w.title, "shape": w.shape,
                            "ops": None, "optimizer": None, "skipped": None}
    try:
        imported = import_model(w.model, where=w.name)
    except TcpError as e:
        info["skipped"] = f"import: {_first_line(e)}"
        return Prepared(w, info)
    func = imported.module.funcs[0]
    onnx_name = {t: s for s, t in imported.aliases.items()}
    params = [onnx_name.get(p.param, p.param) for p in func.params]
    info["ops"] = len(func.ops())

    def run() -> tuple[Func, dict[str, Any]]:
        from tcp_rules.optimize import OptOptions, optimize

        result = optimize(func, rules, OptOptions())
        r = result.report
        return result.func, {"seconds": round(r.seconds, 3), "stop_reason": r.stop_reason,
                             "error": r.error}
    program, info["optimizer"] = optimized(store, w.name, w.model, func, VARIANT, run)
    prep = Prepared(w, info, program, params)
    _reference(prep, func, [w.arrays[n] for n in params])
    return prep


def _reference(p: Prepared, func: Func, inputs: list[np.ndarray]) -> None:
    from tcp_rules.interpret import evaluate
    from tcp_rules.verify.cases import longest_reduction
    from tcp_rules.verify.sensitivity import bound

    trace: dict[int, np.ndarray] = {}
    evaluate(func, inputs, trace)  # the imported program in f32: the magnitudes of B
    p.longest = longest_reduction(func, trace)
    p.slack = bound(func, trace, func.results[0])
    del trace
    wide = {n: a.astype(np.float64) for n, a in p.workload.arrays.items()}
    p.want = np.asarray(p.workload.compute(NUMPY, wide)).astype(np.float32)


def check(p: Prepared, got: np.ndarray) -> str | None:
    """Where ``got`` differs from ``p``'s reference beyond TOLERANCE; None when within it."""
    from tcp_rules.verify.cases import approx_mismatch

    assert p.want is not None and p.slack is not None
    if got.shape != p.want.shape or got.dtype != p.want.dtype:
        return f"got {got.dtype}{list(got.shape)}, expected {p.want.dtype}{list(p.want.shape)}"
    return approx_mismatch(p.want, got, p.slack, p.longest)


def _tcpr_runners(p: Prepared, threads: int, row: dict[str, Any]
                  ) -> tuple[dict[str, Runner], Any, list[np.ndarray]]:
    from tcp_rules.codegen.runtime import compile_func

    assert p.func is not None
    inputs = [np.ascontiguousarray(p.workload.arrays[n]) for n in p.params]
    try:
        cf = compile_func(p.func, threads=threads)
        outs = [np.empty_like(r) for r in cf(*inputs)]
    except TcpError as e:
        row["errors"][TCPR] = f"compile/run: {_first_line(e)}"
        return {}, None, inputs
    return {TCPR: Runner(lambda: cf(*inputs)[0]),
            TCPR_OUT: Runner(lambda: cf(*inputs, out=outs)[0])}, cf, inputs


def _rounds(runners: dict[str, Runner], cf: Any, inputs: list[np.ndarray], repeats: int,
            streams: Sequence[Callable[[], object]] = ()
            ) -> tuple[dict[str, list[float]], list[list[float]], list[float]]:
    """Seconds of each runner in ``repeats`` rounds in which they take turns (in an order
    shuffled round by round, from a fixed seed), after a warm-up call each; round by round,
    one more tcp-rules call's wall time and kernel times (``CompiledFunc.timed``); and, given
    ``streams`` (the STREAM-like loops a memory-bound workload is compared with), the fastest
    one's seconds in each round, run right after the turns."""
    order = list(runners)
    for k in order:
        runners[k].run()
    for fn in streams:
        fn()
    times: dict[str, list[float]] = {k: [] for k in order}
    kernels: list[list[float]] = []
    stream: list[float] = []
    # shuffled, not rotated: a rotation keeps each engine behind the same one every round,
    # and an engine whose threads linger after its run (OpenMP's, XLA's) then slows the same
    # neighbour each time (on 16 CPUs, tcp-rules, rotated in right after PyTorch: softmax's
    # median 3.4 ms, its fastest round 0.37 ms, out= 0.42 ms)
    shuffle = random.Random(0)
    for _ in range(max(1, repeats)):
        for k in shuffle.sample(order, len(order)):
            t0 = time.perf_counter()
            runners[k].run()
            times[k].append(time.perf_counter() - t0)
        if cf is not None:
            _, wall, steps = cf.timed(*inputs)
            kernels.append([wall, *steps])
        if streams:
            stream.append(min(_seconds(fn) for fn in streams))
    return times, kernels, stream


def paired_iqr(peer: Sequence[float], ours: Sequence[float]) -> list[float] | None:
    """The first and third quartiles of ``peer[i] / ours[i]``, seconds taken in the same round
    (load that comes and goes between rounds cancels in each ratio); None with fewer than two
    rounds. Where they bracket 1.0, which engine is faster is within this run's noise."""
    ratios = [p / o for p, o in zip(peer, ours, strict=True) if o > 0]
    if len(ratios) < 2:
        return None
    q1, _, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return [q1, q3]


def _seconds(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(p: Prepared, threads: int, repeats: int, peers: Sequence[str],
            loops: Stream | None = None) -> dict[str, Any]:
    """One row: build every engine on ``p``, run each once and check its result, then time
    them taking turns; tcp-rules' kernels are timed for the host cost per kernel, and a
    memory-bound workload's bandwidth is set against ``loops``' in the same rounds."""
    row: dict[str, Any] = {"workload": p.workload.name, "ms": {}, "min_ms": {}, "errors": {},
                           "check": {}, "best_peer": None, "ratio": None, "ratio_out": None,
                           "ratio_iqr": None, "ratio_out_iqr": None,
                           "kernels": None, "kernel_ms": None, "host_us_per_kernel": None,
                           "gbs": None, "stream_gbs": None, "roofline": None, "gflops": None}
    runners, cf, inputs = _tcpr_runners(p, threads, row)
    for engine in peers:
        try:
            runners[engine] = runner(engine, p.workload, threads)
        except Exception as e:  # a peer that cannot take this graph: reported in the row
            row["errors"][engine] = f"{type(e).__name__}: {_first_line(e)}"
    for engine, r in list(runners.items()):
        try:
            got = r.to_numpy(r.run())  # the first call: compiles (JAX), warms caches
        except Exception as e:
            row["errors"][engine] = f"{type(e).__name__}: {_first_line(e)}"
            del runners[engine]
            continue
        row["check"][engine] = check(p, got)
    if not runners:
        return row
    w = p.workload
    streams = loops.loops[w.stream] if loops is not None and w.stream and TCPR_OUT in runners \
        else []
    times, kernels, stream = _rounds(runners, cf if TCPR_OUT in runners else None, inputs,
                                     repeats, streams)
    row["ms"] = {k: 1e3 * statistics.median(ts) for k, ts in times.items()}
    row["min_ms"] = {k: 1e3 * min(ts) for k, ts in times.items()}
    ok = [k for k in peers if k in row["ms"] and row["check"].get(k) is None]
    if ok:
        best = row["best_peer"] = min(ok, key=lambda k: row["ms"][k])
        for key, engine in (("ratio", TCPR), ("ratio_out", TCPR_OUT)):
            if engine in row["ms"]:
                row[key] = row["ms"][best] / row["ms"][engine]
                row[f"{key}_iqr"] = paired_iqr(times[best], times[engine])
    if kernels and len(kernels[0]) > 1:
        n = row["kernels"] = len(kernels[0]) - 1
        row["kernel_ms"] = 1e3 * statistics.median(sum(k[1:]) for k in kernels)
        row["host_us_per_kernel"] = 1e6 * statistics.median(k[0] - sum(k[1:])
                                                            for k in kernels) / n
    if TCPR_OUT in times:
        _throughput(row, w, times[TCPR_OUT], stream, loops)
    return row


def _throughput(row: dict[str, Any], w: Workload, out: list[float], stream: list[float],
                loops: Stream | None) -> None:
    """GB/s of tcp-rules' out= calls, and their share of the STREAM-like loop's bandwidth:
    per round against that round's loop (slow swings of the load cancel in each ratio), the
    median over rounds; GFLOP/s where the workload counts its flops."""
    t = statistics.median(out)
    if w.flops:
        row["gflops"] = w.flops / t / 1e9
    if stream and loops is not None and w.stream:
        nbytes = w.traffic()
        row["gbs"] = nbytes / t / 1e9
        row["stream_gbs"] = statistics.median(loops.gbs(w.stream, s) for s in stream)
        row["roofline"] = statistics.median(nbytes / o / 1e9 / loops.gbs(w.stream, s)
                                            for o, s in zip(out, stream, strict=True))


def measure_run(preps: Iterable[Prepared], threads: int, repeats: int, peers: Sequence[str],
                pinned: int | None = None, isolated: bool = False) -> dict[str, Any]:
    """Every prepared workload at ``threads`` threads (skipped ones are left out)."""
    from tcp_rules.codegen.bench import stream_loops

    rows = []
    loops: Stream | None = None
    for p in preps:
        if p.func is None:
            continue
        print(f"tcpr bench --suite peers: {p.workload.name}, {threads} thread(s) ...",
              file=sys.stderr, flush=True)
        if loops is None and p.workload.stream:
            loops = stream_loops(threads)  # 256 MB: made once, when a workload needs them
        rows.append(measure(p, threads, repeats, peers, loops))
    return {"threads": threads, "pinned_cpus": pinned, "isolated": isolated, "error": None,
            "rows": rows}


# handing prepared workloads to a measuring process ---------------------------------------------


def save(p: Prepared, index: int, where: Path) -> dict[str, Any]:
    """Write what a measuring process cannot rebuild of ``p`` (the optimized program and the
    reference); its entry in the manifest :func:`load` reads."""
    from tcp_rules.printer import print_func

    if p.func is not None:
        assert p.want is not None and p.slack is not None
        (where / f"{index}.tcp").write_text(print_func(p.func))
        np.save(where / f"{index}.want.npy", p.want)
        np.save(where / f"{index}.slack.npy", p.slack)
    return {"info": p.info, "params": p.params, "longest": p.longest}


def load(where: Path, quick: bool, names: Sequence[str]) -> Iterator[Prepared]:
    """The prepared workloads :func:`save` wrote, one at a time, their arrays rebuilt from the
    same seed."""
    from tcp_rules.elaborate import load_program

    manifest = json.loads((where / "manifest.json").read_text())
    for i, (name, entry) in enumerate(zip(names, manifest, strict=True)):
        (w,) = workloads(quick, names=[name])
        p = Prepared(w, entry["info"], params=entry["params"], longest=entry["longest"])
        text = where / f"{i}.tcp"
        if text.exists():
            p.func = load_program(Source(text.name, text.read_text())).funcs[0]
            p.want = np.load(where / f"{i}.want.npy", mmap_mode="r")
            p.slack = np.load(where / f"{i}.slack.npy", mmap_mode="r")
        yield p


def _isolated_run(where: Path, threads: int, repeats: int, quick: bool, names: Sequence[str],
                  peers: Sequence[str]) -> dict[str, Any]:
    cpus = sorted(os.sched_getaffinity(0))
    pinned = cpus[:threads] if threads < len(cpus) else None
    counts = {v: str(threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                        "MKL_NUM_THREADS")}
    # OpenBLAS's threads spin for about 2**28 cycles after a call, holding cores the next
    # engine needs (every engine's 1024^3 matmul took 1.5-2x its time at 2 threads on 2 CPUs):
    # 2**4 cycles, as onnxruntime is told not to spin
    counts["OPENBLAS_THREAD_TIMEOUT"] = "4"
    # PyTorch's OpenMP threads spin after each run unless told not to, as onnxruntime's
    counts["OMP_WAIT_POLICY"] = "PASSIVE"
    # every engine on the CPU: JAX would otherwise take a GPU where it finds one
    counts["JAX_PLATFORMS"] = "cpu"
    # the pinning comes first, so that every thread the process starts inherits it
    boot = (f"import os, runpy; os.sched_setaffinity(0, {pinned}); " if pinned else
            "import runpy; ") + "runpy.run_module('tcp_rules.benchpeers', run_name='__main__')"
    argv = [str(where), str(threads), str(repeats), str(int(quick)), ",".join(names),
            ",".join(peers) or "-", str(len(pinned) if pinned else 0)]
    # its stdout goes to our stderr, with its progress: ours may be the JSON report
    proc = subprocess.run([sys.executable, "-c", boot, *argv], env={**os.environ, **counts},
                          stdout=2, check=False)
    out = where / f"run-{threads}.json"
    if proc.returncode or not out.exists():
        return {"threads": threads, "pinned_cpus": len(pinned) if pinned else None,
                "isolated": True, "rows": [],
                "error": f"the measuring process exited with status {proc.returncode}"}
    run: dict[str, Any] = json.loads(out.read_text())
    return run


def peers_report(threads: Sequence[int] = (1,), repeats: int = 7, *, quick: bool = False,
                 names: Sequence[str] | None = None, peers: Sequence[str] | None = None,
                 isolate: bool = True, programs: Path | None = None,
                 save_to: Path | None = None) -> dict[str, Any]:
    """Run the suite; its report as a dict (the schema in the module docstring).

    ``programs``: take the optimized programs from that directory (tcp_rules/programstore.py)
    instead of optimizing; ``save_to``: write the optimized programs there as well.
    ``peers`` defaults to every installed peer. ``isolate=False`` measures in this process
    (for tests): no pinning, BLAS keeps the thread count it started with, and JAX cannot be
    limited; JAX's threads also make any later fork of this process unsafe (the optimizer
    forks), so leave it out of ``peers`` there.
    """
    from tcp_rules.codegen import jit

    unknown = [n for n in names or () if n not in NAMES]
    if unknown:
        raise TcpError.at(f"no peers workload named {', '.join(unknown)}; the workloads: "
                          f"{', '.join(NAMES)}")
    chosen = [n for n in NAMES if names is None or n in names]  # in the suite's order
    if any(t < 1 for t in threads):
        raise TcpError.at("thread counts must be at least 1")
    versions = installed()
    for need in ("numpy", "onnxruntime"):
        if versions[need] is None:
            raise TcpError.at(f"the peers suite needs {need}", hint="pip install "
                              "'tcp-rules[bench]'")
    peers = [e for e in (PEERS if peers is None else peers) if versions.get(e)]
    sizes = "quick" if quick else "full"
    store = ProgramStore(programs, "peers", sizes) if programs is not None else None
    # the rule library only where this process optimizes (it needs egglog)
    if store is None:
        from tcp_rules.rules.library import load_standard_library

        rules = list(load_standard_library().rules)
    else:
        rules = []
    infos, manifest = [], []
    to_save: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tcpr-peers-") as tmp:
        for i, w in enumerate(workloads(quick, names=chosen)):
            print(f"tcpr bench --suite peers: preparing {w.name} ...", file=sys.stderr,
                  flush=True)
            # on disk, not kept here: the arrays of all the workloads take gigabytes
            p = prepare(w, rules, store)
            infos.append(p.info)
            manifest.append(save(p, i, Path(tmp)))
            if save_to is not None and p.func is not None:
                to_save[w.name] = (w.model, {VARIANT: (p.func, p.info["optimizer"])})
            del p
        if save_to is not None:
            save_programs(save_to, "peers", sizes, to_save)
        (Path(tmp) / "manifest.json").write_text(json.dumps(manifest))
        runs = [_isolated_run(Path(tmp), t, repeats, quick, chosen, peers) if isolate else
                measure_run(load(Path(tmp), quick, chosen), t, repeats, peers)
                for t in threads]
    return {"schema": SCHEMA, "suite": "peers", "repeats": repeats, "quick": quick,
            "cpu": jit.target().cpu, "cpus": len(os.sched_getaffinity(0)),
            "versions": {TCPR: __version__, **{e: versions[e] for e in PEERS}},
            "tolerance": TOLERANCE, "programs": store and store.origin(),
            "workloads": infos, "runs": runs}


def peers_suite(threads: Sequence[int] = (1,), repeats: int = 7, as_json: bool = False, *,
                quick: bool = False, names: Sequence[str] | None = None,
                programs: Path | None = None, save_to: Path | None = None) -> str:
    """The suite's table (or JSON) for ``tcpr bench --suite peers``."""
    from tcp_rules.peertable import render

    report = peers_report(threads, repeats, quick=quick, names=names, programs=programs,
                          save_to=save_to)
    return json.dumps(report, indent=2) if as_json else render(report)


def _child(argv: Sequence[str]) -> None:
    """A measuring process: argv as :func:`_isolated_run` passes it; it writes the run's JSON
    next to what it measured (stdout is left to the engines' own messages)."""
    where, threads, repeats, quick, names, peers, pinned = argv
    preps = load(Path(where), bool(int(quick)), names.split(","))
    run = measure_run(preps, int(threads), int(repeats),
                      [] if peers == "-" else peers.split(","), int(pinned) or None, True)
    (Path(where) / f"run-{threads}.json").write_text(json.dumps(run))


if __name__ == "__main__":
    _child(sys.argv[1:])
