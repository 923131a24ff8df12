"""Calibrating the cost model against measured kernel times (``tcpr bench --suite cost``).

The kernels of the benchmark programs (optimized with and without fusion, at the benchmark sizes
and at smaller ones) and of a few single-op programs are timed one by one on random inputs
(:func:`tcp_rules.kernels.kernel_infos`, one thread unless told otherwise), the whole collection
twice, each kernel keeping its faster median. Per kernel the features are what RooflineCost charges
per unit of each of its constants: the model evaluated with that constant 1 and the others 0, so
they are exactly the model's bytes, flops, matmul flops and kernel count. The constants are then
fitted by non-negative least squares on the relative error, and the report says how well the
fitted and the current models predict the times, and whether they rank each program's fused and
unfused versions as the measurements do. A benchmark: numbers are reported, never asserted.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcp_rules import build as tb
from tcp_rules.extract.cost import RooflineCost, with_sizes
from tcp_rules.inputs import random_inputs
from tcp_rules.ir import Func
from tcp_rules.kernels import kernel_infos

# The fitted constants, in the order of a sample's features.
CONSTANTS = ("byte_ns", "flop_ns", "matmul_flop_ns", "op_ns")

# Smaller sizes of each benchmark program (~1M and ~64K elements), where the per-kernel cost is
# a visible part of a kernel's time and the data fits in (or near) the caches.
SMALLER: dict[str, list[dict[str, int]]] = {
    "fma_relu": [{"N": 1 << 20}, {"N": 1 << 16}],
    "gelu": [{"N": 1 << 20}, {"N": 1 << 16}],
    "sum": [{"N": 1 << 20}, {"N": 1 << 16}],
    "bias_relu": [{"N": 1024, "D": 1024}, {"N": 64, "D": 1024}],
    "softmax": [{"N": 1024, "D": 1024}, {"N": 64, "D": 1024}],
    "layernorm": [{"N": 1024}, {"N": 64}],
    "matmul_bias_relu": [{"M": 512, "K": 512, "N": 512}, {"M": 128, "K": 128, "N": 128}],
    "transpose": [{"N": 1024, "M": 1024}, {"N": 256, "M": 256}]}
# Single ops at 4K, 64K and 4M elements: per-kernel cost, cache and memory bandwidth apart.
SINGLE_OPS = ("add", "exp", "tanh")
SINGLE_SIZES = (1 << 12, 1 << 16, 1 << 22)


@dataclass
class Sample:
    """One timed kernel with the model's features for it."""

    program: str  # a benchmark program, or the single op
    variant: str  # "fused", "unfused" (optimized without the kernel-forming rules) or "op"
    sizes: dict[str, int]
    kernel: str
    ops: list[str]
    features: tuple[float, ...] | None  # per CONSTANTS; None: not in the model (a copy)
    offset: float  # ns the model charges whatever the constants (body ops' epsilon)
    measured_ns: float

    def estimate(self, constants: Mapping[str, float]) -> float | None:
        """The model's ns for this kernel with ``constants``."""
        if self.features is None:
            return None
        return self.offset + sum(f * constants[c]
                                 for f, c in zip(self.features, CONSTANTS, strict=True))


def fit(features: np.ndarray, measured: np.ndarray,
        offset: np.ndarray | None = None) -> dict[str, float]:
    """Non-negative constants minimizing sum(((offset + features @ c) - measured) / measured)^2.

    Rows are weighted by 1/measured so that a 10 us kernel counts as much as a 10 ms one (fusion
    decisions hinge on both); columns are scaled to unit norm first, for conditioning.
    """
    from scipy.optimize import nnls

    f = np.asarray(features, dtype=np.float64)
    t = np.asarray(measured, dtype=np.float64)
    off = np.zeros_like(t) if offset is None else np.asarray(offset, dtype=np.float64)
    a = f / t[:, None]
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0  # a feature no sample has: its constant stays 0
    c, _ = nnls(a / norms, 1.0 - off / t)
    return dict(zip(CONSTANTS, (float(x) for x in c / norms), strict=True))


