"""The peers suite's report (tcp_rules/benchpeers.py) as text: one table per thread count, the
notes (errors, mismatches), the workloads and a legend."""

from __future__ import annotations

import textwrap
from typing import Any

from tcp_rules.benchpeers import TCPR_OUT

LABELS = {"tcp-rules": "tcpr", "tcp-rules out=": "tcpr out=", "numpy": "numpy",
          "onnxruntime": "onnxrt", "jax": "jax", "torch": "torch"}

LEGEND = """\
How to read it: ms are medians of {repeats} rounds in which the engines take turns (after a
warm-up call each), so load from other processes on a shared machine hits all alike; compare
ratios within one run. Each thread count T runs in its own process pinned to T CPUs (where the
machine has more), with every engine told to use T threads.
  tcpr       tcp-rules, the graph imported, optimized once and compiled; fresh result arrays,
             as every peer returns
  tcpr out=  the same program writing into preallocated arrays (out=), as a caller in a loop
  numpy      the computation written in NumPy (SciPy's erf): single-threaded but for matmul
             (OpenBLAS, T threads, no spinning between calls, as onnxrt)
  onnxrt     onnxruntime on the same ONNX graph: intra-op threads T (no spinning between
             runs, which would hold a core the next engine needs), inter-op 1, every graph
             optimization; weights are initializers it may prepack
  jax        jax.jit of the same computation, weights as arguments; T from the CPU pinning
             (XLA has no thread-count setting)
  torch      eager PyTorch, torch.nn.functional's kernels, torch.set_num_threads(T)
  best peer  the fastest peer whose result passed the check
  ratio      best peer ms / tcpr ms: above 1, tcp-rules is faster; out=: against tcpr out=.
             Marked ~ where the middle half of the rounds' paired ratios (the best peer's time
             over tcpr's in the same round) spans 1.0: which is faster is within the noise
  kern       kernels tcp-rules runs; kern ms: their summed time within a call (median)
  host us/k  (a call's wall time - its kernels' time) / kern in microseconds, in the same
             calls: what a call costs outside the kernels (checks, results, the native call).
             Nearly all of it is per call, not per kernel (the runner goes from one kernel to
             the next in native code): a few Python operations, each slowed to microseconds
             because the kernels before flushed the caches and the TLB; so rows of few kernels
             and large arrays show large values
  GB/s, %    the last table, memory-bound rows: bytes a call must move at least (inputs and
             weights read once, the result written once) over tcpr out='s median time, and
             its share of the faster STREAM-like loop (a copy for one input, a*b+c for three;
             NumPy's copy or a compiled loop at T threads) timed right after each round, the
             median of the rounds' ratios. GELU's math can bound it below memory speed at
             few threads. GF/s: the matmul rows' floating-point rate
  check      every engine's result against the float64 reference: ok, or MISMATCH and the
             engines, details below. Huge pages: NumPy asks for them on arrays of 4 MB and
             more, and tcp-rules returns NumPy arrays; PyTorch and JAX do not unless told,
             which favours tcp-rules and NumPy on the large streaming rows. The tolerance:"""


def _ms(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.1f}" if x >= 100 else f"{x:.2f}" if x >= 1 else f"{x:.3f}"


def _num(x: float | None, fmt: str, suffix: str = "") -> str:
    return "-" if x is None else format(x, fmt) + suffix


def _ratio(row: dict[str, Any], key: str) -> str:
    """A ratio, "~" after it where its rounds' middle half spans 1.0 (benchpeers.paired_iqr)."""
    iqr = row.get(f"{key}_iqr")
    noisy = iqr is not None and iqr[0] <= 1.0 <= iqr[1]
    return _num(row[key], ".2f", "~" if noisy else "x")


def _engines(report: dict[str, Any]) -> list[str]:
    seen = {e for run in report["runs"] for r in run["rows"] for e in r["ms"]}
    seen |= {e for run in report["runs"] for r in run["rows"] for e in r["errors"]}
    return [e for e in LABELS if e in seen]


