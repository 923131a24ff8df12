"""Whole ONNX models: tcp-rules against onnxruntime, one thread each, interleaved.

Each model is imported with its symbolic dims bound (``--dim batch=8``), optimized with the
standard rule library, compiled, and timed call by call in turn with an onnxruntime session
(one intra-op and one inter-op thread, all graph optimizations) on the same random inputs;
medians after a warm-up. The ratio is onnxruntime's time over ours (above 1: we are faster).
The optimizer's stop reason and the kernel count are printed beside.

    .venv/bin/python benchmarks/onnx_models.py                     # the bundled models
    .venv/bin/python benchmarks/onnx_models.py resnet18.onnx --dim batch=1 --repeats 15

The bundled defaults are the models in tests/data/onnx that PyTorch exported: a small CNN
(cnn.onnx), a U-Net (unet.onnx), an LSTM and GRU stack (rnn.onnx).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from tcp_rules.codegen.lower import lower_func
from tcp_rules.codegen.runtime import compile_func
from tcp_rules.frontends.onnx import import_onnx
from tcp_rules.optimize import OptOptions, optimize
from tcp_rules.rules.library import load_standard_library

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "onnx"
DEFAULTS = [(DATA / "cnn.onnx", {"batch": 64}), (DATA / "unet.onnx", {"batch": 8}),
            (DATA / "rnn.onnx", {"batch": 16})]


def measure(path: Path, dims: dict[str, int], repeats: int) -> str:
    """One row: times, ratio, stop reason, kernels."""
    imported = import_onnx(path, dict(dims))
    result = optimize(imported.module.funcs[0], load_standard_library().rules, OptOptions())
    func = result.func
    compiled = compile_func(func, threads=1)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for p in imported.module.funcs[0].params:
        if p.param not in imported.weights:
            shape = [int(d.const) for d in p.type.dims]  # type: ignore[arg-type]
            feeds[p.param] = rng.standard_normal(shape).astype(p.type.dtype.np_dtype)
    arrays = {**feeds, **imported.weights}
    args = [arrays[p.param] for p in func.params]
    names = {imported.aliases.get(i.name, i.name): i.name for i in session.get_inputs()}
    ort_feeds = {names[k]: v for k, v in feeds.items()}
    for _ in range(3):  # warm-up: compiled code loaded, onnxruntime's arenas grown
        compiled(*args)
        session.run(None, ort_feeds)
    ours, theirs = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        compiled(*args)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        session.run(None, ort_feeds)
        theirs.append(time.perf_counter() - t)
    a, b = statistics.median(ours), statistics.median(theirs)
    bindings = ", ".join(f"{k}={v}" for k, v in dims.items())
    return (f"{path.name:28s} {bindings:10s} {a * 1e3:9.3f} ms {b * 1e3:9.3f} ms {b / a:6.2f}  "
            f"{result.report.stop_reason:10s} {len(lower_func(func).steps):4d}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path, help="ONNX files (default: the bundled)")
    ap.add_argument("--dim", action="append", default=[], metavar="SYM=N",
                    help="bind a symbolic dim (every model; repeatable)")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    bound = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    runs = [(p, bound) for p in args.models] if args.models else \
        [(p, {**d, **bound}) for p, d in DEFAULTS]
    print(f"{'model':28s} {'dims':10s} {'tcp-rules':>12s} {'onnxruntime':>12s} {'ratio':>6s}  "
          f"{'stop':10s} kernels")
    for path, dims in runs:
        print(measure(path, dims, args.repeats), flush=True)


if __name__ == "__main__":
    main()