def single_op(op: str) -> Func:
    """``op`` over flat f32[N] vectors (two operands for a binary op)."""
    f = tb.FuncBuilder(op)
    arity = 2 if op in ("add", "mul", "sub", "max") else 1
    f.ret(tb.apply_op(op, *(f.param(n, "f32[N]") for n in "xy"[:arity])))
    return f.finish()


def model_with(constants: Mapping[str, float]) -> RooflineCost:
    """RooflineCost with ``constants`` (one value per name in CONSTANTS)."""
    return RooflineCost(byte_ns=constants["byte_ns"], flop_ns=constants["flop_ns"],
                        matmul_flop_ns=constants["matmul_flop_ns"], op_ns=constants["op_ns"])


def kernel_features(func: Func, sizes: Mapping[str, int]
              ) -> list[tuple[tuple[float, ...] | None, float]]:
    """Per kernel of ``func``: its features and the model's offset (None, 0: not modelled)."""
    def ns(model: RooflineCost) -> list[float | None]:
        return [None if k.estimated_us is None else k.estimated_us * 1e3
                for k in kernel_infos(func, with_sizes(model, sizes))]
    base = ns(model_with(dict.fromkeys(CONSTANTS, 0.0)))
    unit = [ns(model_with({k: float(k == c) for k in CONSTANTS})) for c in CONSTANTS]
    out: list[tuple[tuple[float, ...] | None, float]] = []
    for i, b in enumerate(base):
        cols = [col[i] for col in unit]
        if b is None or any(v is None for v in cols):
            out.append((None, 0.0))
        else:
            out.append((tuple(v - b for v in cols if v is not None), b))
    return out


def samples_of(program: str, variant: str, func: Func, sizes: Mapping[str, int],
               repeats: int, seed: int = 0) -> list[Sample]:
    """The kernels of ``func`` timed at ``sizes``, with their features."""
    inputs = random_inputs(func, sizes, seed=seed)
    infos = kernel_infos(func, with_sizes(RooflineCost(), sizes), inputs, repeats)
    out = []
    for k, (feats, off) in zip(infos, kernel_features(func, sizes), strict=True):
        assert k.measured_us is not None
        out.append(Sample(program, variant, dict(sizes), k.name, k.ops, feats, off,
                          k.measured_us * 1e3))
    return out


def collect(repeats: int = 7, rounds: int = 2, programs: Sequence[str] | None = None
            ) -> list[Sample]:
    """Time every kernel of the benchmark programs (fused and unfused, at the benchmark and the
    smaller sizes) and of the single-op programs, ``rounds`` times over; each kernel keeps its
    fastest median (on a shared machine, interference only ever adds time)."""
    from tcp_rules.codegen import cases

    def once() -> list[Sample]:
        out: list[Sample] = []
        for name in cases.PROGRAMS if programs is None else programs:
            for sizes in (cases.SIZES[name], *SMALLER[name]):
                for variant in ("fused", "unfused"):
                    func = cases.optimized(name, fusion=variant == "fused")
                    out += samples_of(name, variant, func, sizes, repeats)
        for op in SINGLE_OPS if programs is None else ():
            for n in SINGLE_SIZES:
                out += samples_of(op, "op", single_op(op), {"N": n}, repeats)
        return out
    best = once()
    for _ in range(rounds - 1):
        for s, again in zip(best, once(), strict=True):
            s.measured_ns = min(s.measured_ns, again.measured_ns)
    return best


def _abs_log(pairs: Sequence[tuple[float, float]]) -> np.ndarray:
    return np.array([abs(math.log(e / m)) for e, m in pairs if e > 0 and m > 0])


