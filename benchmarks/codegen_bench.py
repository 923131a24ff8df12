"""Run the code generator's benchmark suite: python benchmarks/codegen_bench.py [CASES...].

Times tcp-rules compiled kernels against NumPy (and numexpr and Numba when installed: pip install
-e '.[bench]') in one run, with a STREAM-like roofline measured alongside; see
tcp_rules/codegen/bench.py. OpenBLAS's thread count is fixed to --threads through
OPENBLAS_NUM_THREADS before NumPy loads: set later through its API, single-threaded OpenBLAS ran
about 30% slower here (its idle worker threads keep spinning).
"""

from __future__ import annotations

import argparse
import os


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help="cases to run (default all; see cases.CASES)")
    ap.add_argument("--repeats", type=int, default=7, help="timed runs per engine (median)")
    ap.add_argument("--threads", type=int, default=1, help="threads for every engine")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    from tcp_rules.codegen.bench import run_benchmarks  # imports NumPy: after the variable

    print(run_benchmarks(args.cases or None, args.repeats, args.threads, args.json))


if __name__ == "__main__":
    main()
