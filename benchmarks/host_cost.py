"""What one tiny call costs an engine right after a large kernel, and warm.

The peers suite's *host us/k* column is a call's wall time minus its kernels' time. Right after
kernels that streamed tens of megabytes, the few Python operations around a call run from cold
caches and a cold TLB and take microseconds each. This measures that for every engine alike:
an 8x8 f32 matmul through tcp-rules, onnxruntime (the same graph, one thread) and NumPy, each
timed once right after a 64 MB write and once more right after that (warm); medians.

    .venv/bin/python benchmarks/host_cost.py [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from tcp_rules.codegen.runtime import compile_func
from tcp_rules.diagnostics import Source
from tcp_rules.pipeline import load_module


def _engines(x: np.ndarray) -> dict[str, Callable[[], object]]:
    n = x.shape[0]
    src = f"func g(a: f32[{n}, {n}], b: f32[{n}, {n}]) -> f32[{n}, {n}] {{\n"
    tcpr = compile_func(load_module(Source("<host>", src + "  return matmul(a, b)\n}\n"))
                        .funcs[0], threads=1)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["Y"])], "g",
        [helper.make_tensor_value_info(v, TensorProto.FLOAT, x.shape) for v in "AB"],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, x.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), so,
                                   providers=["CPUExecutionProvider"])
    feeds = {"A": x, "B": x}
    return {"tcp-rules": lambda: tcpr(x, x), "onnxruntime": lambda: session.run(None, feeds),
            "numpy": lambda: np.matmul(x, x)}


def _seconds(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=41)
    args = parser.parse_args()
    big = np.empty(1 << 24, np.float32)
    engines = _engines(np.ones((8, 8), np.float32))
    for fn in engines.values():
        fn()
        fn()
    cold: dict[str, list[float]] = {e: [] for e in engines}
    warm: dict[str, list[float]] = {e: [] for e in engines}
    for _ in range(args.repeats):
        for e, fn in engines.items():
            big.fill(1.0)  # 64 MB written: what the caches and the TLB held is gone
            cold[e].append(_seconds(fn))
            warm[e].append(_seconds(fn))
    print(f"an 8x8 f32 matmul, medians of {args.repeats}: after a 64 MB write | warm")
    for e in engines:
        print(f"  {e:<12} {1e6 * statistics.median(cold[e]):8.1f} us | "
              f"{1e6 * statistics.median(warm[e]):6.1f} us")


if __name__ == "__main__":
    main()