def quality(samples: Sequence[Sample], constants: Mapping[str, float]) -> dict[str, float]:
    """How well the model with ``constants`` predicts the measured kernel times."""
    from scipy.stats import spearmanr

    pairs = [(e, s.measured_ns) for s in samples if (e := s.estimate(constants)) is not None]
    err = _abs_log(pairs)
    rho = spearmanr([e for e, _ in pairs], [m for _, m in pairs]).statistic
    return {"kernels": len(pairs), "median_abs_log": round(float(np.median(err)), 3),
            "p90_abs_log": round(float(np.percentile(err, 90)), 3),
            "spearman": round(float(rho), 3)}


def fusion_ranking(samples: Sequence[Sample], constants: Mapping[str, float]
                   ) -> list[dict[str, Any]]:
    """Per benchmark program and size: fused and unfused totals, estimated and measured, and
    whether the model orders them as the measurements do."""
    groups: dict[tuple[str, str], dict[str, list[Sample]]] = {}
    for s in samples:
        if s.variant != "op":
            key = (s.program, _sizes_label(s.sizes))
            groups.setdefault(key, {}).setdefault(s.variant, []).append(s)
    rows = []
    for (program, size), by in groups.items():
        fused, unfused = by.get("fused", []), by.get("unfused", [])

        def est(ks: list[Sample]) -> float:
            return sum(e for k in ks if (e := k.estimate(constants)) is not None)

        def meas(ks: list[Sample]) -> float:
            return sum(k.measured_ns for k in ks)
        same = [k.ops for k in fused] == [k.ops for k in unfused]
        ef, eu, mf, mu = est(fused), est(unfused), meas(fused), meas(unfused)
        rows.append({"program": program, "sizes": size, "same_kernels": same,
                     "kernels_fused": len(fused), "kernels_unfused": len(unfused),
                     "estimated_us": [round(ef / 1e3, 2), round(eu / 1e3, 2)],
                     "measured_us": [round(mf / 1e3, 2), round(mu / 1e3, 2)],
                     "agrees": None if same else (ef < eu) == (mf < mu)})
    return rows


def _current() -> dict[str, float]:
    model = RooflineCost()
    return {c: float(getattr(model, c)) for c in CONSTANTS}


def report(samples: Sequence[Sample]) -> dict[str, Any]:
    """The fitted constants, every kernel's estimates and time, and the summary statistics of
    the current and of the fitted model."""
    usable = [s for s in samples if s.features is not None and s.measured_ns > 0]
    fitted = fit(np.array([s.features for s in usable]),
                 np.array([s.measured_ns for s in usable]),
                 np.array([s.offset for s in usable]))
    models = {"current": _current(), "fitted": fitted}
    kernels = []
    for s in samples:
        est = {m: s.estimate(c) for m, c in models.items()}
        kernels.append({
            "program": s.program, "variant": s.variant, "sizes": _sizes_label(s.sizes),
            "kernel": s.kernel, "ops": s.ops,
            "features": None if s.features is None else dict(zip(CONSTANTS, s.features,
                                                                 strict=True)),
            "current_us": _us(est["current"]), "fitted_us": _us(est["fitted"]),
            "measured_us": _us(s.measured_ns),
            "ratio": None if est["fitted"] is None else round(est["fitted"] / s.measured_ns, 3)})
    return {"constants": {m: {k: float(f"{v:.4g}") for k, v in c.items()}
                          for m, c in models.items()},
            "summary": {m: quality(usable, c) for m, c in models.items()},
            "fusion": {m: fusion_ranking(samples, c) for m, c in models.items()},
            "kernels": kernels}


def _us(ns: float | None) -> float | None:
    return None if ns is None else round(ns / 1e3, 3)


def _n(x: int) -> str:
    for unit, shift in (("M", 20), ("K", 10)):
        if x >= 1 << shift and x % (1 << shift) == 0:
            return f"{x >> shift}{unit}"
    return str(x)


def _sizes_label(sizes: Mapping[str, int]) -> str:
    return " ".join(f"{k}={_n(v)}" for k, v in sizes.items())


def _fmt(x: float | None, width: int = 10) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}.3g}"


