"""The model-scale suite (``tcpr bench --suite models``): the optimizer on graphs nobody here
wrote, at realistic sizes, measured by what it changes in compiled code.

The graphs are ONNX ops expanded into their own function bodies by ONNX's machinery
(frontends/onnx/expanded.py: LayerNorm, RMSNorm, GELU in both forms, softmax, attention
variants) and a 2-layer transformer encoder (frontends/onnx/zoo.py), each imported with the
ONNX importer. Each is optimized twice, with every rule and with the algebra left out
(:func:`no_algebra_options`); the three programs are compiled once and timed taking turns.
Benchmarks, not tests: numbers are reported, never asserted; a mismatch is printed, not raised.

``--json`` prints (schema 1)::

    {"schema": 1, "repeats": int, "threads": int, "cpu": str,
     "tolerance": str,                           # how outputs are compared
     "programs": {"dir": str, "saved_by": str} | null,  # optimized elsewhere (--programs)
     "graphs": [{"graph": str, "source": str,
                 "skipped": str | null,          # why it was not measured (then nothing else)
                 "ops": int,
                 "unoptimized": {"kernels": int, "ms": float | null,
                                 "host_us_per_kernel": float | null,
                                 "matmul_share": float | null},  # as below
                 "optimized" | "no_algebra": {
                     "seconds": float, "stop_reason": str, "phase_stops": [str],
                     "peak_enodes": int | null, "cost_before": float, "cost_after": float,
                     "error": str | null, "kernels": int, "ms": float | null,
                     "host_us_per_kernel": float | null,  # (wall - kernels' time) / kernels
                     "matmul_share": float | null,  # matmul kernels (epilogues in) / all kernels
                     "speedup": float | null,    # unoptimized ms / this ms
                     "mismatch": str | null}}]}  # null: outputs agree with unoptimized
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx

from tcp_rules.diagnostics import TcpError
from tcp_rules.frontends import Imported
from tcp_rules.ir import Func
from tcp_rules.programstore import ProgramStore, optimized, save_programs
from tcp_rules.rules.model import Rule

if TYPE_CHECKING:  # the optimizer (egglog) loads only where the suite optimizes (--programs)
    from tcp_rules.optimize import OptOptions, OptResult

SCHEMA = 1
VARIANTS = ("optimized", "no_algebra")
TOLERANCE = ("|opt - unopt| <= (64 + 8 L) eps_f32 (max(|opt|, |unopt|) + B): the verifier's "
             "approx check, with B the running error bound of the unoptimized program on these "
             "inputs and L its longest reduction")


def no_algebra_options() -> OptOptions:
    """The optimizer with the algebra tier left out (egraph/scheduler.py: the simplify, layout
    and fusion tiers run). The one place that says what "no algebra" means."""
    from tcp_rules.optimize import OptOptions

    return OptOptions(algebra=False)


def _default_options() -> OptOptions:
    from tcp_rules.optimize import OptOptions

    return OptOptions()


OPTIONS: dict[str, Callable[[], OptOptions]] = {"optimized": _default_options,
                                                 "no_algebra": no_algebra_options}


@dataclass
class Graph:
    """One benchmark graph: an ONNX model, the dims to import it with, and its inputs by ONNX
    name (the model's own weights are not among them); or why it could not be built."""

    name: str
    source: str
    model: onnx.ModelProto | None
    dims: dict[str, int] = field(default_factory=dict)
    feeds: dict[str, np.ndarray] = field(default_factory=dict)
    skipped: str | None = None


def graphs(small: bool = False, seed: int = 0) -> list[Graph]:
    """The suite's graphs at realistic sizes, or at tiny ones (``small``, for tests)."""
    from tcp_rules.frontends.onnx.expanded import REALISTIC, SMALL, expansions

    out = []
    for name, ex in expansions(SMALL if small else REALISTIC).items():
        try:
            model = ex.build(seed)
        except (ValueError, RuntimeError, onnx.checker.ValidationError,
                onnx.shape_inference.InferenceError) as e:  # this onnx has no such body
            out.append(Graph(name, f"ONNX {ex.op} body", None, skipped=f"expand: {e}"))
            continue
        body = max(o.version for o in model.opset_import)
        out.append(Graph(name, f"ONNX {ex.op} (opset {ex.opset}) body, in opset {body}",
                         model))
    out.append(encoder(2, small))
    rng = np.random.default_rng(seed)
    for g in out:
        g.feeds = _feeds(g, rng)
    return out


def encoder(layers: int, small: bool = False) -> Graph:
    """The zoo's transformer encoder (frontends/onnx/zoo.py) with ``layers`` layers: d_model
    256, 4 heads, d_ff 1024 over 8 sequences of 128 tokens (small: 16, 2, 32 over 2 of 8);
    its feeds are left to fill."""
    from tcp_rules.frontends.onnx.zoo import encoder_layer

    d_model, heads, d_ff = (16, 2, 32) if small else (256, 4, 1024)
    dims = {"batch": 2, "seq": 8} if small else {"batch": 8, "seq": 128}
    return Graph(f"encoder-{layers}", f"zoo encoder: {layers} layers, d_model {d_model}, "
                 f"{heads} heads", encoder_layer(d_model=d_model, heads=heads, d_ff=d_ff,
                                                 layers=layers), dims)


def _feeds(g: Graph, rng: np.random.Generator) -> dict[str, np.ndarray]:
    if g.model is None:
        return {}
    inits = {t.name for t in g.model.graph.initializer}
    feeds = {}
    for inp in g.model.graph.input:
        if inp.name in inits:
            continue
        shape = tuple(d.dim_value if d.HasField("dim_value") else g.dims[d.dim_param]
                      for d in inp.type.tensor_type.shape.dim)
        if inp.name == "attn_mask":
            # a padding mask as BERT adds it: 0 where a key is kept, -10000 on the last quarter
            # of the keys (finite, so no row is all -inf)
            mask = np.zeros(shape, np.float32)
            mask[..., shape[-1] - shape[-1] // 4:] = -10000.0
            feeds[inp.name] = mask
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def import_graph(g: Graph) -> Imported:
    """``g``'s model imported with its dims; TcpError when the importer cannot read it."""
    from tcp_rules.frontends.onnx import import_model

    assert g.model is not None, "a skipped graph has no model"
    return import_model(g.model, g.dims, where=g.name)


def prepare(g: Graph) -> tuple[Func, list[np.ndarray]]:
    """Import ``g``: the TCP func and its inputs in parameter order (feeds, then the weights the
    importer made parameters). TcpError when the importer cannot read the graph."""
    imported = import_graph(g)
    func = imported.module.funcs[0]
    known = {**{imported.aliases.get(n, n): a for n, a in g.feeds.items()}, **imported.weights}
    return func, [np.ascontiguousarray(known[p.param]) for p in func.params]


def kernel_count(func: Func) -> int:
    """How many kernels (loop nests) ``func`` compiles to: the steps of its plan."""
    from tcp_rules.codegen.lower import lower_func

    return len(lower_func(func).steps)


def optimizer_stats(result: OptResult) -> dict[str, Any]:
    """What the report says, from fields that survive changes to the optimizer's internals."""
    r = result.report
    return {"seconds": round(r.seconds, 3), "stop_reason": r.stop_reason,
            "phase_stops": list(r.phase_stops),
            "peak_enodes": r.peak_enodes or None,  # None: saturation never started
            "cost_before": r.cost_before, "cost_after": r.cost_after, "error": r.error}


def time_interleaved(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each callable over ``repeats`` rounds in which they take turns (load
    from other processes then hits all alike), after one warm-up call each."""
    for fn in runs.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(max(1, repeats)):
        for k, fn in runs.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(ts) for k, ts in times.items()}


def outputs_mismatch(func: Func, inputs: Sequence[np.ndarray], want: Sequence[np.ndarray],
                     got: Sequence[np.ndarray]) -> str | None:
    """Where ``got`` differs from ``want`` (the results of ``func`` and of a rewrite of it on
    ``inputs``) beyond the rounding ``func`` admits (see TOLERANCE); None when within it."""
    from tcp_rules.interpret import evaluate
    from tcp_rules.verify.cases import approx_mismatch, longest_reduction
    from tcp_rules.verify.sensitivity import bound

    trace: dict[int, np.ndarray] = {}
    evaluate(func, inputs, trace)  # the reference run, for the error bound's magnitudes
    longest = longest_reduction(func, trace)
    for i, (res, a, b) in enumerate(zip(func.results, want, got, strict=True)):
        found = approx_mismatch(a, b, bound(func, trace, res), longest)
        if found is not None:
            return f"result {i}: {found}"
    return None


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0].removeprefix("error: ")


@dataclass
class _Split:
    """Where a program's calls spent their time: the host's part (a call's wall time less its
    kernels') and its matmul kernels' share of the kernels' time, one entry per call."""

    host: list[float] = field(default_factory=list)
    matmul_share: list[float] = field(default_factory=list)


def _timed_call(cf: Any, inputs: Sequence[np.ndarray], split: _Split) -> None:
    """One call of ``cf``, noting what it cost outside its kernels and how much of its
    kernels' time its matmuls took (CompiledFunc.timed: each kernel timed in the call)."""
    from tcp_rules.codegen.kernel import MatmulKernel

    _, wall, kernels = cf.timed(*inputs)
    total = sum(kernels)
    split.host.append(wall - total)
    mm = sum(t for t, s in zip(kernels, cf.steps, strict=True)
             if isinstance(s.kernel, MatmulKernel))
    split.matmul_share.append(mm / total if total > 0 else 0.0)


def measure(g: Graph, rules: Sequence[Rule], repeats: int, threads: int = 1,
            store: ProgramStore | None = None, to_save: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    """One row of the suite: import, optimize both ways (or take both programs from
    ``store``), compile, time and compare ``g``; the optimized programs and the optimizer's
    stats go into ``to_save`` by graph name (for --save-programs)."""
    from tcp_rules.codegen.runtime import compile_func

    row: dict[str, Any] = {"graph": g.name, "source": g.source, "skipped": g.skipped}
    if g.skipped:
        return row
    try:
        func, inputs = prepare(g)
    except TcpError as e:
        row["skipped"] = f"import: {_first_line(e)}"
        return row
    row["ops"] = len(func.ops())
    assert g.model is not None  # (prepare imported it)
    funcs = {"unoptimized": func}
    for variant in VARIANTS:
        def run(variant: str = variant) -> tuple[Func, dict[str, Any]]:
            from tcp_rules.optimize import optimize

            result = optimize(func, rules, OPTIONS[variant]())
            return result.func, optimizer_stats(result)
        funcs[variant], row[variant] = optimized(store, g.name, g.model, func, variant, run)
    if to_save is not None:
        to_save[g.name] = (g.model, {v: (funcs[v], dict(row[v])) for v in VARIANTS})
    runs: dict[str, Callable[[], object]] = {}
    outputs: dict[str, tuple[np.ndarray, ...]] = {}
    splits: dict[str, _Split] = {}
    for k, f in funcs.items():
        stats = row.setdefault(k, {})
        stats["kernels"] = None
        try:
            stats["kernels"] = kernel_count(f)
            cf = compile_func(f, threads=threads)
            outputs[k] = cf(*inputs)
        except TcpError as e:  # reported in the row; the other programs are still timed
            stats["error"] = f"compile/run: {_first_line(e)}"
            continue
        runs[k] = functools.partial(_timed_call, cf, inputs, splits.setdefault(k, _Split()))
    ms = {k: 1e3 * s for k, s in time_interleaved(runs, repeats).items()}
    base = ms.get("unoptimized")
    for k in funcs:
        row[k]["ms"] = ms.get(k)
        n = row[k]["kernels"]
        # (the first call is the warm-up, left out as its time is)
        split = splits.get(k)
        row[k]["host_us_per_kernel"] = (1e6 * statistics.median(split.host[1:]) / n
                                        if split and n else None)
        row[k]["matmul_share"] = statistics.median(split.matmul_share[1:]) if split else None
    for variant in VARIANTS:
        stats, t = row[variant], ms.get(variant)
        stats["speedup"] = base / t if base and t else None
        stats["mismatch"] = None
        if variant in outputs and "unoptimized" in outputs:
            stats["mismatch"] = outputs_mismatch(func, inputs, outputs["unoptimized"],
                                                 outputs[variant])
    return row


def models_suite(as_json: bool = False, repeats: int = 7, threads: int = 1, *,
                 small: bool = False, names: Sequence[str] | None = None,
                 programs: Path | None = None, save_to: Path | None = None) -> str:
    """Run the suite (every graph, or those ``names``) and return its table or JSON.

    ``threads`` is the compiled kernels' thread count; ``small`` uses tiny shapes (tests).
    ``programs``: take the optimized programs from that directory (tcp_rules/programstore.py)
    instead of optimizing; ``save_to``: write them there as well.
    Progress goes to stderr, one line per graph: the suite takes minutes.
    """
    from tcp_rules.codegen import jit

    sizes = "small" if small else "realistic"
    store = ProgramStore(programs, "models", sizes) if programs is not None else None
    rules: list[Rule] = []
    if store is None:  # the rule library only where this process optimizes (it needs egglog)
        from tcp_rules.rules.library import load_standard_library

        rules = list(load_standard_library().rules)
    chosen = [g for g in graphs(small) if names is None or g.name in names]
    rows = []
    to_save: dict[str, Any] | None = {} if save_to is not None else None
    for g in chosen:
        print(f"tcpr bench --suite models: {g.name} ...", file=sys.stderr, flush=True)
        rows.append(measure(g, rules, repeats, threads, store, to_save))
    if save_to is not None and to_save is not None:
        save_programs(save_to, "models", sizes, to_save)
    report = {"schema": SCHEMA, "repeats": repeats, "threads": threads,
              "cpu": jit.target().cpu, "tolerance": TOLERANCE,
              "programs": store and store.origin(), "graphs": rows}
    return json.dumps(report, indent=2) if as_json else render(report)


LEGEND = """\
How to read it: one row per graph, run by the compiled engine on {threads} thread(s); ms are
medians of {repeats} runs in which the three programs take turns, on a {cpu} CPU.
  ops        ops of the imported program (before optimization)
  kern       kernels (loop nests) the program compiles to
  ms         measured time of one run of the whole program
  us/k       the unoptimized program's host cost per kernel, in microseconds: (a call's wall
             time - its kernels' time) / kernels, in the same calls (the checked native entry,
             allocation of the results, the runner going from kernel to kernel)
  mm%        the unoptimized program's matmul kernels' share of its kernels' time: what
             fusion and rewrites that leave the products alone cannot remove. With its products
             as fast as they are here, a program is at most 100/mm% times faster
  opt s      seconds the optimizer took (its time limit is a hard deadline)
  stop       why saturation stopped: saturated, fixpoint (rounds of algebra stopped finding
             cheaper programs), or the limit it hit (time, node, iteration)
  e-nodes    the e-graph's peak size
  speedup    unoptimized ms / optimized ms (above 1: the optimizer made it faster)
  all rules  the default optimizer; no algebra: --no-algebra, the simplify, layout and fusion
             tiers without the algebra tier (what the algebra buys is the gap)
  check      optimized outputs against unoptimized ones, both compiled: ok, or MISMATCH with
             the details below. The tolerance:"""


def _num(x: float | int | None, fmt: str, width: int) -> str:
    return (format(x, fmt) if x is not None else "-").rjust(width)


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _cell(stats: dict[str, Any]) -> str:
    sp = stats.get("speedup")
    return (f"{stats['seconds']:>6.1f} {stats['stop_reason']:<11.11} "
            f"{_num(stats.get('peak_enodes'), 'd', 7)} {_num(stats['kernels'], 'd', 4)} "
            f"{_num(stats.get('ms'), '.2f', 8)} {_num(sp, '.2f', 6)}{'x' if sp else ' '}")


def render(report: dict[str, Any]) -> str:
    """The suite's JSON report as a table, notes (skips, errors, mismatches) and legend."""
    head = f"{'opt s':>6} {'stop':<11} {'e-nodes':>7} {'kern':>4} {'ms':>8} {'speedup':>7}"
    lines = [f"{'':<18}{'':>5} {'unoptimized':>24} | {'all rules':<47}| {'no algebra':<47}|",
             f"{'graph':<18}{'ops':>5} {'kern':>4} {'ms':>8} {'us/k':>5} {'mm%':>4} | {head} | "
             f"{head} | check"]
    notes = []
    for r in report["graphs"]:
        if r["skipped"]:
            lines.append(f"{r['graph']:<18}  skipped: {r['skipped']}")
            continue
        un = r["unoptimized"]
        bad = [v for v in VARIANTS if r[v].get("mismatch")]
        check = "MISMATCH (" + ", ".join(bad) + ")" if bad else "ok"
        lines.append(f"{r['graph']:<18}{r['ops']:>5} {_num(un['kernels'], 'd', 4)} "
                     f"{_num(un.get('ms'), '.2f', 8)} "
                     f"{_num(un.get('host_us_per_kernel'), '.1f', 5)} "
                     f"{_num(_percent(un.get('matmul_share')), '.0f', 4)} | "
                     f"{_cell(r['optimized'])} | {_cell(r['no_algebra'])} | {check}")
        for k in ("unoptimized", *VARIANTS):
            for what in ("error", "mismatch"):
                if r[k].get(what):
                    notes.append(f"{r['graph']} {k}: {what.upper()}: {r[k][what]}")
    if report.get("programs"):
        notes.append("optimized elsewhere: the programs in {dir}, saved by tcp-rules "
                     "{saved_by} (opt s, stop and e-nodes are that run's)"
                     .format(**report["programs"]))
    if notes:
        lines += ["", *notes]
    lines += ["", "graphs:", *(f"  {r['graph']:<18} {r['source']}" for r in report["graphs"]),
              "", LEGEND.format(**report)]
    lines += textwrap.wrap(report["tolerance"] + ".", 96, initial_indent=" " * 13,
                           subsequent_indent=" " * 13)
    return "\n".join(lines)
