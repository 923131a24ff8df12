"""Benchmark suites of the optimizer and the verifier (``tcpr bench --suite ...``); the code
generator's suite is tcp_rules.codegen.bench. Benchmarks, not tests: numbers are reported,
never asserted."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from tcp_rules.diagnostics import Source
from tcp_rules.egraph.saturate import Limits, load, saturate
from tcp_rules.egraph.scheduler import Backoff
from tcp_rules.elaborate import load_program
from tcp_rules.extract.cost import RooflineCost
from tcp_rules.extract.extractors import greedy_dag, ilp, tree
from tcp_rules.extract.snapshot import Snapshot, snapshot
from tcp_rules.extract.synthetic import layered_snapshot
from tcp_rules.ir import Func
from tcp_rules.optimize import OptOptions, optimize, select_rules
from tcp_rules.resources import example_paths
from tcp_rules.rules.library import load_standard_library
from tcp_rules.verify.checker import PROFILES, verify_rules


def generated(nodes: int, seed: int = 0) -> Func:
    """A random elementwise/layout DAG over four f32[N, 64] inputs with about ``nodes`` ops."""
    rng = np.random.default_rng(seed)
    names = ["a", "b", "c", "d"]
    lines = []
    ops = ["add", "mul", "sub", "max", "neg", "exp", "tanh", "tt"]
    for i in range(nodes):
        op = ops[int(rng.integers(len(ops)))]
        # the previous value and a recent one: every op stays reachable from the result
        x, y = names[-1], names[int(rng.integers(max(0, len(names) - 12), len(names)))]
        if op in ("neg", "exp", "tanh"):
            expr = f"{op}({x})"
        elif op == "tt":
            expr = f"transpose(transpose({x}, perm=[1, 0]), perm=[1, 0])"
        else:
            expr = f"{op}({x}, {y})"
        names.append(f"v{i}")
        lines.append(f"  v{i} = {expr}")
    text = ("func big(a: f32[N, 64], b: f32[N, 64], c: f32[N, 64], d: f32[N, 64]) -> "
            "f32[N, 64] {\n" + "\n".join(lines) + f"\n  return {names[-1]}\n}}\n")
    return load_program(Source("generated.tcp", text)).funcs[0]


def growth(name: str, func: Func, rules: list[Any], limits: Limits) -> dict[str, Any]:
    start = time.perf_counter()
    result = optimize(func, rules, OptOptions(limits=limits))
    r = result.report
    seconds = round(time.perf_counter() - start, 3)
    return {"program": name, "ops": len(func.ops()), "seconds": seconds,
            "stop": r.stop_reason, "iterations": len(r.iterations),
            "enodes": [it["enodes"] for it in r.iterations],
            "cost_before": r.cost_before, "cost_after": r.cost_after}


DEPTHS = (2, 4, 6, 12)  # layers of the zoo encoder in the optimizer suite


def depth(layers: int, rules: list[Any]) -> dict[str, Any]:
    """The zoo encoder with ``layers`` layers (benchmodels.encoder) optimized under the default
    limits, as ``tcpr opt`` does: time, stop reason, node limit and peak, and the plan steps
    (kernels) before and after, 7 a layer at best."""
    from tcp_rules.benchmodels import encoder, import_graph, kernel_count

    func = import_graph(encoder(layers)).module.funcs[0]
    start = time.perf_counter()
    result = optimize(func, rules, OptOptions())
    seconds = round(time.perf_counter() - start, 3)
    nodes = result.report.to_json()["nodes"]
    return {"layers": layers, "ops": len(func.ops()), "seconds": seconds,
            "stop": result.report.stop_reason, "node_limit": nodes["limit"],
            "peak": nodes["peak"], "kernels_before": kernel_count(func),
            "kernels_after": kernel_count(result.func)}


def dag_vs_ilp(name: str, func: Func, rules: list[Any], iterations: int) -> dict[str, Any]:
    sat = load(func, select_rules(rules, ("exact", "approx")))
    saturate(sat, Limits(iterations=iterations, nodes=3000, seconds=30))
    snap = snapshot(sat.egraph, sat.tables, sat.roots)
    model = RooflineCost()
    dag, exact = greedy_dag(snap, model), ilp(snap, model, time_limit=30.0)
    return {"program": name, "enodes": snap.enodes, "dag_cost": dag.cost,
            "dag_seconds": round(dag.seconds, 4), "ilp_cost": exact.cost,
            "ilp_seconds": round(exact.seconds, 3), "ilp_optimal": exact.optimal,
            "gap_percent": round((dag.cost / exact.cost - 1) * 100, 2) if exact.cost else 0.0}


def extraction_scale(name: str, snap: Snapshot, snapshot_seconds: float | None = None
                     ) -> dict[str, Any]:
    """Tree and greedy DAG extraction on one (large) e-graph: seconds and cost of each;
    ``snapshot_seconds`` is how long reading it out of egglog took, where it was."""
    model = RooflineCost()
    row: dict[str, Any] = {"program": name, "enodes": snap.enodes, "eclasses": len(snap.classes),
                           "snapshot_seconds": snapshot_seconds}
    for extract in (tree, greedy_dag):
        ex = extract(snap, model)
        row[f"{ex.extractor}_seconds"] = round(ex.seconds, 3)
        row[f"{ex.extractor}_cost"] = ex.cost
    return row


def scale_egraphs(rules: list[Any]) -> Iterator[tuple[str, Snapshot, float | None]]:
    """E-graphs of ~100k e-nodes: a synthetic one (extract.synthetic), and a 2-layer
    transformer encoder (d_model 256) saturated without match budgets up to 100k e-nodes
    (needs onnx)."""
    yield "synthetic-100k", layered_snapshot(100_000), None
    try:
        from tcp_rules.frontends.onnx.model import import_model
        from tcp_rules.frontends.onnx.zoo import encoder_layer
    except ImportError:  # the onnx extra is not installed
        return
    model = encoder_layer(d_model=256, heads=4, d_ff=1024, layers=2)
    func = import_model(model, {"batch": 8, "seq": 128}).module.funcs[0]
    # no match budgets and no rounds: plain equality saturation, to grow a large e-graph
    sat = load(func, select_rules(rules, ("exact", "approx")),
               backoff=Backoff(match_limit=1 << 40, round_iterations=1 << 20))
    saturate(sat, Limits(iterations=4, nodes=100_000, seconds=600))
    start = time.perf_counter()
    snap = snapshot(sat.egraph, sat.tables, sat.roots)
    yield "encoder-2x256", snap, round(time.perf_counter() - start, 3)


def optimizer_suite(as_json: bool = False) -> str:
    """E-graph growth and optimization time on the examples and a generated 1000-op program,
    greedy DAG extraction against exact ILP on small e-graphs, and extraction at scale."""
    rules = list(load_standard_library().rules)
    funcs = {p.stem: load_program(Source(p.name, p.read_text())).funcs[0]
             for p in example_paths()}
    rows = [growth(n, f, rules, Limits()) for n, f in funcs.items()]
    rows.append(growth("generated-1000", generated(1000), rules,
                       Limits(iterations=12, nodes=20_000, seconds=10)))
    gaps = [dag_vs_ilp(n, f, rules, it) for n, f in funcs.items() for it in (2, 4)]
    scale = [extraction_scale(*g) for g in scale_egraphs(rules)]
    try:
        import onnx  # noqa: F401  (the encoders are ONNX graphs, imported)
        depths: list[dict[str, Any]] | None = [depth(n, rules) for n in DEPTHS]
    except ImportError:
        depths = None
    if as_json:
        return json.dumps({"growth": rows, "extraction": gaps, "extraction_at_scale": scale,
                           "depth": depths}, indent=2)
    out = [f"{'program':<16}{'ops':>6}{'iters':>6}  {'stop':<16}{'seconds':>8}  "
           "e-nodes per iteration"]
    out += [f"{r['program']:<16}{r['ops']:>6}{r['iterations']:>6}  {r['stop']:<16}"
            f"{r['seconds']:>8.2f}  {r['enodes']}" for r in rows]
    out.append(f"\n{'program':<12}{'e-nodes':>8}{'dag cost':>12}{'ilp cost':>12}{'gap %':>8}"
               f"{'dag s':>8}{'ilp s':>8}  optimal")
    out += [f"{g['program']:<12}{g['enodes']:>8}{g['dag_cost']:>12.0f}{g['ilp_cost']:>12.0f}"
            f"{g['gap_percent']:>8.2f}{g['dag_seconds']:>8.3f}{g['ilp_seconds']:>8.2f}  "
            f"{g['ilp_optimal']}" for g in gaps]
    out.append(f"\nextraction at scale\n{'e-graph':<16}{'e-nodes':>8}{'classes':>8}"
               f"{'snapshot s':>11}{'tree s':>8}{'dag s':>8}{'tree cost':>12}{'dag cost':>12}")
    out += [f"{r['program']:<16}{r['enodes']:>8}{r['eclasses']:>8}"
            f"{'-' if r['snapshot_seconds'] is None else r['snapshot_seconds']:>11}"
            f"{r['tree_seconds']:>8.2f}{r['dag_seconds']:>8.2f}{r['tree_cost']:>12.0f}"
            f"{r['dag_cost']:>12.0f}" for r in scale]
    out.append("\nthe zoo encoder by depth, default limits (7 kernels a layer at best)")
    if depths is None:
        out.append("  skipped: needs onnx (pip install 'tcp-rules[onnx]')")
    else:
        out.append(f"{'layers':>6}{'ops':>6}{'seconds':>9}  {'stop':<16}{'node limit':>11}"
                   f"{'peak':>8}{'kernels':>9}{'after':>7}")
        out += [f"{r['layers']:>6}{r['ops']:>6}{r['seconds']:>9.2f}  {r['stop']:<16}"
                f"{r['node_limit']:>11,}{r['peak']:>8,}{r['kernels_before']:>9}"
                f"{r['kernels_after']:>7}" for r in depths]
    return "\n".join(out)


def verifier_suite(as_json: bool = False) -> str:
    """Time to verify the whole standard library with the default profile and with ten times
    as many cases (the thorough profile)."""
    lib = load_standard_library()
    rows = []
    for profile in (PROFILES["default"], PROFILES["thorough"]):
        start = time.perf_counter()
        verdicts = verify_rules(lib.rules, profile, seed=0)
        rows.append({"profile": profile.name, "cases_per_direction": profile.examples,
                     "rules": len(verdicts), "as_declared": sum(v.ok for v in verdicts),
                     "cases_run": sum(v.checked for v in verdicts),
                     "seconds": round(time.perf_counter() - start, 2)})
    if as_json:
        return json.dumps(rows, indent=2)
    return "\n".join(f"{r['profile']:<9} {r['cases_per_direction']:>4} cases/direction: "
                     f"{r['rules']} rules, {r['as_declared']} as declared, {r['cases_run']} "
                     f"cases run in {r['seconds']:.1f} s" for r in rows)
