"""Exhaustive accuracy sweep of the f32 polynomial math: every f32 in a range, compiled kernel
against a float64 reference, max error in ulps (the "measured*" column of
tcp_rules/codegen/mathlib.py). Usage:

    .venv/bin/python benchmarks/ulp_sweep.py erf tanh          # each function's default range
    .venv/bin/python benchmarks/ulp_sweep.py sin --lo 0 --hi 524288

Odd and even functions are swept over x >= 0 only (their sign handling is exact). Minutes per
function; tests/test_codegen_math.py samples the same bounds in the test suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_codegen_math import TRUTH, ulp_error

from tcp_rules.codegen import compile_func
from tcp_rules.codegen.mathlib import ULP_BOUNDS
from tcp_rules.codegen.mathtrig import TRIG_BOUND
from tcp_rules.types import DType

# x >= 0 covers all inputs of the odd and even functions. Below -88.72283 sigmoid returns the
# reference's 0 (its exp(-x) overflows), not the true tiny value, so the sweep starts there.
DEFAULT = {"exp": (-np.inf, np.inf), "log": (0.0, np.inf), "sigmoid": (-88.72283, np.inf),
           "tanh": (0.0, np.inf), "erf": (0.0, np.inf), "atan": (0.0, np.inf),
           "sin": (0.0, TRIG_BOUND), "cos": (0.0, TRIG_BOUND)}
CHUNK = 1 << 24


def _key(v: float) -> int:
    """A monotone integer for f32 values: bit patterns, negatives mirrored below zero."""
    b = int(np.array(v, np.float32).view(np.int32))
    return b if b >= 0 else -(b & 0x7FFFFFFF)


def sweep(op: str, lo: float, hi: float) -> tuple[float, float]:
    """(max ulp error, an input where it occurs) over every f32 in [lo, hi]."""
    from codegen.support import unary

    cf = compile_func(unary(op, DType.F32))
    worst, at = 0.0, float("nan")
    klo, khi = _key(lo), _key(hi)
    for start in range(klo, khi + 1, CHUNK):
        keys = np.arange(start, min(start + CHUNK, khi + 1), dtype=np.int64)
        bits = np.where(keys >= 0, keys, (-keys) | 0x80000000).astype(np.uint32)
        x = bits.view(np.float32)
        x = x[~np.isnan(x)]
        (got,) = cf(x)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            truth = TRUTH[op](x.astype(np.float64))
            err = ulp_error(got, truth)
        ok = ~np.isnan(truth)
        if (np.isnan(got) != ~ok).any():
            bad = x[np.isnan(got) != ~ok][0]
            raise SystemExit(f"{op}: NaN mismatch at {bad!r}")
        i = int(np.argmax(np.where(ok, err, 0)))
        if ok[i] and err[i] > worst:
            worst, at = float(err[i]), float(x[i])
    return worst, at


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ops", nargs="+", choices=sorted(ULP_BOUNDS))
    ap.add_argument("--lo", type=float)
    ap.add_argument("--hi", type=float)
    args = ap.parse_args()
    for op in args.ops:
        lo, hi = DEFAULT[op]
        lo = lo if args.lo is None else args.lo
        hi = hi if args.hi is None else args.hi
        worst, at = sweep(op, lo, hi)
        print(f"{op}: max {worst:.3f} ulp at x = {np.float32(at)!r} over [{lo}, {hi}] "
              f"(bound {ULP_BOUNDS[op]})", flush=True)


if __name__ == "__main__":
    main()