def _run_table(run: dict[str, Any], report: dict[str, Any], engines: list[str],
               titles: dict[str, str]) -> list[str]:
    t, pinned = run["threads"], run["pinned_cpus"]
    where = (f"pinned to {pinned} of {report['cpus']} CPUs" if pinned else
             f"{report['cpus']} CPUs" if run["isolated"] else "in the calling process")
    lines = [f"{t} thread{'s' if t > 1 else ''} ({where}), ms"]
    if run["error"]:
        return [*lines, f"  {run['error']}"]
    head = (f"{'workload':<18}" + "".join(f"{LABELS[e]:>10}" for e in engines)
            + f" | {'best peer':<11}{'ratio':>7}{'out=':>7} | {'kern':>4}{'kern ms':>9}"
            f"{'host us/k':>10} | check")
    lines.append(head)
    for r in run["rows"]:
        bad = [e for e, c in r["check"].items() if c]
        failed = [e for e in engines if e in r["errors"]]
        check = ("MISMATCH (" + ", ".join(bad) + ")" if bad else "ok") + (
            "; failed: " + ", ".join(failed) if failed else "")
        lines.append(
            f"{titles.get(r['workload'], r['workload']):<18.18}"
            + "".join(f"{_ms(r['ms'].get(e)):>10}" for e in engines)
            + f" | {r['best_peer'] or '-':<11}{_ratio(r, 'ratio'):>7}"
            f"{_ratio(r, 'ratio_out'):>7} | {_num(r['kernels'], 'd'):>4}"
            f"{_ms(r['kernel_ms']):>9}{_num(r['host_us_per_kernel'], '.1f'):>10} | {check}")
    return lines


def _scaling_table(report: dict[str, Any], titles: dict[str, str]) -> list[str]:
    """tcp-rules out= across the thread counts: ms, speedup over the fewest threads, and its
    throughput (GB/s and share of the STREAM-like loop, or GFLOP/s)."""
    runs = [r for r in report["runs"] if not r["error"]]
    if not runs:
        return []
    base = runs[0]
    by = [{r["workload"]: r for r in run["rows"]} for run in runs]
    lines = [f"tcp-rules out= by thread count: ms, speedup over {base['threads']} thread"
             f"{'s' if base['threads'] > 1 else ''}, GB/s and % of the STREAM-like loop (or "
             "GFLOP/s)",
             f"{'workload':<18}" + "".join(
                 f" | {str(run['threads']) + ' thread' + ('s' if run['threads'] > 1 else ''):<28}"
                 for run in runs)]
    for name in [r["workload"] for r in base["rows"]]:
        cells = []
        first = by[0][name]["ms"].get(TCPR_OUT)
        for rows in by:
            r = rows.get(name)
            ms = r["ms"].get(TCPR_OUT) if r else None
            if r is None or ms is None:
                cells.append(f" | {'-':<28}")
                continue
            speed = _num(first / ms if first else None, ".2f", "x")
            if r.get("roofline") is not None:
                rate = f"{r['gbs']:.1f} GB/s {100 * r['roofline']:.0f}%"
            elif r.get("gflops") is not None:
                rate = f"{r['gflops']:.1f} GF/s"
            else:
                rate = ""
            cells.append(f" | {_ms(ms):>7} {speed:>6} {rate:<13}")
        lines.append(f"{titles.get(name, name):<18.18}" + "".join(cells))
    return lines


def _notes(report: dict[str, Any]) -> list[str]:
    notes = []
    for w in report["workloads"]:
        if w["skipped"]:
            notes.append(f"{w['workload']}: skipped: {w['skipped']}")
    for run in report["runs"]:
        for r in run["rows"]:
            at = f"{r['workload']} ({run['threads']} thread(s))"
            notes += [f"{at} {e}: ERROR: {msg}" for e, msg in r["errors"].items()]
            notes += [f"{at} {e}: MISMATCH: {msg}" for e, msg in r["check"].items() if msg]
    return notes


def render(report: dict[str, Any]) -> str:
    """The suite's report as tables, notes, the workloads and the legend."""
    engines = _engines(report)
    titles = {w["workload"]: w["title"] for w in report["workloads"]}
    lines: list[str] = []
    for run in report["runs"]:
        lines += [*_run_table(run, report, engines, titles), ""]
    scaling = _scaling_table(report, titles)
    if scaling:
        lines += [*scaling, ""]
    notes = _notes(report)
    if notes:
        lines += [*notes, ""]
    lines.append("workloads (ops of the imported program; optimizer seconds and stop reason):")
    if report.get("programs"):
        lines.append("  (optimized elsewhere: the programs in {dir}, saved by tcp-rules "
                     "{saved_by})".format(**report["programs"]))
    for w in report["workloads"]:
        opt = w["optimizer"]
        how = f"{w['ops']} ops, {opt['seconds']:.1f} s, {opt['stop_reason']}" if opt else "-"
        lines.append(f"  {w['title']:<18} {w['shape']:<30} {how}")
    versions = ", ".join(f"{e} {v}" for e, v in report["versions"].items() if v)
    missing = [e for e, v in report["versions"].items() if not v]
    lines += ["", f"on a {report['cpu']} CPU: {versions}"
              + (f" ({', '.join(missing)} not installed)" if missing else ""), "",
              LEGEND.format(**report)]
    lines += textwrap.wrap(report["tolerance"] + ".", 96, initial_indent=" " * 13,
                           subsequent_indent=" " * 13)
    return "\n".join(lines)
