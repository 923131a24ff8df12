"""The main job (``make demo`` / ``tcpr demo``): each bundled example optimized with the
standard rule library (fusion included), compiled to native kernels, run, and checked against
the reference."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from tcp_rules.extract.cost import RooflineCost
from tcp_rules.inputs import random_inputs
from tcp_rules.kernels import kernel_infos
from tcp_rules.optimize import OptOptions
from tcp_rules.pipeline import load_module_file, optimize_func, run_func
from tcp_rules.printer import format_type, print_func
from tcp_rules.resources import example_paths
from tcp_rules.rules.library import RuleLibrary, load_standard_library


def _demo_one(path: Path, lib: RuleLibrary, sizes: dict[str, int], seed: int) -> str:
    """Optimize one example, compile the result, run it, and check it against the reference."""
    func = load_module_file(path).funcs[0]
    result = optimize_func(func, lib.rules, OptOptions())
    inputs = random_inputs(func, sizes, default_size=64, seed=seed)
    expected = run_func(func, inputs, "reference")
    start = time.perf_counter()
    run_func(result.func, inputs, "compiled")  # compiles (or loads from the kernel cache)
    first = time.perf_counter() - start
    start = time.perf_counter()
    got = run_func(result.func, inputs, "compiled")
    again = time.perf_counter() - start
    shapes = ", ".join(f"{p.param}{list(a.shape)}" for p, a in zip(func.params, inputs,
                                                                   strict=True))
    r = result.report
    kernels = kernel_infos(result.func, RooflineCost())
    n_ops = sum(1 for v in func.ops() if v.op.category != "constant")
    lines = [f"== {path.name}: func {func.name}, inputs {shapes}",
             f"  optimized in {r.seconds:.2f} s: {r.stop_reason} after {len(r.iterations)} "
             f"iterations, {r.iterations[-1]['enodes'] if r.iterations else 0} e-nodes, "
             f"{sum(1 for k in r.matches.values() if k)} rules matched; cost "
             f"{r.cost_before:.6g} -> {r.cost_after:.6g}"
             + (" (original kept)" if r.kept_original else ""),
             *(f"  | {line}" for line in print_func(result.func).splitlines()),
             f"  kernels: {len(kernels)} for {n_ops} ops of the original program",
             *(f"    {k.name}: {', '.join(k.ops)}" for k in kernels),
             f"  compiled: first run {first * 1e3:.1f} ms (compile or cache load included), "
             f"then {again * 1e3:.2f} ms"]
    for i, (a, b) in enumerate(zip(expected, got, strict=True)):
        err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0))
        lines.append(f"  result{i} {format_type(func.result_types[i])}: compiled optimized "
                     f"program vs reference interpreter on the original: max |difference| "
                     f"{err:.3g}, mean {float(np.mean(b)):.6g}")
    return "\n".join(lines)


def run_demo(sizes: dict[str, int], seed: int = 0) -> None:
    """The main job: every bundled example optimized, compiled, run and checked."""
    lib = load_standard_library()
    print("tcp-rules demo: optimize each bundled example with the standard rule library "
          f"({len(lib.rules)} rules, classes exact and approx),")
    print("compile the optimized program to native kernels, run it on seeded random inputs "
          f"(symbolic dims 64; seed {seed}),")
    print("and compare with the reference interpreter running the original program\n")
    for path in example_paths():
        print(_demo_one(path, lib, sizes, seed) + "\n")