def format_report(rep: dict[str, Any]) -> str:
    """The report as tables: constants, summary, fused-vs-unfused ranking, every kernel."""
    threads = rep.get("threads")
    out = [f"kernels timed one by one on {threads or 'the default number of'} thread(s), "
           "fastest median of each\n", f"{'constant':<16}{'current':>10}{'fitted':>10}"]
    cur, fitted = rep["constants"]["current"], rep["constants"]["fitted"]
    out += [f"{c:<16}{cur[c]:>10.4g}{fitted[c]:>10.4g}" for c in CONSTANTS]
    out.append(f"\n{'model':<9}{'kernels':>8}{'median |log(est/meas)|':>24}"
               f"{'p90 |log|':>11}{'spearman':>10}{'fusion ranked right':>21}")
    for m, q in rep["summary"].items():
        ranks = [r["agrees"] for r in rep["fusion"][m] if r["agrees"] is not None]
        out.append(f"{m:<9}{q['kernels']:>8}{q['median_abs_log']:>24.3f}"
                   f"{q['p90_abs_log']:>11.3f}{q['spearman']:>10.3f}"
                   f"{f'{sum(ranks)}/{len(ranks)}':>21}")
    out.append(f"\n{'program':<18}{'sizes':<20}{'kernels':>8}{'fitted us f/u':>22}"
               f"{'measured us f/u':>22}  current fitted")
    for cur_row, fit_row in zip(rep["fusion"]["current"], rep["fusion"]["fitted"], strict=True):
        ef, eu = fit_row["estimated_us"]
        mf, mu = fit_row["measured_us"]
        verdict = ["same program" if r["agrees"] is None else ("ok" if r["agrees"] else "WRONG")
                   for r in (cur_row, fit_row)]
        out.append(f"{fit_row['program']:<18}{fit_row['sizes']:<20}"
                   f"{fit_row['kernels_fused']:>4}/{fit_row['kernels_unfused']:<3}"
                   f"{ef:>11.4g}/{eu:<10.4g}{mf:>11.4g}/{mu:<10.4g}  "
                   + (verdict[0] if verdict[0] == verdict[1] == "same program"
                      else f"{verdict[0]:<8}{verdict[1]}"))
    out.append(f"\n{'program':<18}{'variant':<8}{'sizes':<20}{'kernel ops':<34}"
               f"{'current':>10}{'fitted':>10}{'measured':>10}{'fit/meas':>9}")
    for k in rep["kernels"]:
        ops = ",".join(k["ops"])
        ops = ops if len(ops) <= 32 else ops[:29] + "..."
        out.append(f"{k['program']:<18}{k['variant']:<8}{k['sizes']:<20}{ops:<34}"
                   f"{_fmt(k['current_us'])}{_fmt(k['fitted_us'])}{_fmt(k['measured_us'])}"
                   f"{_fmt(k['ratio'], 9)}")
    out.append("(times in us; fused/unfused totals per program; a ratio > 1 overestimates)")
    return "\n".join(out)


@contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """Kernels compiled inside run on ``n`` threads ($TCPR_THREADS, read when compiling)."""
    old = os.environ.get("TCPR_THREADS")
    if n is not None:
        os.environ["TCPR_THREADS"] = str(max(1, n))
    try:
        yield
    finally:
        if n is not None:
            if old is None:
                os.environ.pop("TCPR_THREADS", None)
            else:
                os.environ["TCPR_THREADS"] = old


def cost_suite(as_json: bool = False, repeats: int = 7, rounds: int = 2,
               threads: int | None = 1) -> str:
    """Fit the cost model's constants to this machine's kernel times and report the fit.

    One thread by default, as ``tcpr bench`` times: on a small shared machine a second thread
    is mostly measuring the neighbours (None: the runtime's default).
    """
    with _threads(threads):
        rep = report(collect(repeats, rounds))
    rep["threads"] = threads
    return json.dumps(rep, indent=2) if as_json else format_report(rep)
